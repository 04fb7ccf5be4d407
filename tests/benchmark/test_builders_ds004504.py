"""T4 builder: ds004504's participants.tsv and BIDS sidecars, with tiny EEGLAB files made here.

Our copy of ds004504 (tests/data/ds004504) has every sidecar but no .set (those are 12-52 MB
git-annex files), so the tests write small single-file EEGLAB sets that MNE reads.
"""

import json
import shutil
from collections import Counter
from pathlib import Path

import mne
import numpy as np
import pytest
import scipy.io

from benchmark.builders import build, ds004504
from benchmark.builders.base import BuildError
from tests.datafiles import DS004504, OFFICIAL



def jsonl(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["scenario_id"]: row for row in rows}


def write_set(path: Path, channel_names, sfreq=500.0, n_times=50, *, separate_data=False):
    """A minimal EEGLAB dataset (MATLAB file), data embedded or in a .fdt beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = np.random.default_rng(0).normal(size=(len(channel_names), n_times)).astype(np.float32)
    eeg = {"setname": path.stem, "nbchan": len(channel_names), "trials": 1, "pnts": n_times, "srate": sfreq,
           "xmin": 0.0, "xmax": (n_times - 1) / sfreq,
           "chanlocs": np.array([(name,) for name in channel_names], dtype=[("labels", "O")]),
           "event": np.array([]), "epoch": np.array([]), "icawinv": np.array([]), "icasphere": np.array([]),
           "icaweights": np.array([]), "ref": "common"}
    if separate_data:
        eeg["data"] = path.with_suffix(".fdt").name
        data.T.tofile(path.with_suffix(".fdt"))
    else:
        eeg["data"] = data
    scipy.io.savemat(path, {"EEG": eeg}, appendmat=False)
    return data


def bids_copy(root: Path, subjects=None) -> Path:
    """participants.tsv and the sidecars of ``subjects`` (all by default), each with a tiny .set."""
    source = DS004504
    root.mkdir(parents=True, exist_ok=True)
    lines = (source / "participants.tsv").read_bytes().split(b"\r\n")
    keep = [lines[0]] + [line for line in lines[1:] if subjects is None or line.split(b"\t")[0].decode() in subjects]
    (root / "participants.tsv").write_bytes(b"\r\n".join(keep))
    for line in keep[1:]:
        subject = line.split(b"\t")[0].decode()
        shutil.copytree(source / subject, root / subject)
        names = [row.split("\t")[0] for row in (root / subject / "eeg" / f"{subject}_task-eyesclosed_channels.tsv")
                 .read_text().splitlines()[1:]]
        write_set(root / subject / "eeg" / f"{subject}_task-eyesclosed_eeg.set", names)
    return root


def test_every_official_t4_subject_has_its_official_label_in_participants_tsv():
    participants = {p.participant_id: p for p in ds004504.read_participants(DS004504 / "participants.tsv")}
    assert Counter(p.label for p in participants.values()) == {"AD": 36, "HC": 29, "FTD": 23}
    keys = jsonl(OFFICIAL / "answer_keys" / "T4.jsonl")
    assert len(keys) == 69
    for scenario_id, row in keys.items():
        subject = scenario_id.split("_")[3]
        assert participants[subject].label == row["gold"]["label"], scenario_id


def test_full_pool_reproduces_the_official_metadata_and_balances_to_23_each(tmp_path):
    raw = bids_copy(tmp_path / "raw")
    candidates = ds004504.collect(raw)
    official = jsonl(OFFICIAL / "scenarios" / "T4.jsonl")
    runtime = jsonl(OFFICIAL / "runtime" / "T4.jsonl")
    by_id = {c.scenario_id: c for c in candidates}
    assert len(candidates) == 88 and set(official) <= set(by_id)
    for scenario_id, scenario in official.items():
        candidate = by_id[scenario_id]
        assert candidate.metadata == scenario["records"][0]["metadata"]
        assert list(candidate.metadata) == list(scenario["records"][0]["metadata"])
        assert candidate.input["metadata"] == scenario["input"]["metadata"]
        assert f"data/{candidate.data_name}" == runtime[scenario_id]["records"][0]["data_path"]
    assert "MMSE" not in json.dumps([c.input for c in candidates]).upper()
    report = build("ds004504", raw, tmp_path / "release")
    assert report.selected == {"AD": 23, "HC": 23, "FTD": 23}


def test_clinical_context_gives_age_gender_and_approximate_duration(tmp_path):
    [candidate] = ds004504.collect(bids_copy(tmp_path, {"sub-028"}))
    context = candidate.input["clinical_context"]
    assert "49-year-old male" in context and "about 826 s" in context and "500 Hz" in context
    assert candidate.gold == {"label": "AD", "finding_tags": []} and candidate.subject == "sub-028"


def test_the_released_set_is_readable_by_mne(tmp_path):
    raw = bids_copy(tmp_path / "raw", {"sub-001", "sub-037", "sub-066"})
    build("ds004504", raw, tmp_path / "release")
    path = tmp_path / "release" / "data" / "ds004504" / "sub-037" / "eeg" / "sub-037_task-eyesclosed_eeg.set"
    recording = mne.io.read_raw_eeglab(path, preload=True, verbose=False)
    assert recording.ch_names[:3] == ["Fp1", "Fp2", "F3"] and recording.info["sfreq"] == 500.0


def test_a_set_with_its_data_in_a_fdt_file_is_copied_with_it(tmp_path):
    raw = bids_copy(tmp_path / "raw", {"sub-002"})
    recording = raw / "sub-002" / "eeg" / "sub-002_task-eyesclosed_eeg.set"
    data = write_set(recording, [f"C{i}" for i in range(19)], separate_data=True)
    [candidate] = ds004504.collect(raw)
    target = tmp_path / "out" / recording.name
    target.parent.mkdir()
    candidate.write(target)
    loaded = mne.io.read_raw_eeglab(target, preload=True, verbose=False).get_data()
    np.testing.assert_allclose(loaded, data * 1e-6, rtol=1e-6)


def test_an_unknown_group_names_participants_tsv_and_its_line(tmp_path):
    raw = bids_copy(tmp_path / "raw", {"sub-001", "sub-002", "sub-003"})
    table = raw / "participants.tsv"
    table.write_bytes(table.read_bytes().replace(b"sub-003\tM\t70\tA", b"sub-003\tM\t70\tX"))
    with pytest.raises(BuildError, match=r"participants.tsv, line 4: unknown Group 'X' for sub-003"):
        build("ds004504", raw, tmp_path / "release")
    assert not (tmp_path / "release").exists()


@pytest.mark.parametrize("old,new,message", [
    (b"sub-002\tF\t78", b"sub-002\tF\told", r"line 3: Age must be a whole number"),
    (b"sub-002\tF", b"sub-002\tX", r"line 3: Gender must be M or F"),
    (b"sub-002\t", b"../x\t", r"line 3: participant_id must look like sub-001"),
    (b"Group", b"Cohort", r"line 1: missing column\(s\) Group"),
])
def test_malformed_participant_rows(tmp_path, old, new, message):
    raw = bids_copy(tmp_path, {"sub-001", "sub-002"})
    table = raw / "participants.tsv"
    table.write_bytes(table.read_bytes().replace(old, new, 1))
    with pytest.raises(BuildError, match=message):
        ds004504.collect(raw)


def test_the_sidecars_alone_are_refused_with_the_missing_set_named():
    with pytest.raises(BuildError, match=r"sub-001/eeg/sub-001_task-eyesclosed_eeg.set: missing "
                                         r"\(participants.tsv line 2 lists sub-001\)"):
        ds004504.collect(DS004504)


def test_a_set_that_is_not_a_matlab_file_is_refused(tmp_path):
    raw = bids_copy(tmp_path, {"sub-001"})
    (raw / "sub-001" / "eeg" / "sub-001_task-eyesclosed_eeg.set").write_text("/annex/objects/SHA256E-s1")
    with pytest.raises(BuildError, match="not an EEGLAB .set"):
        ds004504.collect(raw)


def test_a_missing_sidecar_is_named(tmp_path):
    raw = bids_copy(tmp_path, {"sub-001"})
    (raw / "sub-001" / "eeg" / "sub-001_task-eyesclosed_eeg.json").unlink()
    with pytest.raises(BuildError, match=r"sub-001_task-eyesclosed_eeg.json: missing BIDS sidecar"):
        ds004504.collect(raw)
