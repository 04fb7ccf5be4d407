"""Pure signal functions behind the ten tools (numpy/scipy only, no Django).

Arrays are ``(..., n_times)`` in volts unless a name says otherwise; each module documents
shapes and units. :mod:`.ranges` is the entry point the tools use: it computes a feature
over a sample range directly, or from the per-segment cache of :mod:`.segments` for long
ranges.
"""
