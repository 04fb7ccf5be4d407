"""Benchmark of the ten tools on long recordings, against the official approach.

Generates (once, into ``bench/out/``) a 23-hour, 7-channel Sleep-EDF-like EDF (EEG and EOG at
100 Hz, the other five channels at 1 Hz, 30-s data records) and a 4-hour, 23-channel 256 Hz
CHB-MIT-like EDF (bipolar names with the repeated ``T8-P8``). It then replays a fixed script
of calls modelled on the paper's traces (whole-record screens first, then finer windows,
across all ten tools, every call within the output budget) with each approach, each approach
in its own process (modules imported before timing; the 4-hour recording first, so that its
peak memory is measured before the 23-hour one is opened):

* ours: ``tools_app.call_tool``, twice: in a first process that computes each long record's
  statistics and keeps them (``EEGAB_STATS_DIR``, emptied first), then in a fresh process that
  maps the kept ones, as every worker after the first (or after ``precompute_records``) does;
* official: ``mne.io.read_raw_edf(preload=True)`` with a 4-file cache, then scipy per call
  (``bench/official_tools.py``).

It prints each approach's total time, p50 and maximum call latency (ours also after each
record's first call), peak RSS, the ratios, and whether every result agrees with the
official one (numbers within a relative 1e-9). The processor time (user and system, all
threads) is printed too: unlike the wall time it depends little on what else the machine is
running, and it adds up the work of our two cache-building threads even where they overlap.

Then, in another fresh process, it makes an attacker's calls (``hostile_calls``: huge caps,
zero thresholds, tiny or overlapping windows, many repeated channels, whole-record ranges off
the second grid, extreme numbers) on both recordings and prints the slowest call of each tool
on each, with its answer: every call must be answered within 2 s, or refused with an error
code and how to rescope (``tools_app.budget``, ``tools_app.workload``).

Run: ``python bench/tools.py`` (``--only ours`` to skip the slow official replay, ``--only
hostile`` for the attacker's calls alone).
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
SLEEP_EDF = OUT / "sleep-like-23h.edf"
CHB_EDF = OUT / "chb-like-4h.edf"
SLEEP_ID, CHB_ID = "night-0001", "chb-0001"

SLEEP_CHANNELS = [
    # label, unit, samples per 30-s record, physical range
    ("EEG Fpz-Cz", "uV", 3000, 192.0),
    ("EEG Pz-Oz", "uV", 3000, 197.0),
    ("EOG horizontal", "uV", 3000, 1009.0),
    ("Resp oro-nasal", "", 30, 2047.0),
    ("EMG submental", "uV", 30, 5.0),
    ("Temp rectal", "DegC", 30, 40.0),
    ("Event marker", "", 30, 1000.0),
]
CHB_CHANNELS = ["FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP2-F4", "F4-C4", "C4-P4",
                "P4-O2", "FP2-F8", "F8-T8", "T8-P8", "P8-O2", "FZ-CZ", "CZ-PZ", "P7-T7", "T7-FT9", "FT9-FT10",
                "FT10-T8", "T8-P8"]


# ---------------------------------------------------------------------- synthetic recordings

def _write_edf(path, headers, signals, record_seconds):
    import pyedflib

    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    writer = pyedflib.EdfWriter(str(partial), len(headers), file_type=pyedflib.FILETYPE_EDF)
    try:
        writer.setDatarecordDuration(record_seconds)
        writer.setSignalHeaders(headers)
        writer.writeSamples(signals)
    finally:
        writer.close()
    partial.rename(path)


def _header(label, unit, sample_rate, physical_max):
    return {"label": label, "dimension": unit, "sample_frequency": sample_rate, "physical_max": physical_max,
            "physical_min": -physical_max, "digital_max": 32767, "digital_min": -32768, "transducer": "", "prefilter": ""}


def _coloured_noise(rng, n, scale, smoothing):
    """Noise low-passed by a moving average of ``smoothing`` samples (µV)."""
    white = rng.standard_normal(n + smoothing)
    return np.convolve(white, np.ones(smoothing) / np.sqrt(smoothing), mode="valid")[:n] * scale


def make_sleep_recording(path=SLEEP_EDF, hours=23, seed=2024):
    """Write a night-like PSG: stages change every few minutes, with alpha, spindles and slow waves."""
    rng = np.random.default_rng(seed)
    sfreq, n = 100, hours * 3600 * 100
    times = np.arange(n) / sfreq
    stage = np.repeat(rng.integers(0, 5, n // (sfreq * 300) + 1), sfreq * 300)[:n]
    eeg = _coloured_noise(rng, n, 8.0, 3)
    eeg += np.where(stage == 0, 15.0, 2.0) * np.sin(2 * np.pi * 10 * times)
    eeg += np.where(stage == 3, 60.0, 5.0) * np.sin(2 * np.pi * 0.9 * times)
    eeg += np.where(stage == 2, 12.0, 0.0) * np.sin(2 * np.pi * 13 * times) * (np.sin(2 * np.pi * times / 7) > 0.9)
    posterior = 0.5 * eeg + _coloured_noise(rng, n, 5.0, 2) + 3.0 * np.sin(2 * np.pi * 50 * times)
    eog = _coloured_noise(rng, n, 20.0, 25) + np.where(stage == 4, 80.0, 0.0) * np.sign(np.sin(2 * np.pi * times / 3))
    slow = np.arange(hours * 3600)
    resp = 400 * np.sin(2 * np.pi * slow / 4.0) + rng.standard_normal(len(slow)) * 20
    emg = np.clip(rng.standard_normal(len(slow)) * 0.5 + 1.0, -5, 5)
    temp = 36.5 + 0.4 * np.sin(2 * np.pi * slow / (hours * 3600))
    marker = np.zeros(len(slow))
    signals = [np.clip(eeg, -192, 192), np.clip(posterior, -197, 197), np.clip(eog, -1009, 1009), resp, emg, temp, marker]
    headers = [_header(label, unit, per_record / 30, high) for label, unit, per_record, high in SLEEP_CHANNELS]
    _write_edf(path, headers, signals, 30)


def make_chb_recording(path=CHB_EDF, hours=4, seed=2025):
    """Write a bipolar scalp EEG with two left-temporal rhythmic "seizures" per hour."""
    rng = np.random.default_rng(seed)
    sfreq, n = 256, hours * 3600 * 256
    times = np.arange(n) / sfreq
    seizure = np.zeros(n)
    for hour in range(hours):
        for onset, duration in ((900, 60), (2400, 110)):
            start = (hour * 3600 + onset) * sfreq
            seizure[start : start + duration * sfreq] = np.linspace(0.3, 1.0, duration * sfreq)
    signals = []
    for index, label in enumerate(CHB_CHANNELS):
        left_temporal = label in ("F7-T7", "T7-P7", "P7-T7")
        signal = _coloured_noise(rng, n, 25.0, 4) + 4.0 * np.sin(2 * np.pi * (9 + index % 3) * times)
        signal += (150.0 if left_temporal else 20.0) * seizure * np.sin(2 * np.pi * 5.5 * times)
        signals.append(np.clip(signal, -800, 800))
    _write_edf(path, [_header(label, "uV", sfreq, 800.0) for label in CHB_CHANNELS], signals, 1)


# ---------------------------------------------------------------------- the script

def sleep_script():
    """A T6-like session: channel checks, whole-night screens, then epoch-level detail."""
    eeg, eog = "EEG Fpz-Cz", "EOG horizontal"
    calls = [
        ("get_recording_info", {}),
        ("get_channel_list", {}),
        ("compute_noise_metrics", {"channels": [eeg, "EEG Pz-Oz", eog, "EMG submental"], "line_freq": 50}),
        ("compute_band_power", {"channels": [eeg, "EEG Pz-Oz"]}),
        ("compute_psd", {"channels": [eeg, "EEG Pz-Oz"]}),
        ("compute_temporal_features", {"channels": [eeg, eog]}),
        ("compute_windowed_features", {"channels": [eeg], "features": ["rms_uv", "delta_relative", "alpha_relative", "sigma_power"],
                                       "window_sec": 30, "step_sec": 30, "tmin": 0, "tmax": 7200}),
        ("compute_windowed_features", {"channels": [eeg], "features": ["rms_uv", "delta_relative", "alpha_relative", "sigma_power"],
                                       "window_sec": 60, "step_sec": 60, "tmin": 7200, "tmax": 21600}),
        ("compute_windowed_features", {"channels": [eeg], "features": ["rms_uv", "delta_relative", "alpha_relative", "sigma_power"],
                                       "window_sec": 120, "step_sec": 120, "tmin": 21600, "tmax": 45240}),
        ("compute_windowed_features", {"channels": [eog], "features": ["rms_uv", "zero_crossing_rate_hz"],
                                       "window_sec": 180, "step_sec": 180, "tmin": 0, "tmax": 45180}),
        ("compute_windowed_features", {"channels": [eeg], "features": ["delta_relative", "theta_relative", "alpha_relative"],
                                       "window_sec": 600}),
        ("compute_asymmetry", {}),
        ("compute_channel_correlation", {"channels": [eeg, "EEG Pz-Oz", eog], "tmin": 3600, "tmax": 3630}),
    ]
    for epoch in (201, 286, 444, 700, 1188):
        start = epoch * 30
        calls += [
            ("compute_band_power", {"channels": [eeg], "tmin": start, "tmax": start + 30}),
            ("compute_psd", {"channels": [eeg, eog], "tmin": start, "tmax": start + 30}),
            ("compute_temporal_features", {"channels": [eog], "tmin": start, "tmax": start + 30}),
        ]
    calls += [
        ("detect_transients", {"channels": [eeg], "tmin": 8580, "tmax": 8640, "min_amplitude_uv": 50}),
        ("compute_windowed_features", {"channels": [eeg, eog], "features": ["rms_uv", "sigma_power", "delta_relative"],
                                       "window_sec": 30, "tmin": 13200, "tmax": 15000}),
    ]
    return calls


def chb_script():
    """A T5-like session: montage and quality, an hour-by-hour screen, then candidate periods."""
    temporal_pair = ["F7-T7", "F8-T8"]
    features = ["beta_relative", "rms_uv", "theta_relative"]
    calls = [
        ("get_channel_list", {}),
        ("get_recording_info", {}),
        ("compute_noise_metrics", {}),
        ("compute_band_power", {}),
        ("compute_psd", {"channels": ["F7-T7", "T7-P7", "F8-T8", "T8-P8-0"]}),
        ("compute_temporal_features", {}),
        ("compute_asymmetry", {}),
    ]
    for hour in range(4):
        calls.append(("compute_windowed_features", {"channels": ["T7-P7"], "features": features, "window_sec": 15,
                                                    "tmin": hour * 3600, "tmax": (hour + 1) * 3600}))
    calls += [
        ("compute_windowed_features", {"channels": temporal_pair, "features": ["alpha_relative", "beta_relative", "rms_uv", "theta_relative"],
                                       "window_sec": 5, "tmin": 2340, "tmax": 2520}),
        ("compute_windowed_features", {"channels": ["T7-P7"], "features": ["alpha_relative", "beta_relative", "rms_uv", "theta_relative"],
                                       "window_sec": 2, "tmin": 2320, "tmax": 2520}),
        ("compute_windowed_features", {"channels": ["T7-P7", "P7-O1"], "features": ["line_length_uv_s", "rms_uv"],
                                       "window_sec": 120}),
        ("detect_transients", {"channels": ["F7-T7", "T7-P7", "P7-O1"], "tmin": 2380, "tmax": 2500}),
        ("compute_channel_correlation", {"tmin": 2400, "tmax": 2410}),
        ("compute_channel_correlation", {"channels": ["FP1-F7", "FP2-F8", "FP1-F3", "FP2-F4"], "tmin": 300, "tmax": 330}),
    ]
    for onset in (900, 4500, 6000, 11700):
        calls += [
            ("compute_band_power", {"channels": ["F7-T7", "T7-P7"], "tmin": onset - 30, "tmax": onset + 30}),
            ("compute_psd", {"channels": ["T7-P7"], "tmin": onset, "tmax": onset + 20}),
            ("compute_temporal_features", {"channels": ["T7-P7", "F8-T8"], "tmin": onset, "tmax": onset + 60}),
            ("detect_transients", {"channels": ["T7-P7"], "tmin": onset, "tmax": onset + 60}),
        ]
    return calls


#: Replayed in this order, the 4-hour recording first so that its peak memory is measured alone.
SCRIPTS = {"chb": (CHB_EDF, CHB_ID, chb_script), "sleep": (SLEEP_EDF, SLEEP_ID, sleep_script)}


def hostile_calls(names, duration):
    """An attacker's calls on a recording with channels ``names``, ``duration`` s long.

    Every call is one the tool's schema accepts: huge caps, zero and extreme thresholds, tiny
    and huge windows and steps, many repeated channels, whole-record ranges off the second
    grid, extreme numbers. Each must be answered within 2 s, or refused with a way to rescope.
    """
    one, repeated = names[:1], names * 30
    off_grid = 0.013  # a window that starts between two seconds is not pooled from kept statistics
    calls = [
        ("get_recording_info", {"padding": "x" * 60000}),
        ("get_channel_list", {}),
        ("compute_noise_metrics", {}),
        ("compute_noise_metrics", {"channels": names * 3, "line_freq": 1e308}),
        ("compute_noise_metrics", {"channels": names * 2000}),
        ("compute_noise_metrics", {"channels": ["nope"] * 20000}),
    ]
    for tool in ("compute_psd", "compute_band_power", "compute_temporal_features"):
        calls += [
            (tool, {}),
            (tool, {"tmin": off_grid}),
            (tool, {"tmin": off_grid, "channels": names * 3}),
            (tool, {"tmin": off_grid, "tmax": 1e300, "channels": one * 50}),
            (tool, {"tmin": off_grid, "tmax": duration / 4, "channels": one}),
            (tool, {"tmin": 1e-9, "tmax": duration, "channels": repeated}),
        ]
    calls += [
        ("compute_psd", {"fmin": -1e308, "fmax": 1e308, "tmin": off_grid}),
        ("compute_psd", {"method": "multitaper"}),
        ("compute_psd", {"method": "multitaper", "tmax": 4096, "channels": one}),
        ("compute_psd", {"method": "multitaper", "tmin": off_grid, "tmax": 900, "channels": names * 3}),
        ("detect_transients", {}),
        ("detect_transients", {"min_amplitude_uv": 0, "max_candidates_per_channel": 10**12}),
        ("detect_transients", {"min_amplitude_uv": -1e308, "max_candidates_per_channel": 10**12, "channels": one}),
        ("detect_transients", {"min_amplitude_uv": 1e-9, "max_candidates_per_channel": 10**12, "channels": one,
                               "tmax": duration / 8}),
        ("detect_transients", {"min_amplitude_uv": 0, "max_candidates_per_channel": 10**12, "channels": names * 2,
                               "tmin": off_grid, "tmax": 3600}),
        ("detect_transients", {"min_amplitude_uv": 1e308, "channels": repeated}),
        ("compute_asymmetry", {}),
        ("compute_asymmetry", {"feature": "all", "tmin": off_grid}),
        ("compute_channel_correlation", {}),
        ("compute_channel_correlation", {"tmin": off_grid}),
        ("compute_channel_correlation", {"channels": (names * 5)[:29], "tmin": off_grid}),
        ("compute_channel_correlation", {"channels": names * 30}),
        ("compute_windowed_features", {"window_sec": 0.04, "step_sec": 0.01}),
        ("compute_windowed_features", {"channels": one, "features": ["rms_uv"], "window_sec": 1e-300, "step_sec": 1e-300}),
        ("compute_windowed_features", {"channels": one, "features": ["rms_uv"], "window_sec": duration, "step_sec": 1}),
        ("compute_windowed_features", {"channels": names, "features": ["kurtosis"], "window_sec": 1e9, "tmin": off_grid}),
        ("compute_windowed_features", {"channels": one, "features": ["kurtosis", "zero_crossing_rate_hz", "delta_power"],
                                       "window_sec": 3000.013, "step_sec": 20}),
        ("compute_windowed_features", {"channels": one, "features": ["delta_power", "zero_crossing_rate_hz"],
                                       "window_sec": duration / 2, "step_sec": 1, "tmax": duration / 2 + 400}),
        ("compute_windowed_features", {"channels": repeated, "features": ["rms_uv"], "window_sec": 1e9}),
        ("compute_windowed_features", {"channels": one, "features": ["nope"] * 20000 + ["sigma_power"],
                                       "window_sec": 120, "step_sec": 0.5, "tmax": 360}),
    ]
    return calls


# ---------------------------------------------------------------------- one replay (child process)

def _runner(approach):
    """Return ``run(path, record_id, tool_name, arguments)`` for an approach, its modules imported.

    Imports are done before any timing: a worker serving episodes has them loaded already.
    """
    if approach == "ours":
        from tools_app import call_tool, tool_specs

        tool_specs()

        return lambda path, record_id, name, arguments: call_tool(path, name, arguments, record_id=record_id)
    from bench import official_tools

    return lambda path, record_id, name, arguments: official_tools.call(official_tools.load(path), name, arguments)


def replay(approach):
    """Run every recording's script with one approach; return latencies, results and peak RSS."""
    run = _runner(approach)
    replays = {}
    for recording, (path, record_id, script) in SCRIPTS.items():
        calls = script()
        latencies, results = [], []
        started, started_cpu = time.perf_counter(), time.process_time()
        for name, arguments in calls:
            begin = time.perf_counter()
            results.append(run(path, record_id, name, {"record_id": record_id, **arguments}))
            latencies.append(time.perf_counter() - begin)
        replays[recording] = {
            "latencies": latencies,
            "total": time.perf_counter() - started,
            "cpu": time.process_time() - started_cpu,
            "peak_rss_mb": peak_rss_mb(),
            "results": results,
            "calls": [name for name, _ in calls],
        }
    return replays


def replay_hostile():
    """Run every recording's hostile calls with our tools; return each call's latencies and answer."""
    from tools_app import call_tool, tool_specs

    tool_specs()
    replays = {}
    for recording, (path, record_id, _) in SCRIPTS.items():
        info = call_tool(path, "get_recording_info", {"record_id": record_id}, record_id=record_id)
        call_tool(path, "compute_noise_metrics", {"record_id": record_id}, record_id=record_id)  # statistics mapped
        calls = []
        for name, arguments in hostile_calls(info["channel_names"], info["duration_sec"]):
            begin, begin_cpu = time.perf_counter(), time.process_time()
            result = call_tool(path, name, {"record_id": record_id, **arguments}, record_id=record_id)
            calls.append({
                "tool": name,
                "arguments": _summary(arguments),
                "wall": time.perf_counter() - begin,
                "cpu": time.process_time() - begin_cpu,
                "answer": result.get("error_code", "result"),
                "tokens": len(json.dumps(result, default=str)) // 4,
            })
        replays[recording] = calls
    return replays


def _summary(arguments):
    """The arguments of a call, long values shortened, for the report."""
    def short(value):
        text = json.dumps(value)
        return value if len(text) <= 24 else f"{text[:16]}...({len(value) if isinstance(value, list | str) else ''})"
    return {key: short(value) for key, value in arguments.items()}


def peak_rss_mb():
    """This process's peak resident memory, MB.

    Linux's ``VmHWM`` counts this program only; ``ru_maxrss`` also keeps the peak of the
    process it was forked from (the parent that generated the recordings, 800 MB), which
    survives the ``exec``.
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))) / 1024


def _child(approach, output):
    sys.path.insert(0, str(ROOT))
    Path(output).write_text(json.dumps(replay_hostile() if approach == "hostile" else replay(approach)))


STATS_DIR = OUT / "record-stats-tools"


def _run_child(approach, name=None):
    output = OUT / f"replay-{name or approach}.json"
    environment = {**os.environ, "EEGAB_STATS_DIR": str(STATS_DIR)}
    subprocess.run([sys.executable, __file__, "--child", approach, str(output)], check=True, cwd=ROOT, env=environment)
    return json.loads(output.read_text())


# ---------------------------------------------------------------------- report

def _agrees(ours, official, relative=1e-9):
    """Whether two results are equal, numbers up to a relative 1e-9 (and ``_meta`` sizes 1 %).

    The asymmetry tool's not-applicable ``reason`` is our own wording, so it and the sizes
    that depend on it are not compared.
    """
    if isinstance(official, dict):
        if official.get("applicable") is False:
            ours = {key: value for key, value in ours.items() if key not in ("_meta", "reason")}
            official = {key: value for key, value in official.items() if key not in ("_meta", "reason")}
        return isinstance(ours, dict) and list(ours) == list(official) and all(
            _agrees(ours[key], official[key], 0.01 if key == "_meta" else relative) for key in official)
    if isinstance(official, list):
        return isinstance(ours, list) and len(ours) == len(official) and all(
            _agrees(a, b, relative) for a, b in zip(ours, official))
    if isinstance(official, int | float) and isinstance(ours, int | float) and not isinstance(ours, bool):
        return ours == official or abs(ours - official) <= relative * abs(official)
    return ours == official


def _milliseconds(values):
    return f"{1000 * values:8.1f} ms"


def _first_statistics_call(replay):
    """The latency and name of the replay's first call that reads the record's statistics."""
    return next((latency, name) for latency, name in zip(replay["latencies"], replay["calls"])
                if name not in ("get_recording_info", "get_channel_list"))


def report(runs):
    lines = []
    totals = {"ours": 0.0, "official": 0.0}
    cpu = {"ours": 0.0, "official": 0.0}
    all_latencies = {"ours": [], "official": [], "ours_after_first": []}
    for recording in SCRIPTS:
        ours, official = runs["ours"][recording], runs.get("official", {}).get(recording)
        lines.append(f"\n{recording}: {len(ours['calls'])} calls")
        after_first = ours["latencies"][1:]
        all_latencies["ours"] += ours["latencies"]
        all_latencies["ours_after_first"] += after_first
        totals["ours"] += ours["total"]
        cpu["ours"] += ours["cpu"]
        computing = runs["ours_computing"][recording]
        computing_first, computing_name = _first_statistics_call(computing)
        lines.append(f"  ours, the process computing its statistics: total {computing['total']:7.2f} s  "
                     f"first call reading them ({computing_name}) {_milliseconds(computing_first)}")
        lines.append(f"  ours      total {ours['total']:7.2f} s  cpu {ours['cpu']:6.2f} s  "
                     f"p50 {_milliseconds(statistics.median(ours['latencies']))}  "
                     f"first call {_milliseconds(ours['latencies'][0])}  max after first {_milliseconds(max(after_first))}  "
                     f"peak RSS so far {ours['peak_rss_mb']:6.0f} MB")
        slowest = sorted(zip(after_first, ours["calls"][1:]), reverse=True)[:3]
        lines.append("            slowest after first: " + ", ".join(f"{name} {1000 * t:.0f} ms" for t, name in slowest))
        if official:
            totals["official"] += official["total"]
            cpu["official"] += official["cpu"]
            all_latencies["official"] += official["latencies"]
            agree = sum(_agrees(a, b) for a, b in zip(ours["results"], official["results"]))
            lines.append(f"  official  total {official['total']:7.2f} s  cpu {official['cpu']:6.2f} s  "
                         f"p50 {_milliseconds(statistics.median(official['latencies']))}  "
                         f"first call {_milliseconds(official['latencies'][0])}  max {_milliseconds(max(official['latencies']))}  "
                         f"peak RSS so far {official['peak_rss_mb']:6.0f} MB")
            lines.append(f"  speed-up  {official['total'] / ours['total']:6.1f}x over the script; results agree on {agree}/{len(ours['calls'])} calls")
            for index, (a, b) in enumerate(zip(ours["results"], official["results"])):
                if not _agrees(a, b):
                    lines.append(f"    differs: call {index} {ours['calls'][index]}")
    lines.append("\nwhole script (both recordings)")
    lines.append(f"  ours      p50 {_milliseconds(statistics.median(all_latencies['ours']))}  "
                 f"max after each record's first call {_milliseconds(max(all_latencies['ours_after_first']))}  "
                 f"total {totals['ours']:.2f} s  cpu {cpu['ours']:.2f} s")
    if all_latencies["official"]:
        lines.append(f"  official  p50 {_milliseconds(statistics.median(all_latencies['official']))}  "
                     f"max {_milliseconds(max(all_latencies['official']))}  total {totals['official']:.2f} s  "
                     f"cpu {cpu['official']:.2f} s")
        lines.append(f"  ratio     {totals['official'] / totals['ours']:.1f}x faster over the whole script; "
                     f"p50 {statistics.median(all_latencies['official']) / statistics.median(all_latencies['ours']):.1f}x; "
                     f"processor time {cpu['official'] / cpu['ours']:.1f}x")
    first_calls = [_first_statistics_call(runs["ours"][recording]) for recording in SCRIPTS]
    lines.append("  ours      first call reading each record's statistics, in a fresh process with them kept: "
                 + ", ".join(f"{recording} {name} {1000 * first:.1f} ms"
                             for recording, (first, name) in zip(SCRIPTS, first_calls)))
    targets = [
        ("a record's first call in a fresh process <= 50 ms", max(first for first, _ in first_calls) <= 0.050),
        ("p50 < 20 ms", statistics.median(all_latencies["ours"]) < 0.020),
        ("max < 250 ms after each record's first call", max(all_latencies["ours_after_first"]) < 0.250),
        ("max < 250 ms including each record's first call", max(all_latencies["ours"]) < 0.250),
        ("peak RSS < 400 MB with the 4-hour file", runs["ours"]["chb"]["peak_rss_mb"] < 400),
    ]
    if all_latencies["official"]:
        targets.insert(0, (">= 10x faster over the whole script", totals["official"] / totals["ours"] >= 10))
    lines.append("\ntargets: " + "; ".join(f"{name}: {'met' if met else 'MISSED'}" for name, met in targets))
    return "\n".join(lines)


#: Every hostile call must be answered within this, s.
HOSTILE_TARGET_SEC = 2.0


def report_hostile(replays):
    """The slowest hostile call of each tool on each recording, and the target."""
    lines = ["\nhostile calls: the slowest of each tool (wall and processor time; the answer: result or error code)"]
    slowest = 0.0
    largest = max(call["tokens"] for calls in replays.values() for call in calls)
    for recording, calls in replays.items():
        lines.append(f"  {recording}: {len(calls)} calls, "
                     f"{sum(call['answer'] != 'result' for call in calls)} refused")
        for tool in dict.fromkeys(call["tool"] for call in calls):
            worst = max((call for call in calls if call["tool"] == tool), key=lambda call: call["wall"])
            slowest = max(slowest, worst["wall"])
            lines.append(f"    {tool:28} {_milliseconds(worst['wall'])}  cpu {_milliseconds(worst['cpu'])}  "
                         f"{worst['answer']:17} ~{worst['tokens']:5} tokens  {worst['arguments']}")
    met = slowest < HOSTILE_TARGET_SEC
    lines.append(f"targets: every hostile call within {HOSTILE_TARGET_SEC:g} s: {'met' if met else 'MISSED'} "
                 f"(slowest {slowest:.2f} s); every answer within the 8000-token output budget: "
                 f"{'met' if largest <= 8000 else 'MISSED'} (largest ~{largest} tokens)")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("ours", "both", "hostile"), default="both")
    parser.add_argument("--child", nargs=2, metavar=("APPROACH", "OUTPUT"), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(*options.child)
        return
    for path, make in ((SLEEP_EDF, make_sleep_recording), (CHB_EDF, make_chb_recording)):
        if not path.exists():
            started = time.perf_counter()
            make(path)
            print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.0f} s")
    shutil.rmtree(STATS_DIR, ignore_errors=True)
    runs = {"ours_computing": _run_child("ours", "ours-computing")}
    if options.only != "hostile":
        runs["ours"] = _run_child("ours")
        if options.only == "both":
            runs["official"] = _run_child("official")
        print(report(runs))
    print(report_hostile(_run_child("hostile")))


if __name__ == "__main__":
    main()
