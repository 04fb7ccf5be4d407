"""The official rounding rule: ``round(x, d)`` with NaN and ±Inf reported as 0.0."""
import math


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
