"""Episodes across runs as the search reads them: the filters (shared with a run's episode table), the order, the rows.

A visitor finds only what ``leaderboard.access`` lets them see: ended episodes (completed, failed,
cancelled) of suites whose references are not held out; staff find every episode. Each page costs
the same queries whatever it lists: runs, models, suites and tasks come with the episodes.
"""
from __future__ import annotations

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.http import HttpRequest

from leaderboard.access import is_staff, shown_failure_modes, visible_episodes
from leaderboard.outcomes import shown_outcome, with_outcome
from runs.models import Episode, Step

#: The steps holding the model's replies: what the search's text looks into.
REPLY_KINDS = (Step.Kind.AGENT_MESSAGE, Step.Kind.FINAL_ANSWER)

#: The orders of the search (a leading "-": descending), by name; "" is the default, newest first.
SORTS = {
    "": (F("finished_at").desc(nulls_last=True), "-id"),
    "n_tool_calls": ("n_tool_calls", "id"),
    "-n_tool_calls": ("-n_tool_calls", "-id"),
    "tokens": ("tokens", "id"),
    "-tokens": ("-tokens", "-id"),
    "coverage": (F("evidence_coverage").asc(nulls_last=True), "id"),
    "-coverage": (F("evidence_coverage").desc(nulls_last=True), "-id"),
}

#: What ``search_row`` reads of an episode and its relations: all a search loads (an export reads thousands).
ROW_FIELDS = (
    "run__model__name", "run__suite__name", "instance__task__code", "record_id", "ended_by", "failure_modes",
    "n_turns", "n_tool_calls", "evidence_coverage", "finished_at",
)

#: The ranges of the search: filter name → the episode's field (``tokens`` is annotated: prompt + completion).
RANGES = {"tool_calls": "n_tool_calls", "turns": "n_turns", "tokens": "tokens", "coverage": "evidence_coverage"}


def matching_text(text: str, *, staff: bool, kinds=()) -> Q:
    """Episodes a step of which holds ``text``, or whose record id does.

    A step's text and reasoning are searched (only in steps of ``kinds``; any kind when empty), and
    for staff its error in any step: errors hold what only staff read (tracebacks, a model
    provider's words).
    """
    searched = Q(text__icontains=text) | Q(reasoning__icontains=text)
    if kinds:
        searched &= Q(kind__in=kinds)
    if staff:
        searched |= Q(error__icontains=text)
    return Q(Exists(Step.objects.filter(episode=OuterRef("pk")).filter(searched))) | Q(record_id__icontains=text)


def chosen(episodes: QuerySet, **lookups) -> QuerySet:
    """``episodes`` filtered by the ``lookups`` given a value (blank or None: any)."""
    return episodes.filter(**{lookup: value for lookup, value in lookups.items() if value not in ("", None)})


def narrowed(episodes: QuerySet, *, staff: bool, task: str = "", outcome: str = "", ended_by: str = "",
             failure_mode: str = "", q: str = "", kinds=()) -> QuerySet:
    """``episodes`` (annotated by ``with_outcome``) with the filters a run's table and the search share; blank: any."""
    episodes = chosen(episodes, instance__task__code=task, outcome=outcome, ended_by=ended_by,
                      failure_codes__contains=f" {failure_mode} " if failure_mode else "")
    if q:
        episodes = episodes.filter(matching_text(q, staff=staff, kinds=kinds))
    return episodes


def used_tool(tool: str, at_least: int = 1) -> Exists:
    """Episodes that called ``tool`` at least ``at_least`` times."""
    calls = (
        Step.objects.filter(episode=OuterRef("pk"), kind=Step.Kind.TOOL_CALL, tool_name=tool)
        .order_by().values("episode").annotate(n=Count("pk")).filter(n__gte=at_least)
    )
    return Exists(calls)


def episode_search(request: HttpRequest, *, suite: str = "", model: str = "", run: int | None = None,
                   tool: str = "", tool_min: int | None = None, sort: str = "", **filters) -> QuerySet:
    """Every ended episode this visitor may see, filtered and sorted (a running one only for staff).

    ``filters``: those of ``narrowed`` (task, outcome, ended_by, failure_mode, q: text in the model's
    replies) and the ranges ``<name>_min`` / ``<name>_max`` of ``RANGES`` (inclusive; None: open).
    Annotated with ``outcome`` and ``tokens``; ``sort`` is a key of ``SORTS``.
    """
    staff = is_staff(request)
    episodes = visible_episodes(request, Episode.objects.select_related("run__model", "run__suite", "instance__task"))
    episodes = (
        with_outcome(episodes)
        .annotate(tokens=F("prompt_tokens") + F("completion_tokens"))
        .only(*ROW_FIELDS)
    )
    episodes = chosen(episodes, run__suite__name=suite, run__model__name=model, run_id=run)
    if tool:
        episodes = episodes.filter(used_tool(tool, tool_min or 1))
    for name, field in RANGES.items():
        episodes = chosen(episodes, **{f"{field}__gte": filters.get(f"{name}_min"),
                                       f"{field}__lte": filters.get(f"{name}_max")})
    shared = {key: filters.get(key, "") for key in ("task", "outcome", "ended_by", "failure_mode", "q")}
    return narrowed(episodes, staff=staff, kinds=REPLY_KINDS, **shared).order_by(*SORTS[sort])


def search_row(episode: Episode, *, references: bool) -> dict:
    """An episode as the search lists it; its outcome and failure modes as this visitor may see them."""
    return {
        "id": episode.pk,
        "run": episode.run_id,
        "model": episode.run.model.name,
        "suite": episode.run.suite.name,
        "task": episode.instance.task.code,
        "record_id": episode.record_id,
        "outcome": shown_outcome(episode.outcome, references=references),
        "ended_by": episode.ended_by,
        "failure_modes": [mode["code"] for mode in shown_failure_modes(episode.failure_modes, references=references)],
        "n_turns": episode.n_turns,
        "n_tool_calls": episode.n_tool_calls,
        "tokens": episode.tokens,
        "evidence_coverage": episode.evidence_coverage,
        "finished_at": episode.finished_at,
    }
