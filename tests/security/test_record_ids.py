"""An agent's record id is its episode's own: it leads to no other episode of the same instance."""
import json
import re

import pytest

from benchmark.models import ModelSpec
from runs.episode.engine import run_episode
from runs.interchange.export import export_run
from runs.models import Episode
from runs.services import create_run, episode_record_ids
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    return import_demo()


def heuristic_run(suite, name):
    model, _ = ModelSpec.objects.get_or_create(name="baseline/heuristic", provider_model="baseline/heuristic")
    return create_run(suite=suite, model=model, tasks=["T2", "T3", "T4", "T5", "T6"], name=name)


def test_the_same_instance_in_two_runs_has_two_record_ids(demo):
    first, second = heuristic_run(demo, "first"), heuristic_run(demo, "second")
    ids = {}
    for episode in Episode.objects.filter(run__in=[first, second]).select_related("instance"):
        ids.setdefault(episode.instance_id, []).append(episode.record_id)
        shape = re.fullmatch(r"(.*?)([0-9]+)", episode.instance.release_record_id)
        assert re.fullmatch(rf"{re.escape(shape[1])}[0-9]{{{len(shape[2])}}}", episode.record_id)
        assert episode.record_id not in (episode.instance.release_record_id, episode.instance.record_id)
    assert all(len(set(pair)) == 2 for pair in ids.values())
    for run in (first, second):  # within a run, every episode has an id of its own
        record_ids = list(run.episodes.values_list("record_id", flat=True))
        assert len(set(record_ids)) == len(record_ids)


def test_the_agent_sees_and_the_tools_answer_only_its_episodes_id(demo):
    run = heuristic_run(demo, "one")
    episode = run.episodes.select_related("instance").filter(instance__task__code="T3").first()
    played = run_episode(episode_id=episode.pk)
    prompt = played.steps.get(kind="prompt").result["messages"][1]["content"]
    assert f"`{episode.record_id}`" in prompt and episode.instance.record_id not in prompt
    calls = list(played.steps.filter(kind="tool_call"))
    assert calls and all(call.arguments["record_id"] == episode.record_id for call in calls)
    assert all("error" not in call.result["content"] for call in calls)

    from runs.episode.opening import episode_tools

    refused = episode_tools(episode)(episode.instance, "get_recording_info", {"record_id": episode.instance.record_id})
    assert refused["error_code"] == "unknown_record"  # the suite's id of the instance opens nothing


def test_an_official_export_names_each_record_by_the_releases_own_id(demo, tmp_path):
    run = heuristic_run(demo, "exported")
    episode = run.episodes.select_related("instance").filter(instance__task__code="T3").first()
    run_episode(episode_id=episode.pk)
    export_run(run=run, out_dir=tmp_path)
    text = (tmp_path / "T3" / "trajectories" / f"{episode.instance.scenario_id}.jsonl").read_text()
    assert episode.record_id not in text and episode.instance.release_record_id in text
    events = [json.loads(line) for line in text.splitlines()]
    call = next(event for event in events if event["event_type"] == "tool_call")
    assert call["tool_call"]["arguments"]["record_id"] == episode.instance.release_record_id
    assert call["observation"]["content"]["record_id"] == episode.instance.release_record_id


def test_record_ids_of_a_shape_that_has_run_out_are_a_clear_error(demo):
    instance = demo.instances.get(task__code="T3", position=0)
    instance.release_record_id = "7"  # one digit: nine ids besides the release's own
    instance.save()
    taken = episode_record_ids([instance] * 9)
    assert set(taken) == set("012345689")  # one run's episodes never share an id
    with pytest.raises(ValueError, match="every record id of the shape N is taken"):
        episode_record_ids([instance] * 10)
