"""Electrode geometry, hemispheric asymmetry and inter-channel correlation.

The 10-20 lookups are the official ones, quirks included: the lookup is case-sensitive (so
CHB-MIT's ``FP1-F7`` is unknown), a bipolar name is placed by its first electrode, F7/F8
count as temporal, and A1/A2 have a hemisphere but no region. Homologous pairs use the
T3/T4/T5/T6 names; an alias table exists for T7/T8/P7/P8, but it is consulted with the
target names, so recordings named that way never match (an upstream bug kept for
comparability).
"""
import numpy as np

#: The homologous (left, right) pairs, in the official order.
HOMOLOGOUS_PAIRS = (
    ("Fp1", "Fp2"),
    ("F3", "F4"),
    ("C3", "C4"),
    ("P3", "P4"),
    ("O1", "O2"),
    ("F7", "F8"),
    ("T3", "T4"),
    ("T5", "T6"),
)

#: Maps a target electrode name to the name tried second. Only identity entries can ever be
#: reached from the targets above, which is the upstream bug described in the module text.
_TARGET_ALIASES = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6", "T3": "T3", "T4": "T4", "T5": "T5", "T6": "T6"}

_LEFT = ("Fp1", "F3", "F7", "C3", "P3", "O1", "T3", "T7", "T5", "P7", "A1")
_RIGHT = ("Fp2", "F4", "F8", "C4", "P4", "O2", "T4", "T8", "T6", "P8", "A2")
_MIDLINE = ("Fpz", "Fz", "Cz", "Pz", "Oz")
HEMISPHERES = {**dict.fromkeys(_LEFT, "L"), **dict.fromkeys(_RIGHT, "R"), **dict.fromkeys(_MIDLINE, "M")}

REGIONS = {
    **dict.fromkeys(("Fp1", "Fp2", "Fpz", "F3", "F4", "Fz"), "frontal"),
    **dict.fromkeys(("F7", "F8", "T3", "T4", "T7", "T8", "T5", "T6", "P7", "P8"), "temporal"),
    **dict.fromkeys(("C3", "C4", "Cz"), "central"),
    **dict.fromkeys(("P3", "P4", "Pz"), "parietal"),
    **dict.fromkeys(("O1", "O2", "Oz"), "occipital"),
}

#: Channels with a variance below this (V²) are treated as constant by the correlation.
CONSTANT_VARIANCE = 1e-30


def electrode_of(channel_name):
    """Return the 10-20 electrode a channel name refers to, by the official rule.

    Every "EEG " and "eeg " is removed, the result is stripped, and a bipolar name keeps the
    part before its first hyphen: ``"EEG Fpz-Cz"`` gives ``"Fpz"``.
    """
    clean = channel_name.replace("EEG ", "").replace("eeg ", "").strip()
    return clean.split("-")[0] if "-" in clean else clean


def hemisphere_of(channel_name):
    """Return ``"L"``, ``"R"``, ``"M"`` or ``"unknown"`` for a channel name."""
    return HEMISPHERES.get(electrode_of(channel_name), "unknown")


def region_of(channel_name):
    """Return the lobe (frontal, temporal, central, parietal, occipital) or ``"unknown"``."""
    return REGIONS.get(electrode_of(channel_name), "unknown")


def match_channel(target, channel_names):
    """Return the recording's channel for a 10-20 target name, or None.

    Tried in order: the exact name, the alias table entry for the target, ``"EEG " + target``.
    """
    names = set(channel_names)
    for candidate in (target, _TARGET_ALIASES.get(target, target), f"EEG {target}"):
        if candidate in names:
            return candidate
    return None


def homologous_pairs(channel_names):
    """Return the (left target, right target, left channel, right channel) pairs present."""
    found = []
    for left, right in HOMOLOGOUS_PAIRS:
        left_channel, right_channel = match_channel(left, channel_names), match_channel(right, channel_names)
        if left_channel is not None and right_channel is not None:
            found.append((left, right, left_channel, right_channel))
    return found


def asymmetry_index(left, right, *, floor):
    """Return ``(left - right) / max(left + right, floor)``; positive means left > right."""
    return (left - right) / max(left + right, floor)


def correlation_matrix(data):
    """Return the Pearson correlation matrix with constant channels zeroed.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        At least 2 samples.

    Returns
    -------
    correlation : ndarray, shape (n_channels, n_channels)
        ``numpy.corrcoef``; rows and columns of channels whose variance is below 1e-30 are
        0, and any remaining NaN or infinity is 0.
    constant : ndarray of bool, shape (n_channels,)
    """
    constant = np.var(data, axis=1) < CONSTANT_VARIANCE
    with np.errstate(all="ignore"):
        correlation = np.corrcoef(data)
    return clean_correlation(correlation, constant), constant


def correlation_from_covariance(covariance, variances):
    """Return the correlation matrix from a covariance matrix, as ``numpy.corrcoef`` forms it.

    Parameters
    ----------
    covariance : ndarray, shape (n_channels, n_channels)
        Any common normalisation; it cancels.
    variances : ndarray, shape (n_channels,), V²
        Population variances, used only to find constant channels.

    Returns
    -------
    correlation, constant : as :func:`correlation_matrix`.
    """
    with np.errstate(all="ignore"):
        scale = np.sqrt(np.diag(covariance))
        correlation = covariance / scale[:, None] / scale[None, :]
        np.clip(correlation, -1, 1, out=correlation)
    constant = variances < CONSTANT_VARIANCE
    return clean_correlation(correlation, constant), constant


def clean_correlation(correlation, constant):
    """Return ``correlation`` with constant channels' rows and columns and non-finite values 0."""
    correlation = np.array(correlation, dtype=np.float64, ndmin=2)
    correlation[constant, :] = 0.0
    correlation[:, constant] = 0.0
    correlation[~np.isfinite(correlation)] = 0.0
    return correlation


def mean_absolute_correlation(correlation):
    """Return each channel's mean |r| with every other channel, shape (n_channels,)."""
    n_channels = len(correlation)
    off_diagonal = ~np.eye(n_channels, dtype=bool)
    return np.abs(correlation[off_diagonal]).reshape(n_channels, n_channels - 1).mean(axis=1)
