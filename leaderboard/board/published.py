"""The paper's published results, read from the CSV copies of its Tables 2, 4, 5 and 6.

The tables ship in ``leaderboard/fixtures/published/`` (see CITATION.md there) and are read
here into one record per model, with the printed sizes parsed for plots: ``"21B-A3B"`` is 21
billion parameters of which 3 billion are active, ``"~1T"`` is 1,000 billion, a context of
``"32K"`` is 32,000 tokens (the tables round, so K and M are decimal). No Django here; the rows
are written to the database by ``import_published`` at the end of this module.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.db import transaction
from django.utils.text import slugify

from benchmark.models import ModelSpec
from leaderboard.models import PublishedResult

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "published"
TABLE2 = "table2_main_results.csv"
TABLE4 = "table4_models.csv"
TABLE5 = "table5_tokens.csv"
TABLE6 = "table6_prices.csv"

# The board of the paper's suite: what ``import_release`` names the official release
# ("EEGAgentBench", slugified), so the paper's rows sit beside the runs on that suite.
PAPER_BOARD = "eegagentbench"
CITATION = "EEGAgentBench: Benchmarking LLM Agents on Short- and Long-Horizon EEG Analysis (Tables 2, 4-6)"

# Table 2 column of each task metric, in the table's order.
TABLE2_METRICS: dict[tuple[str, str], str] = {
    ("T1", "accuracy"): "t1_acc",
    ("T2", "macro_f1"): "t2_f1",
    ("T2", "accuracy"): "t2_acc",
    ("T3", "macro_f1"): "t3_f1",
    ("T3", "accuracy"): "t3_acc",
    ("T4", "macro_f1"): "t4_f1",
    ("T4", "accuracy"): "t4_acc",
    ("T5", "event_f1"): "t5_event_f1",
    ("T5", "dice_s"): "t5_dice",
    ("T6", "macro_f1"): "t6_f1",
    ("T6", "cohen_kappa"): "t6_kappa",
}
NOT_REPORTED = "Not reported"

_AMOUNT = r"([\d,]+(?:\.\d+)?)\s*([BT])"
_PARAMETERS = re.compile(rf"~?\s*{_AMOUNT}(?:\s*-\s*A\s*{_AMOUNT})?", re.IGNORECASE)
_CONTEXT = re.compile(r"(\d+(?:\.\d+)?)\s*([KM])", re.IGNORECASE)
_BILLIONS_PER_UNIT = {"B": Decimal(1), "T": Decimal(1000)}
_TOKENS_PER_UNIT = {"K": Decimal(1_000), "M": Decimal(1_000_000)}
MILLION = Decimal(1_000_000)


class PublishedDataError(ValueError):
    """A published table that cannot be read; the message names the file and line."""


def _billions(number: str, unit: str) -> float:
    return float(Decimal(number.replace(",", "")) * _BILLIONS_PER_UNIT[unit.upper()])


def parse_parameters(text: str) -> tuple[float | None, float | None]:
    """Total and active parameters, in billions, of a size as Table 4 prints it.

    ``"70B"`` gives ``(70.0, None)``, ``"1,600B-A49B"`` gives ``(1600.0, 49.0)``, ``"~1T"``
    gives ``(1000.0, None)``; ``"Not reported"`` or a blank gives ``(None, None)``.
    """
    text = (text or "").strip()
    if not text or text.casefold() == NOT_REPORTED.casefold():
        return None, None
    match = _PARAMETERS.fullmatch(text)
    if not match:
        raise ValueError(f"cannot read the parameter count {text!r}; expected e.g. 70B, 21B-A3B or ~1T")
    total = _billions(match.group(1), match.group(2))
    active = _billions(match.group(3), match.group(4)) if match.group(3) else None
    return total, active


def parse_context_window(text: str) -> int | None:
    """Context window in tokens of a size such as ``"32K"`` or ``"1M"`` (decimal units)."""
    text = (text or "").strip()
    if not text or text.casefold() == NOT_REPORTED.casefold():
        return None
    match = _CONTEXT.fullmatch(text)
    if not match:
        raise ValueError(f"cannot read the context window {text!r}; expected e.g. 32K or 1M")
    return int(Decimal(match.group(1)) * _TOKENS_PER_UNIT[match.group(2).upper()])


def is_open_weight_group(group: str) -> bool:
    """Whether a Table 2 group ("Proprietary models", "Open-weight models: …") is open-weight."""
    if group.startswith("Open-weight"):
        return True
    if group.startswith("Proprietary"):
        return False
    raise ValueError(f"unknown model group {group!r}; expected 'Proprietary models' or 'Open-weight models: …'")


@dataclass(frozen=True)
class PublishedModel:
    """One model's published figures, joined across the four tables.

    Metrics are as printed (3 decimals); token counts are whole tokens from Table 5's millions;
    prices are USD per million tokens, None for the models Table 6 does not price.
    """

    name: str
    group: str
    is_open_weight: bool
    family: str
    parameters: str
    parameters_b: float | None
    active_parameters_b: float | None
    context_window: int | None
    overall: float
    metrics: dict[str, dict[str, float]]
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    input_price_per_mtok: Decimal | None
    output_price_per_mtok: Decimal | None


def _read_table(directory: Path, name: str, key: str, columns: tuple[str, ...]) -> dict[str, tuple[int, dict]]:
    """Rows of one CSV by model name, each with its line number; checks the header and duplicates."""
    path = directory / name
    try:
        handle = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise PublishedDataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = [column for column in (key, *columns) if column not in (reader.fieldnames or [])]
        if missing:
            raise PublishedDataError(f"{path}: missing column(s) {', '.join(missing)}")
        rows: dict[str, tuple[int, dict]] = {}
        for row in reader:
            model = (row[key] or "").strip()
            if not model:
                raise PublishedDataError(f"{path}, line {reader.line_num}: no model name")
            if model in rows:
                raise PublishedDataError(f"{path}, line {reader.line_num}: {model} is listed twice")
            rows[model] = (reader.line_num, row)
    return rows


def _number(directory: Path, name: str, line: int, column: str, text: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, AttributeError):
        raise PublishedDataError(f"{directory / name}, line {line}: {column}={text!r} is not a number") from None
    if not value.is_finite():
        raise PublishedDataError(f"{directory / name}, line {line}: {column}={text!r} is not a finite number")
    return value


def read_published(directory: str | Path = FIXTURE_DIR) -> list[PublishedModel]:
    """The published models in Table 2's order, each joined with its Tables 4, 5 and 6 rows.

    Raises
    ------
    PublishedDataError
        When a table is missing, malformed, or does not cover the models of Table 2 (every
        model needs its Table 4 and Table 5 row; Table 6 may leave models out: they are unpriced).
    """
    directory = Path(directory)
    table2 = _read_table(directory, TABLE2, "model", ("group", "overall", *TABLE2_METRICS.values()))
    table4 = _read_table(directory, TABLE4, "Model", ("Family", "Parameters", "Context"))
    table5 = _read_table(
        directory, TABLE5, "Model", ("Prompt tokens (M)", "Completion tokens (M)", "All tokens (M)")
    )
    table6 = _read_table(directory, TABLE6, "Model", ("Input price", "Output price"))
    for name, table in ((TABLE4, table4), (TABLE5, table5), (TABLE6, table6)):
        unknown = sorted(set(table) - set(table2))
        if unknown:
            raise PublishedDataError(f"{directory / name}: model(s) not in Table 2: {', '.join(unknown)}")
    for name, table in ((TABLE4, table4), (TABLE5, table5)):
        absent = [model for model in table2 if model not in table]
        if absent:
            raise PublishedDataError(f"{directory / name}: no row for {', '.join(absent)}")

    def tokens(line: int, row: dict, column: str) -> int:
        return int((_number(directory, TABLE5, line, column, row[column]) * MILLION).to_integral_value())

    models = []
    for model, (line2, row2) in table2.items():
        line4, row4 = table4[model]
        line5, row5 = table5[model]
        try:
            is_open_weight = is_open_weight_group(row2["group"])
        except ValueError as exc:
            raise PublishedDataError(f"{directory / TABLE2}, line {line2}: {exc}") from None
        try:
            parameters_b, active_parameters_b = parse_parameters(row4["Parameters"])
            context_window = parse_context_window(row4["Context"])
        except ValueError as exc:
            raise PublishedDataError(f"{directory / TABLE4}, line {line4}: {exc}") from None
        metrics: dict[str, dict[str, float]] = {}
        for (task, metric), column in TABLE2_METRICS.items():
            metrics.setdefault(task, {})[metric] = float(_number(directory, TABLE2, line2, column, row2[column]))
        prices = table6.get(model)
        if prices is not None:
            line6, row6 = prices
            input_price = _number(directory, TABLE6, line6, "Input price", row6["Input price"])
            output_price = _number(directory, TABLE6, line6, "Output price", row6["Output price"])
        else:
            input_price = output_price = None
        models.append(
            PublishedModel(
                name=model,
                group=row2["group"].strip(),
                is_open_weight=is_open_weight,
                family=row4["Family"].strip(),
                parameters=row4["Parameters"].strip(),
                parameters_b=parameters_b,
                active_parameters_b=active_parameters_b,
                context_window=context_window,
                overall=float(_number(directory, TABLE2, line2, "overall", row2["overall"])),
                metrics=metrics,
                prompt_tokens=tokens(line5, row5, "Prompt tokens (M)"),
                completion_tokens=tokens(line5, row5, "Completion tokens (M)"),
                total_tokens=tokens(line5, row5, "All tokens (M)"),
                input_price_per_mtok=input_price,
                output_price_per_mtok=output_price,
            )
        )
    return models


@dataclass(frozen=True)
class PublishedImport:
    """What ``import_published`` did."""

    board: str
    rows: int
    models_created: int
    models_completed: int
    rows_removed: int


# ModelSpec fields the paper informs; an existing model only gets those that are blank.
_SPEC_FIELDS = (
    "family", "parameters", "parameters_b", "context_window", "is_open_weight",
    "input_price_per_mtok", "output_price_per_mtok",
)  # fmt: skip


@transaction.atomic
def import_published(*, board: str = PAPER_BOARD, directory: str | Path = FIXTURE_DIR) -> PublishedImport:
    """Load the paper's Tables 2, 4, 5 and 6 onto ``board``, replacing its published rows.

    Each of the 29 models gets a ``ModelSpec`` (created with the paper's family, size, context
    window, open-weight flag and prices; an existing one keeps its values and only has blanks
    filled, so an admin's settings win) and one ``PublishedResult`` on the board. Safe to repeat.
    """
    if not board or slugify(board) != board:
        raise ValueError(f"board {board!r} must be a slug: lower-case letters, digits and hyphens")
    published = read_published(directory)
    created = completed = 0
    kept = []
    for position, model in enumerate(published):
        paper = {field: getattr(model, field) for field in _SPEC_FIELDS}
        spec, was_created = ModelSpec.objects.get_or_create(name=model.name, defaults=paper)
        created += was_created
        blanks = [field for field, value in paper.items() if getattr(spec, field) in (None, "") and value is not None]
        if not was_created and blanks:
            for field in blanks:
                setattr(spec, field, paper[field])
            spec.save(update_fields=blanks)
            completed += 1
        row, _ = PublishedResult.objects.update_or_create(
            board=board,
            model=spec,
            defaults={
                "position": position,
                "group": model.group,
                "overall": model.overall,
                "metrics": model.metrics,
                "prompt_tokens": model.prompt_tokens,
                "completion_tokens": model.completion_tokens,
                "total_tokens": model.total_tokens,
                "input_price_per_mtok": model.input_price_per_mtok,
                "output_price_per_mtok": model.output_price_per_mtok,
                "citation": CITATION,
            },
        )
        kept.append(row.pk)
    removed, _ = PublishedResult.objects.filter(board=board).exclude(pk__in=kept).delete()
    return PublishedImport(
        board=board, rows=len(kept), models_created=created, models_completed=completed, rows_removed=removed
    )
