"""One read-only DRF view per endpoint: validate the query, call a selector, serialize.

Permissions and throttles are the project defaults (``REST_FRAMEWORK`` in settings): anyone may
read, nothing here writes. The suite's answer key (instance references) goes to staff only; an
episode's score, which tells its reference, follows the pages' rule: staff always, visitors when
``EEGAB_PUBLIC_REFERENCES`` is on.
"""
from django.conf import settings
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from leaderboard.access import has_ended, is_staff
from leaderboard import selectors
from leaderboard.api import serializers
from runs.models import Episode, Run


class Pagination(PageNumberPagination):
    """The API's pagination (``DEFAULT_PAGINATION_CLASS``): pages of ``PAGE_SIZE`` items, ``?page_size=`` up to 500."""

    page_size_query_param = "page_size"
    max_page_size = 500


def _query(serializer_class, request) -> dict:
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def _paginated(view: APIView, queryset, serializer_class, **context) -> Response:
    paginator = api_settings.DEFAULT_PAGINATION_CLASS()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True, context=context).data)


def _is_staff(request) -> bool:
    return is_staff(request)


def _scores_visible(request) -> bool:
    return _is_staff(request) or bool(getattr(settings, "EEGAB_PUBLIC_REFERENCES", False))


class LeaderboardView(APIView):
    """``GET /api/leaderboard/?suite=S[&source=run|published][&family=F][&weights=open|proprietary]``."""

    def get(self, request):
        try:
            board = selectors.leaderboard(**_query(serializers.LeaderboardQuerySerializer, request))
        except selectors.UnknownBoard as exc:
            raise NotFound(str(exc)) from None
        return Response(serializers.LeaderboardSerializer(board).data)


class RunListView(APIView):
    """``GET /api/runs/[?suite=S][&status=…][&model=…]``, newest first, paginated."""

    def get(self, request):
        runs = selectors.run_list(**_query(serializers.RunQuerySerializer, request))
        return _paginated(self, runs, serializers.RunSerializer)


class RunDetailView(APIView):
    """``GET /api/runs/<id>/``: the run, its scores and every episode."""

    def get(self, request, run_id: int):
        try:
            detail = selectors.run_detail(run_id=run_id)
        except Run.DoesNotExist:
            raise NotFound(f"no run {run_id}") from None
        context = {"scores_visible": _scores_visible(request), "staff": _is_staff(request)}
        return Response(serializers.RunDetailSerializer(detail, context=context).data)


class EpisodeDetailView(APIView):
    """``GET /api/episodes/<id>/``: the episode, its outcome and its steps."""

    def get(self, request, episode_id: int):
        try:
            detail = selectors.episode_detail(episode_id=episode_id)
        except Episode.DoesNotExist:
            raise NotFound(f"no episode {episode_id}") from None
        if not _is_staff(request) and not has_ended(detail.episode):
            raise NotFound(f"no episode {episode_id}")  # nothing of a running episode, as if it did not exist
        context = {"scores_visible": _scores_visible(request), "staff": _is_staff(request)}
        data = serializers.EpisodeDetailSerializer(detail, context=context).data
        return Response(data)


class TaskListView(APIView):
    """``GET /api/tasks/``: the six tasks, paginated like every list."""

    def get(self, request):
        return _paginated(self, selectors.task_list(), serializers.TaskSerializer)


class InstanceListView(APIView):
    """``GET /api/instances/?suite=S[&task=Tn]``: references and other hidden fields for staff only."""

    def get(self, request):
        instances = selectors.instance_list(**_query(serializers.InstanceQuerySerializer, request))
        return _paginated(self, instances, serializers.InstanceSerializer, include_hidden=_is_staff(request))
