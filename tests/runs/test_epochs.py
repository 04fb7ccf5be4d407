"""Repeated runs (``run_benchmark --epochs K``): episodes per epoch, their scoring, the bootstrap, the export."""
import json
import statistics
from collections import defaultdict
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from benchmark.models import ModelSpec
from benchmark.scoring import TASK_IDS
from benchmark.scoring.epochs import epoch_agreement, mean_over_epochs, overall_over_epochs
from leaderboard import stats
from leaderboard.analysis import selectors as analysis_reads
from leaderboard.board import ranking
from leaderboard.models import RunSummary
from leaderboard.summaries.scoring import refresh_run_summary, task_sample
from runs.agents import build_agent
from runs.episode.scoring import score_prediction
from runs.interchange.importing import import_official_run
from runs.interchange.official import official_task_summary
from runs.models import Episode, Run, Status
from runs.reports import json_safe, run_report, task_summaries
from runs.services import create_run
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db

CLASSIFICATION = ("T1", "T2", "T3", "T4")


@pytest.fixture
def demo():
    return import_demo()


def run_command(*args):
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def random_run(*extra) -> tuple[Run, dict]:
    """A ``baseline/random`` run on the whole demo suite played in this process; its run and JSON report."""
    out = run_command("run_benchmark", "--model", "baseline/random", "--suite", "demo", "--sync", "--json", *extra)
    return Run.objects.latest("id"), json.loads(out)


def hand_correctness(run: Run) -> dict[str, dict[int, list[bool]]]:
    """Per task, per instance, the correctness of each epoch's episode, read from the stored episodes.

    The run page's rule: an answered episode whose scores say correct (T1-T4), that found every
    seizure with no false alarm (T5), or whose night scores a macro-F1 of at least 0.5 (T6).
    """
    table: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(lambda: [False] * run.epochs))
    for episode in run.episodes.select_related("instance__task"):
        task, scores = episode.instance.task.code, episode.scores
        answered = episode.status == Status.COMPLETED and episode.final_answer is not None
        if task in CLASSIFICATION:
            right = scores.get("correct") is True
        elif task == "T5":
            right = scores.get("fn") == 0 and scores.get("fp") == 0
        else:
            right = scores.get("macro_f1", 0) >= 0.5
        table[task][episode.instance_id][episode.epoch] = answered and right
    return table


def test_three_epochs_give_the_flip_rate_and_pass_k_of_a_hand_calculation(demo):
    run, report = random_run("--epochs", "3")

    assert run.epochs == 3 and report["epochs"] == 3
    n_instances = demo.instances.count()
    assert run.episodes.count() == 3 * n_instances
    assert sorted(set(run.episodes.values_list("epoch", flat=True))) == [0, 1, 2]
    summary = RunSummary.objects.get(run=run)
    for task, by_instance in hand_correctness(run).items():
        rows = list(by_instance.values())
        every = sum(all(epochs) for epochs in rows) / len(rows)
        some = sum(any(epochs) for epochs in rows) / len(rows)
        flips = sum(len(set(epochs)) > 1 for epochs in rows) / len(rows)
        stored = summary.tasks[task]["epochs"]
        assert stored["k"] == 3
        assert stored["flip_rate"] == pytest.approx(flips)
        assert report["tasks"][task]["epochs"]["flip_rate"] == pytest.approx(flips)
        if task in CLASSIFICATION:
            assert stored["pass_hat_k"] == pytest.approx(every)
            assert stored["pass_at_k"] == pytest.approx(some)
            assert stored["pass_at_k"] - stored["pass_hat_k"] == pytest.approx(stored["flip_rate"])
        else:
            assert "pass_hat_k" not in stored and "pass_at_k" not in stored
    # The random baseline guesses, so on 38 T1 questions its answers cannot agree over all three epochs.
    assert summary.tasks["T1"]["epochs"]["flip_rate"] > 0


def test_each_epoch_is_scored_alone_and_the_summary_is_their_mean_and_sd(demo):
    run, report = random_run("--epochs", "3", "--tasks", "T1,T3,T6")
    summary = RunSummary.objects.get(run=run)
    for task in ("T1", "T3", "T6"):
        per_epoch = [task_summaries(run, epoch=epoch)[task]["primary_score"] for epoch in range(3)]
        stored = summary.tasks[task]
        assert stored["epochs"]["scores"] == pytest.approx(per_epoch)
        assert stored["primary_score"] == pytest.approx(statistics.mean(per_epoch))
        assert stored["epochs"]["sd"] == pytest.approx(statistics.stdev(per_epoch))
        assert stored["completeness"]["expected"] == 3 * demo.instances.filter(task__code=task).count()
        assert report["tasks"][task]["primary_score"] == pytest.approx(statistics.mean(per_epoch))
        # One summary row per instance and epoch, each epoch's rows over the same instances.
        rows = summary.items[task]
        assert [row["epoch"] for row in rows].count(0) == len(rows) // 3
        assert [row["instance"] for row in rows if row["epoch"] == 0] == [
            row["instance"] for row in rows if row["epoch"] == 2
        ]


def test_overall_is_the_mean_of_the_per_epoch_overalls_with_their_sd(demo):
    run, report = random_run("--epochs", "2")
    summary = RunSummary.objects.get(run=run)
    per_epoch = [
        sum(task_summaries(run, epoch=epoch)[task]["primary_score"] for task in TASK_IDS) / 6 for epoch in range(2)
    ]
    assert summary.overall == pytest.approx(statistics.mean(per_epoch))
    over = overall_over_epochs(summary.tasks)
    assert over["scores"] == pytest.approx(per_epoch) and over["sd"] == pytest.approx(statistics.stdev(per_epoch))
    assert report["overall_epochs"]["sd"] == pytest.approx(statistics.stdev(per_epoch))
    low, high = summary.overall_ci
    assert low <= summary.overall <= high


def summary_tasks_as_reported(summary: RunSummary) -> dict:
    """A leaderboard summary's tasks in the shape of ``run_report``'s."""
    return json_safe({
        code: {
            "primary_metric": scored["primary_metric"],
            "primary_score": scored["primary_score"],
            "official": scored["official"],
            "reasons": scored["reasons"],
            "n_items": scored["completeness"]["expected"],
            "completeness": scored["completeness"],
            "metrics": {
                key: value for key, value in scored["metrics"].items()
                if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
            },
            "epochs": scored["epochs"],
        }
        for code, scored in sorted(summary.tasks.items())
    })


def test_the_report_of_several_epochs_is_what_the_leaderboard_summary_holds(demo):
    run, _ = random_run("--epochs", "3")
    # Two seizure-free records answered right (no seizure) in epochs 0 and 2; in epoch 1 one
    # failed and the other hit a limit without a final answer. The scorer sees an empty answer
    # in both, which is right on such a record; the run page's rule counts neither as correct.
    failed, unanswered = [
        instance for instance in demo.instances.filter(task__code="T5") if not instance.reference["seizure_events"]
    ][:2]
    silent = {"action": "final_answer", "seizure_events": []}
    for instance in (failed, unanswered):
        run.episodes.filter(instance=instance).update(
            prediction=silent, final_answer=silent, scores=score_prediction(instance, silent)
        )
    run.episodes.filter(instance=failed, epoch=1).update(status=Status.FAILED)
    run.episodes.filter(instance=unanswered, epoch=1).update(prediction={}, final_answer=None)
    # A night whose answer key counts fewer epochs than its scenario: both score it over the key's count.
    night = demo.instances.filter(task__code="T6").order_by("position").first()
    night.reference = {**night.reference, "n_epochs_total": night.epochs_total - 2}
    night.save(update_fields=["reference"])
    RunSummary.objects.filter(run=run).delete()

    report = run_report(run)

    assert not RunSummary.objects.filter(run=run).exists()  # the report does not go through the leaderboard
    summary = refresh_run_summary(run)
    assert list(report["tasks"]) == list(TASK_IDS)
    assert report["tasks"] == summary_tasks_as_reported(summary)
    assert report["overall"] == summary.overall
    assert report["overall_official"] is summary.overall_official
    assert report["overall_epochs"] == json_safe(overall_over_epochs(summary.tasks))
    assert report["tasks"]["T5"]["completeness"]["noncompleted"] == 1
    flips = [len(set(epochs)) > 1 for epochs in hand_correctness(run)["T5"].values()]
    assert report["tasks"]["T5"]["epochs"]["flip_rate"] == pytest.approx(sum(flips) / len(flips))


def test_epochs_draw_afresh_and_never_share_a_record_id(demo):
    run, _ = random_run("--epochs", "3", "--tasks", "T1")
    episodes = list(run.episodes.select_related("instance"))
    record_ids = [episode.record_id for episode in episodes]
    assert len(set(record_ids)) == len(record_ids)
    assert not set(record_ids) & set(demo.instances.values_list("record_id", flat=True))
    answers = defaultdict(list)
    for episode in episodes:
        answers[episode.instance_id].append(episode.final_answer["answer"])
    assert any(len(set(letters)) > 1 for letters in answers.values())
    # The seed itself moves with the epoch: one record id, two epochs, two draws.
    instance = episodes[0].instance
    draws = [build_agent(run, instance, record_id="rec_FIXED", epoch=epoch).rng.random(8) for epoch in (0, 1, 0)]
    assert not np.allclose(draws[0], draws[1]) and np.allclose(draws[0], draws[2])


def test_one_episode_per_instance_and_epoch(demo):
    model = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    run = create_run(suite=demo, model=model, tasks=["T3"], limit=2, epochs=2, prompt_set="platform")
    episode = run.episodes.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Episode.objects.create(run=run, instance=episode.instance, epoch=episode.epoch, record_id="rec_OTHER")
    assert run.episodes.count() == 4


@pytest.mark.parametrize("epochs", [0, 11])
def test_epochs_outside_one_to_ten_are_refused(demo, epochs):
    model = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    with pytest.raises(ValueError, match="epochs must be between 1 and 10"):
        create_run(suite=demo, model=model, tasks=["T3"], epochs=epochs, prompt_set="platform")
    with pytest.raises(CommandError, match="--epochs must be between 1 and 10"):
        run_command("run_benchmark", "--model", "baseline/random", "--suite", "demo", "--epochs", str(epochs), "--sync")
    assert not Run.objects.exists()


def test_one_epoch_keeps_the_summary_and_report_as_they_were(demo):
    run, report = random_run("--tasks", "T1,T5")
    summary = RunSummary.objects.get(run=run)
    assert run.epochs == 1 and "epochs" not in report and "overall_epochs" not in report
    assert all("epochs" not in task for task in summary.tasks.values())
    assert set(summary.items["T1"][0]) == {"instance", "episode", "gold", "predicted", "correct"}
    assert overall_over_epochs(summary.tasks) is None
    assert run_report(run)["tasks"]["T1"] == report["tasks"]["T1"]


def test_export_writes_one_official_directory_per_epoch(demo, tmp_path):
    run, _ = random_run("--epochs", "3", "--tasks", "T1,T3")
    out = tmp_path / "export"
    message = run_command("export_run", str(run.pk), "--out", str(out))
    assert "in 3 epoch directories" in message
    assert sorted(path.name for path in out.iterdir()) == ["epoch-1", "epoch-2", "epoch-3"]
    for epoch in range(3):
        directory = out / f"epoch-{epoch + 1}"
        assert (directory / "benchmark_summary.json").is_file()
        rows = [json.loads(line) for line in (directory / "T3" / "runs.jsonl").read_text().splitlines()]
        played = run.episodes.filter(epoch=epoch, instance__task__code="T3")
        assert len(rows) == played.count()
        assert sorted(row["prediction"]["classification"] for row in rows) == sorted(
            episode.final_answer["classification"] for episode in played
        )
        summary = json.loads((directory / "T3" / "summary.json").read_text())
        assert summary == json.loads(json.dumps(official_task_summary(task_summaries(run, epoch=epoch)["T3"])))
    imported = import_official_run(path=out / "epoch-2", suite=demo, model=run.model)
    assert imported.epochs == 1
    assert imported.episodes.count() == run.episodes.filter(epoch=1).count()


def test_export_of_one_epoch_keeps_the_official_layout(demo, tmp_path):
    run, _ = random_run("--tasks", "T3")
    run_command("export_run", str(run.pk), "--out", str(tmp_path / "export"))
    assert sorted(path.name for path in (tmp_path / "export").iterdir()) == ["T3", "benchmark_summary.json"]


# ── the bootstrap over epochs and rank stability (pure) ─────────────────────────────────────────

def test_the_bootstrap_resamples_epochs_as_well_as_instances():
    # Every instance scores 0 in one epoch and 1 in the other: resampling instances alone would
    # always give 0.5; resampling the two epochs too gives 0, 0.5 and 1.
    sample = stats.EpochSample((stats.MeanSample([0.0] * 20), stats.MeanSample([1.0] * 20)))
    overall = stats.overall_resamples([sample], n_resamples=400, seed=3)
    assert set(np.round(overall, 6)) == {0.0, 0.5, 1.0}
    assert sample.score() == 0.5
    low, high = stats.bootstrap_overall([sample], n_resamples=400, seed=3)
    assert low == 0.0 and high == 1.0


def test_summary_rows_of_several_epochs_make_an_epoch_sample():
    rows = [
        {"instance": instance, "episode": None, "gold": "normal", "predicted": predicted, "correct": False,
         "epoch": epoch}
        for epoch, answers in enumerate([("normal", "epileptic"), ("epileptic", "epileptic")])
        for instance, predicted in enumerate(answers)
    ]  # fmt: skip
    sample = task_sample("T3", rows)
    assert isinstance(sample, stats.EpochSample) and sample.n_epochs == 2 and sample.n_items == 2
    assert sample.epochs[0].score() == pytest.approx(task_sample("T3", [
        {key: value for key, value in row.items() if key != "epoch"} for row in rows if row["epoch"] == 0
    ]).score())  # fmt: skip


def test_epoch_samples_must_cover_the_same_instances():
    with pytest.raises(ValueError, match="same instances"):
        stats.EpochSample((stats.MeanSample([1.0, 0.0]), stats.MeanSample([1.0])))


def test_epoch_agreement_counts_flips_and_passes():
    agreement = epoch_agreement([[True, True, True], [True, False, True], [False, False, False], [False, True, False]])
    assert agreement == {"flip_rate": 0.5, "pass_hat_k": 0.25, "pass_at_k": 0.75}
    assert epoch_agreement([]) == {"flip_rate": None, "pass_hat_k": None, "pass_at_k": None}


def test_rank_stability_shares_of_a_pair_sum_to_one_with_ties_half():
    above = stats.rank_stability([np.array([0.5, 0.6, 0.7, 0.4]), np.array([0.5, 0.5, 0.8, 0.3])])
    assert above[0, 1] == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert above[0, 1] + above[1, 0] == pytest.approx(1.0)
    assert np.diag(above).tolist() == [0.5, 0.5]
    assert stats.rank_stability([]).shape == (0, 0)


def test_the_text_report_of_several_epochs_shows_each_tasks_spread(demo):
    run, report = random_run("--tasks", "T3,T5", "--epochs", "2")
    from runs.management.console import metrics_table

    text = metrics_table(run_report(run))
    assert "over 2 epochs" in text
    t3 = next(line for line in text.splitlines() if line.startswith("T3 ") and "/" not in line)
    epochs = report["tasks"]["T3"]["epochs"]
    assert t3.split() == [
        "T3", f"{report['tasks']['T3']['primary_score']:.4f}", f"{epochs['sd']:.4f}",
        *(f"{score:.4f}" for score in epochs["scores"]),
        f"{epochs['flip_rate']:.4f}", f"{epochs['pass_hat_k']:.4f}", f"{epochs['pass_at_k']:.4f}",
    ]
    t5 = next(line for line in text.splitlines() if line.startswith("T5 ") and "/" not in line)
    assert t5.split()[-2:] == ["-", "-"]  # pass^k and pass@k are for the classification tasks
    assert "epochs (each instance" not in metrics_table(run_report(random_run("--tasks", "T3")[0]))


def test_metrics_over_epochs_average_the_epochs_that_define_them():
    assert mean_over_epochs([0.5, None, 0.7]) == pytest.approx(0.6)
    assert mean_over_epochs([None, None]) is None
    assert mean_over_epochs([{"a": 1, "b": None}, {"a": 3, "b": 0.4}]) == {"a": 2.0, "b": 0.4}
    assert mean_over_epochs([["x"], ["y"]]) == ["x"]


def test_a_nights_record_counts_once_in_the_duration_bins_however_many_epochs(demo):


    run, _ = random_run("--tasks", "T6", "--epochs", "3")
    summary = RunSummary.objects.get(run=run)
    nights = {row["instance"] for row in summary.items["T6"]}
    assert len(summary.items["T6"]) == 3 * len(nights)
    row = next(row for row in ranking.leaderboard(suite="demo").rows if row.run_id == run.pk)
    (model,) = analysis_reads._t6_duration_bins([(row, summary)])["models"]  # the demo's nights are Sleep Cassette ones
    assert sum(model["n_records"]) == len(nights) == 2


def test_a_later_epoch_missing_some_episodes_is_reported_as_the_leaderboard_scores_it(demo):
    """Episodes an admin deleted: the report neither fails nor drops them; each counts as not played, as on the board."""
    run, _ = random_run("--epochs", "3")
    seizures = demo.instances.filter(task__code="T5").order_by("position").first()
    run.episodes.filter(instance=seizures, epoch=1).delete()  # one instance of one epoch
    run.episodes.filter(instance__task__code="T3", epoch=2).delete()  # a whole task of the last epoch
    RunSummary.objects.filter(run=run).delete()

    report = run_report(run)

    summary = refresh_run_summary(run)
    assert list(report["tasks"]) == list(TASK_IDS)
    assert report["tasks"] == summary_tasks_as_reported(summary)
    assert report["overall"] == summary.overall
    assert report["tasks"]["T3"]["epochs"]["scores"][2] == 0  # nothing of T3 was played in epoch 2
