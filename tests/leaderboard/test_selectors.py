"""Leaderboard selectors: run rows equal the official scorer, published rows equal the paper, analyses."""
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmark.models import ModelSpec
from benchmark.scoring import PRIMARY_METRIC, SECONDARY_METRICS, TASK_IDS, ScoringItem, overall, score_task
from leaderboard.analysis import selectors as analysis_reads
from leaderboard.api import selectors as api_reads
from leaderboard.board import downloads, ranking, significance
from leaderboard.board.published import PAPER_BOARD, import_published, read_published
from leaderboard.run_pages import selectors as run_reads
from leaderboard.summaries import scoring
from leaderboard.summaries.kept import Kept
from leaderboard.summaries.scoring import refresh_run_summary
from runs.models import Episode, Run, Status, Step
from tests.leaderboard.boards import add_run, answer, model_spec, official_suite

PAPER_FRONTIER = {"ERNIE-4.5-VL-424B", "DeepSeek-V4-Flash", "MiMo-V2.5-Pro", "MiniMax-M3", "GPT-5.6-sol"}


@pytest.fixture
def board(db):
    """The paper's suite with its published rows, a strong run with tool calls and a weak one."""
    suite = official_suite()
    import_published()
    strong = add_run(suite=suite, model=model_spec("Strong"), skill=0.9, steps_per_episode=6, seed=1)
    weak = add_run(
        suite=suite, model=model_spec("Weak", family="Other", is_open_weight=False), skill=0.3, seed=2,
    )
    return SimpleNamespace(suite=suite, strong=strong, weak=weak)


def expected_summaries(run):
    """The official summaries of a run's tasks, computed here straight from its instances and episodes."""
    episodes = {episode.instance_id: episode for episode in run.episodes.all()}
    summaries = {}
    for task in run.tasks:
        items = []
        for instance in run.suite.instances.filter(task__code=task).order_by("position"):
            episode = episodes.get(instance.pk)
            done = episode is not None and episode.status == Status.COMPLETED
            items.append(ScoringItem(
                scenario_id=instance.scenario_id, gold=instance.reference,
                prediction=episode.prediction if done else None,
                submitted=episode is not None and episode.status in (Status.COMPLETED, Status.FAILED),
                completed=done, options=instance.prompt_input.get("options"),
                duration_sec=instance.duration_sec, n_epochs=instance.n_epochs,
            ))
        summaries[task] = score_task(task, items)
    return summaries


def _row(board_data, key):
    return next(row for row in board_data.rows if row.key == key)


def test_a_run_row_holds_the_official_summaries_of_its_episodes(board):
    row = _row(ranking.leaderboard(), f"run-{board.strong.pk}")
    expected = expected_summaries(board.strong)
    for task in TASK_IDS:
        for metric in (PRIMARY_METRIC[task], *SECONDARY_METRICS[task]):
            assert row.metrics[task][metric] == pytest.approx(expected[task]["metrics"][metric]), (task, metric)
        assert row.official[task] is True
    assert row.overall == pytest.approx(overall(expected))
    assert row.overall_official is True
    assert (row.source, row.model, row.run_id) == ("run", "Strong", board.strong.pk)


def test_overall_has_a_seeded_95_percent_interval(board):
    row = _row(ranking.leaderboard(), f"run-{board.strong.pk}")
    low, high = row.overall_ci
    assert low < row.overall < high
    assert high - low < 0.1
    again = refresh_run_summary(board.strong, force=True)
    assert again.overall_ci == pytest.approx(row.overall_ci)


def test_published_rows_sit_beside_the_runs_with_the_papers_numbers_and_no_interval(board):
    result = ranking.leaderboard()
    published = [row for row in result.rows if row.is_published]
    assert len(published) == 29 and sum(not row.is_published for row in result.rows) == 2
    paper = {model.name: model for model in read_published()}
    for row in published:
        assert row.overall == paper[row.model].overall
        assert row.metrics == paper[row.model].metrics
        assert row.overall_ci is None and row.overall_official and all(row.official.values())
    assert result.citation.startswith("EEGAgentBench")
    assert not result.is_synthetic


def test_the_published_frontier_is_the_papers_five_models_plus_hy3(db):
    import_published()
    result = ranking.leaderboard(source="published")
    frontier = {row.model for row in result.rows if row.on_pareto_frontier}
    # Hy3 ($59.7, Overall 0.492) is missing from the paper's Figure 6, but no model is both cheaper
    # and better: MiMo-V2.5-Pro is cheaper ($48.0) and scores 0.491.
    assert frontier == PAPER_FRONTIER | {"Hy3"}
    hy3, mimo = _row(result, "published-Hy3"), _row(result, "published-MiMo-V2.5-Pro")
    assert hy3.overall > mimo.overall and hy3.cost_paper_usd > mimo.cost_paper_usd


def test_published_costs_are_the_papers_formula_for_the_19_priced_models(db):
    import_published()
    result = ranking.leaderboard(source="published")
    priced = {row.model: row.cost_paper_usd for row in result.rows if row.cost_paper_usd is not None}
    assert len(priced) == 19
    assert priced["ERNIE-4.5-VL-424B"] == Decimal("15.394")  # 30.7 M x 0.42 + 2.0 M x 1.25
    assert priced["GPT-5.6-sol"] == Decimal("723.5")
    assert priced["Claude-Opus-4.6"] == Decimal("2395.5")
    assert all(row.cost_usd == row.cost_paper_usd for row in result.rows)
    assert _row(result, "published-Qwen3-8B").cost_usd is None


def test_equal_published_overalls_are_not_tied_without_intervals(db):
    import_published()
    result = ranking.leaderboard(source="published")
    flash, qwen = _row(result, "published-DeepSeek-V4-Flash"), _row(result, "published-Qwen3.5-35B-A3B")
    assert flash.overall == qwen.overall  # both 0.459 in Table 2
    assert flash.tie_group != qwen.tie_group
    assert flash.tie_range == (flash.rank, flash.rank) and qwen.tie_range == (qwen.rank, qwen.rank)
    assert [row.rank for row in result.rows] == list(range(1, 30))
    assert [row.tie_group for row in result.rows] == list(range(1, 30))
    assert result.rows[0].model == "GPT-5.6-sol" and result.rows[0].tie_range == (1, 1)


def test_runs_whose_intervals_overlap_share_a_tie_group(db):
    suite = official_suite()
    first = add_run(suite=suite, model=model_spec("A"), skill=0.6, seed=3)
    second = add_run(suite=suite, model=model_spec("B"), skill=0.6, seed=4)
    third = add_run(suite=suite, model=model_spec("C"), skill=0.1, seed=5)
    result = ranking.leaderboard()
    groups = {row.run_id: row.tie_group for row in result.rows}
    assert groups[first.pk] == groups[second.pk] != groups[third.pk]


def test_filters_choose_source_family_and_open_weights(board):
    assert {row.source for row in ranking.leaderboard(source="run").rows} == {"run"}
    qwen = ranking.leaderboard(family="qwen").rows
    assert len(qwen) == 8 and {row.family for row in qwen} == {"Qwen"}
    proprietary = ranking.leaderboard(weights="proprietary").rows
    assert {row.model for row in proprietary} >= {"Weak", "GPT-5.5"} and len(proprietary) == 9
    result = ranking.leaderboard(weights="open", source="run")
    assert [row.model for row in result.rows] == ["Strong"] and result.rows[0].rank == 1
    assert "Qwen" in result.families and "Other" in result.families


@pytest.mark.parametrize("kwargs", [{"source": "paper"}, {"weights": "closed"}])
def test_unknown_filter_values_are_refused(db, kwargs):
    import_published()
    with pytest.raises(ValueError):
        ranking.leaderboard(**kwargs)


def test_a_board_needs_a_suite_or_published_rows(db):
    with pytest.raises(ranking.UnknownBoard):
        ranking.leaderboard(suite="nothing-here")
    import_published()
    result = ranking.leaderboard(suite=PAPER_BOARD)
    assert result.suite_obj is None and len(result.rows) == 29


def test_a_partial_run_is_scored_and_marked_partial(db):
    suite = official_suite()
    run = add_run(suite=suite, model=model_spec("Half"), complete=0.5)
    row = _row(ranking.leaderboard(), f"run-{run.pk}")
    expected = expected_summaries(run)
    assert row.overall == pytest.approx(sum(expected[t]["primary_score"] for t in TASK_IDS) / 6)
    assert row.overall_official is False and not any(row.official.values())
    assert row.overall_ci is not None


def test_a_run_of_some_tasks_has_no_overall(db):
    suite = official_suite()
    run = add_run(suite=suite, model=model_spec("Artifacts"), tasks=["T2"])
    row = _row(ranking.leaderboard(), f"run-{run.pk}")
    assert row.overall is None and row.overall_ci is None and row.rank is None
    assert row.official == {**dict.fromkeys(TASK_IDS), "T2": True}
    assert row.metrics["T3"] == {"macro_f1": None, "accuracy": None}


def test_a_run_with_nothing_completed_is_not_on_the_board(db):
    suite = official_suite()
    add_run(suite=suite, model=model_spec("Queued"), complete=0.0)
    assert ranking.leaderboard().rows == []


def test_a_failed_episode_makes_its_task_unofficial(board):
    episode = board.weak.episodes.filter(instance__task__code="T4").first()
    Episode.objects.filter(pk=episode.pk).update(status=Status.FAILED, prediction=None)
    row = _row(ranking.leaderboard(), f"run-{board.weak.pk}")
    assert row.official["T4"] is False and row.overall_official is False
    tasks = {task["task"]: task for task in run_reads.run_task_rows(board.weak)}
    assert tasks["T4"]["completeness"]["noncompleted"] == 1


def test_the_board_follows_episodes_that_finish_without_an_explicit_refresh(db):
    suite = official_suite()
    run = add_run(suite=suite, model=model_spec("Live"), complete=0.5, skill=1.0)
    before = _row(ranking.leaderboard(), f"run-{run.pk}").metrics["T3"]["accuracy"]
    pending = run.episodes.filter(instance__task__code="T3", status=Status.PENDING).select_related("instance__task")
    for episode in pending:
        prediction = answer(episode.instance, True, None)
        Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED, prediction=prediction)
    after = _row(ranking.leaderboard(), f"run-{run.pk}")
    assert before == pytest.approx(0.5) and after.metrics["T3"]["accuracy"] == 1.0
    assert after.official["T3"] is True and after.official["T2"] is False


def test_a_refresh_rescores_only_the_tasks_whose_episodes_changed(board, monkeypatch):
    refresh_run_summary(board.weak)
    scored = []
    real = scoring.score_task
    monkeypatch.setattr(scoring, "score_task", lambda task, items: scored.append(task) or real(task, items))
    refresh_run_summary(board.weak)
    assert scored == []
    episode = board.weak.episodes.filter(instance__task__code="T6").first()
    Episode.objects.filter(pk=episode.pk).update(attempt=2)
    refresh_run_summary(board.weak)
    assert scored == ["T6"]


def test_a_synthetic_suite_has_its_own_board_marked_synthetic(board):
    demo = official_suite(name="demo", synthetic=True)
    add_run(suite=demo, model=model_spec("Demo model"), skill=0.5)
    result = ranking.leaderboard(suite="demo")
    assert result.is_synthetic and not result.has_published
    assert [row.model for row in result.rows] == ["Demo model"]
    names = [entry.name for entry in ranking.boards()]
    assert names == [PAPER_BOARD, "demo"]
    paper = ranking.boards()[0]
    assert (paper.n_runs, paper.n_published, paper.is_synthetic) == (2, 29, False)


def test_the_csv_has_one_line_per_row_in_rank_order(board):
    result = ranking.leaderboard()
    lines = downloads.leaderboard_csv(result).splitlines()
    assert lines[0].split(",") == list(downloads.CSV_COLUMNS)
    assert len(lines) == len(result.rows) + 1
    first = dict(zip(downloads.CSV_COLUMNS, lines[1].split(",")))
    best = result.rows[0]
    assert (first["rank"], first["model"], first["T1_accuracy"]) == ("1", best.model, str(best.metrics["T1"]["accuracy"]))


def _count_queries(function, *, warm: bool = False):
    for run in Run.objects.all():  # as the workers leave them: pages only read summaries
        refresh_run_summary(run)
    if warm:
        function()
    with CaptureQueriesContext(connection) as captured:
        function()
    return len(captured)


def test_pages_run_the_same_number_of_queries_whatever_the_number_of_runs(db, monkeypatch):
    suite = official_suite()
    import_published()
    first = add_run(suite=suite, model=model_spec("One"), steps_per_episode=4)
    episode_id = first.episodes.filter(instance__task__code="T5").first().pk
    calls = {
        "leaderboard": lambda: ranking.leaderboard(),
        "analysis": lambda: analysis_reads.analysis(),
        "task": lambda: analysis_reads.task_analysis(task="T2"),
        "run": lambda: api_reads.run_detail(run_id=first.pk),
        "episode": lambda: api_reads.episode_detail(episode_id=episode_id),
    }
    # The board tests each run against the run ranked above it once per change of their summaries:
    # the first time, one more query reads their per-instance rows (board.significance).
    small = {name: _count_queries(call, warm=name == "leaderboard") for name, call in calls.items()}
    for index in range(2):
        add_run(suite=suite, model=model_spec(f"More {index}"), steps_per_episode=6, seed=index)
    large = {name: _count_queries(call, warm=name == "leaderboard") for name, call in calls.items()}
    assert small == large
    assert large["leaderboard"] <= 4 and large["episode"] == 2
    monkeypatch.setattr(significance, "_kept", Kept(16))  # as after a change of the runs' summaries
    assert _count_queries(calls["leaderboard"]) == large["leaderboard"] + 1
    assert any(row.below_p is not None for row in ranking.leaderboard().rows)  # neighbouring runs were tested


def test_analysis_gathers_distributions_costs_scale_and_tokens(board):
    result = analysis_reads.analysis()
    t1 = result.distributions["T1"]
    assert (t1["metric"], t1["random_baseline"]) == ("accuracy", 0.25)
    assert len(t1["models"]) == 31
    instances = {entry["model"]: entry["scores"] for entry in t1["instances"]}
    assert set(instances) == {"Strong", "Weak"} and len(instances["Strong"]) == 38
    assert result.distributions["T6"]["random_baseline"] is None
    costs = [point["cost_usd"] for point in result.cost_performance]
    assert costs == sorted(costs) and len(costs) == 21
    # the strong run ($23, Overall about 0.85) dominates every published row but the cheapest
    assert {p["model"] for p in result.cost_performance if p["on_pareto_frontier"]} == {"ERNIE-4.5-VL-424B", "Strong"}
    scale = {point["model"]: point for point in result.scale}
    assert scale["Qwen3.5-397B-A17B"]["parameters_b"] == 397.0
    assert scale["Qwen3.5-397B-A17B"]["active_parameters_b"] == 17.0
    assert scale["GPT-5.5"]["parameters_b"] is None
    totals = [point["total_tokens"] for point in result.tokens]
    assert totals == sorted(totals, reverse=True) and result.tokens[0]["model"] == "LongCat-2"
    assert {p["model"]: p["total_tokens"] for p in result.tokens}["Strong"] == 1072 * 20_800


def test_tool_use_counts_executed_calls_per_category_and_trajectory(board):
    episode = board.strong.episodes.filter(instance__task__code="T4").first()
    Step.objects.create(episode=episode, index=100, kind=Step.Kind.TOOL_CALL, tool_name="compute_psd",
                        result={"status": "not_executed", "content": None})
    refresh_run_summary(board.strong, force=True)
    usage = analysis_reads.analysis().tool_use
    strong = next(model for model in usage["models"] if model["model"] == "Strong")
    # every trajectory of six steps makes two tool calls (band power then asymmetry for T4)
    assert strong["median_calls"] == dict.fromkeys(["T2", "T3", "T4", "T5", "T6"], 2.0)
    assert strong["calls"]["T4"] == 2 * 69
    assert strong["rate_by_tool"]["T4"] == {"compute_asymmetry": 0.5, "get_channel_list": 0.5}
    assert strong["rate_by_category"]["T5"] == {"Windowed / time-series analysis": 1.0}
    assert usage["mean_rate_by_category"]["T4"]["Temporal & spatial features"] == 0.5
    weak = next(model for model in usage["models"] if model["model"] == "Weak")
    assert weak["calls"]["T2"] == 0 and weak["median_calls"]["T2"] == 0.0
    assert usage["top"] == [f"run-{board.strong.pk}"] and usage["bottom"] == [f"run-{board.weak.pk}"]
    assert usage["median_calls"]["T5"] == {"top": 2.0, "bottom": 0.0}


def test_t2_accuracy_by_snr_level_follows_the_episodes(board):
    result = analysis_reads.task_analysis(task="T2")
    assert result.snr["levels"] == list(range(2, -8, -1))
    strong = next(model for model in result.snr["models"] if model["model"] == "Strong")
    episodes = board.strong.episodes.filter(instance__task__code="T2").select_related("instance")
    cell = [e for e in episodes if e.instance.reference["label"] == "muscle_contaminated"
            and e.instance.reference["snr_db"] == -3]
    assert strong["accuracy"]["muscle_contaminated"][-3] == pytest.approx(
        sum(e.scores["correct"] for e in cell) / len(cell)
    )
    clean = [e for e in episodes if e.instance.reference["label"] == "clean"]
    assert strong["clean_accuracy"] == pytest.approx(sum(e.scores["correct"] for e in clean) / 100)
    band = result.snr["band"]["ocular_contaminated"][2]
    assert band["q1"] <= band["median"] <= band["q3"]
    confusion = next(entry for entry in result.confusion if entry["model"] == "Strong")
    assert confusion["columns"][-1] == "__invalid__"
    assert sum(map(sum, confusion["matrix"])) == 300
    assert len([row for row in result.rows if row["source"] == "published"]) == 29


def test_t5_miss_and_over_alarm_rates_are_the_scorers(board):
    result = analysis_reads.task_analysis(task="T5")
    expected = expected_summaries(board.weak)["T5"]["metrics"]
    weak = next(entry for entry in result.miss_over_alarm if entry["model"] == "Weak")
    assert weak["miss_rate"] == pytest.approx(expected["miss_rate"])
    assert weak["over_alarm_rate"] == pytest.approx(expected["over_alarm_rate"])
    assert (weak["n_positive"], weak["n_negative"]) == (140, 140)
    assert result.confusion is None and result.snr is None


def test_t6_macro_f1_by_duration_uses_the_sleep_cassette_nights(board):
    result = analysis_reads.task_analysis(task="T6").duration_bins
    assert result["bins"][0] == "< 8 h" and len(result["bins"]) == 7
    strong = next(model for model in result["models"] if model["model"] == "Strong")
    assert sum(strong["n_records"]) == 153
    assert all(value is None or 0 <= value <= 1 for value in strong["macro_f1"])


def test_task_analysis_refuses_an_unknown_task(board):
    with pytest.raises(ValueError):
        analysis_reads.task_analysis(task="T7")


def test_run_detail_gives_the_row_tasks_progress_and_scored_episodes(board):
    detail = api_reads.run_detail(run_id=board.strong.pk)
    assert detail.row.overall == _row(ranking.leaderboard(), f"run-{board.strong.pk}").overall
    assert [row["task"] for row in detail.tasks] == list(TASK_IDS)
    assert detail.tasks[4]["metrics"].keys() == {"event_f1", "dice_s"}
    assert detail.progress["completed"] == 1072 and len(detail.episodes) == 1072
    first = detail.episodes[0]
    assert (first.task, first.outcome) == ("T1", "final_answer") and first.score in (0.0, 1.0)
    t6 = next(episode for episode in detail.episodes if episode.task == "T6")
    assert t6.score == pytest.approx(Episode.objects.get(pk=t6.id).scores["macro_f1"])


def test_run_task_rows_score_a_pending_run_as_all_missing(run):
    rows = run_reads.run_task_rows(run)
    assert [row["task"] for row in rows] == list(TASK_IDS)
    assert not any(row["official"] for row in rows)
    assert rows[0]["completeness"]["missing"] == 1


def test_episode_detail_gives_the_steps_in_order_and_the_score(board):
    episode = board.strong.episodes.filter(instance__task__code="T3").first()
    detail = api_reads.episode_detail(episode_id=episode.pk)
    assert [step.index for step in detail.steps] == list(range(6))
    assert detail.score == (1.0 if episode.scores["correct"] else 0.0)


def test_pages_leave_the_release_file_list_unread(board):
    """A release's manifest has a row per file (over a thousand for the official release); no page shows it."""
    file_list = {"manifest", "descriptor"}
    episode = board.strong.episodes.first()
    releases = [
        run_reads.run_list().first().suite.release,
        api_reads.run_detail(run_id=board.strong.pk).run.suite.release,
        api_reads.episode_detail(episode_id=episode.pk).episode.run.suite.release,
    ]
    for release in releases:
        assert release.get_deferred_fields() == file_list


def test_paper_cost_is_free_for_baselines_and_the_formula_for_priced_models(db):
    baseline = ModelSpec.objects.create(name="Heuristic", provider_model="baseline/heuristic")
    priced = model_spec("Priced", input_price_per_mtok=Decimal("2"), output_price_per_mtok=Decimal("10"))
    unpriced = ModelSpec.objects.create(name="Local", provider_model="nowhere/unknown-model-xyz")
    assert ranking.paper_cost(baseline, 10**6, 10**6) == 0
    assert ranking.paper_cost(priced, 3 * 10**6, 10**6) == Decimal("16")
    assert ranking.paper_cost(unpriced, 10**6, 0) is None


def test_a_t1_answer_restating_the_option_text_is_matched_through_the_options(board):
    episode = board.weak.episodes.filter(instance__task__code="T1").select_related("instance").first()
    options, letter = episode.instance.prompt_input["options"], episode.instance.reference["answer"]
    Episode.objects.filter(pk=episode.pk).update(prediction={"answer": options[letter].upper()}, attempt=2)
    summary = refresh_run_summary(board.weak)
    row = next(item for item in summary.items["T1"] if item["episode"] == episode.pk)
    assert row["correct"] is True and row["predicted"] == letter
