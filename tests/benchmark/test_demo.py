"""The synthetic demo: raw layouts every builder accepts, and ``build_demo_release`` end to end.

The raw-layout tests check each writer against its real builder and against MNE/pyedflib where a file format is involved. The end-to-end test builds the
demo suite, round-trips it through ``export_release``, ``import_release`` and ``manage.py score``
with the gold answers, and runs every tool on one recording of each task.
"""

import importlib
import json
import warnings
from collections import Counter
from datetime import datetime
from io import StringIO
from pathlib import Path

import mne
import numpy as np
import pyedflib
import pytest
import scipy.io
from django.core.management import call_command

from benchmark.demo import raw
from benchmark.demo.questions import DISTRACTORS, EEG_ADJACENT, EEG_STRICT

BUILDERS = {  # raw folder -> builder module
    "medmcqa": "benchmark.builders.medmcqa",
    "eegdenoisenet": "benchmark.builders.eegdenoisenet",
    "bonn": "benchmark.builders.bonn",
    "ds004504": "benchmark.builders.ds004504",
    "chbmit": "benchmark.builders.chbmit",
    "sleep-edfx": "benchmark.builders.sleepedfx",
}


def builder(folder):
    return importlib.import_module(BUILDERS[folder])


@pytest.fixture(scope="module")
def raw_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo-raw")
    raw.write_raw_datasets(root, seed=0)
    return root


def _quiet_mne():
    warnings.simplefilter("ignore")  # Sleep-EDF's mixed filter settings make MNE warn, as with the real files
    mne.set_log_level("ERROR")


# ---------------------------------------------------------------------------------------------
# EDF writing


def test_edf_writer_round_trips_through_mne_within_one_digital_step(tmp_path):
    _quiet_mne()
    rng = np.random.default_rng(0)
    fast, slow = rng.uniform(-150, 150, 2 * 3000), rng.uniform(34, 40, 2 * 30)
    path = raw.write_edf(tmp_path / "x.edf", [
        raw.EdfSignal("EEG Fpz-Cz", fast, 3000, physical_min=-192, physical_max=192, digital_min=-2048,
                      digital_max=2047),
        raw.EdfSignal("Temp rectal", slow, 30, unit="DegC", physical_min=34, physical_max=40, digital_min=-2849,
                      digital_max=2731),
    ], patient="X F X Female_33yr", recording="Startdate 24-APR-1989 X X X",
        start=datetime(1989, 4, 24, 16, 13), record_duration=30.0)
    assert path.stat().st_size == 3 * 256 + 2 * 2 * (3000 + 30)
    reader = pyedflib.EdfReader(str(path))
    try:
        assert reader.datarecord_duration == 30.0 and reader.datarecords_in_file == 2
        np.testing.assert_allclose(reader.readSignal(0), fast, atol=384 / 4095)
        np.testing.assert_allclose(reader.readSignal(1), slow, atol=6 / 5580)
    finally:
        reader.close()
    recording = mne.io.read_raw_edf(path, preload=True)
    np.testing.assert_allclose(recording.get_data(picks=[0])[0], fast * 1e-6, atol=384 / 4095 * 1e-6)


def test_annotation_file_is_edf_plus_c_with_sleep_edf_tals(tmp_path):
    _quiet_mne()
    path = raw.write_edf_annotations(
        tmp_path / "h.edf", raw.hypnogram_annotations(["W", "W", "1", "2", "2", "M"], unscored_tail_s=60),
        patient="X F X Female_33yr", recording="Startdate 24-APR-1989 X X X", start=datetime(1989, 4, 24, 16, 13))
    content = path.read_bytes()
    assert content[192:197] == b"EDF+C" and content[236:256].split() == [b"1", b"0", b"1"]
    assert b"+0\x14\x14\x00+0\x1560\x14Sleep stage W\x14\x00+60\x1530\x14Sleep stage 1\x14\x00" in content
    annotations = mne.read_annotations(path)
    assert list(annotations.description) == ["Sleep stage W", "Sleep stage 1", "Sleep stage 2", "Movement time",
                                             "Sleep stage ?"]
    np.testing.assert_allclose(annotations.onset, [0, 60, 90, 150, 180])
    np.testing.assert_allclose(annotations.duration, [60, 30, 60, 30, 60])


# ---------------------------------------------------------------------------------------------
# Each raw layout is what its builder reads


def test_medmcqa_layout_keeps_the_eeg_strict_questions_only(raw_root):
    rows = [json.loads(line) for name in ("train.json", "dev.json")
            for line in (raw_root / "medmcqa" / name).read_text(encoding="utf-8").splitlines()]
    assert list(rows[0]) == ["question", "exp", "cop", "opa", "opb", "opc", "opd", "subject_name", "topic_name",
                             "id", "choice_type"]
    assert len(rows) == len(EEG_STRICT) + len(EEG_ADJACENT) + len(DISTRACTORS)
    assert {row["cop"] for row in rows} == {1, 2, 3, 4}
    pool = builder("medmcqa").collect(raw_root / "medmcqa")
    assert sorted(c.input["question"] for c in pool) == sorted(q[2] for q in EEG_STRICT)
    correct = {q[2]: q[3][q[4] - 1] for q in EEG_STRICT}
    assert all(c.gold["answer_text"] == correct[c.input["question"]] for c in pool)
    assert all(c.input["eeg_strict_categories"] for c in pool)


def test_eegdenoisenet_layout_has_the_repository_arrays(raw_root):
    arrays = {kind: np.load(raw_root / "eegdenoisenet" / f"{kind}_all_epochs.npy") for kind in ("EEG", "EOG", "EMG")}
    assert {kind: a.shape for kind, a in arrays.items()} == {kind: (n, 512) for kind, n in raw.EDN_COUNTS.items()}
    assert all(a.dtype == np.float64 for a in arrays.values())
    pool = builder("eegdenoisenet").collect(raw_root / "eegdenoisenet")
    assert Counter(c.label for c in pool) == {"clean": 100, "ocular_contaminated": 100, "muscle_contaminated": 100}


def test_bonn_layout_has_crlf_and_case_variants_the_builder_reads(raw_root):
    folder = raw_root / "bonn"
    assert (folder / "N" / "N001.TXT").is_file() and (folder / "Z" / "z001.txt").is_file()
    crlf, lf = (folder / "S" / "S001.txt").read_bytes(), (folder / "O" / "O001.txt").read_bytes()
    assert crlf.count(b"\r\n") == 4097 and crlf.endswith(b"\r\n")
    assert lf.count(b"\n") == 4097 and b"\r" not in lf
    pool = builder("bonn").collect(folder)
    assert Counter(c.scenario_id.rsplit("_", 1)[1][0] for c in pool) == {"Z": 4, "O": 4, "S": 7}


def test_ds004504_layout_is_bids_with_eeglab_sets_mne_reads(raw_root):
    _quiet_mne()
    folder = raw_root / "ds004504"
    tsv = (folder / "participants.tsv").read_bytes()
    assert tsv.startswith(b"participant_id\tGender\tAge\tGroup\tMMSE\r\n") and not tsv.endswith(b"\n")
    pool = builder("ds004504").collect(folder)
    assert [(c.subject, c.label) for c in pool] == [(p.participant_id, p.cohort) for p in raw.DS_PARTICIPANTS]
    path = folder / "sub-001" / "eeg" / "sub-001_task-eyesclosed_eeg.set"
    recording = mne.io.read_raw_eeglab(path, preload=True)
    assert recording.ch_names == list(raw.DS_CHANNELS) and recording.info["sfreq"] == 500.0
    stored = scipy.io.loadmat(path)["data"]
    np.testing.assert_allclose(recording.get_data(), stored.astype(float) * 1e-6)
    sidecar = json.loads((folder / "sub-001" / "eeg" / "sub-001_task-eyesclosed_eeg.json").read_text())
    assert sidecar["RecordingDuration"] == pytest.approx(recording.times[-1], abs=0.05)
    assert pool[0].metadata["duration_sec"] == sidecar["RecordingDuration"]


def test_chbmit_layout_has_summaries_the_builder_parses_and_edfs_mne_reads(raw_root):
    _quiet_mne()
    folder = raw_root / "chbmit"
    pool = {c.scenario_id: c for c in builder("chbmit").collect(folder)}
    planned = {f"c1_seizure_{f.name[:-4]}": (s, f) for s in raw.CHB_SUBJECTS for f in s.files}
    assert set(pool) == set(planned)
    for scenario_id, (subject, recording) in planned.items():
        candidate = pool[scenario_id]
        assert candidate.gold["seizure_events"] == [[float(a), float(b)] for a, b in recording.seizures]
        assert candidate.metadata["duration_sec"] == recording.duration_s
        assert candidate.metadata["n_channels"] == len(subject.labels)
    hour = pool["c1_seizure_chb01_03"]
    assert hour.metadata["duration_sec"] >= 3600 and hour.metadata["n_channels"] == 23 and hour.gold["has_seizure"]
    assert sum(not c.gold["has_seizure"] for c in pool.values()) >= 2
    assert {c.subject for c in pool.values()} == {"chb01", "chb17"}
    edf = mne.io.read_raw_edf(folder / "chb17" / "chb17a_04.edf")
    assert edf.info["sfreq"] == 256 and "--0" in edf.ch_names and "T8-P8-1" in edf.ch_names
    assert (folder / "chb17" / "chb17-summary.txt").read_text().count("Seizure 1 Start Time:") == 2
    assert "File End Time: 24:" in (folder / "chb17" / "chb17-summary.txt").read_text()


def test_sleep_edfx_layout_has_a_night_the_builder_trims_to_at_least_8_hours(raw_root):
    _quiet_mne()
    folder = raw_root / "sleep-edfx" / "sleep-cassette"
    pool = {c.scenario_id: c for c in builder("sleep-edfx").collect(raw_root / "sleep-edfx")}
    long_night, short_night = pool["c3_sleep_sc_SC4801E0"], pool["c3_sleep_sc_SC4812E0"]
    assert long_night.data_name.startswith("sleep_edfx/processed/")  # edge wake was trimmed
    assert long_night.gold["n_epochs_total"] * 30 >= 8 * 3600
    assert long_night.gold["n_epochs_total"] < raw.SLEEP_NIGHTS[0].n_epochs
    assert short_night.data_name.startswith("sleep_edfx/raw/")
    assert all(count > 0 for count in long_night.gold["epoch_label_counts_aasm"].values())
    assert (long_night.metadata["age"], long_night.metadata["sex"]) == (33, "F")
    psg = mne.io.read_raw_edf(folder / "SC4801E0-PSG.edf")
    assert psg.ch_names == [channel[0] for channel in raw.SLEEP_CHANNELS]
    reader = pyedflib.EdfReader(str(folder / "SC4801E0-PSG.edf"))
    try:
        assert reader.datarecord_duration == 30.0 and reader.getSampleFrequency(3) == 1.0
    finally:
        reader.close()
    annotations = mne.read_annotations(folder / "SC4801EC-Hypnogram.edf")
    assert annotations.description[-1] == "Sleep stage ?" and annotations.onset[-1] == psg.n_times / 100
    other_night = mne.read_annotations(folder / "SC4812EH-Hypnogram.edf")
    assert set(annotations.description) | set(other_night.description) == set(raw.STAGE_DESCRIPTIONS.values())


def test_raw_layouts_are_reproducible(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        raw.write_raw_datasets(root, seed=0, datasets=("medmcqa", "bonn", "ds004504"))
    files = sorted(path.relative_to(first) for path in first.rglob("*") if path.is_file())
    assert files and all((first / name).read_bytes() == (second / name).read_bytes() for name in files)


# ---------------------------------------------------------------------------------------------
# build_demo_release end to end


def _gold_prediction(task, gold):
    if task == "T1":
        return {"action": "final_answer", "answer": gold["answer"]}
    if task in ("T2", "T3", "T4"):
        return {"action": "final_answer", "classification": gold["label"], "findings": []}
    if task == "T5":
        events = [{"onset_sec": onset, "offset_sec": offset} for onset, offset in gold["seizure_events"]]
        return {"action": "final_answer", "seizure_events": events}
    labels = gold["epoch_labels_aasm"]
    runs, start = [], 0
    for index in range(1, len(labels) + 1):
        if index == len(labels) or labels[index] != labels[start]:
            runs.append({"start_epoch": start, "end_epoch": index - 1, "stage": labels[start]})
            start = index
    return {"action": "final_answer", "hypnogram_rle": runs, "architecture": gold["architecture"]}


PERFECT = {
    "T1": {"accuracy": 1.0}, "T2": {"macro_f1": 1.0, "accuracy": 1.0}, "T3": {"macro_f1": 1.0, "accuracy": 1.0},
    "T4": {"macro_f1": 1.0, "accuracy": 1.0}, "T5": {"event_f1": 1.0, "dice_s": 1.0},
    "T6": {"macro_f1": 1.0, "cohen_kappa": 1.0},
}
COUNTS = {"T1": 20, "T2": 30, "T3": 12, "T4": 9, "T5": 6, "T6": 2}


def _tool_arguments(task, duration_sec, first_channel):
    """Arguments that suit each tool on this recording: the first minute, and one channel for the
    windowed tool, whose answer for a whole recording would exceed its output budget."""
    span = {"tmin": 0.0, "tmax": min(60.0, duration_sec)}
    windowed = {**span, "channels": [first_channel], "window_sec": 1.0 if task in ("T2", "T3") else 5.0}
    return {"compute_windowed_features": windowed, "detect_transients": span, "compute_channel_correlation": span}


@pytest.mark.slow
@pytest.mark.django_db
def test_build_demo_release_round_trips_and_every_tool_answers(settings, tmp_path):
    from benchmark.models import Suite
    from benchmark.releases import import_release
    from tools_app import call_tool
    from tools_app.registry import TOOL_NAMES

    settings.EEGAB_DATA_ROOT = tmp_path / "releases"
    out = StringIO()
    call_command("build_demo_release", stdout=out)
    assert "imported as suite demo" in out.getvalue()
    suite = Suite.objects.select_related("release").get(name="demo")
    assert suite.release.is_synthetic and "synthetic" in suite.release.name.lower()
    assert Counter(suite.instances.values_list("task__code", flat=True)) == COUNTS

    again = StringIO()
    call_command("build_demo_release", stdout=again)
    assert "Reusing" in again.getvalue() and "already imported as suite demo" in again.getvalue()

    exported = tmp_path / "exported"
    call_command("export_release", "demo", "--out", str(exported), "--with-data", stdout=StringIO())
    result = import_release(path=exported, suite_name="demo-roundtrip")
    assert result.created and result.counts == COUNTS
    assert result.suite.release_id == suite.release_id  # byte-identical files: the same release

    for task, perfect in PERFECT.items():
        gold_lines = [json.loads(line) for line in
                      (exported / "benchmark" / "answer_keys" / f"{task}.jsonl").read_text().splitlines()]
        predictions = tmp_path / f"{task}-runs.jsonl"
        predictions.write_text("".join(json.dumps({
            "scenario_id": row["scenario_id"], "status": "completed", "prediction": _gold_prediction(task, row["gold"]),
        }) + "\n" for row in gold_lines))
        scored = StringIO()
        call_command("score", scenarios=str(exported / "benchmark" / "scenarios" / f"{task}.jsonl"),
                     answer_key=str(exported / "benchmark" / "answer_keys" / f"{task}.jsonl"),
                     predictions=str(predictions), stdout=scored)
        summary = json.loads(scored.getvalue())
        assert summary["official"] is False and summary["n_items"] == COUNTS[task]
        assert {name: summary["metrics"][name] for name in perfect} == perfect, task

    for task in ("T2", "T3", "T4", "T5", "T6"):
        instance = max(result.suite.instances.filter(task__code=task), key=lambda i: i.duration_sec or 0)
        path = Path(result.suite.release.source) / instance.recording_path

        def answer_of(tool, **arguments):
            return call_tool(path, tool, {"record_id": instance.record_id, **arguments},
                             record_id=instance.record_id, metadata=instance.metadata)

        info = answer_of("get_recording_info")
        arguments = _tool_arguments(task, info["duration_sec"], info["channel_names"][0])
        for tool in TOOL_NAMES:
            answer = answer_of(tool, **arguments.get(tool, {}))
            if tool == "compute_channel_correlation" and instance.n_channels == 1:
                # The official answer on a single-channel recording is this error, not a crash.
                assert answer["error"].startswith("Need at least 2 valid channels"), answer
                continue
            assert "error" not in answer, (task, tool, answer)
            assert answer["_meta"]["approx_response_tokens"] > 0
