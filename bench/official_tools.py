"""The official tools' computations, written plainly over a preloaded MNE Raw.

This is how the official implementation works (REFERENCE §1): load the whole file with MNE
(``preload=True``), keep the 4 most recently loaded files, and run scipy per call, one
channel at a time, with ``scipy.signal.welch`` and ``numpy.trapezoid``. ``bench/tools.py``
times it against the platform's tools, and the tests use it as the oracle the platform's
results must equal. It follows the official definitions, quirks included, for valid calls;
it does not reproduce the official error handling (invalid calls raise or return the
official error text without an ``error_code``).
"""
import json
from collections import OrderedDict

import mne
import numpy as np
import scipy.signal
import scipy.stats

BANDS = {"delta": (1.0, 4.0), "theta": (4.0, 8.0), "alpha": (8.0, 13.0), "beta": (13.0, 30.0), "gamma": (30.0, 45.0)}
WINDOWED_BANDS = {"delta": (1.0, 4.0), "theta": (4.0, 8.0), "alpha": (8.0, 13.0), "sigma": (11.0, 16.0),
                  "beta": (13.0, 30.0), "gamma": (30.0, 45.0)}
PAIRS = [("Fp1", "Fp2"), ("F3", "F4"), ("C3", "C4"), ("P3", "P4"), ("O1", "O2"), ("F7", "F8"), ("T3", "T4"), ("T5", "T6")]
ALIASES = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6", "T3": "T3", "T4": "T4", "T5": "T5", "T6": "T6"}
HEMISPHERE = {"Fp1": "L", "Fp2": "R", "Fpz": "M", "F3": "L", "F4": "R", "Fz": "M", "F7": "L", "F8": "R", "C3": "L",
              "C4": "R", "Cz": "M", "P3": "L", "P4": "R", "Pz": "M", "O1": "L", "O2": "R", "Oz": "M", "T3": "L",
              "T4": "R", "T7": "L", "T8": "R", "T5": "L", "T6": "R", "P7": "L", "P8": "R", "A1": "L", "A2": "R"}
REGION = {"Fp1": "frontal", "Fp2": "frontal", "Fpz": "frontal", "F3": "frontal", "F4": "frontal", "Fz": "frontal",
          "F7": "temporal", "F8": "temporal", "C3": "central", "C4": "central", "Cz": "central", "P3": "parietal",
          "P4": "parietal", "Pz": "parietal", "O1": "occipital", "O2": "occipital", "Oz": "occipital",
          "T3": "temporal", "T4": "temporal", "T7": "temporal", "T8": "temporal", "T5": "temporal",
          "T6": "temporal", "P7": "temporal", "P8": "temporal"}
WINDOWED_FEATURES = (
    "rms_uv", "std_uv", "kurtosis", "peak_to_peak_uv", "line_length_uv_s", "hjorth_mobility", "zero_crossing_rate_hz",
    "delta_power", "theta_power", "alpha_power", "sigma_power", "beta_power", "gamma_power",
    "delta_relative", "theta_relative", "alpha_relative", "sigma_relative", "beta_relative", "gamma_relative",
    "theta_alpha_ratio", "slow_fast_ratio",
)

_loaded = OrderedDict()


def load(path, *, preload=True):
    """Return the MNE Raw of an EDF file, keeping the 4 most recently loaded (oldest evicted)."""
    key = str(path)
    if key not in _loaded:
        if len(_loaded) >= 4:
            _loaded.popitem(last=False)
        _loaded[key] = mne.io.read_raw_edf(path, preload=preload, verbose="ERROR")
    return _loaded[key]


def clear():
    _loaded.clear()


def call(raw, tool_name, arguments):
    """Run one official tool on ``raw`` and return its result dict."""
    return TOOLS[tool_name](raw, dict(arguments))


# ---------------------------------------------------------------------- helpers

def rnd(value, decimals=4):
    if np.isnan(value) or np.isinf(value):
        return 0.0
    return round(float(value), decimals)


def meta(body, n_rows=None, truncated=False, reason=None):
    size = len(json.dumps(body, ensure_ascii=False, default=str))
    block = {"approx_response_bytes": size, "approx_response_kb": round(size / 1024, 1),
             "approx_response_tokens": size // 4, "truncated": bool(truncated)}
    if n_rows is not None:
        block["n_rows"] = int(n_rows)
    if reason:
        block["truncated_reason"] = str(reason)
    return {"_meta": block, **body}


def eeg_names(raw):
    return [raw.ch_names[i] for i in mne.pick_types(raw.info, eeg=True, exclude=[])]


def valid_channels(raw, channels):
    wanted = channels if channels else eeg_names(raw)
    return [name for name in wanted if name in raw.ch_names]


def data_of(raw, names, tmin, tmax):
    sfreq = raw.info["sfreq"]
    start = int(tmin * sfreq) if tmin is not None else 0
    stop = int(tmax * sfreq) if tmax is not None else None
    return raw.get_data(picks=names, start=start, stop=stop), sfreq


def welch(x, sfreq, n):
    return scipy.signal.welch(x, fs=sfreq, nperseg=min(int(sfreq * 2), n))


def area(y, x):
    return float(np.trapezoid(y, x))


def inband(freqs, low, high):
    return (freqs >= low) & (freqs <= high)


# ---------------------------------------------------------------------- the tools

def get_recording_info(raw, args):
    info = raw.info
    subject = info.get("subject_info") or {}
    return meta({
        "record_id": args["record_id"],
        "sampling_rate": rnd(info["sfreq"], 1),
        "duration_sec": rnd(raw.times[-1], 1),
        "n_channels": len(raw.ch_names),
        "n_eeg_channels": len(eeg_names(raw)),
        "channel_names": raw.ch_names,
        "reference": int(info.get("custom_ref_applied", 0)),
        "highpass_hz": rnd(info.get("highpass", 0), 2),
        "lowpass_hz": rnd(info.get("lowpass", 0), 2),
        "age": subject.get("age"),
        "sex": subject.get("sex"),
    }, n_rows=1)


def get_channel_list(raw, args):
    bads = set(raw.info["bads"])
    rows = []
    for index, name in enumerate(raw.ch_names):
        clean = name.replace("EEG ", "").replace("eeg ", "").strip()
        base = clean.split("-")[0] if "-" in clean else clean
        rows.append({"name": name, "type": mne.channel_type(raw.info, index), "hemisphere": HEMISPHERE.get(base, "unknown"),
                     "region": REGION.get(base, "unknown"), "marked_bad_in_file": name in bads})
    return meta({"record_id": args["record_id"], "n_channels": len(rows), "channels": rows,
                 "file_header_bads": sorted(bads)}, n_rows=len(rows))


def compute_noise_metrics(raw, args):
    line_freq = args.get("line_freq", 50)
    names = valid_channels(raw, args.get("channels"))
    data, sfreq = data_of(raw, names, None, None)
    rows = []
    for name, x in zip(names, data):
        flat = float(np.mean(np.abs(np.diff(x)) < 1e-7))
        saturation = float(np.mean((x == x.max()) | (x == x.min()))) if x.max() != x.min() else 1.0
        rms = float(np.sqrt(np.mean(x**2))) * 1e6
        freqs, pxx = welch(x, sfreq, len(x))
        line = inband(freqs, line_freq - 2, line_freq + 2)
        broad = (freqs >= 1) & (freqs <= sfreq / 2 - 1)
        line_power = float(np.mean(pxx[line])) if line.any() else 0
        broad_power = float(np.mean(pxx[broad])) if broad.any() else 1e-20
        rows.append({
            "channel": name, "rms_uv": rnd(rms, 1), "flat_line_ratio": rnd(flat, 4),
            "saturation_ratio": rnd(saturation, 4),
            "line_noise_ratio": rnd(line_power / broad_power if broad_power > 0 else 0, 2),
            "hf_noise_ratio": rnd(float(np.sum(pxx[freqs > 40]) / (np.sum(pxx[broad]) + 1e-20)), 3),
        })
    return meta({"record_id": args["record_id"], "line_freq_hz": line_freq, "n_channels": len(rows),
                 "channels": rows}, n_rows=len(rows))


def compute_psd(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    method = args.get("method", "welch")
    fmin, fmax = args.get("fmin", 0.5), args.get("fmax", 45)
    names = valid_channels(raw, args.get("channels"))
    data, sfreq = data_of(raw, names, tmin, tmax)
    n = data.shape[1]
    nperseg = min(int(sfreq * 2), n)
    rows, spectra = [], []
    for name, x in zip(names, data):
        if method == "multitaper":
            tapers = scipy.signal.windows.dpss(n, 4, Kmax=7)
            total = np.zeros(nperseg // 2 + 1)
            for taper in tapers:
                freqs, p = scipy.signal.welch(x * taper, fs=sfreq, nperseg=nperseg)
                total += p
            psd = total / 7
        else:
            freqs, psd = scipy.signal.welch(x, fs=sfreq, nperseg=nperseg)
        keep = (freqs >= fmin) & (freqs <= fmax)
        f, p = freqs[keep], psd[keep]
        alpha = inband(f, 8, 13)
        peak_freq = peak_power = None
        if alpha.any() and p[alpha].max() > 0:
            at = np.argmax(p[alpha])
            peak_freq, peak_power = rnd(f[alpha][at]), rnd(float(p[alpha][at]) * 1e12)
        bands = {}
        for band, (low, high) in BANDS.items():
            mask = inband(f, low, high)
            if mask.any():
                bands[band] = rnd(area(p[mask], f[mask]) * 1e12)
        rows.append({"channel": name, "alpha_peak_freq_hz": peak_freq, "alpha_peak_power_uv2hz": peak_power,
                     "dominant_freq_hz": rnd(f[np.argmax(p)]), "total_power_uv2": rnd(area(p, f) * 1e12),
                     "band_powers_uv2": bands})
        spectra.append(p)
    mean = np.mean(spectra, axis=0)
    alpha = inband(f, 8, 13)
    global_peak = rnd(f[alpha][np.argmax(mean[alpha])]) if alpha.any() else None
    return meta({"record_id": args["record_id"], "method": method, "time_window": [tmin, tmax],
                 "freq_range_hz": [fmin, fmax], "n_channels": len(names), "global_alpha_peak_hz": global_peak,
                 "channels": rows}, n_rows=len(names))


def compute_band_power(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    names = valid_channels(raw, args.get("channels"))
    data, sfreq = data_of(raw, names, tmin, tmax)
    rows = []
    for name, x in zip(names, data):
        freqs, psd = welch(x, sfreq, len(x))
        absolute = {}
        for band, (low, high) in BANDS.items():
            mask = inband(freqs, low, high)
            absolute[band] = area(psd[mask], freqs[mask]) * 1e12 if mask.any() else 0.0
        total = max(sum(absolute.values()), 1e-20)
        alpha = max(absolute["alpha"], 1e-20)
        rows.append({
            "channel": name,
            "absolute_power_uv2": {band: rnd(value) for band, value in absolute.items()},
            "relative_power": {band: rnd(value / total, 4) for band, value in absolute.items()},
            "ratios": {"theta_alpha_ratio": rnd(absolute["theta"] / alpha), "delta_alpha_ratio": rnd(absolute["delta"] / alpha),
                       "slow_fast_ratio": rnd((absolute["delta"] + absolute["theta"]) / max(alpha + absolute["beta"], 1e-20))},
        })
    return meta({"record_id": args["record_id"], "time_window": [tmin, tmax], "n_channels": len(names),
                 "channels": rows}, n_rows=len(names))


def detect_transients(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    threshold = args.get("min_amplitude_uv", 70)
    cap = args.get("max_candidates_per_channel", args.get("max_events_per_channel", 20))
    names = valid_channels(raw, args.get("channels"))
    data, sfreq = data_of(raw, names, tmin, tmax)
    offset = tmin if tmin is not None else 0.0
    high = min(70.0, sfreq / 2 - 1)
    detected, kept, background = 0, [], {}
    for name, x in zip(names, data):
        if high <= 1.0:
            continue
        sos = scipy.signal.butter(4, [1.0, high], btype="band", fs=sfreq, output="sos")
        y = scipy.signal.sosfiltfilt(sos, x)
        background[name] = (rnd(float(np.sqrt(np.mean(y**2))) * 1e6, 1), rnd(float(np.max(y) - np.min(y)) * 1e6, 1))
        slope = np.diff(y) * sfreq
        distance = max(1, int(sfreq * 0.07))
        height = threshold * 1e-6 if threshold * 1e-6 > 0 else None
        positive, _ = scipy.signal.find_peaks(y, height=height, distance=distance)
        negative, _ = scipy.signal.find_peaks(-y, height=height, distance=distance)
        found = []
        for peak, polarity in [(p, "positive") for p in positive] + [(p, "negative") for p in negative]:
            amplitude = float(np.abs(y[peak])) * 1e6
            if threshold > 0 and amplitude < threshold:
                continue
            half = np.abs(y[peak]) / 2
            left = right = peak
            while left > 0 and np.abs(y[left]) > half:
                left -= 1
            while right < len(y) - 1 and np.abs(y[right]) > half:
                right += 1
            reach = int(sfreq * 0.07)
            first, last = max(0, peak - reach), min(len(slope) - 1, peak + reach)
            sharpness = float(np.max(np.abs(slope[first:last]))) * 1e6 if last > first else 0
            found.append({"channel": name, "time_sec": rnd(float(peak / sfreq) + offset, 2),
                          "width_ms": rnd(float((right - left) / sfreq * 1000), 1), "amplitude_uv": rnd(amplitude, 1),
                          "sharpness_uv_s": rnd(sharpness, 1), "polarity": polarity})
        detected += len(found)
        found.sort(key=lambda c: c["amplitude_uv"], reverse=True)
        kept.extend(found[:cap])
    grouped = {}
    for candidate in kept:
        grouped.setdefault(candidate["channel"], []).append(candidate)
    summary = []
    for name, found in grouped.items():
        rms, p2p = background[name]
        amplitudes = [c["amplitude_uv"] for c in found]
        mean, peak = float(np.mean(amplitudes)), float(np.max(amplitudes))
        summary.append({"channel": name, "n_candidates": len(found), "amplitude_mean_uv": rnd(mean, 1),
                        "amplitude_max_uv": rnd(peak, 1),
                        "width_mean_ms": rnd(float(np.mean([c["width_ms"] for c in found])), 1),
                        "sharpness_mean_uv_s": rnd(float(np.mean([c["sharpness_uv_s"] for c in found])), 1),
                        "background_rms_uv": rms, "background_peak_to_peak_uv": p2p,
                        "amplitude_to_rms_ratio_mean": rnd(mean / rms, 2) if rms > 0 else None,
                        "amplitude_to_rms_ratio_max": rnd(peak / rms, 2) if rms > 0 else None})
    kept_in_order = list(kept)
    kept.sort(key=lambda c: c["amplitude_uv"], reverse=True)
    truncated = detected > len(kept_in_order)
    return meta({"record_id": args["record_id"], "time_window": [tmin or 0, tmax], "min_amplitude_uv": threshold,
                 "peak_distance_ms": rnd(0.07 * 1000, 1), "filter_band_hz": [1.0, 70.0],
                 "max_candidates_per_channel": cap, "candidate_sort_key": "amplitude_descending",
                 "n_candidates_detected": detected, "n_candidates_returned": len(kept_in_order),
                 "channel_summary": summary, "top_candidates": kept[:5]},
                n_rows=len(kept_in_order), truncated=truncated,
                reason=f"per-channel top-{cap} cap ({detected} detected -> {len(kept_in_order)} kept)" if truncated else None)


def compute_temporal_features(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    names = valid_channels(raw, args.get("channels"))
    data, sfreq = data_of(raw, names, tmin, tmax)
    rows = []
    for name, x in zip(names, data):
        uv = x * 1e6
        dx, ddx = np.diff(x), np.diff(np.diff(x))
        activity = float(np.var(x))
        mobility = float(np.sqrt(np.var(dx) / max(activity, 1e-30)))
        complexity = float(np.sqrt(np.var(ddx) / max(np.var(dx), 1e-30)) / max(mobility, 1e-30))
        duration = len(x) / sfreq
        with np.errstate(all="ignore"):
            skewness, kurtosis = float(scipy.stats.skew(uv)), float(scipy.stats.kurtosis(uv))
        rows.append({
            "channel": name, "mean_uv": rnd(float(np.mean(uv)), 2), "std_uv": rnd(float(np.std(uv)), 2),
            "rms_uv": rnd(float(np.sqrt(np.mean(uv**2))), 2), "peak_to_peak_uv": rnd(float(np.ptp(uv)), 1),
            "skewness": rnd(skewness, 3), "kurtosis": rnd(kurtosis, 3), "hjorth_activity": rnd(activity * 1e12, 4),
            "hjorth_mobility": rnd(mobility, 4), "hjorth_complexity": rnd(complexity, 4),
            "line_length_uv_s": rnd(float(np.sum(np.abs(dx)) * 1e6 / max(duration, 1e-6)), 1),
            "zero_crossing_rate_hz": rnd(float(np.sum(np.diff(np.sign(x - np.mean(x))) != 0) / max(duration, 1e-6)), 2),
        })
    return meta({"record_id": args["record_id"], "time_window": [tmin, tmax], "n_channels": len(names),
                 "channels": rows}, n_rows=len(names))


def compute_asymmetry(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    feature = args.get("feature", "all")
    present = set(raw.ch_names)

    def find(target):
        for candidate in (target, ALIASES.get(target, target), f"EEG {target}"):
            if candidate in present:
                return candidate
        return None

    rows = []
    for left, right in PAIRS:
        left_name, right_name = find(left), find(right)
        if left_name is None or right_name is None:
            continue
        data, sfreq = data_of(raw, [left_name, right_name], tmin, tmax)
        row = {"left": left, "right": right}
        if feature in ("amplitude", "all"):
            lr, rr = (float(np.sqrt(np.mean(x**2))) * 1e6 for x in data)
            row["amplitude_asymmetry"] = rnd((lr - rr) / max(lr + rr, 1e-10), 4)
            row["left_rms_uv"], row["right_rms_uv"] = rnd(lr, 2), rnd(rr, 2)
        if feature in ("band_power", "all"):
            freqs, pl = welch(data[0], sfreq, data.shape[1])
            _, pr = welch(data[1], sfreq, data.shape[1])
            asymmetry = {}
            for band, (low, high) in BANDS.items():
                mask = inband(freqs, low, high)
                if mask.any():
                    lp, rp = area(pl[mask], freqs[mask]), area(pr[mask], freqs[mask])
                    asymmetry[band] = rnd((lp - rp) / max(lp + rp, 1e-30), 4)
            row["band_power_asymmetry"] = asymmetry
            tl, tr = area(pl, freqs), area(pr, freqs)
            row["total_power_asymmetry"] = rnd((tl - tr) / max(tl + tr, 1e-30), 4)
        rows.append(row)
    if not rows:
        return meta({"record_id": args["record_id"], "applicable": False, "n_pairs_analyzed": 0, "pairs": [],
                     "reason": None, "available_channels": list(raw.ch_names)}, n_rows=0)
    return meta({"record_id": args["record_id"], "applicable": True, "time_window": [tmin, tmax],
                 "n_pairs_analyzed": len(rows), "pairs": rows}, n_rows=len(rows))


def compute_channel_correlation(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    channels = args.get("channels")
    names = [name for name in (eeg_names(raw) if channels is None else channels) if name in raw.ch_names]
    data, _ = data_of(raw, names, tmin, tmax)
    constant = np.var(data, axis=1) < 1e-30
    with np.errstate(all="ignore"):
        matrix = np.corrcoef(data)
    matrix[constant, :] = 0.0
    matrix[:, constant] = 0.0
    matrix = np.where(np.isnan(matrix) | np.isinf(matrix), 0.0, matrix)
    pairs = [{"channel_a": names[i], "channel_b": names[j], "correlation": rnd(float(matrix[i, j]), 4)}
             for i in range(len(names)) for j in range(i + 1, len(names))]
    summary = [{"channel": name, "mean_abs_correlation": rnd(float(np.mean(np.abs(np.concatenate([matrix[i, :i], matrix[i, i + 1:]])))), 4)}
               for i, name in enumerate(names)]
    body = {"record_id": args["record_id"], "time_window": [tmin, tmax], "n_channels": len(names),
            "channel_names": names, "n_pairs": len(pairs), "pairs": pairs, "channel_summary": summary}
    if constant.any():
        body["constant_channels"] = [name for name, flat in zip(names, constant) if flat]
    return meta(body, n_rows=len(pairs))


def _window_features(x, sfreq, wanted):
    uv = x * 1e6
    n = len(x)
    duration = n / sfreq
    out = {}
    if "rms_uv" in wanted:
        out["rms_uv"] = rnd(float(np.sqrt(np.mean(uv**2))), 2)
    if "std_uv" in wanted:
        out["std_uv"] = rnd(float(np.std(uv)), 2)
    if "kurtosis" in wanted:
        with np.errstate(all="ignore"):
            out["kurtosis"] = rnd(float(scipy.stats.kurtosis(uv)), 3)
    if "peak_to_peak_uv" in wanted:
        out["peak_to_peak_uv"] = rnd(float(np.ptp(uv)), 1)
    if "line_length_uv_s" in wanted:
        out["line_length_uv_s"] = rnd(float(np.sum(np.abs(np.diff(uv))) / max(duration, 1e-6)), 1)
    if "hjorth_mobility" in wanted:
        out["hjorth_mobility"] = rnd(float(np.sqrt(float(np.var(np.diff(x))) / max(float(np.var(x)), 1e-30))), 4)
    if "zero_crossing_rate_hz" in wanted:
        out["zero_crossing_rate_hz"] = rnd(float(np.sum(np.diff(np.sign(x - np.mean(x))) != 0) / max(duration, 1e-6)), 2)
    spectral = [name for name in WINDOWED_FEATURES[7:] if name in wanted]
    if spectral:
        nperseg = min(int(sfreq * 2), n)
        if nperseg < 4:
            for name in spectral:
                out[name] = 0.0
            return out
        freqs, psd = scipy.signal.welch(x, fs=sfreq, nperseg=nperseg)
        power = {}
        for band, (low, high) in WINDOWED_BANDS.items():
            mask = inband(freqs, low, high)
            power[band] = area(psd[mask], freqs[mask]) * 1e12 if mask.any() else 0.0
        total = max(sum(power.values()), 1e-20)
        for band in WINDOWED_BANDS:
            if f"{band}_power" in wanted:
                out[f"{band}_power"] = rnd(power[band])
        for band in WINDOWED_BANDS:
            if f"{band}_relative" in wanted:
                out[f"{band}_relative"] = rnd(power[band] / total, 4)
        if "theta_alpha_ratio" in wanted:
            out["theta_alpha_ratio"] = rnd(power["theta"] / max(power["alpha"], 1e-20))
        if "slow_fast_ratio" in wanted:
            out["slow_fast_ratio"] = rnd((power["delta"] + power["theta"]) / max(power["alpha"] + power["beta"], 1e-20))
    return out


def compute_windowed_features(raw, args):
    tmin, tmax = args.get("tmin"), args.get("tmax")
    window_sec = args.get("window_sec", 5.0)
    step_sec = args.get("step_sec", window_sec)
    features = args.get("features")
    if features is None:
        features = ["rms_uv", "kurtosis", "delta_relative", "theta_relative", "alpha_relative", "beta_relative",
                    "gamma_relative"]
    wanted = set(features) & set(WINDOWED_FEATURES)
    channels = args.get("channels")
    names = [name for name in (eeg_names(raw) if channels is None else channels) if name in raw.ch_names]
    data, sfreq = data_of(raw, names, tmin, tmax)
    n_total = data.shape[1]
    first_time = tmin if tmin is not None else 0.0
    window, step = int(window_sec * sfreq), int(step_sec * sfreq)
    starts = list(range(0, n_total - window + 1, step))
    if not starts:
        starts = [0]
        window = min(window, n_total)
    channel_rows = []
    for name, x in zip(names, data):
        windows = []
        for begin in starts:
            end = min(begin + window, n_total)
            values = _window_features(x[begin:end], sfreq, wanted)
            values["t_start"] = round(first_time + begin / sfreq, 2)
            values["t_end"] = round(first_time + end / sfreq, 2)
            windows.append(values)
        channel_rows.append({"channel": name, "n_windows": len(windows), "windows": windows})
    return meta({"record_id": args["record_id"], "window_sec": window_sec, "step_sec": step_sec,
                 "time_range": [first_time, round(first_time + n_total / sfreq, 2)], "n_windows": len(starts),
                 "features_computed": sorted(wanted), "n_channels": len(names), "channels": channel_rows},
                n_rows=len(names) * len(starts))


TOOLS = {
    "get_recording_info": get_recording_info,
    "get_channel_list": get_channel_list,
    "compute_noise_metrics": compute_noise_metrics,
    "compute_psd": compute_psd,
    "compute_band_power": compute_band_power,
    "detect_transients": detect_transients,
    "compute_temporal_features": compute_temporal_features,
    "compute_asymmetry": compute_asymmetry,
    "compute_channel_correlation": compute_channel_correlation,
    "compute_windowed_features": compute_windowed_features,
}
