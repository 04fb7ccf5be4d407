"""A run played in this process: episodes on a thread pool, tool calls in tool processes."""
import pytest

from runs.models import Episode, Status, Step
from runs.queue import local
from tests.runs.episode_server import EpisodeLLM
from tests.runs.queue.helpers import model_run
from tests.runs.worker import file_database

Kind = Step.Kind


@pytest.fixture
def shared_database(tmp_path, django_db_setup, django_db_blocker):
    with django_db_blocker.unblock(), file_database(tmp_path / "db.sqlite3"):
        yield


def tiny_suite(code: str, count: int):
    """A suite of ``count`` instances of task ``code``, each a copy of its tiny instance under its own ids."""
    from benchmark.models import Instance, Release, Suite, Task
    from tests.conftest import TINY_INSTANCES

    suite = Suite.objects.create(name="tiny", release=Release.objects.create(name="tiny", version="1", source="tests"))
    task, tiny = Task.objects.get(code=code), TINY_INSTANCES[code]
    for number in range(count):
        Instance.objects.create(suite=suite, task=task, record_id=f"rec-{number}", position=number,
                                **{**tiny, "scenario_id": f"{tiny['scenario_id']}_{number}"})  # fmt: skip
    return suite


@pytest.mark.sqlite_file
def test_a_sync_run_plays_model_episodes_on_a_thread_pool(shared_database, monkeypatch):
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = tiny_suite("T1", 4)
    with EpisodeLLM(tool_calls=0, delay_sec=0.3) as server:
        run = model_run(suite, server.api_base, limits={"concurrency": 4})
        ended = []
        local.run_sync(run_id=run.pk, concurrency=4, on_episode=lambda episode, error: ended.append(error))

    assert ended == [None] * 4
    episodes = list(run.episodes.all())
    assert {episode.status for episode in episodes} == {Status.COMPLETED}
    # All four waited on the model at once: their model calls overlap in time.
    assert max(e.started_at for e in episodes) < min(e.finished_at for e in episodes)


@pytest.mark.sqlite_file
def test_a_sync_run_on_a_thread_pool_makes_its_tool_calls_in_tool_processes_with_the_same_answers(
    shared_database, monkeypatch
):
    from pathlib import Path

    from tools_app import call_tool
    from tools_app.processes import ToolProcesses

    made = []

    class CountedProcesses(ToolProcesses):
        def call(self, path, tool_name, arguments, **options):
            made.append(tool_name)
            return super().call(path, tool_name, arguments, **options)

    counted = CountedProcesses(2)
    monkeypatch.setattr(local, "shared_tool_processes", lambda: counted)
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test")
    suite = tiny_suite("T3", 3)
    # A header tool, answered in this process, then one that reads samples, made in a tool process.
    with EpisodeLLM(tool_calls=2, tools=("get_recording_info", "compute_temporal_features")) as server:
        run = model_run(suite, server.api_base, tasks=("T3",), limits={"concurrency": 3})
        try:
            local.run_sync(run_id=run.pk, concurrency=3)
        finally:
            counted.close()

    steps = list(Step.objects.filter(episode__run=run, kind=Step.Kind.TOOL_CALL).select_related("episode__instance"))
    assert len(steps) == 6 and sorted(made) == ["compute_temporal_features"] * 3 + ["get_recording_info"] * 3
    for step in steps:
        instance, record_id = step.episode.instance, step.episode.record_id
        here = call_tool(Path("tests") / instance.recording_path, step.tool_name, step.arguments, record_id=record_id,
                         metadata=instance.metadata)  # fmt: skip
        assert step.result["status"] == "ok" and step.result["content"] == here


@pytest.mark.django_db
def test_a_run_played_here_starts_its_longest_recordings_first(random_run):
    local.run_sync(run_id=random_run.pk)

    started = Episode.objects.filter(run=random_run).order_by("started_at")
    # T3's 23.6-s record, T2's 2-s segment, then T1's question, which has no recording
    assert [episode.instance.task.code for episode in started] == ["T3", "T2", "T1"]
