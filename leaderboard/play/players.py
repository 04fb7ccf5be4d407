"""Play an episode in the browser: a person's episodes, played through the environment API's services.

A player (a user in the ``players`` group, or staff) has one run per suite: an external run of
the agent ``human/<username>`` on all the suite's tasks (``runs.environment``). What they submit
on the play page becomes the action an external agent posts (``take_action``), so the budget,
the output limits, the confinement to the record, the output schema and its repair messages, the
step record and the scoring are exactly the agents'. The instances of a task come to each player
in a random order of their own (seeded by user and suite), skipping those they have played.

The forms of the page are built here from JSON schemas: each tool's arguments (with the record's
channels and the ranges of its times and frequencies) and the task's output schema.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404

from benchmark.models import Suite
from leaderboard.explorer import charts as episode_charts
from runs.environment import service as environment
from runs.models import EnvironmentToken, Episode, Run, Status, Step
from tools_app.signal.windowed import FEATURES

PLAYERS_GROUP = "players"
ENDED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


# ── who plays, and their runs ─────────────────────────────────────────────────────────────────


def is_player(user) -> bool:
    """Whether ``user`` may play: signed in, and staff or in the ``players`` group."""
    if not (user is not None and user.is_authenticated):
        return False
    return user.is_staff or user.groups.filter(name=PLAYERS_GROUP).exists()


def add_player(*users) -> Group:
    """Put ``users`` in the ``players`` group, created when missing; return the group."""
    group, _ = Group.objects.get_or_create(name=PLAYERS_GROUP)
    group.user_set.add(*users)
    return group


def agent_name(user) -> str:
    """The name of ``user``'s runs' model: ``human/<username>``."""
    return environment.human_model_name(user.get_username())


def player_runs(user) -> QuerySet[Run]:
    return Run.objects.filter(model__provider_model=agent_name(user), model__family=environment.HUMAN_FAMILY)


def player_episodes(user) -> QuerySet[Episode]:
    return Episode.objects.filter(run__in=player_runs(user))


def player_run(*, user, suite: Suite) -> Run:
    """``user``'s run on ``suite``, opened on all the suite's tasks the first time they play it.

    The run is an external run whose environment key is revoked at once: a person plays it
    from the site only, never over the environment API. The user's row is locked while the run
    is looked for and made, so two requests at once (a double click, two tabs) make one run.
    """
    run = player_runs(user).filter(suite=suite).order_by("-id").first()
    if run is not None:
        return run
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=user.pk)
        run = player_runs(user).filter(suite=suite).order_by("-id").first()
        if run is not None:
            return run
        tasks = sorted(set(suite.instances.values_list("task__code", flat=True)))
        run, _ = environment.open_external_run(
            agent=user.get_username(), suite=suite, tasks=tasks, name=f"{agent_name(user)} on {suite.name}",
            created_by=user, human=True,
        )
        EnvironmentToken.objects.filter(run=run).update(revoked=True)
    return run


def own_episode(user, pk: int) -> Episode:
    """Episode ``pk`` if it is one of ``user``'s own; else a 404, as for an episode that does not exist."""
    episode = player_episodes(user).select_related("run__suite", "run__model", "instance__task").filter(pk=pk).first()
    if episode is None:
        raise Http404("No such episode.")
    return episode


# ── the order of play ─────────────────────────────────────────────────────────────────────────


def play_order(*, user, suite: Suite, task: str) -> list[int]:
    """The ids of ``suite``'s ``task`` instances in ``user``'s own random order (the same at every visit)."""
    ids = list(suite.instances.filter(task__code=task).order_by("position", "id").values_list("id", flat=True))
    rng = np.random.default_rng([user.pk, suite.pk, *task.encode()])
    return [ids[index] for index in rng.permutation(len(ids))]


def next_episode(*, user, suite: Suite, task: str) -> Episode | None:
    """The episode of ``user``'s run on the first ``task`` instance, in their order, they have not played."""
    run = player_run(user=user, suite=suite)
    unplayed = run.episodes.filter(instance__task__code=task, status=Status.PENDING)
    episode_of = dict(unplayed.values_list("instance_id", "id"))
    for instance_id in play_order(user=user, suite=suite, task=task):
        if instance_id in episode_of:
            return run.episodes.get(pk=episode_of[instance_id])
    return None


def start_play(*, user, suite: Suite, task: str) -> Episode:
    """Start ``user``'s next unplayed ``task`` instance of ``suite``; ValueError when none is left."""
    if not suite.instances.filter(task__code=task).exists():
        raise ValueError(f"Suite {suite.name} has no {task} instance.")
    episode = next_episode(user=user, suite=suite, task=task)
    if episode is None:
        raise ValueError(f"You have played every {task} instance of {suite.name}.")
    return environment.start_episode(run=episode.run, record_id=episode.record_id).episode


def task_progress(user, suite: Suite) -> list[dict]:
    """Per task of ``suite``: its instances, and how many ``user`` has finished and left unfinished."""
    instances = Counter(suite.instances.values_list("task__code", flat=True))
    played = player_episodes(user).filter(run__suite=suite)
    finished = Counter(played.filter(status__in=ENDED).values_list("instance__task__code", flat=True))
    unfinished = Counter(played.filter(status=Status.RUNNING).values_list("instance__task__code", flat=True))
    return [
        {"task": code, "instances": instances[code], "finished": finished[code], "unfinished": unfinished[code]}
        for code in sorted(instances)
    ]


# ── forms from JSON schemas ───────────────────────────────────────────────────────────────────


@dataclass
class Field:
    """One input of a play form, from one JSON-schema property.

    ``kind``: ``fixed`` (the record id), ``choice`` (an enum), ``multichoice`` (a list of known
    names: channels, windowed features), ``lines`` (a list of free strings, one per line),
    ``text``, ``number``, ``integer``, ``boolean``, ``rows`` (a list of objects, ``children`` being
    one row's fields) or ``group`` (an object, ``children`` its fields).
    """

    name: str
    kind: str
    description: str = ""
    required: bool = False
    default: Any = None
    choices: list = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    value: str = ""
    children: list[Field] = field(default_factory=list)


@dataclass(frozen=True)
class RecordFacts:
    """What the forms know of the episode's record: its id, channels, duration (s), Nyquist (Hz) and epochs."""

    record_id: str
    channels: list[str]
    duration_sec: float | None
    nyquist_hz: float | None
    n_epochs: int | None


def record_facts(episode: Episode) -> RecordFacts:
    """The episode's record as its forms need it, from what its player has been told.

    The channels are those of the player's own latest ``get_channel_list`` or ``get_recording_info``
    call in this episode: a model learns the names only by calling a tool too, so a player who has
    not yet called one types them. Duration, sampling rate and epochs are in the opening messages.
    """
    instance = episode.instance
    channels: list[str] = []
    told = (
        episode.steps.filter(kind=Step.Kind.TOOL_CALL, tool_name__in=("get_channel_list", "get_recording_info"),
                             result__status="ok")
        .order_by("-index").values_list("tool_name", "result").first()
    )  # fmt: skip
    if told is not None:
        tool_name, result = told
        content = (result or {}).get("content") or {}
        if tool_name == "get_channel_list":
            channels = [row["name"] for row in content.get("channels") or [] if isinstance(row, dict) and "name" in row]
        else:
            channels = [name for name in content.get("channel_names") or [] if isinstance(name, str)]
    return RecordFacts(
        record_id=episode.record_id,
        channels=channels,
        duration_sec=instance.recording_sec,
        nyquist_hz=instance.sfreq / 2 if instance.sfreq else None,
        n_epochs=instance.epochs_total,
    )


def _ranges(facts: RecordFacts) -> dict[str, tuple[float | None, float | None]]:
    """The range of each tool argument and answer field the schemas leave open, from the record."""
    time, frequency = (0, facts.duration_sec), (0, facts.nyquist_hz)
    last_epoch = facts.n_epochs - 1 if facts.n_epochs else None
    return {
        "tmin": time, "tmax": time, "window_sec": time, "step_sec": time, "onset_sec": time, "offset_sec": time,
        "fmin": frequency, "fmax": frequency, "line_freq": frequency,
        "min_amplitude_uv": (0, None), "max_candidates_per_channel": (1, None),
        "start_epoch": (0, last_epoch), "end_epoch": (0, last_epoch),
    }  # fmt: skip


def schema_fields(schema: Mapping, facts: RecordFacts) -> list[Field]:
    """The inputs of a form for an object ``schema`` (a tool's parameters, or an output schema)."""
    required = set(schema.get("required") or ())
    ranges = _ranges(facts)
    return [
        _field(name, prop, name in required, facts, ranges)
        for name, prop in (schema.get("properties") or {}).items()
    ]


def _field(name: str, prop: Mapping, required: bool, facts: RecordFacts, ranges: dict) -> Field:
    kind = prop.get("type", "string")
    made = Field(name=name, kind=kind, description=prop.get("description", ""), required=required,
                 default=prop.get("default"))
    if name == "record_id":
        made.kind, made.value = "fixed", facts.record_id
    elif prop.get("enum"):
        made.kind, made.choices = "choice", list(prop["enum"])
    elif kind in ("number", "integer"):
        low, high = ranges.get(name, (None, None))
        made.minimum = prop.get("minimum", low)
        made.maximum = prop.get("maximum", high)
    elif kind == "object":
        made.kind, made.children = "group", schema_fields(prop, facts)
    elif kind == "array":
        items = prop.get("items") or {}
        if items.get("type") == "object":
            made.kind, made.children = "rows", schema_fields(items, facts)
        elif name == "channels" and facts.channels:
            made.kind, made.choices = "multichoice", facts.channels
        elif name == "features":
            made.kind, made.choices = "multichoice", list(FEATURES)
        else:
            made.kind = "lines"
    elif kind != "boolean":
        made.kind = "text"
    return made


def tool_forms(tools: list[dict], facts: RecordFacts) -> list[dict]:
    """One form per tool the episode offers: its name, description and fields, from its function spec."""
    forms = []
    for spec in tools:
        function = spec.get("function", spec)
        forms.append({
            "name": function["name"],
            "description": function.get("description", ""),
            "fields": schema_fields(function.get("parameters") or {}, facts),
        })
    return forms


# ── the answer's live preview ─────────────────────────────────────────────────────────────────


def answer_preview(episode: Episode, answer: Mapping) -> dict | None:
    """The chart of an answer being written, as the episode page will show it, without the reference.

    T5: the seizure intervals on the record's timeline; T6: the hypnogram over the night; None otherwise.
    """
    return episode_charts.prediction_figure(episode.instance, dict(answer), references=False)
