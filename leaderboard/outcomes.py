"""How an episode ended as the pages and filters name it: correct, wrong, missing, error, or its status while unfinished."""
from __future__ import annotations

from django.db.models import Case, CharField, F, Q, Value, When

from benchmark.scoring.epochs import T6_CORRECT_MACRO_F1
from runs.models import Status

_ANSWERED = Q(status=Status.COMPLETED, final_answer__isnull=False)
# What counts as a correct answer, per task: the right label (T1-T4); every seizure found with no
# false alarm, which on a seizure-free record means staying silent (T5); a night staged with a
# macro-F1 of at least T6_CORRECT_MACRO_F1 (T6, which has no single right answer). The run page
# writes this rule beside its outcome column; benchmark.scoring.epochs.is_correct is the same rule.
_CORRECT = (
    Q(instance__task__code__in=["T1", "T2", "T3", "T4"], scores__correct=True)
    | Q(instance__task__code="T5", scores__fn=0, scores__fp=0)
    | Q(instance__task__code="T6", scores__macro_f1__gte=T6_CORRECT_MACRO_F1)
)
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
