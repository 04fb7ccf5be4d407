"""The record browser's window endpoint against MNE, on a 23-hour Sleep-EDF-like night.

For a whole-record page and a 10-second page (every channel, 1,200 pixels), measures in one process
(median of ``--repeat``):

- ours: ``leaderboard.explorer.record.read_window`` as the endpoint runs it, the min/max pyramid
  kept in a statistics directory (built once beforehand, as ``precompute_records`` does);
- MNE: ``mne.io.read_raw_edf(path, preload=False)``, ``raw.get_data(start, stop)`` of the same
  window, then each pixel's minimum and maximum with numpy (the same pixels).

Then the heaviest page a visitor can ask of a 4-hour, 23-channel CHB-MIT-like file (average reference,
band-pass and notch, at the longest page they are applied to, and just beyond it), and the first window in a fresh process (opening the file, mapping the kept pyramid, answering),
and in a fresh process where no pyramid was kept (built on first use), against the page budget.
The night is written once into ``bench/out/`` (``bench/tools.py``).

    python bench/record_browser.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

WHOLE_TARGET_RATIO = 20.0
#: The page budget: what bench/web.py allows an episode page.
PAGE_BUDGET_MS = 500
WIDTH = 1200
TEN_SECONDS_AT = 40_000.0  # a 10-s page in the middle of the night

FRESH_CHILD = """
import os, sys, time, json
sys.path.insert(0, {root!r})
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
import django
django.setup()
from leaderboard.explorer import record
from tools_app.recording import open_recording
from tools_app.signal import stored
stored.configure({stats!r})
began = time.perf_counter()
recording = open_recording({path!r})
window = record.parse_window({{"width": "{width}"}}, recording)
data = record.read_window(recording, window, staff=False)
print(json.dumps({{"ms": (time.perf_counter() - began) * 1000, "channels": len(data["channels"])}}))
"""


def ours(recording, start, stop):
    from leaderboard.explorer import record

    window = record.parse_window({"start": str(start), "stop": str(stop), "width": str(WIDTH)}, recording)
    return record.read_window(recording, window, staff=False)


def with_mne(path, start, stop):
    """The same window read with MNE without preloading, each pixel's minimum and maximum by numpy."""
    import mne

    raw = mne.io.read_raw_edf(path, preload=False, verbose="error")
    sfreq = raw.info["sfreq"]
    first, last = int(np.ceil(start * sfreq)), min(int(np.ceil(stop * sfreq)), raw.n_times)
    data = raw.get_data(start=first, stop=last)
    pixels = min(WIDTH, last - first)
    edges = first + np.arange(pixels + 1) * (last - first) // pixels - first
    return np.minimum.reduceat(data, edges[:-1], axis=1), np.maximum.reduceat(data, edges[:-1], axis=1)


def timed(function, repeat):
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        function()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def heaviest(repeat) -> bool:
    """The slowest pages a visitor's query can ask for: re-referenced and filtered on the server."""
    from bench.tools import CHB_EDF, make_chb_recording
    from leaderboard.explorer import record
    from tools_app.recording import open_recording

    if not CHB_EDF.exists():
        print(f"writing {CHB_EDF.name} (4 h) …", flush=True)
        make_chb_recording()
    recording = open_recording(CHB_EDF)
    processed = {"montage": "average", "highpass": "0.5", "lowpass": "40", "notch": "60"}
    channels = len(recording.ch_names) * 2  # each derived channel and the recorded one it reads
    margin = max(record.FILTER_MARGIN_SEC, 3.0 / float(processed["highpass"]))  # as record._margin reads it
    longest = math.floor(record.MAX_PROCESSED_SAMPLES / channels / recording.sfreq - 2 * margin) - 1
    slowest = 0.0
    for seconds in (longest, 2 * longest, 4 * 3600):
        query = {"start": "600", "stop": str(600 + seconds), "width": str(WIDTH), **processed}
        window = record.parse_window(query, recording)
        answer = record.read_window(recording, window, staff=False)
        ms = timed(lambda window=window: record.read_window(recording, window, staff=False), repeat)
        slowest = max(slowest, ms)
        print(f"{CHB_EDF.name}, {seconds:7.0f} s page, {processed}: {ms:6.0f} ms "
              f"({'applied' if answer['montage'] == 'average' else 'shown as recorded'})", flush=True)
    print(f"the heaviest page a query can ask: {slowest:.0f} ms (budget {PAGE_BUDGET_MS} ms)")
    return slowest <= PAGE_BUDGET_MS


def fresh_process(path, stats):
    child = FRESH_CHILD.format(root=str(ROOT), stats=str(stats), path=str(path), width=WIDTH)
    output = subprocess.run([sys.executable, "-c", child], check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])["ms"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import django

    django.setup()
    from bench.tools import SLEEP_EDF, make_sleep_recording
    from tools_app.recording import clear_recording_cache, open_recording
    from tools_app.signal import pyramid, stored

    if not SLEEP_EDF.exists():
        SLEEP_EDF.parent.mkdir(parents=True, exist_ok=True)
        print(f"writing {SLEEP_EDF.name} (23 h) …", flush=True)
        make_sleep_recording()
    with tempfile.TemporaryDirectory() as directory:
        stats = Path(directory)
        stored.configure(stats)
        clear_recording_cache()
        recording = open_recording(SLEEP_EDF)
        duration = recording.n_times / recording.sfreq
        began = time.perf_counter()
        outcome = pyramid.pyramid_of(recording).prepare()
        build_ms = (time.perf_counter() - began) * 1000
        size = sum(path.stat().st_size for path in stats.rglob("*.stats"))
        print(f"{SLEEP_EDF.name}: {len(recording.ch_names)} channels, {duration / 3600:.0f} h, "
              f"{os.path.getsize(SLEEP_EDF) / 1e6:.0f} MB; pyramid {outcome} in {build_ms:.0f} ms, {size / 1e6:.1f} MB")

        pages = {"whole record": (0.0, duration), "10 s": (TEN_SECONDS_AT, TEN_SECONDS_AT + 10.0)}
        met = True
        for name, (start, stop) in pages.items():
            answer = ours(recording, start, stop)
            values = sum(len(channel["t"]) * 2 for channel in answer["channels"])
            ours_ms = timed(lambda: ours(recording, start, stop), args.repeat)
            mne_ms = timed(lambda: with_mne(SLEEP_EDF, start, stop), max(1, args.repeat // 2 if name == "whole record" else args.repeat))
            ratio = mne_ms / ours_ms
            line = f"{name:>12}: ours {ours_ms:8.1f} ms ({values} values), MNE get_data + numpy {mne_ms:8.1f} ms: {ratio:6.1f}x"
            if name == "whole record":
                met &= ratio >= WHOLE_TARGET_RATIO
                line += f" (target {WHOLE_TARGET_RATIO:g}x)"
            print(line, flush=True)

        met &= heaviest(args.repeat)
        kept_ms = fresh_process(SLEEP_EDF, stats)
        for path in list(stats.rglob("*")):
            if path.is_file():
                path.unlink()
        first_ms = fresh_process(SLEEP_EDF, stats)
        met &= kept_ms <= PAGE_BUDGET_MS
        print(f"first whole-record window in a fresh process: {kept_ms:.0f} ms with the pyramid kept "
              f"(budget {PAGE_BUDGET_MS} ms), {first_ms:.0f} ms building it on first use")
    print(f"targets: whole-record window at least {WHOLE_TARGET_RATIO:g}x MNE's; the heaviest page a query can ask "
          f"and the first window of a fresh process within {PAGE_BUDGET_MS} ms: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
