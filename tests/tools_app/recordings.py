"""Synthetic recordings for the tool tests: the platform's Recording and its MNE twin.

``make_recording`` wraps an array in :class:`tools_app.recording.Recording`; ``make_raw`` gives
the MNE ``RawArray`` the official implementation would load for the same signal, which the
oracle in ``bench/official_tools.py`` runs on. The ``episode`` fixture makes
:func:`tools_app.call_tool` open a given recording whatever the path.
"""
import mne
import numpy as np

from tools_app.recording import Recording

RECORD_ID = "rec-test"


def make_recording(data, sfreq, ch_names=None, **header):
    """Return a Recording over ``data`` (n_channels, n_times) in volts."""
    data = np.ascontiguousarray(np.atleast_2d(np.asarray(data, dtype=np.float64)))
    ch_names = ch_names or [f"EEG{index + 1}" for index in range(len(data))]
    return Recording(
        sfreq=sfreq,
        ch_names=ch_names,
        ch_types=header.pop("ch_types", ["eeg"] * len(ch_names)),
        n_times=data.shape[1],
        read=lambda picks, start, stop: data[picks, start:stop].copy(),
        **header,
    )


def make_raw(data, sfreq, ch_names=None):
    """Return the MNE RawArray of the same signal (every channel typed EEG)."""
    data = np.atleast_2d(np.asarray(data, dtype=np.float64))
    ch_names = ch_names or [f"EEG{index + 1}" for index in range(len(data))]
    return mne.io.RawArray(data, mne.create_info(ch_names, sfreq, "eeg"), verbose="ERROR")


def sine(frequency_hz, amplitude_v, seconds, sfreq, *, phase=0.0):
    times = np.arange(int(round(seconds * sfreq))) / sfreq
    return amplitude_v * np.sin(2 * np.pi * frequency_hz * times + phase)


def noise(seconds, sfreq, *, amplitude_v=5e-6, seed=0):
    return amplitude_v * np.random.default_rng(seed).standard_normal(int(round(seconds * sfreq)))


def run(tool_name, record_id=RECORD_ID, **arguments):
    """Call a tool as an episode of ``record_id`` would, on whatever ``episode`` installed."""
    from tools_app import call_tool

    return call_tool("/nowhere/unused.edf", tool_name, {"record_id": record_id, **arguments}, record_id=record_id)


def same_result(ours, official, *, rel=1e-9):
    """Return whether two results are equal, numbers up to a relative ``rel``.

    Our spectra differ from scipy's ``welch`` in the last bits (another but equally exact
    order of operations); after rounding that shows only where a value's magnitude exceeds
    its rounded precision (e.g. µV² powers of non-voltage channels such as Resp, ~1e15) or
    where detrending cancels a large offset. The ``_meta`` byte counts, which follow the
    printed lengths of those numbers, may differ by 1 %. Everything else must be identical.
    """
    if isinstance(official, dict):
        return isinstance(ours, dict) and list(ours) == list(official) and all(
            same_result(ours[key], official[key], rel=0.01 if key == "_meta" else rel) for key in official)
    if isinstance(official, list):
        return isinstance(ours, list) and len(ours) == len(official) and all(
            same_result(a, b, rel=rel) for a, b in zip(ours, official))
    if isinstance(official, float | int) and isinstance(ours, float | int) and type(ours) is type(official):
        return ours == official or abs(ours - official) <= rel * abs(official)
    return type(ours) is type(official) and ours == official
