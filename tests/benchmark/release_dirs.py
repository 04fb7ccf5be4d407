"""Release directories for the release and prompt tests, built in a temporary folder.

From the official files in ``tests/data/official`` (T1–T4 complete, T5/T6 as smoke lines), the real
Bonn segments in ``tests/data/bonn``, placeholder data files, and small synthetic EDF files.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from tests.datafiles import BONN, OFFICIAL as UPSTREAM

KINDS = ("scenarios", "runtime", "answer_keys")


def official_release(root: Path, tasks=("T1", "T2", "T3", "T4"), *, source: Path = UPSTREAM) -> Path:
    """A release at ``root`` with the official files of ``tasks`` and ``benchmark.json``; no data yet."""
    for kind in KINDS:
        (root / "benchmark" / kind).mkdir(parents=True, exist_ok=True)
        for task in tasks:
            if (source / kind / f"{task}.jsonl").is_file():
                shutil.copyfile(source / kind / f"{task}.jsonl", root / "benchmark" / kind / f"{task}.jsonl")
    shutil.copyfile(UPSTREAM / "benchmark.json", root / "benchmark" / "benchmark.json")
    return root


def smoke_release(root: Path, tasks=("T1", "T2", "T3", "T4", "T5", "T6")) -> Path:
    """The official smoke lines of ``tasks``; T6 gets a synthetic answer key (the smoke one is not shipped)."""
    official_release(root, tasks, source=UPSTREAM / "smoke")
    if "T6" in tasks and not (root / "benchmark/answer_keys/T6.jsonl").exists():
        scenario = json.loads(lines(root / "benchmark/scenarios/T6.jsonl")[0])
        n = scenario["records"][0]["metadata"]["n_epochs_total"]
        labels = ["W"] * (n - 300) + ["N2"] * 200 + ["REM"] * 100
        gold = {"label": "sleep_session", "epoch_labels_aasm": labels, "n_epochs_total": n,
                "aasm_labels": ["W", "N1", "N2", "N3", "REM"]}
        write_lines(root / "benchmark/answer_keys/T6.jsonl", [{"scenario_id": scenario["scenario_id"], "gold": gold}])
    return root


def runtime_paths(root: Path, task: str) -> list[str]:
    return [
        record["data_path"]
        for line in lines(root / f"benchmark/runtime/{task}.jsonl")
        for record in json.loads(line)["records"]
    ]


def placeholder_data(root: Path, tasks, *, content: bytes = b"placeholder\n") -> None:
    """A small file at every data path of ``tasks`` (import checks presence and size, not content)."""
    for task in tasks:
        for data_path in runtime_paths(root, task):
            (root / data_path).parent.mkdir(parents=True, exist_ok=True)
            (root / data_path).write_bytes(content)


def link_bonn(root: Path) -> None:
    """The real Bonn segments as the release's ``data/bonn/``."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "bonn").symlink_to(BONN, target_is_directory=True)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, rows) -> None:
    """Rows (objects or raw strings) as a JSON-lines file with the official compact separators."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [row if isinstance(row, str) else json.dumps(row, separators=(",", ":")) for row in rows]
    path.write_text("".join(f"{line}\n" for line in text), encoding="utf-8")


def edit_lines(path: Path, edit) -> None:
    """Rewrite a JSON-lines file: ``edit(number, line)`` returns the new line, or None to drop it."""
    kept = [new for number, line in enumerate(lines(path), start=1) if (new := edit(number, line)) is not None]
    path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")


def write_edf(path: Path, *, n_records: int, record_seconds: int = 1, sfreq: int = 256, n_channels: int = 2) -> None:
    """A minimal EDF file of flat channels: ``n_records`` data records of ``record_seconds`` each."""
    samples = sfreq * record_seconds

    def field(value, width):
        return str(value).ljust(width)[:width].encode("ascii")

    header = b"".join([
        field(0, 8), field("X X X X", 80), field("Startdate X X X X", 80), field("01.01.01", 8),
        field("00.00.00", 8), field(256 * (n_channels + 1), 8), field("", 44), field(n_records, 8),
        field(record_seconds, 8), field(n_channels, 4),
    ])
    per_signal = [
        [field(f"EEG{i}", 16) for i in range(n_channels)],
        [field("", 80)] * n_channels, [field("uV", 8)] * n_channels, [field(-100, 8)] * n_channels,
        [field(100, 8)] * n_channels, [field(-32768, 8)] * n_channels, [field(32767, 8)] * n_channels,
        [field("", 80)] * n_channels, [field(samples, 8)] * n_channels, [field("", 32)] * n_channels,
    ]
    data = struct.pack(f"<{samples * n_channels * n_records}h", *([0] * (samples * n_channels * n_records)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + b"".join(b"".join(column) for column in per_signal) + data)
