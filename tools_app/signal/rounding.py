"""The official rounding rule: ``round(x, d)`` with NaN and ±Inf reported as 0.0."""
import math

import numpy as np

_EPS = np.finfo(np.float64).eps


def round_value(value, decimals=4):
    """Return ``round(float(value), decimals)``, or 0.0 when ``value`` is NaN or infinite.

    Python's ``round`` (correctly rounded, half to even on exact ties) is used rather than
    ``numpy.round`` because that is what the official tools do, and the two can differ in the
    last digit.
    """
    value = float(value)
    if not math.isfinite(value):
        return 0.0
    return round(value, decimals)


def round_values(values, decimals=4):
    """Return :func:`round_value` of every element of ``values``, computed for all at once.

    Parameters
    ----------
    values : ndarray of float
    decimals : int
        Decimal places, ≥ 0.

    Returns
    -------
    rounded : ndarray of float64, same shape
        Equal, element for element, to ``round_value(value, decimals)``.

    Notes
    -----
    ``numpy.round`` scales by ``10**decimals``, rounds to an integer and scales back. Dividing
    an integer by a power of ten is correctly rounded, so its result is Python's wherever the
    scaled value lands on the same integer. It can land on another only within a few units in
    the last place of a half-way point; those few elements are rounded by Python.
    """
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0**decimals
    with np.errstate(all="ignore"):
        scaled = values * scale
        rounded = np.rint(scaled) / scale
        distance = np.abs(scaled - np.floor(scaled) - 0.5)
    doubtful = np.flatnonzero(distance <= 8 * _EPS * np.maximum(np.abs(scaled), 1.0))
    rounded[~np.isfinite(values)] = 0.0
    rounded.flat[doubtful] = [round_value(values.flat[index], decimals) for index in doubtful]
    return rounded
