"""Micro-benchmark of the recording layer on synthetic files the size of the real ones.

Writes (with pyedflib, into a temporary directory) a 23-hour Sleep-EDF-like night (EEG/EOG at 100 Hz,
EMG/Resp/Temp/Event at 1 Hz, 30-s records) and a 4-hour CHB-MIT-like file (23 channels at 256 Hz, 1-s
records), then measures opening, reading 30 s of every channel, and the memory each takes, next to
``mne.io.read_raw_edf(preload=True)`` (what the official tools use) and pyedflib.

    python bench/recording.py [--skip-mne]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pyedflib

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tools import CHB_CHANNELS, SLEEP_CHANNELS  # noqa: E402  (the same two layouts)
from tools_app.recording import clear_recording_cache, open_recording  # noqa: E402


def _write(path: Path, labels, units, rates, ranges, record_seconds: int, hours: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    writer = pyedflib.EdfWriter(str(path), len(labels), file_type=pyedflib.FILETYPE_EDF)
    writer.setDatarecordDuration(record_seconds)
    writer.setSignalHeaders(
        [
            dict(
                label=label,
                dimension=unit,
                sample_frequency=rate,
                physical_min=-extent,
                physical_max=extent,
                digital_min=-32768,
                digital_max=32767,
            )
            for label, unit, rate, extent in zip(labels, units, rates, ranges)
        ]
    )
    chunk_seconds = 3600
    for _ in range(int(hours)):
        writer.writeSamples(
            [
                rng.uniform(-0.5 * extent, 0.5 * extent, int(rate * chunk_seconds))
                for rate, extent in zip(rates, ranges)
            ]
        )
    writer.close()


def _measure(label: str, function):
    tracemalloc.start()
    began = time.perf_counter()
    result = function()
    elapsed = time.perf_counter() - began
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  {label:<48} {elapsed * 1e3:9.1f} ms   peak alloc {peak / 2**20:8.1f} MB")
    return result


def _bench_file(path: Path, *, skip_mne: bool):
    print(f"{path.name}: {path.stat().st_size / 2**20:.0f} MB")
    clear_recording_cache()
    recording = _measure("open_recording", lambda: open_recording(path))
    sfreq = recording.sfreq
    middle = recording.n_times // 2
    window = (middle, middle + int(30 * sfreq))
    _measure("get_data 30 s, all channels (first call)", lambda: recording.get_data(None, *window))
    _measure("get_data 30 s, all channels (again)", lambda: recording.get_data(None, *window))
    _measure("get_data 30 s elsewhere", lambda: recording.get_data(None, 1000, 1000 + int(30 * sfreq)))
    _measure("get_data whole recording, all channels", lambda: recording.get_data())

    def pyedflib_slice():
        first_second = window[0] / sfreq
        with pyedflib.EdfReader(str(path)) as reader:
            rates = [reader.getSampleFrequency(i) for i in range(reader.signals_in_file)]
            return [
                reader.readSignal(i, int(first_second * rate), int(30 * rate)) for i, rate in enumerate(rates)
            ]

    _measure("pyedflib: open + read 30 s (own rates, no upsampling)", pyedflib_slice)
    if skip_mne:
        return
    import mne

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = _measure(
            "mne read_raw_edf(preload=True)",
            lambda: mne.io.read_raw_edf(path, preload=True, verbose="error"),
        )
    reference = raw.get_data(None, *window)
    mine = recording.get_data(None, *window)
    peak = np.abs(raw.get_data()).max(axis=1, keepdims=True)
    print(f"  largest difference to MNE / channel peak: {np.max(np.abs(mine - reference) / peak):.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-mne", action="store_true", help="do not time MNE's preload=True reader")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sleep = Path(tmp) / "night.edf"
        labels, units, per_record, ranges = zip(*SLEEP_CHANNELS)
        _write(sleep, labels, units, [n / 30 for n in per_record], ranges, 30, 23)
        chb = Path(tmp) / "chb.edf"
        _write(chb, CHB_CHANNELS, ["uV"] * 23, [256] * 23, [800.0] * 23, 1, 4)
        for path in (sleep, chb):
            _bench_file(path, skip_mne=args.skip_mne)
    print(f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
