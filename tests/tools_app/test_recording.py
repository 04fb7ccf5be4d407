"""The recording layer against MNE's readers and the official loaders, on real and generated files."""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import mne
import numpy as np
import pyedflib
import pytest
import scipy.fft
import scipy.io

from tests.datafiles import BONN, SLEEP_EDFX
from tools_app.edf import band_limited_samples, unique_channel_names
from tools_app.recording import Recording, RecordingError, clear_recording_cache, open_recording

CHB_LABELS = (
    "FP1-F7 F7-T7 T7-P7 P7-O1 FP1-F3 F3-C3 C3-P3 P3-O1 FP2-F4 F4-C4 C4-P4 P4-O2 FP2-F8 F8-T8 T8-P8 "
    "P8-O2 FZ-CZ CZ-PZ P7-T7 T7-FT9 FT9-FT10 FT10-T8 T8-P8"
).split()


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_recording_cache()
    yield
    clear_recording_cache()


def mne_edf(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mne.io.read_raw_edf(path, preload=True, verbose="error")


def slices(n_times: int, record: int):
    """Sample ranges worth comparing: edges, a middle, single samples and data-record boundaries."""
    middle = n_times // 2
    return [
        (0, n_times),
        (0, 1),
        (0, min(10, n_times)),
        (middle, middle + 1),
        (max(middle - 333, 0), min(middle + 777, n_times)),
        (max(record - 5, 0), min(record + 5, n_times)),
        (max(3 * record - 1, 0), min(3 * record + 1, n_times)),
        (n_times - 1, n_times),
        (max(n_times - record - 3, 0), n_times),
    ]


def assert_matches_raw(recording, raw, ranges):
    """Same channels, rates, filters and values (to 1e-12 of each channel's peak) as an MNE raw."""
    info = raw.info
    assert recording.ch_names == raw.ch_names
    assert recording.ch_types == raw.get_channel_types()
    assert recording.sfreq == info["sfreq"]
    assert recording.n_times == raw.n_times
    assert recording.duration_sec == recording.times_last == raw.times[-1]
    assert recording.highpass == info["highpass"]
    assert recording.lowpass == info["lowpass"]
    assert recording.custom_ref_applied == info["custom_ref_applied"]
    assert recording.subject_info == (None if info["subject_info"] is None else dict(info["subject_info"]))
    assert recording.bads == info["bads"]
    assert recording.eeg_picks == list(mne.pick_types(info, eeg=True, exclude=[]))
    full = raw.get_data()
    peak = np.abs(full).max(axis=1)
    for start, stop in ranges:
        data = recording.get_data(None, start, stop)
        assert data.dtype == np.float64 and data.shape == (len(raw.ch_names), stop - start)
        for row, channel_peak in enumerate(peak):
            np.testing.assert_allclose(
                data[row], full[row, start:stop], rtol=1e-12, atol=1e-12 * channel_peak,
                err_msg=f"{raw.ch_names[row]} [{start}:{stop}]",
            )


# -- EDF written byte by byte, to reach the header corners pyedflib will not write ---------------------------


def _field(value, width: int) -> bytes:
    raw = (value if isinstance(value, str) else f"{value}").encode("latin-1")
    assert len(raw) <= width, (value, width)
    return raw.ljust(width)


def edf_header(
    labels,
    samples_per_record,
    *,
    n_records,
    record_duration="1",
    units=None,
    physical=None,
    digital=None,
    prefilters=None,
    patient="X X X X",
) -> bytes:
    n = len(labels)
    units = units or ["uV"] * n
    physical = physical or [("-500", "500")] * n
    digital = digital or [("-32768", "32767")] * n
    prefilters = prefilters or [""] * n
    fixed = b"".join(
        [
            _field("0", 8),
            _field(patient, 80),
            _field("Startdate 01-JAN-2001 X X X", 80),
            _field("01.01.01", 8),
            _field("00.00.00", 8),
            _field(256 * (n + 1), 8),
            _field("", 44),
            _field(n_records, 8),
            _field(record_duration, 8),
            _field(n, 4),
        ]
    )
    columns = [
        [_field(label, 16) for label in labels],
        [_field("", 80)] * n,
        [_field(unit, 8) for unit in units],
        [_field(low, 8) for low, _ in physical],
        [_field(high, 8) for _, high in physical],
        [_field(low, 8) for low, _ in digital],
        [_field(high, 8) for _, high in digital],
        [_field(text, 80) for text in prefilters],
        [_field(count, 8) for count in samples_per_record],
        [_field("", 32)] * n,
    ]
    return fixed + b"".join(b"".join(column) for column in columns)


def write_edf(
    path, labels, samples_per_record, n_records, *, seed=0, cut_bytes=0, n_records_field=None, **header
):
    """Write random int16 records; ``cut_bytes`` removes bytes from the end (a truncated file)."""
    rng = np.random.default_rng(seed)
    records = rng.integers(-32768, 32768, size=(n_records, sum(samples_per_record)), dtype=np.int16)
    starts = np.concatenate([[0], np.cumsum(samples_per_record)])
    for channel in (i for i, label in enumerate(labels) if label == "EDF Annotations"):
        for record in range(n_records):  # a time-keeping TAL, padded with NULs
            tal = f"+{record}\x14\x14\x00".encode().ljust(2 * samples_per_record[channel], b"\x00")
            records[record, starts[channel] : starts[channel + 1]] = np.frombuffer(tal, "<i2")
    in_header = n_records if n_records_field is None else n_records_field
    header_bytes = edf_header(labels, samples_per_record, n_records=in_header, **header)
    body = records.astype("<i2").tobytes()
    path.write_bytes(header_bytes + body[: len(body) - cut_bytes])
    return path


def pyedflib_edf(path, labels, rates, seconds, *, prefilter="HP:0.5Hz LP:70Hz"):
    rng = np.random.default_rng(7)
    writer = pyedflib.EdfWriter(str(path), len(labels), file_type=pyedflib.FILETYPE_EDFPLUS)
    writer.setSignalHeaders(
        [
            dict(
                label=label,
                dimension="uV",
                sample_frequency=rate,
                physical_min=-800.0,
                physical_max=800.0,
                digital_min=-32768,
                digital_max=32767,
                prefilter=prefilter,
            )
            for label, rate in zip(labels, rates)
        ]
    )
    writer.setPatientCode("chb01")
    writer.setSex(1)  # pyedflib: 1 = male, written "M"
    writer.setPatientName("Jane_Q_Doe")
    writer.writeSamples([rng.uniform(-600, 600, rate * seconds) for rate in rates])
    writer.close()
    return path


# -- real files ----------------------------------------------------------------------------------------------


def test_sleep_edf_crop_matches_mne():
    path = SLEEP_EDFX / "short_psg.edf"
    recording = open_recording(path)
    raw = mne_edf(path)
    assert recording.sfreq == 100.0 and len(recording.ch_names) == 7 and recording.n_times == 30000
    assert recording.ch_types == ["eeg"] * 7  # EOG, EMG, Resp, Temp and the event marker too
    assert_matches_raw(recording, raw, slices(recording.n_times, record=3000))


def test_each_sleep_edf_channel_is_in_the_unit_its_header_gives():
    path = SLEEP_EDFX / "short_psg.edf"
    recording, raw = open_recording(path), mne_edf(path)
    # The header's units (PROVENANCE): EEG, EOG, EMG uV; Resp and Event marker blank; Temp DegC.
    assert recording.units == ["V", "V", "V", "", "V", "DegC", ""]
    temperature = recording.get_data(["Temp rectal"])[0]
    assert 34 <= temperature.min() and temperature.max() <= 40  # in degrees, as MNE gives it: not scaled
    np.testing.assert_array_equal(temperature, raw.get_data(["Temp rectal"])[0])


def test_units_follow_the_edf_header_and_stim_channels_have_none(tmp_path):
    labels, units = ["A", "B", "C", "D", "E", "F", "Status"], ["mV", "V", "", "\u00b5V", "DegC", "uV", "uV"]
    path = write_edf(tmp_path / "units.edf", labels, [32] * 7, 3, units=units)
    assert open_recording(path).units == ["V", "V", "", "V", "DegC", "V", ""]


def test_units_of_files_mne_reads_come_from_their_channel_info(tmp_path):
    info = mne.create_info(["Fz", "EOG", "Temp", "STI 014"], 250.0, ["eeg", "eog", "temperature", "stim"])
    path = tmp_path / "units_raw.fif"
    mne.io.RawArray(np.zeros((4, 500)), info, verbose="error").save(path, verbose="error")
    assert open_recording(path).units == ["V", "V", "\u00b0C", ""]


def test_header_less_files_are_in_volts_and_units_must_match_the_channels(tmp_path):
    path = tmp_path / "two.npy"
    np.save(path, np.zeros((2, 100)))
    assert open_recording(path).units == ["V", "V"]
    with pytest.raises(ValueError, match="one unit per channel"):
        Recording(sfreq=100.0, ch_names=["A", "B"], ch_types=["eeg", "eeg"], n_times=10, read=None, units=["V"])


@pytest.mark.parametrize(
    "hypnogram", ["SC4001EC-Hypnogram.edf", "SC4002EC-Hypnogram.edf", "SC4011EH-Hypnogram.edf"]
)
def test_annotation_only_edf_is_not_a_recording(hypnogram):
    path = SLEEP_EDFX / hypnogram
    assert mne_edf(path).ch_names == []  # MNE gives a raw without channels
    with pytest.raises(RecordingError, match="no signal channels"):
        open_recording(path)


@pytest.mark.parametrize("segment", ["Z/Z001.txt", "O/O002.txt", "N/N001.TXT", "F/F003.txt", "S/S001.txt"])
def test_bonn_segment_matches_official_loader(segment):
    path = BONN / segment
    official = mne.io.RawArray(
        np.loadtxt(path, dtype=float)[np.newaxis, :] * 1e-6,
        mne.create_info(["EEG"], 173.61, ["eeg"]),
        verbose="error",
    )
    recording = open_recording(path)
    assert recording.n_times == 4097  # every line of the file, although the dataset says 4096
    assert_matches_raw(recording, official, slices(4097, record=1000))


def test_bonn_metadata_sets_rate_and_name():
    path = BONN / "S" / "S001.txt"
    recording = open_recording(path, metadata={"sampling_rate": 200, "channel_names": ["Fz", "ignored"]})
    assert (recording.sfreq, recording.ch_names, recording.lowpass) == (200.0, ["Fz"], 100.0)
    assert open_recording(path).sfreq == 173.61


# -- generated EDF files against MNE -------------------------------------------------------------------------


def test_chbmit_layout_duplicates_and_dummies_match_mne(tmp_path):
    labels = CHB_LABELS[:20] + ["-", "ECG", "-", "T8-P8", "-"]
    path = pyedflib_edf(tmp_path / "chb.edf", labels, [256] * len(labels), 12)
    recording = open_recording(path)
    renamed = [recording.ch_names[i] for i in (14, 20, 22, 23, 24)]
    assert renamed == ["T8-P8-0", "--0", "--1", "T8-P8-1", "--2"]
    assert recording.subject_info == {
        "his_id": "chb01", "sex": 1, "first_name": "Jane", "middle_name": "Q", "last_name": "Doe"
    }
    assert_matches_raw(recording, mne_edf(path), slices(recording.n_times, record=256))


def test_mixed_rates_match_mne_preload(tmp_path):
    labels = ["EEG Fpz-Cz", "EEG Pz-Oz", "Resp", "EMG", "EMG", "-", "Temp", "Trigger"]
    rates = [100, 100, 1, 10, 25, 100, 3, 100]
    path = pyedflib_edf(tmp_path / "psg.edf", labels, rates, 301)
    recording = open_recording(path)
    assert recording.ch_names[3:5] == ["EMG-0", "EMG-1"]
    assert recording.ch_types[-1] == "stim"
    assert recording.eeg_picks == list(range(7))
    assert_matches_raw(recording, mne_edf(path), slices(recording.n_times, record=100))


def test_full_rate_channels_and_long_upsampled_reads_are_bit_identical_to_mne(tmp_path):
    path = pyedflib_edf(tmp_path / "psg.edf", ["A", "B", "C"], [200, 200, 2], 60)
    raw, recording = mne_edf(path), open_recording(path)
    np.testing.assert_array_equal(recording.get_data([0, 1], 1234, 5678), raw.get_data([0, 1], 1234, 5678))
    np.testing.assert_array_equal(recording.get_data([2], 100, 9000), raw.get_data([2], 100, 9000))


def test_reads_into_a_buffer_and_of_many_channels_at_once_equal_mne(tmp_path):
    path = pyedflib_edf(tmp_path / "psg.edf", ["A", "B", "C", "Trigger", "D"], [200, 200, 2, 200, 200], 60)
    raw, recording = mne_edf(path), open_recording(path)
    assert recording.whole_read_channels == {2}
    for picks, start, stop in [([0, 1, 4], 0, 12_000), ([0, 1, 3, 4], 517, 9_999), ([4, 0], 3, 205), ([2], 0, 12_000)]:
        buffer = np.full((len(picks), stop - start), np.nan)
        into = recording.read_into(picks, start, stop, buffer)
        assert into is buffer
        np.testing.assert_array_equal(into, raw.get_data(picks, start, stop))
        np.testing.assert_array_equal(recording.get_data(picks, start, stop), raw.get_data(picks, start, stop))
    with pytest.raises(ValueError, match="shape"):
        recording.read_into([0, 1], 0, 10, np.empty((2, 11)))


@pytest.mark.parametrize("n", [8_280_000, 2 * 3 * 5 * 7 * 11 * 23 + 1, 4096])
def test_the_inverse_fft_written_into_a_buffer_is_scipys(n):
    from tools_app.edf import inverse_fft

    spectrum = scipy.fft.rfft(np.random.default_rng(n).standard_normal(n // 100 + 3))
    out = np.empty(n)
    assert inverse_fft(spectrum, n, out=out) is out
    np.testing.assert_array_equal(out, scipy.fft.irfft(spectrum, n))


def corner(case_id, labels, samples, **header):
    return pytest.param(labels, samples, header, id=case_id)


@pytest.mark.parametrize(
    ("labels", "samples", "header"),
    [
        corner("padded-labels", [" Fp1 ", "Fp2  ", "EDF Annotations", "Cz"], [64, 64, 10, 64]),
        corner("n-records-minus-one", ["A", "B"], [64, 64], n_records_field=-1),
        corner("n-records-too-large", ["A", "B"], [64, 64], n_records_field=99),
        corner("n-records-too-small", ["A", "B"], [64, 64], n_records_field=2),
        corner("cut-mid-record", ["A", "B"], [64, 16], cut_bytes=37),
        corner("record-duration-zero", ["A", "B"], [64, 64], record_duration="0"),
        corner("record-duration-half", ["A", "B"], [128, 128], record_duration="0.5"),
        corner("units", list("ABCDE"), [32] * 5, units=["mV", "V", "", "\u00b5V", "DegC"]),
        corner("comma-decimals-and-flat-range", ["A", "B"], [32, 32], physical=[("-1,5", "1,5"), ("3", "3")]),
        corner("zero-digital-range", ["A", "B"], [32, 32], digital=[("0", "0"), ("-2048", "2047")]),
        corner("mixed-filters", ["A", "B"], [32, 32], prefilters=["HP:0.1Hz LP:40Hz", "HP:0,3Hz LP:35 N:50"]),
        corner("dc-highpass", ["A", "B"], [32, 32], prefilters=["HP:DC LP:15Hz", "HP:DC LP:15Hz"]),
        corner("highpass-above-lowpass", ["A", "B"], [32, 32], prefilters=["HP:20Hz LP:5Hz"] * 2),
        corner("unparsable-lowpass", ["A", "B"], [32, 32], prefilters=["LP:n/a", "LP:n/a"]),
        corner("repeated-hp", ["A", "B"], [32, 32], prefilters=["HP:0.1Hz HP:0.3 lp:9Hz", "HP:0.1Hz HP:0.3"]),
        corner("tal-first", ["EDF Annotations", "A", "B"], [8, 32, 32], prefilters=["", "HP:1", "HP:2"]),
        corner("status-channel", ["A", "Status", "B"], [40, 40, 40]),
        corner("slow-status-and-trigger", ["A", "STATUS", "trigger"], [40, 8, 40]),
        corner("taken-suffix", ["A", "A", "A-0", "A"], [16, 16, 16, 16]),
        corner("odd-and-single-sample-rates", ["A", "B", "C"], [90, 7, 1]),
        corner("channel-without-samples", ["A", "B"], [96, 0]),
        corner("full-patient", ["A"], [64], patient="MCH-0234567 F 02-MAY-1951 Haagse_Harry hand=2 weight=6"),
        corner("patient-without-birthdate", ["A"], [64], patient="P7 M X Smith"),
        corner("blank-patient", ["A"], [64], patient=""),
    ],
)
def test_header_corner_cases_match_mne(tmp_path, labels, samples, header):
    path = write_edf(tmp_path / "corner.edf", labels, samples, 7, **header)
    recording = open_recording(path)
    assert_matches_raw(recording, mne_edf(path), slices(recording.n_times, record=max(samples)))


def test_annotation_channel_is_dropped_and_filters_are_read_by_position(tmp_path):
    # MNE takes the filter strings by position among all header channels, the annotation channel included.
    path = write_edf(
        tmp_path / "tal.edf",
        ["EDF Annotations", "A", "B"],
        [8, 32, 32],
        5,
        prefilters=["HP:7Hz", "HP:1Hz", "HP:2Hz"],
    )
    recording = open_recording(path)
    assert recording.ch_names == ["A", "B"]
    assert recording.highpass == 7.0 == mne_edf(path).info["highpass"]


def test_truncated_file_uses_whole_records_only(tmp_path):
    path = write_edf(tmp_path / "cut.edf", ["A", "B"], [64, 64], 10, cut_bytes=100, n_records_field=10)
    assert open_recording(path).n_times == 9 * 64


# -- other formats -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "metadata", "names", "sfreq"),
    [
        ((512,), {}, ["EEG"], 256.0),
        ((512,), {"sampling_rate": 512, "channel_names": ["EEG"], "channels": 1}, ["EEG"], 512.0),
        ((3, 100), {"channel_names": ["Fp1", "Fp2", "Cz"]}, ["Fp1", "Fp2", "Cz"], 256.0),
        ((3, 100), {"channel_names": ["Fp1", "Fp2"]}, ["EEG1", "EEG2", "EEG3"], 256.0),
        ((1, 100), {"channels": ["C3"]}, ["EEG"], 256.0),
    ],
)
def test_npy_follows_official_loader(tmp_path, shape, metadata, names, sfreq):
    data = np.random.default_rng(3).normal(0, 30, shape).astype(np.float32)
    path = tmp_path / "epoch.npy"
    np.save(path, data)
    recording = open_recording(path, metadata=metadata)
    assert (recording.ch_names, recording.sfreq, recording.ch_types) == (names, sfreq, ["eeg"] * len(names))
    assert (recording.highpass, recording.lowpass, recording.subject_info) == (0.0, sfreq / 2, None)
    np.testing.assert_array_equal(recording.get_data(), np.atleast_2d(data.astype(float)) * 1e-6)


def write_eeglab(path, data, sfreq, names, *, separate=False):
    chanlocs = np.zeros((1, len(names)), dtype=[("labels", object), ("type", object)])
    for i, name in enumerate(names):
        chanlocs[0, i] = (name, "EEG")
    if separate:
        data.T.astype("<f4").tofile(path.with_suffix(".fdt"))
    fields = dict(
        setname="test", nbchan=float(len(names)), trials=1.0, pnts=float(data.shape[1]), srate=float(sfreq),
        xmin=0.0, xmax=(data.shape[1] - 1) / sfreq, chanlocs=chanlocs, event=np.zeros((0, 0)), ref="common",
        icawinv=np.zeros((0, 0)), icasphere=np.zeros((0, 0)), icaweights=np.zeros((0, 0)),
        icaact=np.zeros((0, 0)), epoch=np.zeros((0, 0)),
        data=path.with_suffix(".fdt").name if separate else data.astype(np.float32),
    )
    scipy.io.savemat(path, fields, appendmat=False, format="5")
    return path


@pytest.mark.parametrize("separate", [False, True], ids=["embedded", "fdt"])
def test_eeglab_set_matches_mne(tmp_path, separate):
    names = "Fp1 Fp2 F3 F4 C3 C4 P3 P4 O1 O2 F7 F8 T3 T4 T5 T6 Fz Cz Pz".split()
    data = np.random.default_rng(5).normal(0, 25, (19, 500 * 21))
    path = write_eeglab(tmp_path / "sub-001_task-eyesclosed_eeg.set", data, 500, names, separate=separate)
    recording = open_recording(path)
    assert recording.ch_names == names
    raw = mne.io.read_raw_eeglab(path, preload=True, verbose="error")
    assert_matches_raw(recording, raw, slices(10500, 500))


def test_fif_matches_mne(tmp_path):
    info = mne.create_info(["Fz", "Cz", "EOG"], 250.0, ["eeg", "eeg", "eog"])
    info["bads"] = ["Cz"]
    path = tmp_path / "rec_raw.fif"
    mne.io.RawArray(np.random.default_rng(2).normal(0, 1e-5, (3, 2500)), info, verbose="error").save(
        path, verbose="error"
    )
    recording = open_recording(path)
    assert (recording.eeg_picks, recording.bads) == ([0, 1], ["Cz"])
    assert_matches_raw(recording, mne.io.read_raw_fif(path, preload=True, verbose="error"), slices(2500, 250))


# -- errors never show the path ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.edf", None, "not found"),
        ("sz_case.vhdr", b"Brain Vision", "Unsupported recording format"),
        ("sz_case", b"", "Unsupported recording format"),
        ("garbage.edf", b"0" * 100, "Not an EDF file"),
        ("garbage.edf", b"x" * 600, "Not an EDF file"),
        ("header_only.edf", edf_header(["A"], [10], n_records=3), "no complete data record"),
        ("no_rate.edf", edf_header(["A", "Status"], [0, 10], n_records=2) + bytes(40), "no samples in a data record"),
        ("bad.txt", b"12\nabc\n", "could not be read"),
        ("cube.npy", None, "could not be read"),
        ("broken.set", b"not a mat file", "could not be read"),
    ],
)
def test_errors_do_not_leak_the_path(tmp_path, name, content, message):
    folder = tmp_path / "S" / "epileptic_ictal"
    folder.mkdir(parents=True)
    path = folder / name
    if name == "cube.npy":
        np.save(path, np.zeros((2, 2, 2)))
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(RecordingError, match=message) as error:
        open_recording(path)
    text = str(error.value)
    for part in ("epileptic_ictal", str(tmp_path), Path(name).stem):
        assert part not in text
    assert "S/" not in text and error.value.__cause__ is None


# -- get_data semantics --------------------------------------------------------------------------------------


def test_get_data_accepts_names_indices_and_clips_like_mne(tmp_path):
    path = write_edf(tmp_path / "r.edf", ["A", "B", "C"], [50, 50, 50], 4)
    recording, raw = open_recording(path), mne_edf(path)
    np.testing.assert_array_equal(recording.get_data(["C", 0, "C"], 10, 20), raw.get_data([2, 0, 2], 10, 20))
    np.testing.assert_array_equal(recording.get_data("B"), raw.get_data(["B"]))
    for start, stop in [(-5, 10), (150, 999), (30, 20), (250, 260), (0, -1)]:
        np.testing.assert_array_equal(recording.get_data(None, start, stop), raw.get_data(None, start, stop))
    assert recording.get_data([], 0, 10).shape == (0, 10)
    with pytest.raises(ValueError, match="No channel named 'Z'"):
        recording.get_data(["Z"])
    with pytest.raises(ValueError, match="indices in"):
        recording.get_data([3])


def test_returned_arrays_and_lists_are_fresh(tmp_path):
    path = tmp_path / "e.npy"
    np.save(path, np.arange(10.0))
    recording = open_recording(path)
    recording.get_data()[0, 0] = 99.0
    recording.ch_names.append("X")
    assert recording.get_data()[0, 0] == 0.0 and recording.ch_names == ["EEG"]


# -- cache ---------------------------------------------------------------------------------------------------


def test_cache_returns_same_object_and_evicts_least_recent(tmp_path):
    paths = [write_edf(tmp_path / f"r{i}.edf", ["A"], [10], 2, seed=i) for i in range(6)]
    first = open_recording(paths[0])
    assert open_recording(str(paths[0])) is first
    assert open_recording(tmp_path / "." / "r0.edf") is first
    for path in paths[1:4]:
        open_recording(path)
    assert open_recording(paths[0]) is first  # refreshed: r1 is now the least recently used
    open_recording(paths[4])
    assert open_recording(paths[0]) is first
    reopened = open_recording(paths[1])
    assert reopened is not open_recording(paths[4]) and open_recording(paths[1]) is reopened


def test_cache_sees_changed_files_and_metadata(tmp_path):
    path = tmp_path / "e.npy"
    np.save(path, np.zeros(8))
    first = open_recording(path, metadata={"sampling_rate": 128})
    assert open_recording(path, metadata={"sampling_rate": 128}) is first
    assert open_recording(path, metadata={"sampling_rate": 256}).sfreq == 256.0
    np.save(path, np.ones(9))
    os.utime(path, ns=(1, 1))
    assert open_recording(path, metadata={"sampling_rate": 128}).n_times == 9


# -- the interpolation of lower-rate channels and memory -----------------------------------------------------


@pytest.mark.parametrize(("n_in", "factor"), [(82800, 100), (301, 7), (300, 3), (2, 128), (1000, 2)])
def test_band_limited_samples_equal_the_full_inverse_fft(n_in, factor):
    signal = np.random.default_rng(n_in).normal(40.0, 5.0, n_in)
    spectrum = scipy.fft.rfft(signal)
    n_out = n_in * factor
    full = scipy.fft.irfft(spectrum, n_out)
    middle = n_out // 2
    ranges = [(0, 1), (0, 3000), (middle - 17, middle + 2983), (n_out - 3000, n_out), (n_out - 1, n_out)]
    for start, stop in ranges:
        start, stop = max(start, 0), min(stop, n_out)
        samples = band_limited_samples(spectrum, n_out, start, stop)
        np.testing.assert_allclose(samples, full[start:stop], rtol=0, atol=1e-14 * np.abs(full).max())


# Opens a recording and reads samples argv[2]:argv[3] of the channels argv[4:] (every channel when none) in a
# fresh process; prints the bytes allocated and the rise of the peak resident set (VmHWM, reset through
# clear_refs just before), in kB.
PEAK_MEMORY_SCRIPT = """
import sys, tracemalloc
from tools_app.recording import open_recording

def status_kb(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key))

with open("/proc/self/clear_refs", "w") as clear_refs:
    clear_refs.write("5")
resident = status_kb("VmRSS")
tracemalloc.start()
recording = open_recording(sys.argv[1])
recording.get_data([int(pick) for pick in sys.argv[4:]] or None, int(sys.argv[2]), int(sys.argv[3]))
print(tracemalloc.get_traced_memory()[1], status_kb("VmHWM") - resident)
"""
needs_proc = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc for peak RSS")
SLEEP_LAYOUT = (["EEG Fpz-Cz", "EEG Pz-Oz", "EOG", "Resp", "EMG", "Temp", "Event"], [3000] * 3 + [30] * 4, 23, 30, 60)
CHB_LAYOUT = (CHB_LABELS, [256] * 23, 4, 1, 600)


def long_edf(path, labels, samples, hours, record_seconds, chunk):
    """Write ``hours`` of records repeating one random block of ``chunk`` records; return the block."""
    n_records = hours * 3600 // record_seconds
    block = np.random.default_rng(0).integers(-2000, 2000, (chunk, sum(samples)), dtype=np.int16)
    with path.open("wb") as out:
        out.write(edf_header(labels, samples, n_records=n_records, record_duration=record_seconds))
        for _ in range(n_records // chunk):
            block.astype("<i2").tofile(out)
    return block


def peak_memory(path, start, stop, picks=()):
    """Return the bytes allocated and the peak RSS rise (kB) of one read in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", PEAK_MEMORY_SCRIPT, str(path), str(start), str(stop), *map(str, picks)],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, check=True,
    )
    allocated, peak_rss_kb = map(int, result.stdout.split())
    return allocated, peak_rss_kb


@needs_proc
@pytest.mark.parametrize(
    ("labels", "samples", "hours", "record_seconds", "chunk"),
    [pytest.param(*CHB_LAYOUT, id="chbmit-4h-uniform"), pytest.param(*SLEEP_LAYOUT, id="sleep-edf-23h-mixed-rates")],
)
def test_thirty_seconds_of_a_long_file_stay_small_in_memory(
    tmp_path, labels, samples, hours, record_seconds, chunk
):
    path = tmp_path / "long.edf"
    block = long_edf(path, labels, samples, hours, record_seconds, chunk)
    assert path.stat().st_size > 45 * 2**20
    n_records = hours * 3600 // record_seconds
    middle = n_records // 2 * samples[0]
    allocated, peak_rss_kb = peak_memory(path, middle, middle + 30 * samples[0] // record_seconds)
    assert allocated < 10 * 2**20
    assert peak_rss_kb < 32 * 1024  # reading the whole file would map all of it (48 MB for the night)

    first = open_recording(path).get_data([0], middle, middle + 5 * samples[0])
    cal = 1000 / 65535
    first_record = (n_records // 2) % chunk
    expected = block[first_record : first_record + 5, : samples[0]].ravel() * cal + (-500 + 32768 * cal)
    np.testing.assert_allclose(first[0], expected * 1e-6, rtol=1e-12)


@needs_proc
def test_a_whole_channel_read_leaves_the_file_unmapped(tmp_path):
    path = tmp_path / "long.edf"
    long_edf(path, *CHB_LAYOUT)
    n_times = 4 * 3600 * 256
    allocated, peak_rss_kb = peak_memory(path, 0, n_times, [3])
    samples_mb = n_times * (8 + 2) / 2**20  # the float64 result and the int16 copy it is decoded from
    assert allocated < (samples_mb + 1) * 2**20
    # The read touches every page of the 170-MB file; only a chunk of it may be mapped at a time.
    assert peak_rss_kb < (samples_mb + 24) * 1024
    assert path.stat().st_size > 160 * 2**20


def test_unique_channel_names_match_mne():
    from mne._fiff.meas_info import _unique_channel_names

    for names in (["A", "B"], ["-", "-", "-"], ["T8-P8", "x", "T8-P8"], ["A", "A", "A-0", "A"], ["", ""]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert unique_channel_names(names) == _unique_channel_names(list(names))
