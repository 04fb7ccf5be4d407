"""Sleep-EDF Expanded (PhysioNet ``sleep-edfx`` 1.0.0) as T6 sleep-staging candidates.

The raw directory is PhysioNet's layout: ``sleep-cassette/SC4ssNE0-PSG.edf`` with
``SC4ssNx-Hypnogram.edf`` and ``sleep-telemetry/ST7ssNJ0-PSG.edf`` with ``ST7ssNx-Hypnogram.edf``. A
PSG and its hypnogram are paired by their first seven characters (the hypnogram's last letter is
the scorer's, not the PSG's). One night is one candidate.

Labels, one per 30-s epoch of the PSG, map R&K stages to AASM: W -> W, 1 -> N1, 2 -> N2, 3 and 4 ->
N3, R -> REM. ``Movement time`` is labelled W, as the official answer key does (SC4002E0's one
movement epoch is a W inside N3). ``Sleep stage ?`` marks unscored time: the ``?`` tail that pads
every cassette hypnogram to 24 h lies after the end of the PSG and is dropped; unscored epochs
inside the PSG (no night we could check has any) are labelled W too, the same as movement time.

Edge-wake trimming follows the paper (section 6.1) and reproduces the official answer key on the
nights we could check (SC4001E0, SC4002E0, SC4011E0, SC4012E0: epoch counts, label counts and where
the cut falls). With ``target`` the count of the largest of N1, N2, N3 and REM:

1. total wake <= target: the night is not trimmed and its raw PSG is used as it is;
2. otherwise, if interior wake (wake between the first and the last sleep epoch) <= target, the
   leading and trailing wake runs keep ``target - interior wake`` epochs between them, shared in
   proportion to the runs' lengths (the leading share rounded), so the night ends with exactly
   ``target`` wake epochs;
3. otherwise each end keeps a wake buffer of at most ``WAKE_BUFFER_EPOCHS`` next to the sleep body.
   The official buffer size is not published; 60 epochs (30 min) is consistent with every
   case-3 night inspected in the official answer key (SC4751E0, the line before SC4752E0, keeps 4
   trailing wake epochs, SC4761E0 54 and 50, SC4762E0 5 and 1, so the buffer is at least 54).

Only wake runs at the two ends are cut, never interior wake, and an end whose first (last) epoch is
sleep is not cut. Cuts fall on data-record boundaries: with 30-s records on any epoch, with longer
records on whole records, rounding toward keeping wake. Trimmed nights are written as new EDFs cut
losslessly from the PSG (see :mod:`benchmark.builders.edf_cut`).

Age and sex come from the PSG header's patient field (``X F X Female_33yr``): the subject
spreadsheets (``SC-subjects.xls``, ``ST-subjects.xls``) are Excel 97 files that need a reader the
platform does not depend on.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmark.builders.base import BuildError, Candidate
from benchmark.builders.edf_cut import EdfHeader, cut_records, read_annotations, read_header

logger = logging.getLogger(__name__)

EPOCH_SEC = 30
AASM_LABELS = ("W", "N1", "N2", "N3", "REM")
WAKE_BUFFER_EPOCHS = 60
UNSCORED = "?"  # "Sleep stage ?": time the scorer did not stage
STAGES = {
    "Sleep stage W": "W",
    "Sleep stage 1": "N1",
    "Sleep stage 2": "N2",
    "Sleep stage 3": "N3",
    "Sleep stage 4": "N3",
    "Sleep stage R": "REM",
    "Movement time": "W",
    "Sleep stage ?": UNSCORED,
}
SOURCES = {"SC": "sleep-cassette", "ST": "sleep-telemetry"}
_PSG_NAME = re.compile(r"(S[CT]\d{4}[A-Z]\d)-PSG\.edf")
_HYPNOGRAM_NAME = re.compile(r"(S[CT]\d{4}[A-Z])[A-Z]-Hypnogram\.edf")
_AGE_SEX = re.compile(r"\b(Female|Male)_(\d+)yr\b")


def epoch_labels(hypnogram: Path, psg: EdfHeader) -> list[str]:
    """AASM label of every whole 30-s epoch of the PSG, from its hypnogram.

    Raises
    ------
    BuildError
        If a stage boundary is not on the 30-s epoch grid, stages overlap, an annotation is not a
        known stage, or a scored stage lies beyond the end of the PSG (a hypnogram longer than its
        PSG).
    """
    hyp = read_header(hypnogram)
    offset = (hyp.start - psg.start).total_seconds()
    n_epochs = int(psg.duration // EPOCH_SEC)
    labels: list[str | None] = [None] * n_epochs  # None: no annotation covers the epoch
    for annotation in read_annotations(hypnogram):
        if annotation.text not in STAGES:
            raise BuildError(f"{hypnogram}: unknown annotation {annotation.text!r} at {annotation.onset} s")
        if annotation.duration is None:
            raise BuildError(f"{hypnogram}: {annotation.text!r} at {annotation.onset} s has no duration")
        stage = STAGES[annotation.text]
        first, count = (annotation.onset + offset) / EPOCH_SEC, annotation.duration / EPOCH_SEC
        if not (first.is_integer() and count.is_integer()):
            raise BuildError(f"{hypnogram}: {annotation.text!r} at {annotation.onset} s for {annotation.duration} s "
                             f"is not on the {EPOCH_SEC}-s epoch grid of {psg.path.name}")
        for epoch in range(int(first), int(first + count)):
            if epoch < 0 or epoch >= n_epochs:
                if stage == UNSCORED:
                    continue
                if epoch < 0:
                    raise BuildError(f"{hypnogram}: {annotation.text!r} at {annotation.onset} s starts before "
                                     f"{psg.path.name} does")
                raise BuildError(f"{hypnogram}: hypnogram longer than its PSG: {annotation.text!r} at "
                                 f"{annotation.onset} s for {annotation.duration} s ends after "
                                 f"{psg.path.name}, which is {psg.duration:g} s long")
            if labels[epoch] is not None:
                raise BuildError(f"{hypnogram}: stages overlap at {epoch * EPOCH_SEC - offset:g} s")
            labels[epoch] = stage
    return ["W" if label in (None, UNSCORED) else label for label in labels]


@dataclass(frozen=True)
class EdgeTrim:
    """Epochs to cut from each end of a night, and which of the paper's three cases applied."""

    lead: int
    trail: int
    case: str  # "meets_target" | "trimmed_to_target" | "wake_buffer"


def edge_wake_trim(labels: list[str], *, granularity: int = 1, buffer_epochs: int = WAKE_BUFFER_EPOCHS) -> EdgeTrim:
    """How many leading and trailing wake epochs to cut so wake approaches the largest sleep stage.

    Parameters
    ----------
    labels : list of str
        AASM label per epoch.
    granularity : int
        Cuts are multiples of this many epochs (the data record length in epochs).
    buffer_epochs : int
        Wake kept next to the sleep body at each end when the target cannot be reached.
    """
    n = len(labels)
    lead = next((i for i, label in enumerate(labels) if label != "W"), n)
    if lead == n:
        raise ValueError("the night has no sleep epoch")
    trail = next(i for i, label in enumerate(reversed(labels)) if label != "W")
    counts = Counter(labels)
    target = max(counts[stage] for stage in AASM_LABELS[1:])
    interior_wake = counts["W"] - lead - trail
    if counts["W"] <= target:
        return EdgeTrim(0, 0, "meets_target")
    if interior_wake <= target:
        keep = target - interior_wake
        keep_lead = round(keep * lead / (lead + trail))
        keep_trail, case = keep - keep_lead, "trimmed_to_target"
    else:
        keep_lead, keep_trail, case = min(lead, buffer_epochs), min(trail, buffer_epochs), "wake_buffer"
    cut_lead = (lead - keep_lead) // granularity * granularity
    cut_trail = (trail - keep_trail) // granularity * granularity
    return EdgeTrim(cut_lead, cut_trail, case)


def _epoch_grid(psg: EdfHeader) -> tuple[int, float]:
    """(epochs per cut unit, records per epoch) for a PSG whose records fit the 30-s epochs."""
    duration = psg.record_duration
    if duration <= 0:
        raise BuildError(f"{psg.path}: data records of {duration} s cannot hold 30-s epochs")
    if (duration / EPOCH_SEC).is_integer():
        return int(duration // EPOCH_SEC), EPOCH_SEC / duration
    if (EPOCH_SEC / duration).is_integer():
        return 1, EPOCH_SEC / duration
    raise BuildError(f"{psg.path}: data records of {duration:g} s do not align with 30-s epochs")


def _age_sex(*headers: EdfHeader) -> tuple[int | None, str | None]:
    for header in headers:
        match = _AGE_SEX.search(header.patient)
        if match:
            return int(match.group(2)), match.group(1)[0]
    return None, None


def _clinical_context(metadata: dict) -> str:
    parts = []
    if metadata.get("age") is not None and metadata.get("sex") is not None:
        person = {"F": "woman", "M": "man"}.get(metadata["sex"], "participant")
        parts.append(f"{metadata['age']}-year-old {person}")
    setting = {"SC": "Sleep Cassette, recorded at home", "ST": "Sleep Telemetry, recorded in hospital"}[metadata["source"]]
    parts.append(f"overnight polysomnography (Sleep-EDFx, {setting}, night {metadata['night']})")
    parts.append(f"about {metadata['duration_sec'] / 3600:.1f} hours long")
    parts.append(f"{metadata['n_epochs_total']} epochs of {EPOCH_SEC} s to be scored with the five AASM stages")
    return ", ".join(parts) + "."


def _question(n_epochs: int) -> str:
    return (f"Stage this overnight PSG in {EPOCH_SEC}-second epochs with the five AASM classes "
            f"(W / N1 / N2 / N3 / REM). Give a run-length-encoded hypnogram that covers all {n_epochs} "
            f"epochs, and report REM_pct, N3_pct and sleep_efficiency for the whole recording.")


def _gold(labels: list[str]) -> dict:
    n = len(labels)
    counts = Counter(labels)
    return {
        "label": "sleep_session",
        "epoch_labels_aasm": list(labels),
        "epoch_label_counts_aasm": {stage: counts[stage] for stage in AASM_LABELS},
        "n_epochs_total": n,
        "architecture": {
            "REM_pct": counts["REM"] / n,
            "N3_pct": counts["N3"] / n,
            "sleep_efficiency": (n - counts["W"]) / n,
        },
        "aasm_labels": list(AASM_LABELS),
    }


def night_candidate(psg_path: Path, hypnogram_path: Path) -> Candidate:
    """The T6 candidate of one night: labels, edge-wake trim, metadata and the data file to write."""
    psg = read_header(psg_path)
    hypnogram = read_header(hypnogram_path)
    record_id = _PSG_NAME.fullmatch(psg_path.name).group(1)
    source = record_id[:2]
    epochs_per_unit, records_per_epoch = _epoch_grid(psg)
    labels = epoch_labels(hypnogram_path, psg)
    try:
        trim = edge_wake_trim(labels, granularity=epochs_per_unit)
    except ValueError as exc:
        raise BuildError(f"{hypnogram_path}: {exc}") from None
    kept = labels[trim.lead:len(labels) - trim.trail]
    scenario_id = f"c3_sleep_{source.lower()}_{record_id}"
    age, sex = _age_sex(psg, hypnogram)
    sampling_rate = float(psg.sampling_rate)
    channels = list(psg.signal_labels)
    metadata = {
        "channels": channels,
        "eeg_channels": [c for c in channels if c.startswith("EEG")],
        "n_channels": len(channels),
        "sampling_rate": sampling_rate,
        "n_samples": int(len(kept) * EPOCH_SEC * sampling_rate),
        "duration_sec": len(kept) * EPOCH_SEC,
        "epoch_sec": EPOCH_SEC,
        "n_epochs_total": len(kept),
        "source": source,
        "night": int(record_id[5]),
    }
    if age is not None:
        metadata.update(age=age, sex=sex)
    if trim.case == "meets_target":
        data = {"data_name": f"sleep_edfx/raw/{SOURCES[source]}/{psg_path.name}", "source": psg_path}
    else:
        start = round(trim.lead * records_per_epoch)
        stop = round((len(labels) - trim.trail) * records_per_epoch)
        data = {"data_name": f"sleep_edfx/processed/{scenario_id}.edf",
                "write": functools.partial(cut_records, psg_path, start=start, stop=stop)}
    return Candidate(
        task_id="T6", scenario_id=scenario_id, label="sleep_session", gold=_gold(kept), metadata=metadata,
        input={"clinical_context": _clinical_context(metadata), "question": _question(len(kept)),
               "metadata": dict(metadata)},
        subject=record_id[:5], **data,
    )


def pair_nights(raw_dir: Path, *, allow_missing: bool = False) -> list[tuple[Path, Path]]:
    """(PSG, hypnogram) pairs found in ``raw_dir``'s sleep-cassette and sleep-telemetry folders."""
    raw_dir = Path(raw_dir)
    folders = [raw_dir / name for name in SOURCES.values() if (raw_dir / name).is_dir()]
    if not folders:
        raise BuildError(f"{raw_dir}: no sleep-cassette/ or sleep-telemetry/ folder "
                         "(expected PhysioNet's sleep-edfx layout)")
    pairs = []
    for folder in folders:
        psgs, hypnograms = {}, {}
        for path in sorted(folder.glob("*.edf")):
            if match := _PSG_NAME.fullmatch(path.name):
                psgs.setdefault(match.group(1)[:7], []).append(path)
            elif match := _HYPNOGRAM_NAME.fullmatch(path.name):
                hypnograms.setdefault(match.group(1), []).append(path)
        for key in sorted(psgs.keys() | hypnograms.keys()):
            found = psgs.get(key, []) + hypnograms.get(key, [])
            if len(psgs.get(key, [])) > 1 or len(hypnograms.get(key, [])) > 1:
                raise BuildError(f"{folder}: {', '.join(p.name for p in found)} all pair by the prefix {key}")
            if key not in psgs or key not in hypnograms:
                missing = "PSG" if key not in psgs else "hypnogram"
                if allow_missing:
                    logger.warning("%s: no %s for %s; skipped", found[0], missing, key)
                    continue
                raise BuildError(f"{found[0]}: no {missing} file pairs with it (prefix {key})")
            pairs.append((psgs[key][0], hypnograms[key][0]))
    return pairs


def collect(raw_dir: Path, *, allow_missing: bool = False) -> list[Candidate]:
    """One T6 candidate per PSG/hypnogram pair.

    Parameters
    ----------
    raw_dir : Path
        A directory in PhysioNet's layout (``sleep-cassette/``, ``sleep-telemetry/``).
    allow_missing : bool
        If False (default) a PSG without its hypnogram, or a hypnogram without its PSG, raises
        BuildError; if True it is skipped with a warning.
    """
    return [night_candidate(psg, hypnogram) for psg, hypnogram in pair_nights(raw_dir, allow_missing=allow_missing)]
