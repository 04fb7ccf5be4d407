"""The paper's published tables: parsing, the shipped fixture, and ``import_published``."""
import csv
import shutil
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import ModelSpec
from benchmark.scoring import PRIMARY_METRIC, TASK_IDS
from leaderboard.board.published import (
    FIXTURE_DIR,
    PAPER_BOARD,
    TABLE2,
    TABLE4,
    TABLE5,
    TABLE6,
    PublishedDataError,
    import_published,
    is_open_weight_group,
    parse_context_window,
    parse_parameters,
    read_published,
)
from leaderboard.models import PublishedResult
from tests.datafiles import assert_checksums


@pytest.mark.parametrize("text, expected", [
    ("1.7B", (1.7, None)),
    ("70B", (70.0, None)),
    ("21B-A3B", (21.0, 3.0)),
    ("1,600B-A49B", (1600.0, 49.0)),
    ("~1T", (1000.0, None)),
    ("1.6T", (1600.0, None)),
    ("Not reported", (None, None)),
    ("", (None, None)),
])
def test_parse_parameters_gives_total_and_active_billions(text, expected):
    assert parse_parameters(text) == expected


@pytest.mark.parametrize("text", ["huge", "21", "21B-3B", "B"])
def test_parse_parameters_rejects_what_it_cannot_read(text):
    with pytest.raises(ValueError, match="parameter count"):
        parse_parameters(text)


@pytest.mark.parametrize("text, expected", [("32K", 32_000), ("128K", 128_000), ("500K", 500_000),
                                            ("1M", 1_000_000), ("Not reported", None)])
def test_parse_context_window_reads_decimal_k_and_m(text, expected):
    assert parse_context_window(text) == expected


def test_parse_context_window_rejects_other_units():
    with pytest.raises(ValueError, match="context window"):
        parse_context_window("32 kB")


def test_groups_tell_open_weight_from_proprietary():
    assert is_open_weight_group("Open-weight models: 10–100B parameters") is True
    assert is_open_weight_group("Proprietary models") is False
    with pytest.raises(ValueError):
        is_open_weight_group("Closed models")


def test_the_shipped_tables_are_the_papers_and_carry_the_citation():
    assert sorted(path.name for path in FIXTURE_DIR.glob("*.csv")) == sorted([TABLE2, TABLE4, TABLE5, TABLE6])
    assert_checksums(FIXTURE_DIR)  # the digests of the tables as received, before any edit here
    citation = (FIXTURE_DIR / "CITATION.md").read_text(encoding="utf-8")
    assert "EEGAgentBench: Benchmarking LLM Agents on Short- and Long-Horizon EEG Analysis" in citation


def test_read_published_gives_the_29_models_of_15_families_with_19_priced():
    models = read_published()
    assert len(models) == 29
    assert len({model.family for model in models}) == 15
    assert sum(model.input_price_per_mtok is not None for model in models) == 19
    assert sum(not model.is_open_weight for model in models) == 8
    by_name = {model.name: model for model in models}
    ernie = by_name["ERNIE-4.5-21B-A3B"]
    assert (ernie.parameters_b, ernie.active_parameters_b, ernie.context_window) == (21.0, 3.0, 128_000)
    assert ernie.metrics["T5"] == {"event_f1": 0.0, "dice_s": 0.0}
    assert by_name["Kimi-K2.6"].parameters_b == 1000.0
    assert by_name["GPT-5.5"].parameters_b is None and by_name["GPT-5.5"].parameters == "Not reported"
    assert by_name["LongCat-2"].prompt_tokens == 589_800_000
    assert by_name["Qwen3-1.7B"].total_tokens == 7_400_000
    assert by_name["LongCat-2"].input_price_per_mtok == Decimal("0.735")


def test_published_overall_is_the_mean_of_the_six_printed_primaries():
    for model in read_published():
        mean = sum(model.metrics[task][PRIMARY_METRIC[task]] for task in TASK_IDS) / len(TASK_IDS)
        assert model.overall == pytest.approx(mean, abs=6e-4), model.name


def _copy_tables(tmp_path):
    for path in FIXTURE_DIR.glob("*.csv"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


def _rewrite(path, edit):
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    rows = edit(rows)
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)


def test_a_bad_number_is_reported_with_its_file_and_line(tmp_path):
    directory = _copy_tables(tmp_path)
    _rewrite(directory / TABLE2, lambda rows: [*rows[:3], [rows[3][0], rows[3][1], "n/a", *rows[3][3:]], *rows[4:]])
    with pytest.raises(PublishedDataError, match=r"table2_main_results\.csv, line 4: overall='n/a'"):
        read_published(directory)


def test_a_price_for_a_model_the_paper_did_not_evaluate_is_refused(tmp_path):
    directory = _copy_tables(tmp_path)
    _rewrite(directory / TABLE6, lambda rows: [*rows, ["Unknown-Model", "1.0", "2.0"]])
    with pytest.raises(PublishedDataError, match="not in Table 2: Unknown-Model"):
        read_published(directory)


def test_a_missing_table_is_reported(tmp_path):
    directory = _copy_tables(tmp_path)
    (directory / "table5_tokens.csv").unlink()
    with pytest.raises(PublishedDataError, match="table5_tokens.csv: cannot be read"):
        read_published(directory)


def test_import_published_loads_the_29_rows_onto_the_papers_board(db):
    result = import_published()
    assert (result.board, result.rows, result.models_created) == (PAPER_BOARD, 29, 29)
    rows = PublishedResult.objects.filter(board=PAPER_BOARD).select_related("model")
    assert rows.count() == 29
    first = rows.first()
    assert first.model.name == "GPT-5.6-sol" and first.overall == 0.631
    assert first.metrics["T6"] == {"macro_f1": 0.492, "cohen_kappa": 0.488}
    spec = ModelSpec.objects.get(name="DeepSeek-V4-Flash")
    assert (spec.family, spec.parameters, spec.parameters_b, spec.context_window, spec.is_open_weight) == (
        "DeepSeek", "284B-A13B", 284.0, 1_000_000, True,
    )
    assert spec.input_price_per_mtok == Decimal("0.077")


def test_import_published_is_idempotent(db):
    import_published()
    again = import_published()
    assert (again.rows, again.models_created, again.models_completed, again.rows_removed) == (29, 0, 0, 0)
    assert PublishedResult.objects.count() == 29
    assert ModelSpec.objects.count() == 29


def test_import_published_keeps_an_admins_model_settings_and_fills_the_blanks(db):
    ModelSpec.objects.create(
        name="GPT-5.5", provider_model="openai/gpt-5.5", family="GPT", input_price_per_mtok=Decimal("4"),
    )
    result = import_published()
    spec = ModelSpec.objects.get(name="GPT-5.5")
    assert (spec.provider_model, spec.family, spec.input_price_per_mtok) == ("openai/gpt-5.5", "GPT", Decimal("4"))
    assert spec.output_price_per_mtok == Decimal("30") and spec.context_window == 1_000_000
    assert (result.models_created, result.models_completed) == (28, 1)
    assert PublishedResult.objects.get(model=spec).input_price_per_mtok == Decimal("5")


def test_import_published_removes_rows_the_tables_no_longer_hold(db, tmp_path):
    import_published()
    directory = _copy_tables(tmp_path)
    for name in (TABLE2, TABLE4, TABLE5):
        _rewrite(directory / name, lambda rows: [row for row in rows if row[0] != "Qwen3-4B"])
    result = import_published(directory=directory)
    assert (result.rows, result.rows_removed) == (28, 1)
    assert not PublishedResult.objects.filter(model__name="Qwen3-4B").exists()


def test_import_published_refuses_a_board_that_is_not_a_slug(db):
    with pytest.raises(ValueError, match="slug"):
        import_published(board="The Paper")


def test_the_command_reports_what_it_loaded(db, capsys):
    call_command("import_published")
    out = capsys.readouterr().out
    assert "Board eegagentbench: the paper's 29 published rows are loaded. 29 of their models were new" in out
    assert "0 already known had blank details" in out and "0 rows of an earlier import" in out
    call_command("import_published", "--board", "other-board")
    assert PublishedResult.objects.filter(board="other-board").count() == 29


def test_the_command_turns_bad_tables_into_a_command_error(db, tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("import_published", "--directory", str(tmp_path))
