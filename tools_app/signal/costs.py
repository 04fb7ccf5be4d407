"""What the tools' computations cost, per sample, so that a call's work is known before it is done.

Each figure is nanoseconds of one core of the reference machine (two cores, numpy with one BLAS
thread), per unit of what a step processes: the least it took over five runs on the long
recordings of ``bench/tools.py``, with a margin of a third or more for a machine that is
busy with other work. ``SignalSource`` (``tools_app.signal.ranges``) adds
them up along the path a call takes, which depends only on its arguments and the recording, so
the estimate of a call never varies.
"""

#: Reading a sample of a channel stored at the full rate (decoding included).
READ_NS = 3.0
#: Reading a sample of a channel stored at a lower rate (a Sleep-EDF 1 Hz channel) from part of
#: it: an interpolation of its whole spectrum ...
UPSAMPLED_PART_NS = 160.0
#: ... or, per sample of the whole channel, its full inverse FFT, which a long read costs instead.
UPSAMPLED_WHOLE_NS = 32.0
#: A Welch PSD, per sample of the range (segments overlap by half).
WELCH_NS = 11.0
#: The official multitaper's DPSS tapers, per sample of the window (7 tapers).
DPSS_NS = 3500.0
#: Counting zero crossings, per sample.
ZERO_CROSSINGS_NS = 1.5
#: The time-domain statistics of a short range, per sample (all eleven).
TEMPORAL_NS = 30.0
#: The noise indicators of a short recording, per sample.
NOISE_NS = 30.0
#: The correlation of a long range: per sample of a channel (centring) ...
CORRELATION_NS = 2.0
#: ... and per sample of a pair of channels (their product).
CORRELATION_PAIR_NS = 0.1
#: A window's spectral features (its Welch PSD), per sample of the window.
WINDOW_SPECTRUM_NS = 22.0
#: A window's time-domain features, per sample of the window.
WINDOW_FEATURE_NS = {
    "rms_uv": 2.0, "std_uv": 3.0, "kurtosis": 13.0, "peak_to_peak_uv": 1.0, "line_length_uv_s": 3.0,
    "hjorth_mobility": 5.0, "zero_crossing_rate_hz": 3.0,
}
#: Copying a window out of the signal, per sample.
WINDOW_COPY_NS = 1.0
#: A window's feature pooled from the kept statistics: per row pooled (a unit or a block) ...
POOLED_ROW_NS = 40.0
#: ... and per kept Welch segment summed (its six band integrals).
POOLED_SEGMENT_NS = 30.0
#: The transient detector's zero-phase band-pass, per sample.
BANDPASS_NS = 23.0
#: Finding the local maxima of the filtered signal and of its negation above the threshold, per sample.
MAXIMA_NS = 12.0
#: Keeping the maxima at least 70 ms apart, per sample at or above the threshold (at most every
#: other one is a maximum, which costs about 170 ns).
PEAK_SPACING_NS = 90.0
#: Ranking and measuring (width, slope) a candidate the detector keeps.
CANDIDATE_NS = 1200.0


def read_ns(length, n_times, *, upsampled):
    """Return the cost of reading ``length`` samples of one channel in one read.

    Parameters
    ----------
    length : int
        Samples read.
    n_times : int
        Samples of the whole channel (at the recording's rate).
    upsampled : bool
        Whether the channel is stored at a lower rate (each read evaluates its interpolation).
    """
    if upsampled:
        return min(UPSAMPLED_PART_NS * length, UPSAMPLED_WHOLE_NS * n_times)
    return READ_NS * length
