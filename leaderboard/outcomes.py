"""How an episode ended as pages and filters name it: correct, wrong, missing, error, or its status."""
from __future__ import annotations

import functools
import operator

from django.db.models import Case, CharField, F, Q, Value, When

from benchmark.scoring.epochs import CORRECT_WHEN
from runs.models import Status


def _holds(key: str, comparison: str, wanted) -> Q:
    """One condition of ``CORRECT_WHEN`` on an episode's scores; a score that is JSON null holds none
    (SQLite would compare the text "null")."""
    return Q(**{f"scores__{key}__{comparison}": wanted}) & ~Q(**{f"scores__{key}": None})


_ANSWERED = Q(status=Status.COMPLETED, final_answer__isnull=False)
# A correct answer, as a query: ``benchmark.scoring.epochs.CORRECT_WHEN``, the rule ``is_correct`` reads.
_CORRECT = functools.reduce(operator.or_, (
    functools.reduce(operator.and_, (_holds(*condition) for condition in conditions), Q(instance__task__code=task))
    for task, conditions in CORRECT_WHEN.items()
))
OUTCOME = Case(
    When(status=Status.FAILED, then=Value("error")),
    When(status=Status.COMPLETED, final_answer__isnull=True, then=Value("missing")),
    When(_ANSWERED & _CORRECT, then=Value("correct")),
    When(_ANSWERED, then=Value("wrong")),
    default=F("status"),
    output_field=CharField(),
)


def with_outcome(episodes):
    """Episodes annotated with ``outcome``: correct, wrong, missing, error, or their status while unfinished."""
    return episodes.annotate(outcome=OUTCOME)


def shown_outcome(outcome: str, *, references: bool) -> str:
    """The outcome a visitor may see: without references, correct and wrong are both just answered."""
    if not references and outcome in ("correct", "wrong"):
        return "answered"
    return outcome
