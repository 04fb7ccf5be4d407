"""The environment API, mounted at /api/env/: external agent frameworks play a run's episodes over HTTP.

- ``POST /api/env/runs/`` (staff, signed in): open an external run of a named agent on a suite;
  the answer holds the run's key, shown this once (``manage.py create_env_token`` does the same).
  ``GET /api/env/runs/`` (a key): the key's run and its progress.
- ``POST /api/env/runs/<id>/episodes/`` (the run's key): start the next pending episode, or the one
  on ``record_id``; returns the system and user prompts, the tool schemas and the output schema.
- ``POST /api/env/episodes/<id>/actions/`` (the run's key): one action, the official JSON
  (``{"action": "tool_call", "tool_name", "arguments"}`` or ``{"action": "final_answer", …}``);
  returns the observation, or the score when the episode ends.

A key is sent as ``Authorization: Bearer <key>`` and is good for its own run only. Each key is
throttled on its own (``EEGAB_ENV_API_RATE``, default 600/min). A body is one JSON object, read
by ``runs.environment.bodies`` within its limits (a 4xx otherwise, before anything is written).
An episode with no action for ``EEGAB_ENV_IDLE_SEC`` (default 30 min) is ended as abandoned. The
services are in ``runs.environment.service``.
"""
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.shortcuts import get_object_or_404
from django.urls import reverse
from rest_framework import serializers, status
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, PermissionDenied
from rest_framework.permissions import BasePermission, IsAdminUser
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from benchmark.models import Suite
from benchmark.wording import PROMPT_SETS
from runs.environment import bodies
from runs.environment import service as environment
from runs.limits import check_limits
from runs.models import EnvironmentToken, Episode, Run

# ── authentication, permission, throttle ─────────────────────────────────────────────────────


class EnvironmentTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <key>``: the request acts for the key's run (``request.auth`` is its token)."""

    keyword = b"bearer"

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword:
            return None
        if len(header) != 2:
            raise AuthenticationFailed("Send the key as 'Authorization: Bearer <key>'.")
        token = environment.token_for_key(header[1].decode("latin-1"))
        if token is None:
            raise AuthenticationFailed("Unknown or revoked environment key.")
        return (AnonymousUser(), token)

    def authenticate_header(self, request):
        return 'Bearer realm="environment"'


class HasEnvironmentToken(BasePermission):
    message = "Send this run's environment key as 'Authorization: Bearer <key>'."

    def has_permission(self, request, view):
        return isinstance(request.auth, EnvironmentToken)


class EnvironmentRateThrottle(SimpleRateThrottle):
    """Requests per key (so per run), at ``settings.EEGAB_ENV_API_RATE``."""

    scope = "env"

    def get_rate(self):
        return settings.EEGAB_ENV_API_RATE

    def get_cache_key(self, request, view):
        if not isinstance(request.auth, EnvironmentToken):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}


def _own_run(request, run_id: int) -> None:
    if request.auth.run_id != run_id:
        raise PermissionDenied(f"This key is for run {request.auth.run_id}, not run {run_id}.")


def _refused(exc: environment.EnvironmentRefused) -> Response:
    return Response({"detail": str(exc)}, status=exc.status)


class _JSONBodies:
    """Views whose bodies are read by ``runs.environment.bodies`` (by the view itself, never as ``request.data``)."""

    parser_classes = [bodies.JSONObjectParser]


class _AgentView(_JSONBodies, APIView):
    authentication_classes = [EnvironmentTokenAuthentication]
    permission_classes = [HasEnvironmentToken]
    throttle_classes = [EnvironmentRateThrottle]


# ── serializers ──────────────────────────────────────────────────────────────────────────────


class OpenRunInput(serializers.Serializer):
    agent = serializers.CharField(max_length=100)
    suite = serializers.SlugRelatedField(slug_field="name", queryset=Suite.objects.all())
    tasks = serializers.ListField(child=serializers.CharField(max_length=4), allow_empty=False)
    name = serializers.CharField(max_length=200, required=False, default="")
    limit = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    limits = serializers.DictField(required=False, default=dict)
    prompt_set = serializers.ChoiceField(choices=PROMPT_SETS, required=False, allow_null=True, default=None)

    def validate_limits(self, value):
        try:
            return check_limits(dict(value))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class StartEpisodeInput(serializers.Serializer):
    record_id = serializers.CharField(max_length=100, required=False, default="")


# ── views ────────────────────────────────────────────────────────────────────────────────────


class RunListView(_JSONBodies, APIView):
    """``GET /api/env/runs/`` (a key): the key's run and its progress.

    ``POST /api/env/runs/`` (staff, signed in) ``{"agent", "suite", "tasks", "name"?, "limit"?, "limits"?,
    "prompt_set"?}``: open an external run (the prompt set its agent reads: official where the package
    is installed, else platform); the answer shows its key once.
    """

    authentication_classes = [EnvironmentTokenAuthentication, SessionAuthentication]
    throttle_classes = [EnvironmentRateThrottle]

    def get_permissions(self):
        return [HasEnvironmentToken()] if self.request.method == "GET" else [IsAdminUser()]

    def get(self, request):
        run = Run.objects.select_related("model", "suite").get(pk=request.auth.run_id)
        return Response(_run_body(run))

    def post(self, request):
        data = OpenRunInput(data=bodies.read_json_object(request))
        data.is_valid(raise_exception=True)
        try:
            run, key = environment.open_external_run(created_by=request.user, **data.validated_data)
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({**_run_body(run), "key": key}, status=status.HTTP_201_CREATED)


def _run_body(run: Run) -> dict:
    return {
        "run": run.pk,
        "agent": run.model.name,
        "suite": run.suite.name,
        "tasks": run.tasks,
        "status": run.status,
        "progress": run.progress(),
        "prompt_set": run.prompt_set,
        # What the paper's runs were called with; the agent drives its own model, so these are advice.
        "settings": run.settings,
    }


class EpisodeStartView(_AgentView):
    """``POST /api/env/runs/<id>/episodes/`` ``{"record_id"?}``: start an episode of the key's run."""

    def post(self, request, run_id: int):
        _own_run(request, run_id)
        data = StartEpisodeInput(data=bodies.read_json_object(request))
        data.is_valid(raise_exception=True)
        run = get_object_or_404(Run, pk=run_id)
        environment.end_idle_episodes(run_id=run.pk)
        try:
            start = environment.start_episode(run=run, **data.validated_data)
        except environment.EnvironmentRefused as exc:
            return _refused(exc)
        episode = start.episode
        body = {
            "episode": episode.pk,
            "run": run.pk,
            "record_id": episode.record_id,
            "task": episode.instance.task.code,
            "messages": start.messages,
            "system_prompt": start.messages[0]["content"],
            "user_prompt": start.messages[1]["content"],
            "tools": start.tools,
            "output_schema": start.output_schema,
            "limits": start.limits,
            "prompt_set": run.prompt_set,
            "actions_url": request.build_absolute_uri(reverse("env:actions", args=[episode.pk])),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class ActionView(_AgentView):
    """``POST /api/env/episodes/<id>/actions/``: one action on an episode of the key's run.

    Any JSON object is a turn: one the official parser cannot read as an action gets the
    loop's nudge and counts against the repair nudges, as a model's unreadable turn does.
    """

    def post(self, request, episode_id: int):
        episode = get_object_or_404(Episode, pk=episode_id)
        if episode.run_id != request.auth.run_id:
            raise PermissionDenied(f"Episode {episode_id} is not an episode of this key's run.")
        action = bodies.read_json_object(request)
        environment.end_idle_episodes(run_id=episode.run_id)
        try:
            outcome = environment.take_action(episode=episode, action=action)
        except environment.EnvironmentRefused as exc:
            return _refused(exc)
        return Response(outcome.to_dict())
