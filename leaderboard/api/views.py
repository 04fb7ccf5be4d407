"""One read-only DRF view per endpoint: validate the query, call a selector, serialize.

Permissions and throttles are the project defaults (``REST_FRAMEWORK`` in settings): anyone may
read, nothing here writes. What a visitor sees follows the pages' rules (``leaderboard.access``):
the suite's answer key (instance references) goes to staff only; an episode's score, which tells
its reference, to staff always and to visitors when ``EEGAB_PUBLIC_REFERENCES`` is on; a held-out
suite's episodes, instances and per-item scores to staff only, its runs' scores once they have ended.
"""
import re

from django.http import Http404
from django.urls import reverse
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from benchmark.models import Suite
from leaderboard.access import (
    is_staff,
    shows_answer_key,
    shows_comparison,
    shows_items,
    shows_references,
    shows_run_scores,
    visible_episode,
)
from leaderboard.api import selectors as api_reads
from leaderboard.api import serializers
from leaderboard.api.base import Endpoint, view_description
from leaderboard.audit import reads as audit_reads
from leaderboard.board import ranking
from leaderboard.board.serializers import LeaderboardSerializer
from leaderboard.comparison import selectors as comparison_reads
from leaderboard.items import selectors as item_reads
from leaderboard.run_pages import selectors as run_reads
from leaderboard.search.selectors import episode_search
from runs.models import Episode, Run

PATH_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")


class Pagination(PageNumberPagination):
    """The API's pagination (``DEFAULT_PAGINATION_CLASS``): pages of ``PAGE_SIZE`` items, ``?page_size=`` up to 500."""

    page_size_query_param = "page_size"
    max_page_size = 500


def _query(serializer_class, request, **context) -> dict:
    query = serializer_class(data=request.query_params, context=context)
    query.is_valid(raise_exception=True)
    return query.validated_data


def _paginated(view: APIView, queryset, serializer_class, *, head: dict | None = None, **context) -> Response:
    """A page of ``queryset`` (a list will do) as ``{**head, "count", "next", "previous", "results"}``."""
    paginator = api_settings.DEFAULT_PAGINATION_CLASS()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    response = paginator.get_paginated_response(serializer_class(page, many=True, context=context).data)
    if head:
        response.data = {**head, **response.data}
    return response


#: What a run's detail gives in place of its scores while they are held back (a held-out suite's running run).
SCORES_HELD_BACK = {
    "overall": None, "overall_ci": None, "overall_official": False, "metrics": {}, "official": {},
    "overall_sd": None, "overall_epochs": None, "epoch_stats": {}, "tasks": [],
}


class ApiRootView(Endpoint):
    """The API's endpoints, each with its address, methods and what it gives.

    Anyone may read them; they are throttled, and references go to staff only. Agents playing a
    run's episodes use the environment API, with the run's key, from ``/api/env/runs/``.
    """

    name = "EEGAgentBench API"
    #: The URL patterns this index lists; the URLconf that routes them passes them in.
    patterns: list = []

    def get(self, request):
        root = request.build_absolute_uri(reverse("api:root"))
        endpoints = {}
        for pattern in self.patterns:
            view = pattern.callback.view_class
            endpoints[pattern.name] = {
                "url": root + PATH_PARAMETER.sub(r"{\1}", str(pattern.pattern)),  # runs/<int:run_id>/ → runs/{run_id}/
                "methods": [method.upper() for method in ("get", "post") if hasattr(view, method)],
                "description": view_description(view.__doc__ or "").split("\n\n")[0],
            }
        endpoints["environment"] = {
            "url": request.build_absolute_uri(reverse("env:runs")),
            "methods": ["GET", "POST"],
            "description": "The environment API, for agents that play a run's episodes: a run's bearer key required.",
        }
        return Response(endpoints)


class LeaderboardView(Endpoint):
    """``GET /api/leaderboard/?suite=S[&source=run|published][&family=F][&weights=open|proprietary]``.

    ``rows`` are the ranked agents; ``one_feature_audit`` is, per audited task, the one-feature
    shortcut audit of the suite (a reference fitted on the answer key, never ranked among the rows).
    """

    def get(self, request):
        try:
            board = ranking.leaderboard(**_query(serializers.LeaderboardQuerySerializer, request))
        except ranking.UnknownBoard as exc:
            raise NotFound(str(exc)) from None
        return Response({**LeaderboardSerializer(board).data,
                         "one_feature_audit": audit_reads.audit_json(board.audits, rules=is_staff(request))})


class RunListView(Endpoint):
    """``GET /api/runs/[?suite=S][&status=…][&model=…]``, newest first, paginated."""

    def get(self, request):
        runs = run_reads.run_list(**_query(serializers.RunQuerySerializer, request))
        return _paginated(self, runs, serializers.RunSerializer)


class RunDetailView(Endpoint):
    """``GET /api/runs/<id>/``: the run, its scores and every episode.

    Each episode row has its ``failure_modes`` (as ``/api/episodes/<id>/`` gives them). On a held-out
    suite a visitor gets no episode (``episodes_hidden``) and, while the run has not ended, no score
    (``scores_hidden``).
    """

    def get(self, request, run_id: int):
        try:
            detail = api_reads.run_detail(run_id=run_id, staff=is_staff(request))
        except Run.DoesNotExist:
            raise NotFound(f"no run {run_id}") from None
        suite = detail.run.suite
        if not shows_items(request, suite):
            detail.episodes = []
        context = {"scores_visible": shows_references(request, suite), "staff": is_staff(request)}
        data = serializers.RunDetailSerializer(detail, context=context).data
        scores_hidden = not shows_run_scores(request, detail.run)
        if scores_hidden:
            data.update(SCORES_HELD_BACK)
        return Response({**data, "episodes_hidden": not shows_items(request, suite), "scores_hidden": scores_hidden})


class RunComparisonView(Endpoint):
    """``GET /api/runs/compare/?a=<run>&b=<run>``: two runs of one suite compared, B − A throughout.

    ``{"a", "b", "models", "suite", "tasks": {"T3": {"metric", "a", "b", "difference", "ci",
    "p_value", "test", "n_units", "unit", "improved", "regressed", "only_a", "only_b"}, ...},
    "overall", "instances", "only_one_run"}``. Per task (those both runs played), ``a`` and ``b``
    are the runs' leaderboard scores, ``difference`` B − A over the instances both played, ``ci`` its
    95 % paired bootstrap interval over the task's units (instances; subjects for T5; nights for T6),
    ``p_value`` two-sided by ``test``: the exact McNemar test on per-instance correctness for T1–T4
    when both runs played one epoch, else a paired permutation test over the units (a run of several
    epochs by each unit's mean); ``improved`` and ``regressed`` count the units. ``overall`` (null
    unless both runs have all six tasks): ``a``, ``b``, ``difference``, ``ci``, ``p_value``, ``test``.
    ``instances``: every shared instance, regressions first, ``{"instance"`` (its id on this site),
    ``"record_id", "task", "a": {"episode", "score", "correct"}, "b": {...}, "change"}`` with
    ``change`` one of ``regressed``, ``improved``, ``same_wrong``, ``same_right`` (T5 and T6 by item
    score); ``only_one_run``: the instances one run played, left out of the tests. A visitor gets
    ``instances`` null on a held-out suite or where references are not public, and ``tasks`` empty
    (``scores_hidden``) while a run of a held-out suite plays. 400 for runs of two suites, one run
    twice, or an id that is not a number; 404 for a run that does not exist.
    """

    def get(self, request):
        try:
            a, b = comparison_reads.compared_runs(*comparison_reads.chosen_ids(request.query_params))
        except comparison_reads.ComparisonError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        except Run.DoesNotExist as exc:
            raise NotFound(str(exc)) from None
        scores, instances = shows_comparison(request, a, b)
        if not scores:
            return Response({"a": a.pk, "b": b.pk, "suite": a.suite.name, "tasks": {}, "overall": None,
                             "instances": None, "only_one_run": None, "scores_hidden": True})
        data = comparison_reads.run_comparison(a, b)
        return Response({**comparison_reads.comparison_json(data, instances=instances), "scores_hidden": False})


class EpisodeDetailView(Endpoint):
    """``GET /api/episodes/<id>/``: the episode, its outcome and its steps.

    ``failure_modes``: ``[{"code", "steps": [step index, ...]}]`` (docs/failure_modes.md; null until the
    episode is classified; the modes that tell the reference only where scores are shown) and
    ``evidence_coverage``, the share of the record its signal-reading calls covered before the answer.
    """

    def get(self, request, episode_id: int):
        try:
            detail = api_reads.episode_detail(episode_id=episode_id)
            visible_episode(request, detail.episode)
        except (Episode.DoesNotExist, Http404):
            # a running episode, or one of a held-out suite, is answered as if it did not exist
            raise NotFound(f"no episode {episode_id}") from None
        context = {"scores_visible": shows_references(request, detail.episode.run.suite), "staff": is_staff(request)}
        data = serializers.EpisodeDetailSerializer(detail, context=context).data
        return Response(data)


class EpisodeListView(Endpoint):
    """``GET /api/episodes/[?suite=S][&task=Tn][&model=M][&run=ID][&…][&q=TEXT][&sort=…]``: episodes across runs.

    Every ended episode (completed, failed, cancelled) a visitor may see: none of a suite whose
    references are held out; staff get every episode, a running one too. The filters, each
    optional, are those of the ``/episodes/`` page: ``suite`` (a name: one that does not exist, or
    is held out from this visitor, is a 404), ``task`` (T1–T6), ``model`` (a model's name), ``run``
    (an id), ``outcome`` (``missing`` or ``error``, and ``correct`` or ``wrong`` where references are
    shown), ``ended_by``, ``failure_mode`` (a code of docs/failure_modes.md; those telling the reference
    only where references are shown), ``tool`` (a tool the episode called at least ``tool_min`` times,
    1 by default), the inclusive ranges ``tool_calls_min``/``_max``, ``turns_min``/``_max``,
    ``tokens_min``/``_max`` (prompt + completion) and ``coverage_min``/``_max`` (evidence coverage, 0 to 1),
    and ``q``, text in the model's replies (or in the record id). Any other value is a 400 naming the field.
    Paginated (``page``, ``page_size``).

    ``sort``: newest first by default, or ``n_tool_calls``, ``tokens``, ``coverage``, descending with a
    leading "-". Each row: ``id``, ``run`` (its id), ``model``, ``suite``, ``task``, ``record_id``,
    ``outcome`` (correct, wrong, missing, error; ``answered`` in place of correct and wrong where
    references are not shown; a running episode's status), ``ended_by``, ``failure_modes`` (codes),
    ``n_turns``, ``n_tool_calls``, ``tokens``, ``evidence_coverage`` (null: not a signal episode, or not
    classified) and ``finished_at``.
    """

    def get(self, request):
        staff, references = is_staff(request), shows_references(request)
        try:
            query = _query(serializers.EpisodeQuerySerializer, request, staff=staff, references=references)
        except ValidationError as exc:
            if "suite" in exc.detail:
                raise NotFound(f"no suite {request.query_params['suite']}") from None
            raise
        return _paginated(self, episode_search(request, **query), serializers.EpisodeSearchRowSerializer,
                          references=references)


class TaskListView(Endpoint):
    """``GET /api/tasks/``: the six tasks, paginated like every list."""

    def get(self, request):
        return _paginated(self, api_reads.task_list(), serializers.TaskSerializer)


class InstanceListView(Endpoint):
    """``GET /api/instances/?suite=S[&task=Tn]``: references and other hidden fields for staff only.

    Staff get them in the release's order; anyone else by record id (random), since the release's
    order follows the labels in some tasks. A held-out suite's instances are listed to staff only.
    """

    def get(self, request):
        query = _query(serializers.InstanceQuerySerializer, request)
        key = shows_answer_key(request)
        suite = Suite.objects.filter(name=query["suite"]).first()
        if suite is None or not shows_items(request, suite):
            raise NotFound(f"no suite {query['suite']}")
        instances = api_reads.instance_list(**query, release_order=key)
        return _paginated(self, instances, serializers.InstanceSerializer, include_hidden=key)


class ItemListView(Endpoint):
    """``GET /api/items/?suite=S&task=Tn[&runs=comparable|all][&sort=…][&flag=…]``: a task's item analysis, paginated.

    Per instance of the task on the suite, over the runs that played it: ``instance`` (its id on
    this site), ``record_id``, ``n_runs``; ``solve_rate`` (T1–T4: the share of runs correct on it, a
    run of several epochs counting its mean correctness over epochs) or ``mean_score`` (T5: the
    record's Event-F1, a seizure-free record answered with silence counting 1; T6: the night's
    macro-F1); ``discrimination``, the corrected item-total correlation (across runs, the instance's
    correctness or score against the run's task score without it, by the task's own metric; null
    with fewer than 3 runs or where either side is constant); ``flag``: ``solved_by_all`` (every
    run's value at its maximum, 1), ``solved_by_none`` (every one 0) or null. The figures are null
    for an instance no run played.

    Beside ``count``, ``next``, ``previous`` and ``results``, the selection: ``suite``, ``task``,
    ``value`` (``solve_rate`` or ``mean_score``), ``runs`` (the runs counted: on the board with the
    paper's rows ``comparable``, those comparable with them, by default, or ``all``; on any other
    board always ``all``), ``run_ids``, ``n_published_rows`` (the paper's rows on the board, never
    counted: they give no per-instance results), ``sort``, ``flag`` and ``scores_hidden``.

    ``sort``: ``discrimination`` (the default: lowest, the most suspect, first), ``score`` (the
    solve rate or mean score) or ``n_runs``, descending with a leading "-", missing figures last and
    ties by record id. ``flag``: ``solved_by_all``, ``solved_by_none`` or ``flagged`` (either). A
    visitor who may not see references gets every figure as null, by record id, ``sort`` and
    ``flag`` unused and null (``scores_hidden``: true): with the answers the episodes show, the
    figures would tell the references. A held-out suite's items are listed to staff only (a 404
    to anyone else, as for a suite that does not exist).
    """

    def get(self, request):
        query = _query(serializers.ItemQuerySerializer, request)
        suite = Suite.objects.filter(name=query["suite"]).first()
        if suite is None or not shows_items(request, suite):
            raise NotFound(f"no suite {query['suite']}")
        analysis = item_reads.item_analysis(suite=suite.name, task=query["task"], runs=query.get("runs"))
        figures = shows_references(request, suite)
        rows = item_reads.listed_items(analysis, sort=query["sort"], flag=query.get("flag"), figures=figures)
        head = {
            "suite": analysis.suite,
            "task": analysis.task,
            "value": analysis.value_name,
            "runs": analysis.runs,
            "run_ids": analysis.run_ids,
            "n_published_rows": analysis.n_published,
            "sort": query["sort"] if figures else None,
            "flag": query.get("flag") if figures else None,
            "scores_hidden": not figures,
        }
        return _paginated(self, rows, serializers.ItemSerializer, head=head)
