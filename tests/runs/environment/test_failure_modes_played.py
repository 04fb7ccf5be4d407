"""Failure modes of played episodes: one episode per mode, played on the demo release through the environment API
(the modes only a model's provider or a run's token cap can cause through the same engine, with a scripted model).

Each episode is classified when it ends with exactly the modes it shows, each pointing at steps it has; the search
across runs finds each mode in the episodes where it happened and nowhere else, and finds them by its other filters.
"""
from dataclasses import dataclass, field

import pytest
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from benchmark.models import ModelSpec
from runs.episode.engine import run_episode
from runs.failures import CODES
from runs.model.reply import ProviderError
from runs.models import Episode, Status
from runs.services import create_run
from tests.runs.demo_suite import import_demo
from tests.runs.environment.test_api import act, agent_client, external_run, start
from tests.runs.scripted_agent import ScriptedAgent

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def call(tool: str, **arguments) -> dict:
    """A tool call on the episode's record (filled in when played)."""
    return {"action": "tool_call", "tool_name": tool, "arguments": arguments}


def answer(**fields) -> dict:
    return {"action": "final_answer", **fields}


def hypnogram(labels: list[str]) -> dict:
    """A T6 final answer giving ``labels`` epoch by epoch, as runs."""
    runs, start = [], 0
    for index in range(1, len(labels) + 1):
        if index == len(labels) or labels[index] != labels[start]:
            runs.append({"start_epoch": start, "end_epoch": index - 1, "stage": labels[start]})
            start = index
    return answer(hypnogram_rle=runs, architecture={"REM_pct": 0.2, "N3_pct": 0.15, "sleep_efficiency": 0.85})


def gold_labels(instance) -> list[str]:
    return list(instance.reference["epoch_labels_aasm"])


CLEAN = answer(classification="clean", findings=[])
NORMAL = answer(classification="normal", findings=[])
NO_SEIZURE = answer(seizure_events=[])


@dataclass
class Scenario:
    """One episode: the task and instance it plays, how (the agent's actions, or a scripted model's
    replies), the run's limits, and the failure modes it must show, exactly."""

    task: str
    position: int
    actions: object  # a list of actions, or a function of the instance giving them
    modes: set[str]
    limits: dict = field(default_factory=dict)
    model: str = ""  # a scripted model plays it through the engine: "scripted" or the provider failure it meets

    def played_actions(self, instance) -> list[dict]:
        return self.actions(instance) if callable(self.actions) else self.actions


SCENARIOS = {
    "answered blind": Scenario("T2", 0, [CLEAN], {"no_tool_call"}),
    "header only": Scenario("T3", 0, [call("get_recording_info"), call("get_channel_list"), NORMAL],
                            {"no_signal_read"}),
    "asked twice": Scenario("T2", 1, [call("compute_psd"), call("compute_psd"), CLEAN], {"repeated_call"}),
    "tool errors": Scenario("T3", 1, [
        call("compute_band_power", tmin=10, tmax=5), call("compute_band_power", channels=["NOPE"]),
        call("compute_temporal_features", tmin=3, tmax=1), call("compute_psd"), NORMAL,
    ], {"tool_errors"}),
    "rescoped in a loop": Scenario("T5", 0, [
        call("compute_windowed_features", window_sec=0.5), call("compute_windowed_features", window_sec=1),
        call("compute_windowed_features", window_sec=2), call("compute_noise_metrics"), NO_SEIZURE,
    ], {"rescope_loop", "tool_errors"}),  # three output_too_large are three errors too
    "invalid answer": Scenario("T1", 0, [answer(answer="Z")] * 4, {"invalid_answer", "format_failure"}),
    "a glance at the night": Scenario("T6", 1, lambda instance: [
        call("compute_band_power", tmin=0, tmax=600), hypnogram(gold_labels(instance)),
    ], {"low_coverage"}),
    "seizures missed": Scenario("T5", 2, [call("compute_noise_metrics"), NO_SEIZURE], {"missed_all_seizures"}),
    "false alarm": Scenario("T5", 0, [
        call("compute_noise_metrics"), answer(seizure_events=[{"onset_sec": 100, "offset_sec": 160}]),
    ], {"false_alarm"}),
    "one stage all night": Scenario("T6", 0, lambda instance: [
        call("compute_noise_metrics"), hypnogram(["W"] * instance.n_epochs),
    ], {"constant_hypnogram"}),
    "night cut short": Scenario("T6", 1, lambda instance: [
        call("compute_noise_metrics"), *[hypnogram(gold_labels(instance)[:-30])] * 4,
    ], {"wrong_length", "invalid_answer", "format_failure"}),  # the schema asks for every epoch: refused 4 times
    "out of turns": Scenario("T2", 2, [call("compute_psd"), call("compute_temporal_features")], {"turn_limit"},
                             limits={"max_turns": 2}),
    "out of tool calls": Scenario("T2", 3, [
        call("compute_psd"), *(call("compute_psd", tmin=0, tmax=second) for second in (1, 1.5, 1.8, 1.9)),
    ], {"tool_call_limit"}, limits={"max_tool_calls": 1}),
    "token cap": Scenario("T2", 4, [call("compute_psd"), CLEAN], {"cost_cap"}, limits={"max_total_tokens": 10},
                          model="scripted"),
    "provider down": Scenario("T3", 2, [], {"provider_error"}, model="provider_error"),
    "context outgrown": Scenario("T3", 3, [], {"context_exceeded"}, model="context_exceeded"),
}  # fmt: skip


class FailingModel:
    """A model whose provider fails at the first turn, the context window exceeded or not."""

    protocol = "text"

    def __init__(self, context_exceeded: bool):
        from runs.cost import Pricing

        self.pricing = Pricing.free()
        self.context_exceeded = context_exceeded

    def respond(self, messages, *, tools=None):
        raise ProviderError("ServiceUnavailable: try later", context_exceeded=self.context_exceeded)


def play(suite, name: str, scenario: Scenario) -> Episode:
    """Play ``scenario`` on its own run (named after it) and return its ended episode."""
    if scenario.model:
        run = create_run(suite=suite, model=ModelSpec.objects.create(name=name, provider_model=f"openai/{name}"),
                         tasks=[scenario.task], limits=scenario.limits)
        episode = run.episodes.get(instance__position=scenario.position)
        if scenario.model == "scripted":
            agent = ScriptedAgent([
                {**action, "arguments": {**action["arguments"], "record_id": episode.record_id}}
                if action["action"] == "tool_call" else action
                for action in scenario.played_actions(episode.instance)
            ])
        else:
            agent = FailingModel(context_exceeded=scenario.model == "context_exceeded")
        run_episode(episode_id=episode.pk, agent=agent)
        return Episode.objects.get(pk=episode.pk)
    run, key = external_run(suite, tasks=(scenario.task,), agent=name.replace(" ", "-"), limits=scenario.limits)
    client = agent_client(key)
    episode = run.episodes.get(instance__position=scenario.position)
    started = start(client, run, record_id=episode.record_id).data
    assert started["episode"] == episode.pk
    for action in scenario.played_actions(episode.instance):
        if action["action"] == "tool_call":
            action = {**action, "arguments": {"record_id": episode.record_id, **action["arguments"]}}
        reply = act(client, episode.pk, action).data
        if reply["done"]:
            break
    else:
        raise AssertionError(f"{name}: the episode did not end: {reply}")
    return Episode.objects.get(pk=episode.pk)


@pytest.fixture(scope="module")
def played(django_db_setup, django_db_blocker):
    """Every scenario played once on the demo release; the episodes by scenario. Removed after the module."""
    with django_db_blocker.unblock():
        cache.clear()
        suite = import_demo(suite_name="modes")
        try:
            yield {name: play(suite, name, scenario) for name, scenario in SCENARIOS.items()}
        finally:
            suite.runs.all().delete()
            ModelSpec.objects.filter(runs__isnull=True).delete()
            release = suite.release
            suite.delete()
            release.delete()


def codes(episode: Episode) -> set[str]:
    return {mode["code"] for mode in episode.failure_modes}


def test_every_mode_is_played_by_some_scenario():
    assert set().union(*(scenario.modes for scenario in SCENARIOS.values())) == set(CODES)


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_episode_shows_exactly_its_modes_each_at_steps_it_has(played, name):
    episode = played[name]
    assert episode.status in (Status.COMPLETED, Status.FAILED) and episode.failure_modes is not None
    assert codes(episode) == SCENARIOS[name].modes, [mode["code"] for mode in episode.failure_modes]
    indices = set(episode.steps.values_list("index", flat=True))
    for mode in episode.failure_modes:
        assert mode["steps"] and set(mode["steps"]) <= indices, mode
    assert episode.failure_codes == "".join(f" {mode['code']}" for mode in episode.failure_modes) + " "


def searched(**query) -> set[str]:
    """The scenarios whose episodes ``/api/episodes/`` finds for ``query`` on the modes suite."""
    response = APIClient().get(reverse("api:episodes"), {"suite": "modes", "page_size": 100, **query})
    assert response.status_code == 200, response.content
    ids = {row["id"] for row in response.json()["results"]}
    return {name for name, episode in searched.played.items() if episode.pk in ids}


@pytest.fixture
def search(played):
    searched.played = played
    cache.clear()  # the API's throttle
    return searched


@pytest.mark.parametrize("code", CODES)
def test_the_search_finds_each_mode_where_it_happened_and_nowhere_else(search, code):
    assert search(failure_mode=code) == {name for name, scenario in SCENARIOS.items() if code in scenario.modes}


def test_the_search_finds_the_played_episodes_by_its_other_filters(search, played):
    assert search() == set(SCENARIOS)
    assert search(ended_by="turn_limit") == {"out of turns"}
    assert search(ended_by="format_failure") == {"invalid answer", "night cut short"}
    assert search(ended_by="provider_error") == {"provider down"}
    assert search(tool="get_channel_list") == {"header only"}
    assert search(tool="compute_windowed_features", tool_min=3) == {"rescoped in a loop"}
    assert search(tool="compute_psd", tool_min=2) == {"asked twice"}
    assert search(task="T6", coverage_max=0.1) == {"a glance at the night"}
    assert search(task="T6", coverage_min=1) == {"one stage all night", "night cut short"}
    assert search(tool_calls_max=0, task="T2") == {"answered blind"}
    assert search(outcome="error") == {"provider down", "context outgrown"}
    assert search(outcome="missing") == {"out of turns", "out of tool calls", "token cap"}
    assert search(failure_mode="tool_errors", task="T5") == {"rescoped in a loop"}
    assert search(q="Output too large") == set()  # a tool's words are not the model's reply


def test_the_episode_page_links_each_mode_to_its_steps(client, played):
    episode = played["tool errors"]
    html = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    (mode,) = episode.failure_modes
    assert mode["code"] == "tool_errors" and len(mode["steps"]) == 3
    for step in mode["steps"]:
        assert f"#step-{step}" in html
