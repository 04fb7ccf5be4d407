"""Summaries as pages read them: re-scored in memory when stale, once per change of the episodes."""
import numpy as np
import pytest

from leaderboard.models import RunSummary
from leaderboard.run_pages import selectors as run_reads
from leaderboard.summaries import scoring
from leaderboard.summaries.scoring import refresh_run_summary
from runs.models import Episode, Status
from tests.leaderboard.boards import add_run, answer, model_spec, official_suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(monkeypatch):
    """The tasks ``scoring.score_task`` scores, in order."""
    calls = []
    real = scoring.score_task
    monkeypatch.setattr(scoring, "score_task", lambda task, items: calls.append(task) or real(task, items))
    return calls


def t3_accuracy(run):
    return {task["task"]: task for task in run_reads.run_task_rows(run)}["T3"]["metrics"]["accuracy"]


def test_reads_of_a_stale_summary_rescore_once_per_change_and_write_nothing(scored):
    run = add_run(suite=official_suite(), model=model_spec("Live"), complete=0.5, skill=1.0)
    refresh_run_summary(run)
    stored = RunSummary.objects.get(run=run)
    pending = list(run.episodes.filter(instance__task__code="T3", status=Status.PENDING).select_related("instance__task"))
    first, rest = pending[0], pending[1:]
    Episode.objects.filter(pk=first.pk).update(status=Status.COMPLETED, prediction=answer(first.instance, True, None))
    scored.clear()

    before = [t3_accuracy(run) for _ in range(3)]
    assert scored == ["T3"]  # three reads, one re-score
    for episode in rest:
        Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED, prediction=answer(episode.instance, True, None))
    after = [t3_accuracy(run) for _ in range(2)]

    assert scored == ["T3", "T3"]
    assert before[0] == before[1] == before[2] < after[0] == after[1] == 1.0
    assert RunSummary.objects.get(run=run).computed_at == stored.computed_at  # the pages wrote nothing


def test_a_refresh_by_the_runs_side_is_what_pages_read_next(scored):
    run = add_run(suite=official_suite(), model=model_spec("Live"), complete=0.5, skill=1.0)
    refresh_run_summary(run)
    episode = run.episodes.filter(instance__task__code="T3", status=Status.PENDING).select_related("instance__task")[0]
    Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED, prediction=answer(episode.instance, True, None))
    shown = t3_accuracy(run)
    saved = refresh_run_summary(run)
    scored.clear()

    assert t3_accuracy(run) == shown == saved.tasks["T3"]["metrics"]["accuracy"]
    assert scored == []  # the stored summary is fresh again: nothing re-scored, nothing taken from memory


def test_two_runs_with_equal_signatures_never_share_a_rescored_summary():
    suite = official_suite()
    good = add_run(suite=suite, model=model_spec("Good"), complete=0.5, skill=1.0, seed=1)
    bad = add_run(suite=suite, model=model_spec("Bad"), complete=0.5, skill=0.0, seed=1)
    assert t3_accuracy(good) == 0.5 and t3_accuracy(bad) == 0.0  # half their episodes played, all right or all wrong


def test_a_stored_summarys_bootstrap_is_drawn_once_until_it_is_saved_again(monkeypatch):
    run = add_run(suite=official_suite(), model=model_spec("Whole"), complete=1.0, skill=0.6)
    summary = refresh_run_summary(run)
    draws = []
    real = scoring.stats.overall_resamples
    monkeypatch.setattr(scoring.stats, "overall_resamples", lambda *a, **k: draws.append(1) or real(*a, **k))
    first = scoring.overall_resamples(summary)
    assert scoring.overall_resamples(RunSummary.objects.get(run=run)) is first and len(draws) == 1
    refresh_run_summary(run, force=True)  # saved again (its interval drawn anew): its distribution is drawn again
    before = len(draws)
    again = scoring.overall_resamples(RunSummary.objects.get(run=run))
    assert len(draws) == before + 1 and again is not first and np.array_equal(again, first)


def test_a_summary_rescored_in_memory_is_never_taken_for_the_stored_one():
    run = add_run(suite=official_suite(), model=model_spec("Whole"), complete=1.0, skill=0.6)
    drawn = [scoring.overall_resamples(refresh_run_summary(run))]
    episodes = list(run.episodes.filter(instance__task__code="T3").select_related("instance__task")[:2])
    for episode in episodes:  # each change leaves the stored summary staler: re-scored in memory, unsaved
        wrong = answer(episode.instance, not episode.scores.get("correct"), __import__("random").Random(0))
        Episode.objects.filter(pk=episode.pk).update(prediction=wrong, attempt=2)
        rescored = run_reads.run_summary(run)
        assert rescored._state.adding and rescored.pk == run.pk  # unsaved, with its run's pk
        drawn.append(scoring.overall_resamples(rescored))
    assert not np.array_equal(drawn[0], drawn[1]) and not np.array_equal(drawn[1], drawn[2])
