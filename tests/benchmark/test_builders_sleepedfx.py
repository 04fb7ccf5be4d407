"""The Sleep-EDFx builder and the lossless EDF cutter: the four real hypnograms against the official
T6 answer key, edge-wake trimming, the trimmed EDF itself, and the errors for malformed input."""

import dataclasses
import json
import shutil
import warnings
from datetime import datetime, timezone
from pathlib import Path

import mne
import numpy as np
import pyedflib
import pytest

from benchmark.builders.base import BuildError
from benchmark.builders.edf_cut import cut_records, read_annotations, read_header
from benchmark.builders.sleepedfx import collect, edge_wake_trim, epoch_labels, night_candidate
from tests.datafiles import OFFICIAL, SLEEP_EDFX as SLEEP

SHORT_PSG = SLEEP / "short_psg.edf"  # the first 10 records of the real SC4001E0-PSG.edf
SMOKE_SCENARIO = OFFICIAL / "smoke" / "scenarios" / "T6.jsonl"
PSG_RECORD_BYTES = 18240  # 3 x 3000 + 4 x 30 samples of int16 per 30-s record
PSG_HEADER_BYTES = 2048

# The four real hypnograms over their PSG (which ends where the 24-h "Sleep stage ?" padding
# begins; 79,500 s for SC4001E0): epoch count, label counts, and the leading and trailing wake runs.
RAW_NIGHTS = {
    "SC4001EC": (2650, {"W": 1997, "N1": 58, "N2": 250, "N3": 220, "REM": 125}, 1021, 908),
    "SC4002EC": (2830, {"W": 1886, "N1": 59, "N2": 373, "N3": 297, "REM": 215}, 869, 953),  # one W is movement time
    "SC4011EH": (2802, {"W": 1856, "N1": 109, "N2": 562, "N3": 105, "REM": 170}, 718, 1101),
    "SC4012EC": (2848, {"W": 1824, "N1": 92, "N2": 660, "N3": 96, "REM": 176}, 643, 1139),
}
# The same nights in the official answer key (benchmark/answer_keys/T6.jsonl upstream): epoch count,
# label counts, the leading and trailing wake runs kept, and the architecture.
OFFICIAL_NIGHTS = {
    "SC4001EC": (903, {"W": 250, "N1": 58, "N2": 250, "N3": 220, "REM": 125}, 96, 86,
                 (0.13842746400885936, 0.24363233665559247, 0.7231450719822813)),
    "SC4002EC": (1317, {"W": 373, "N1": 59, "N2": 373, "N3": 297, "REM": 215}, 147, 162,
                 (0.16324981017463933, 0.2255125284738041, 0.7167805618830676)),
    "SC4011EH": (1508, {"W": 562, "N1": 109, "N2": 562, "N3": 105, "REM": 170}, 207, 318,
                 (0.11273209549071618, 0.06962864721485411, 0.6273209549071618)),
    "SC4012EC": (1684, {"W": 660, "N1": 92, "N2": 660, "N3": 96, "REM": 176}, 223, 395,
                 (0.10451306413301663, 0.057007125890736345, 0.6080760095011877)),
}


def psg_header_for(hypnogram: Path, n_epochs: int):
    """SC4001E0's real PSG header, moved to the hypnogram's start and lengthened to ``n_epochs`` records."""
    return dataclasses.replace(read_header(SHORT_PSG), n_records=n_epochs, start=read_header(hypnogram).start)


def wake_runs(labels):
    lead = next(i for i, label in enumerate(labels) if label != "W")
    trail = next(i for i, label in enumerate(reversed(labels)) if label != "W")
    return lead, trail


def counts(labels):
    return {stage: labels.count(stage) for stage in ("W", "N1", "N2", "N3", "REM")}


# --- labels from the real hypnograms -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(RAW_NIGHTS))
def test_real_hypnograms_give_their_epoch_counts_and_labels(name):
    n_epochs, expected, lead, trail = RAW_NIGHTS[name]
    hypnogram = SLEEP / f"{name}-Hypnogram.edf"
    labels = epoch_labels(hypnogram, psg_header_for(hypnogram, n_epochs))
    assert len(labels) == n_epochs
    assert counts(labels) == expected
    assert wake_runs(labels) == (lead, trail)


def test_movement_time_is_wake():
    hypnogram = SLEEP / "SC4002EC-Hypnogram.edf"
    labels = epoch_labels(hypnogram, psg_header_for(hypnogram, 2830))
    assert labels[28080 // 30 - 1: 28080 // 30 + 2] == ["N3", "W", "N3"]


@pytest.mark.parametrize("name", sorted(OFFICIAL_NIGHTS))
def test_trimming_the_real_hypnograms_reproduces_the_official_answer_key(name):
    n_raw = RAW_NIGHTS[name][0]
    n_epochs, expected, lead, trail, (rem, n3, efficiency) = OFFICIAL_NIGHTS[name]
    hypnogram = SLEEP / f"{name}-Hypnogram.edf"
    labels = epoch_labels(hypnogram, psg_header_for(hypnogram, n_raw))
    trim = edge_wake_trim(labels)
    kept = labels[trim.lead:n_raw - trim.trail]
    assert trim.case == "trimmed_to_target"
    assert len(kept) == n_epochs
    assert counts(kept) == expected
    assert wake_runs(kept) == (lead, trail)
    assert (kept.count("REM") / len(kept), kept.count("N3") / len(kept),
            (len(kept) - kept.count("W")) / len(kept)) == (rem, n3, efficiency)


def test_own_annotation_reader_matches_mne():
    for hypnogram in sorted(SLEEP.glob("*-Hypnogram.edf")):
        ours = [(a.onset, a.duration, a.text) for a in read_annotations(hypnogram)]
        reference = mne.read_annotations(hypnogram)
        assert ours == [(float(o), float(d), str(t)) for o, d, t in
                        zip(reference.onset, reference.duration, reference.description)]


# --- edge-wake trimming rules ------------------------------------------------------------------------

def night(*runs):
    return [label for label, count in runs for _ in range(count)]


@pytest.mark.parametrize(("labels", "granularity", "expected"), [
    # 1. wake already at most the largest sleep stage: untouched
    (night(("W", 2), ("N2", 10), ("W", 3)), 1, (0, 0, "meets_target")),
    # 2. the ends keep target - interior wake epochs, shared in proportion to their lengths
    (night(("W", 30), ("N2", 20), ("W", 10)), 1, (15, 5, "trimmed_to_target")),
    (night(("W", 30), ("N2", 10), ("W", 2), ("REM", 10), ("W", 10)), 1, (24, 8, "trimmed_to_target")),
    # ... an end that starts with sleep is not cut
    (night(("N2", 10), ("W", 30)), 1, (0, 20, "trimmed_to_target")),
    # ... interior wake equal to the target: both ends go entirely
    (night(("W", 8), ("N2", 5), ("W", 10), ("N2", 5), ("W", 4)), 1, (8, 4, "trimmed_to_target")),
    # ... 60-s records: cuts rounded down to whole records, keeping a little more wake
    (night(("W", 30), ("N2", 21), ("W", 10)), 2, (14, 4, "trimmed_to_target")),
    # 3. interior wake above the target: a wake buffer of at most 60 epochs at each end
    (night(("W", 100), ("N2", 30), ("W", 50), ("N2", 10), ("W", 80)), 1, (40, 20, "wake_buffer")),
    (night(("W", 5), ("N1", 9), ("W", 40), ("N2", 10), ("W", 1)), 1, (0, 0, "wake_buffer")),
])
def test_edge_wake_trim_cases(labels, granularity, expected):
    trim = edge_wake_trim(labels, granularity=granularity)
    assert (trim.lead, trim.trail, trim.case) == expected


def test_trimming_keeps_interior_wake_and_reaches_the_target():
    labels = night(("W", 300), ("N2", 100), ("W", 7), ("REM", 40), ("N3", 60), ("W", 200))
    trim = edge_wake_trim(labels)
    kept = labels[trim.lead:len(labels) - trim.trail]
    assert kept.count("W") == 100
    assert kept[wake_runs(kept)[0]:len(kept) - wake_runs(kept)[1]].count("W") == 7


def test_a_night_without_sleep_cannot_be_trimmed():
    with pytest.raises(ValueError, match="no sleep epoch"):
        edge_wake_trim(["W"] * 10)


# --- synthetic raw directories -----------------------------------------------------------------------

def write_long_psg(path: Path, n_records: int) -> None:
    """A PSG with SC4001E0's real header, ``n_records`` long; record i is a real record stamped with i."""
    raw = SHORT_PSG.read_bytes()
    header = bytearray(raw[:PSG_HEADER_BYTES])
    header[236:244] = str(n_records).ljust(8).encode("ascii")
    with path.open("wb") as fid:
        fid.write(header)
        for index in range(n_records):
            source = (index % 10) * PSG_RECORD_BYTES
            record = bytearray(raw[PSG_HEADER_BYTES + source:PSG_HEADER_BYTES + source + PSG_RECORD_BYTES])
            record[:4] = index.to_bytes(4, "little")  # the first two EEG samples
            fid.write(record)


def write_hypnogram(path: Path, stages, *, start: datetime, patient: str = "X M X Male_60yr") -> None:
    """An annotation-only EDF+C hypnogram laid out like Sleep-EDF's: one record of duration 0."""
    tals = b"+0\x14\x14\x00" + b"".join(f"+{onset}\x15{duration}\x14{text}\x14\x00".encode()
                                        for onset, duration, text in stages)
    n_samples = (len(tals) + 1) // 2

    def field(value, width):
        return str(value).ljust(width).encode("ascii")

    startdate = f"Startdate {start.day:02d}-{start.strftime('%b').upper()}-{start.year} X X X"
    header = (field(0, 8) + field(patient, 80) + field(startdate, 80) + start.strftime("%d.%m.%y%H.%M.%S").encode()
              + field(512, 8) + field("EDF+C", 44) + field(1, 8) + field(0, 8) + field(1, 4)
              + field("EDF Annotations", 16) + field("", 80) + field("", 8) + field(-1, 8) + field(1, 8)
              + field(-32768, 8) + field(32767, 8) + field("", 80) + field(n_samples, 8) + field("", 32))
    path.write_bytes(header + tals.ljust(2 * n_samples, b"\x00"))


ST_CHANNELS = (("EEG Fpz-Cz", 100), ("EEG Pz-Oz", 100), ("EOG horizontal", 100), ("EMG submental", 1), ("Marker", 1))
ST_START = datetime(1994, 6, 1, 22, 30, 0)


def write_st_psg(path: Path, *, record_sec: int, n_records: int) -> None:
    """A plain-EDF PSG with the telemetry layout (EEG/EOG 100 Hz, EMG and marker 1 Hz)."""
    writer = pyedflib.EdfWriter(str(path), len(ST_CHANNELS), file_type=pyedflib.FILETYPE_EDF)
    writer.setSignalHeaders([pyedflib.highlevel.make_signal_header(label, sample_frequency=rate)
                             for label, rate in ST_CHANNELS])
    with warnings.catch_warnings():  # pyedflib warns that a forced record duration may change rates; it does not here
        warnings.simplefilter("ignore", UserWarning)
        writer.setDatarecordDuration(record_sec)
    writer.setStartdatetime(ST_START)
    writer.setPatientName("Male_60yr")
    rng = np.random.default_rng(n_records)
    writer.writeSamples([rng.uniform(-100, 100, rate * record_sec * n_records) for _, rate in ST_CHANNELS])
    writer.close()


def records(path: Path):
    header = read_header(path)
    data = path.read_bytes()[header.header_bytes:]
    return [data[i * header.record_bytes:(i + 1) * header.record_bytes] for i in range(header.n_records)]


@pytest.fixture(scope="module")
def sc4001_raw(tmp_path_factory):
    """SC4001E0 in PhysioNet's layout: the real hypnogram and a full-length (79,500-s) PSG."""
    raw = tmp_path_factory.mktemp("sleep-edfx")
    cassette = raw / "sleep-cassette"
    cassette.mkdir()
    write_long_psg(cassette / "SC4001E0-PSG.edf", 2650)
    shutil.copy(SLEEP / "SC4001EC-Hypnogram.edf", cassette)
    return raw


def test_sc4001_candidate_matches_the_official_scenario(sc4001_raw):
    (candidate,) = collect(sc4001_raw)
    official = json.loads(SMOKE_SCENARIO.read_text().splitlines()[0])
    assert candidate.scenario_id == official["scenario_id"] == "c3_sleep_sc_SC4001E0"
    assert candidate.task_id == "T6"
    assert candidate.label == candidate.gold["label"] == "sleep_session"
    assert candidate.metadata == official["input"]["metadata"]
    assert candidate.input["metadata"] == candidate.metadata
    assert set(candidate.input) == set(official["input"])
    assert candidate.gold["n_epochs_total"] == 903
    assert candidate.gold["epoch_label_counts_aasm"] == OFFICIAL_NIGHTS["SC4001EC"][1]
    assert list(candidate.gold["architecture"].values()) == list(OFFICIAL_NIGHTS["SC4001EC"][4])
    assert candidate.gold["aasm_labels"] == ["W", "N1", "N2", "N3", "REM"]
    assert candidate.data_name == "sleep_edfx/processed/c3_sleep_sc_SC4001E0.edf"
    assert candidate.source is None
    assert candidate.subject == "SC400"
    assert "903 epochs" in candidate.input["question"] and "33-year-old woman" in candidate.input["clinical_context"]


def test_trimmed_sc4001_edf_is_a_lossless_cut(sc4001_raw, tmp_path):
    (candidate,) = collect(sc4001_raw)
    out = tmp_path / "c3_sleep_sc_SC4001E0.edf"
    candidate.write(out)
    source = sc4001_raw / "sleep-cassette" / "SC4001E0-PSG.edf"
    # the official processed file has exactly this size (benchmark/manifests/files.jsonl upstream)
    assert out.stat().st_size == 16_472_768 == PSG_HEADER_BYTES + 903 * PSG_RECORD_BYTES
    header = read_header(out)
    assert (header.n_records, header.record_duration, header.edf_plus) == (903, 30.0, False)
    assert header.start == datetime(1989, 4, 24, 23, 55, 30)  # 16:13:00 plus the 925 records cut
    assert b"Startdate 24-APR-1989" in header.raw[88:168]
    assert header.raw[256:] == read_header(source).raw[256:]  # the signal table is untouched
    assert records(out) == records(source)[925:1828]
    raw = mne.io.read_raw_edf(out, preload=False, verbose="error")
    assert (raw.n_times, raw.info["sfreq"]) == (2_709_000, 100.0)
    assert raw.n_times / raw.info["sfreq"] == 27_090
    assert raw.ch_names == candidate.metadata["channels"]
    assert raw.info["meas_date"] == datetime(1989, 4, 24, 23, 55, 30, tzinfo=timezone.utc)


def st_night(tmp_path, *, record_sec, n_records, stages, name="ST7011J0"):
    telemetry = tmp_path / "sleep-telemetry"
    telemetry.mkdir()
    write_st_psg(telemetry / f"{name}-PSG.edf", record_sec=record_sec, n_records=n_records)
    write_hypnogram(telemetry / f"{name[:7]}P-Hypnogram.edf", stages, start=ST_START)
    return telemetry / f"{name}-PSG.edf", telemetry / f"{name[:7]}P-Hypnogram.edf"


def test_night_with_60_s_records_is_cut_on_whole_records(tmp_path):
    psg, _ = st_night(tmp_path, record_sec=60, n_records=40, stages=[
        (0, 930, "Sleep stage W"), (930, 600, "Sleep stage 2"), (1530, 870, "Sleep stage W")])
    (candidate,) = collect(tmp_path)
    # 31 + 29 wake epochs around 20 of sleep: keep 10 + 10, i.e. cut 21 and 19, rounded down to 20 and 18
    assert candidate.gold["n_epochs_total"] == 42
    assert candidate.gold["epoch_label_counts_aasm"]["W"] == 22
    assert candidate.metadata == {
        "channels": [label for label, _ in ST_CHANNELS], "eeg_channels": ["EEG Fpz-Cz", "EEG Pz-Oz"],
        "n_channels": 5, "sampling_rate": 100.0, "n_samples": 126_000, "duration_sec": 1260, "epoch_sec": 30,
        "n_epochs_total": 42, "source": "ST", "night": 1, "age": 60, "sex": "M"}
    assert candidate.scenario_id == "c3_sleep_st_ST7011J0"
    out = tmp_path / "out.edf"
    candidate.write(out)
    assert records(out) == records(psg)[10:31]
    raw = mne.io.read_raw_edf(out, preload=False, verbose="error")
    assert raw.n_times / raw.info["sfreq"] == 1260


def test_night_that_meets_the_target_keeps_its_raw_psg(tmp_path):
    psg, _ = st_night(tmp_path, record_sec=30, n_records=25, name="ST7022J0", stages=[
        (0, 60, "Sleep stage W"), (60, 600, "Sleep stage 2"), (660, 90, "Sleep stage W")])
    (candidate,) = collect(tmp_path)
    assert candidate.data_name == "sleep_edfx/raw/sleep-telemetry/ST7022J0-PSG.edf"
    assert candidate.source == psg and candidate.write is None
    assert candidate.gold["n_epochs_total"] == 25 and candidate.metadata["night"] == 2


@pytest.mark.parametrize(("stages", "message"), [
    ([(0, 300, "Sleep stage W"), (300, 450, "Sleep stage 2")], "hypnogram longer than its PSG"),
    ([(0, 300, "Sleep stage W"), (300, 15, "Sleep stage 2")], "not on the 30-s epoch grid"),
    ([(0, 300, "Sleep stage W"), (270, 60, "Sleep stage 2")], "stages overlap at 270 s"),
    ([(0, 300, "Sleep stage W"), (300, 30, "Lights off")], "unknown annotation 'Lights off'"),
])
def test_malformed_hypnogram_raises_naming_it(tmp_path, stages, message):
    st_night(tmp_path, record_sec=30, n_records=20, stages=stages)
    with pytest.raises(BuildError, match=rf"ST7011JP-Hypnogram.edf: .*{message}"):
        collect(tmp_path)


def test_unscored_tail_after_the_psg_is_ignored(tmp_path):
    st_night(tmp_path, record_sec=30, n_records=20, stages=[
        (0, 150, "Sleep stage W"), (150, 300, "Sleep stage 2"), (450, 150, "Sleep stage W"),
        (600, 86400 - 600, "Sleep stage ?")])
    (candidate,) = collect(tmp_path)
    assert candidate.gold["n_epochs_total"] == 20


def test_real_hypnogram_longer_than_its_psg_raises(tmp_path):
    cassette = tmp_path / "sleep-cassette"
    cassette.mkdir()
    shutil.copy(SHORT_PSG, cassette / "SC4001E0-PSG.edf")  # the real 300-s crop
    shutil.copy(SLEEP / "SC4001EC-Hypnogram.edf", cassette)
    with pytest.raises(BuildError, match=r"SC4001EC-Hypnogram.edf: hypnogram longer than its PSG: "
                                         r"'Sleep stage W' at 0.0 s for 30630.0 s ends after SC4001E0-PSG.edf, "
                                         r"which is 300 s long"):
        collect(tmp_path)


def test_truncated_psg_raises_naming_it(tmp_path):
    cassette = tmp_path / "sleep-cassette"
    cassette.mkdir()
    (cassette / "SC4001E0-PSG.edf").write_bytes(SHORT_PSG.read_bytes()[:-5000])
    shutil.copy(SLEEP / "SC4001EC-Hypnogram.edf", cassette)
    with pytest.raises(BuildError, match=r"SC4001E0-PSG.edf: truncated EDF: the header announces 10 data records "
                                         r"of 18240 bytes \(184448 bytes in all\) but the file has 179448 bytes"):
        collect(tmp_path)


def test_psg_without_hypnogram_raises_unless_allowed(tmp_path, caplog):
    cassette = tmp_path / "sleep-cassette"
    cassette.mkdir()
    shutil.copy(SHORT_PSG, cassette / "SC4001E0-PSG.edf")
    with pytest.raises(BuildError, match=r"SC4001E0-PSG.edf: no hypnogram file pairs with it \(prefix SC4001E\)"):
        collect(tmp_path)
    assert collect(tmp_path, allow_missing=True) == []
    assert "no hypnogram for SC4001E" in caplog.text


def test_two_hypnograms_for_one_psg_raise(tmp_path):
    cassette = tmp_path / "sleep-cassette"
    cassette.mkdir()
    shutil.copy(SHORT_PSG, cassette / "SC4001E0-PSG.edf")
    shutil.copy(SLEEP / "SC4001EC-Hypnogram.edf", cassette)
    shutil.copy(SLEEP / "SC4001EC-Hypnogram.edf", cassette / "SC4001EH-Hypnogram.edf")
    with pytest.raises(BuildError, match="all pair by the prefix SC4001E"):
        collect(tmp_path)


def test_raw_dir_without_sleep_folders_raises(tmp_path):
    with pytest.raises(BuildError, match="no sleep-cassette/ or sleep-telemetry/ folder"):
        collect(tmp_path)


# --- the cutter on EDF+ ------------------------------------------------------------------------------

def test_cutting_an_edf_plus_shifts_start_and_annotations(tmp_path):
    src = tmp_path / "plus.edf"
    writer = pyedflib.EdfWriter(str(src), 2, file_type=pyedflib.FILETYPE_EDFPLUS)
    writer.setSignalHeaders([pyedflib.highlevel.make_signal_header(f"EEG C{i}", sample_frequency=64) for i in (3, 4)])
    writer.setStartdatetime(datetime(2001, 3, 4, 23, 59, 50))
    writer.writeAnnotation(12.5, 1.0, "spike")
    writer.writeAnnotation(40.0, -1, "marker")
    writer.writeAnnotation(3.0, -1, "dropped")
    rng = np.random.default_rng(0)
    writer.writeSamples([rng.uniform(-100, 100, 64 * 60) for _ in range(2)])
    writer.close()
    out = tmp_path / "cut.edf"
    cut_records(src, out, start=10, stop=50)
    header = read_header(out)
    assert header.n_records == 40 and header.edf_plus
    assert header.start == datetime(2001, 3, 5, 0, 0, 0)
    assert b"Startdate 05-MAR-2001" in header.raw[88:168]
    signals = slice(0, 2 * 2 * 64)  # both EEG signals of a record; the annotation signal follows
    assert [r[signals] for r in records(out)] == [r[signals] for r in records(src)[10:50]]
    raw = mne.io.read_raw_edf(out, preload=True, verbose="error")
    original = mne.io.read_raw_edf(src, preload=True, verbose="error")
    np.testing.assert_array_equal(raw.get_data(), original.get_data()[:, 10 * 64:50 * 64])
    assert [(a["onset"], a["description"]) for a in raw.annotations] == [(2.5, "spike"), (30.0, "marker")]
    assert raw.info["meas_date"] == datetime(2001, 3, 5, 0, 0, 0, tzinfo=timezone.utc)


def test_cut_outside_the_file_raises(tmp_path):
    with pytest.raises(BuildError, match=r"cannot cut records \[5, 11\) from a file of 10 records"):
        cut_records(SHORT_PSG, tmp_path / "x.edf", start=5, stop=11)


def test_night_candidate_names_the_processed_file_after_the_scenario(sc4001_raw):
    cassette = sc4001_raw / "sleep-cassette"
    candidate = night_candidate(cassette / "SC4001E0-PSG.edf", cassette / "SC4001EC-Hypnogram.edf")
    assert candidate.data_name.endswith(f"/{candidate.scenario_id}.edf")
