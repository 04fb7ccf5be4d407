"""Features of sample ranges of a recording, computed directly or from the segment cache.

Each function here returns the unrounded numbers one tool reports, for a list of channel
indices and a sample range ``[start, stop)``:

* a range shorter than :data:`LARGE_RANGE_SAMPLES` is read and computed directly with the
  official formulas (:mod:`tools_app.signal.spectral`, ``temporal``, ``noise``, ...);
* a longer one is pooled from the per-segment statistics of
  :class:`tools_app.signal.segments.RecordSegments`, or, where those cannot serve it (a
  Welch grid that does not start on a unit boundary), streamed through in chunks.

The choice depends only on the arguments and the recording's geometry, never on what is
cached, so identical calls give identical numbers. The pooled and streamed results equal
the direct ones up to floating-point summation order (relative differences near 1e-15),
which the tests check. A channel named several times is computed once.

Each feature has a ``*_cost`` twin that follows the same path and returns what it costs
(nanoseconds of the reference machine, :mod:`tools_app.signal.costs`) without computing it,
so a tool can refuse a call too large for its time before doing any of it.
"""
import functools
import threading
import weakref

import numpy as np

from tools_app.signal import costs, noise, segments, spectral, spatial, temporal, windowed

#: Ranges at least this long (samples per channel) are not read into memory whole.
LARGE_RANGE_SAMPLES = 1 << 17
#: Streamed computations read about this many samples per channel at a time.
_STREAM_SAMPLES = 1 << 20
_EPS = np.finfo(np.float64).eps

_sources = weakref.WeakKeyDictionary()
_sources_lock = threading.Lock()


def _each_channel_once(expand):
    """Make a ``method(self, picks, ...)`` compute each distinct channel of ``picks`` once.

    The method is called with the distinct channels, and ``expand(result, rows)`` repeats its
    per-channel rows as ``picks`` repeats the channels (``rows[i]`` is the row of ``picks[i]``).
    Each channel's numbers do not depend on the others computed with it, so they are the same.
    """
    def decorate(method):
        @functools.wraps(method)
        def once(self, picks, *args, **kwargs):
            picks = [int(pick) for pick in picks]
            row_of = {pick: row for row, pick in enumerate(dict.fromkeys(picks))}
            if len(row_of) == len(picks):
                return method(self, picks, *args, **kwargs)
            return expand(method(self, list(row_of), *args, **kwargs), [row_of[pick] for pick in picks])
        return once
    return decorate


def _rows(values, rows):
    """Per-channel arrays (or a dict of them), rows repeated."""
    if isinstance(values, dict):
        return {name: value[rows] for name, value in values.items()}
    return values[rows]


def _spectrum_rows(spectrum, rows):
    freqs, psd = spectrum
    return freqs, psd[rows]


def _matrix_rows(matrix_and_flags, rows):
    matrix, flags = matrix_and_flags
    return matrix[np.ix_(rows, rows)], flags[rows]


def _windowed_rows(windows, rows):
    starts, window_samples, values = windows
    return starts, window_samples, _rows(values, rows)


def source_for(recording):
    """Return the one :class:`SignalSource` of ``recording`` (kept while the recording lives)."""
    with _sources_lock:
        source = _sources.get(recording)
        if source is None:
            source = _sources[recording] = SignalSource(recording)
        return source


class SignalSource:
    """A recording's signals with range features for the tools.

    Parameters
    ----------
    recording : object
        Anything with ``sfreq``, ``n_times``, ``ch_names`` and
        ``get_data(picks, start, stop) -> ndarray (len(picks), stop - start)`` in volts.
    """

    def __init__(self, recording):
        self.recording = recording
        self.sfreq = float(recording.sfreq)
        self.n_times = int(recording.n_times)
        long_enough = self.n_times >= LARGE_RANGE_SAMPLES and spectral.welch_nperseg(self.sfreq, self.n_times) >= 4
        whole = getattr(recording, "whole_read_channels", ())
        self.upsampled = frozenset(whole)
        self.segments = segments.RecordSegments(
            self.read, self.sfreq, self.n_times, n_channels=len(recording.ch_names), whole_reads=whole,
            identity=getattr(recording, "identity", None),
        ) if long_enough else None

    def prepare(self):
        """Map or compute the segment statistics of every channel now, if the recording is long enough."""
        if self.segments is not None:
            self.segments.prepare()

    def read(self, picks, start, stop, out=None):
        """Return samples ``[start, stop)`` of the channels ``picks`` (repeats allowed), V.

        With ``out`` (float64, shape ``(len(picks), stop - start)``) and distinct ascending
        picks, the samples are written into it where the recording supports that.
        """
        picks = [int(pick) for pick in picks]
        if out is not None and hasattr(self.recording, "read_into") and picks == sorted(set(picks)):
            return self.recording.read_into(picks, int(start), int(stop), out)
        unique = sorted(set(picks))
        data = np.asarray(self.recording.get_data(unique, int(start), int(stop)), dtype=np.float64)
        if unique == picks:
            return data
        row = {pick: index for index, pick in enumerate(unique)}
        return data[[row[pick] for pick in picks]]

    def _large(self, start, stop):
        return self.segments is not None and stop - start >= LARGE_RANGE_SAMPLES

    def _per_pick(self, picks, compute):
        """Return ``compute(pick)`` stacked for ``picks``."""
        return np.stack([compute(pick) for pick in picks])

    def _stream_length(self, pick, length):
        """Samples a one-channel stream reads at a time: the whole range of a channel stored at a
        lower rate (cheaper than interpolating it piece by piece), else :data:`_STREAM_SAMPLES`."""
        return max(length, 1) if pick in self.upsampled else _STREAM_SAMPLES

    def read_cost(self, picks, length, *, chunk=None):
        """Return the cost of reading ``length`` samples of each distinct channel, ``chunk`` at a time.

        Parameters
        ----------
        picks : list of int
        length : int
            Samples per channel.
        chunk : int, optional
            Samples per read (default: one read); a one-channel stream's own when ``"stream"``.
        """
        total = 0.0
        for pick in dict.fromkeys(picks):
            size = self._stream_length(pick, length) if chunk == "stream" else (chunk or max(length, 1))
            whole, rest = divmod(length, size)
            upsampled = pick in self.upsampled
            total += whole * costs.read_ns(size, self.n_times, upsampled=upsampled)
            total += costs.read_ns(rest, self.n_times, upsampled=upsampled)
        return total

    # ------------------------------------------------------------------ spectra

    @_each_channel_once(_spectrum_rows)
    def welch(self, picks, start, stop):
        """Return the official Welch PSD of each channel over ``[start, stop)``.

        Returns
        -------
        freqs : ndarray, shape (n_freqs,), Hz
        psd : ndarray, shape (len(picks), n_freqs), V²/Hz
        """
        n_times = stop - start
        nperseg = spectral.welch_nperseg(self.sfreq, n_times)
        freqs = spectral.welch_frequencies(self.sfreq, nperseg)
        if not self._large(start, stop):
            return spectral.welch_psd(self.read(picks, start, stop), self.sfreq, nperseg=nperseg)
        n_segments = spectral.n_welch_segments(n_times, nperseg)
        if self._welch_cached(start, nperseg):
            psd = self._per_pick(picks, lambda pick: self.segments.psd_sum(pick, start, n_segments))
        else:
            psd = self._per_pick(picks, lambda pick: self._streamed_psd_sum(pick, start, nperseg, n_segments))
        return freqs, psd / n_segments

    def welch_cost(self, picks, start, stop):
        """Return what :meth:`welch` costs (nothing but its edges when the kept statistics serve it)."""
        n_times = stop - start
        distinct = len(set(picks))
        if self._large(start, stop) and self._welch_cached(start, spectral.welch_nperseg(self.sfreq, n_times)):
            edges = 2 * segments.SEGMENTS_PER_BLOCK * self.segments.unit
            return self.read_cost(picks, edges) + costs.WELCH_NS * edges * distinct
        chunk = "stream" if self._large(start, stop) else None
        return self.read_cost(picks, n_times, chunk=chunk) + costs.WELCH_NS * n_times * distinct

    def kept_welch_start(self, start, stop):
        """Return the nearest start at or before ``start`` whose long Welch PSD the kept statistics
        serve, when ``start`` is not one (None otherwise)."""
        if not self._large(start, stop) or self._welch_cached(start, spectral.welch_nperseg(self.sfreq, stop - start)):
            return None
        return start - start % self.segments.unit

    def _welch_cached(self, start, nperseg):
        return start % self.segments.unit == 0 and nperseg == self.segments.nperseg

    def _streamed_psd_sum(self, pick, start, nperseg, n_segments):
        step = spectral.welch_step(nperseg)
        per_chunk = max(1, self._stream_length(pick, n_segments * step) // step)
        total = np.zeros(nperseg // 2 + 1)
        for first in range(0, n_segments, per_chunk):
            last = min(n_segments, first + per_chunk)
            data = self.read([pick], start + first * step, start + (last - 1) * step + nperseg)[0]
            total += spectral.segment_periodogram_sum(data, self.sfreq, nperseg)[0]
        return total

    @_each_channel_once(_spectrum_rows)
    def multitaper(self, picks, start, stop):
        """Return the official "multitaper" PSD (see :func:`spectral.official_multitaper_psd`)."""
        return spectral.official_multitaper_psd(self.read(picks, start, stop), self.sfreq)

    def multitaper_cost(self, picks, start, stop):
        """Return what :meth:`multitaper` costs: its tapers, and a Welch PSD per taper and channel."""
        n_times = stop - start
        tapered = len(set(picks)) * spectral.MULTITAPER_TAPERS * n_times * (costs.WELCH_NS + costs.WINDOW_COPY_NS)
        return costs.DPSS_NS * n_times + self.read_cost(picks, n_times) + tapered

    # ------------------------------------------------------------------ amplitude statistics

    def _pooled(self, picks, start, stop):
        """Return the pooled statistics row of each channel over ``[start, stop)`` (a long range)."""
        return self._per_pick(picks, lambda pick: segments.pool(self.segments.range_rows(pick, start, stop)))

    def _zero_crossings(self, pick, start, stop, mean):
        """Return the sign changes of ``x - mean`` over ``[start, stop)``, read in chunks."""
        if start == 0 and stop == self.n_times:
            whole = self.segments.channel(pick).whole_zero_crossings
            if whole is not None and whole[0] == mean:
                return whole[1]
        count = 0
        length = self._stream_length(pick, stop - start)
        for first in range(start, stop, length):
            last = min(stop, first + length + 1)
            count += int(temporal.zero_crossing_count(self.read([pick], first, last)[0], mean))
        return count

    def _zero_crossings_cost(self, picks, start, stop):
        if start == 0 and stop == self.n_times:  # counted once, with the statistics
            return 0.0
        n_times = stop - start
        return self.read_cost(picks, n_times, chunk="stream") + costs.ZERO_CROSSINGS_NS * n_times * len(set(picks))

    @_each_channel_once(_rows)
    def rms_uv(self, picks, start, stop):
        """Return the RMS of each channel over ``[start, stop)``, µV (computed in volts)."""
        if not self._large(start, stop):
            return temporal.rms_uv(self.read(picks, start, stop))
        return _rms_v(self._pooled(picks, start, stop)) * 1e6

    def rms_cost(self, picks, start, stop):
        """Return what :meth:`rms_uv` costs."""
        return self._short_cost(picks, start, stop, costs.TEMPORAL_NS)

    def _short_cost(self, picks, start, stop, per_sample_ns):
        """The cost of a feature read and computed directly on a short range.

        A long range pools kept statistics instead: a few hundred rows, and the units at its
        edges, read and computed directly.
        """
        if self._large(start, stop):
            edges = 2 * self.segments.unit
            return self.read_cost(picks, edges) + per_sample_ns * edges * len(set(picks))
        return self.read_cost(picks, stop - start) + per_sample_ns * (stop - start) * len(set(picks))

    @_each_channel_once(_rows)
    def temporal_features(self, picks, start, stop):
        """Return the features of ``compute_temporal_features`` for each channel.

        Returns
        -------
        features : dict of str to ndarray, shape (len(picks),)
            ``mean_uv, std_uv, rms_uv, peak_to_peak_uv, skewness, kurtosis, hjorth_activity``
            (V²), ``hjorth_mobility, hjorth_complexity, line_length_uv_s,
            zero_crossing_rate_hz``.
        """
        duration = max(temporal.duration_sec(stop - start, self.sfreq), temporal.DURATION_FLOOR_SEC)
        if not self._large(start, stop):
            data = self.read(picks, start, stop)
            mean, std, rms = temporal.mean_std_rms_uv(data)
            skewness, kurtosis = temporal.skewness_kurtosis(data * 1e6)
            activity, mobility, complexity = temporal.hjorth(data)
            return {
                "mean_uv": mean, "std_uv": std, "rms_uv": rms,
                "peak_to_peak_uv": temporal.peak_to_peak_uv(data),
                "skewness": skewness, "kurtosis": kurtosis,
                "hjorth_activity": activity, "hjorth_mobility": mobility, "hjorth_complexity": complexity,
                "line_length_uv_s": temporal.line_length_uv_s(data, self.sfreq),
                "zero_crossing_rate_hz": temporal.zero_crossing_rate_hz(data, self.sfreq),
            }
        rows = self._pooled(picks, start, stop)
        skewness, kurtosis = _shape_statistics(rows)
        activity, mobility, complexity = temporal.hjorth_from_variances(*_variances(rows))
        crossings = np.array([self._zero_crossings(pick, start, stop, mean)
                              for pick, mean in zip(picks, rows[:, segments.COLUMN["mean"]])])
        return {
            "mean_uv": rows[:, segments.COLUMN["mean"]] * 1e6,
            "std_uv": np.sqrt(_variances(rows)[0]) * 1e6,
            "rms_uv": _rms_v(rows) * 1e6,
            "peak_to_peak_uv": _peak_to_peak_uv(rows),
            "skewness": skewness, "kurtosis": kurtosis,
            "hjorth_activity": activity, "hjorth_mobility": mobility, "hjorth_complexity": complexity,
            "line_length_uv_s": rows[:, segments.COLUMN["dabs"]] * 1e6 / duration,
            "zero_crossing_rate_hz": crossings / duration,
        }

    def temporal_cost(self, picks, start, stop):
        """Return what :meth:`temporal_features` costs."""
        pooled = self._short_cost(picks, start, stop, costs.TEMPORAL_NS)
        return pooled + (self._zero_crossings_cost(picks, start, stop) if self._large(start, stop) else 0.0)

    @_each_channel_once(_rows)
    def noise_features(self, picks):
        """Return the amplitude indicators of ``compute_noise_metrics`` over the whole record.

        Returns
        -------
        features : dict of str to ndarray, shape (len(picks),)
            ``rms_uv``, ``flat_line_ratio`` and ``saturation_ratio``.
        """
        if not self._large(0, self.n_times):
            data = self.read(picks, 0, self.n_times)
            return {
                "rms_uv": temporal.rms_uv(data),
                "flat_line_ratio": noise.flat_line_ratio(data),
                "saturation_ratio": np.array([noise.saturation_ratio(row) for row in data]),
            }
        channels = {pick: self.segments.channel(pick) for pick in picks}
        return {
            "rms_uv": _rms_v(self._pooled(picks, 0, self.n_times)) * 1e6,
            "flat_line_ratio": np.array([channels[pick].flat_line_ratio for pick in picks]),
            "saturation_ratio": np.array([channels[pick].saturation_ratio for pick in picks]),
        }

    def noise_cost(self, picks):
        """Return what :meth:`noise_features` and the whole record's :meth:`welch` cost."""
        return self._short_cost(picks, 0, self.n_times, costs.NOISE_NS) + self.welch_cost(picks, 0, self.n_times)

    # ------------------------------------------------------------------ correlation

    @_each_channel_once(_matrix_rows)
    def correlation(self, picks, start, stop):
        """Return the Pearson correlation matrix of ``picks`` over ``[start, stop)``.

        Returns
        -------
        correlation : ndarray, shape (len(picks), len(picks))
        constant : ndarray of bool, shape (len(picks),)
        """
        if not self._large(start, stop):
            return spatial.correlation_matrix(self.read(picks, start, stop))
        count, mean, comoment = 0, np.zeros(len(picks)), np.zeros((len(picks), len(picks)))
        chunk = self._correlation_chunk(picks)
        # A channel stored at a lower rate costs far less read whole, once, than piece by piece.
        held = {row: self.read([pick], start, stop)[0] for row, pick in enumerate(picks) if pick in self.upsampled}
        streamed = [row for row in range(len(picks)) if row not in held]
        data = np.empty((len(picks), chunk))
        for first in range(start, stop, chunk):
            last = min(stop, first + chunk)
            data = data[:, : last - first]
            if streamed:
                data[streamed] = self.read([picks[row] for row in streamed], first, last)
            for row, samples in held.items():
                data[row] = samples[first - start : last - start]
            chunk_count = data.shape[1]
            chunk_mean = data.mean(axis=1)
            centred = data - chunk_mean[:, np.newaxis]
            chunk_comoment = centred @ centred.T
            total = count + chunk_count
            delta = chunk_mean - mean
            comoment += chunk_comoment + np.outer(delta, delta) * (count * chunk_count / total)
            mean += delta * (chunk_count / total)
            count = total
        return spatial.correlation_from_covariance(comoment, np.diag(comoment) / count)

    @staticmethod
    def _correlation_chunk(picks):
        """Samples per channel a long correlation reads at a time: about :data:`_STREAM_SAMPLES` in all."""
        return max(_STREAM_SAMPLES // len(set(picks)), LARGE_RANGE_SAMPLES)

    def correlation_cost(self, picks, start, stop):
        """Return what :meth:`correlation` costs."""
        n_times, distinct = stop - start, len(set(picks))
        products = (costs.CORRELATION_NS * distinct + costs.CORRELATION_PAIR_NS * distinct * distinct) * n_times
        if not self._large(start, stop):
            return self.read_cost(picks, n_times) + products
        held = [pick for pick in picks if pick in self.upsampled]
        streamed = [pick for pick in picks if pick not in self.upsampled]
        chunk = self._correlation_chunk(picks)
        return self.read_cost(held, n_times) + self.read_cost(streamed, n_times, chunk=chunk) + products

    # ------------------------------------------------------------------ windows

    @_each_channel_once(_windowed_rows)
    def windowed_features(self, picks, start, stop, window_samples, step_samples, features):
        """Return the per-window features of ``compute_windowed_features``.

        Parameters
        ----------
        picks : list of int
        start, stop : int
            The analysed range, samples.
        window_samples, step_samples : int
            Window length (≥ 4) and hop (≥ 1), samples.
        features : iterable of str
            Names from :data:`windowed.FEATURES`.

        Returns
        -------
        starts : ndarray of int, shape (n_windows,)
            Window starts relative to ``start``.
        window_samples : int
            The window length actually used (shorter than asked when no window fits).
        values : dict of str to ndarray, shape (len(picks), n_windows)
        """
        starts, window_samples = windowed.window_starts(stop - start, window_samples, step_samples)
        features = windowed.ordered(features)
        if self._windows_cached(start, len(starts), window_samples, step_samples):
            values = self._cached_windows(picks, start, starts, window_samples, features)
        else:
            values = self._direct_windows(picks, start, starts, window_samples, features)
        return starts, window_samples, values

    def windowed_cost(self, picks, start, stop, window_samples, step_samples, features):
        """Return what :meth:`windowed_features` costs."""
        n_windows, window_samples = windowed.window_count(stop - start, window_samples, step_samples)
        features = windowed.ordered(features)
        distinct = len(set(picks))
        spectral_wanted = any(name in windowed.SPECTRAL_FEATURES for name in features)
        time_cost = sum(costs.WINDOW_FEATURE_NS.get(name, 0.0) for name in features)
        span = min(stop - start, (n_windows - 1) * step_samples + window_samples)
        covered = n_windows * window_samples * distinct
        if not self._windows_cached(start, n_windows, window_samples, step_samples):
            per_sample = costs.WINDOW_COPY_NS + time_cost
            per_sample += costs.WINDOW_SPECTRUM_NS if spectral_wanted else 0.0
            return self.read_cost(picks, span, chunk=max(_STREAM_SAMPLES, window_samples)) + per_sample * covered
        total = 0.0
        unit = self.segments.unit
        if time_cost:
            n_units = window_samples // unit
            rows = n_units if n_units < 2 * segments.SEGMENTS_PER_BLOCK else (
                2 * segments.SEGMENTS_PER_BLOCK + n_units // segments.SEGMENTS_PER_BLOCK)
            total += costs.POOLED_ROW_NS * rows * n_windows * distinct
        if "zero_crossing_rate_hz" in features:
            total += self.read_cost(picks, span, chunk=max(_STREAM_SAMPLES, window_samples))
            total += costs.ZERO_CROSSINGS_NS * covered
        if spectral_wanted:
            n_segments = spectral.n_welch_segments(window_samples, self.segments.nperseg)
            total += costs.POOLED_SEGMENT_NS * n_segments * n_windows * distinct
        return total

    def _windows_cached(self, start, n_windows, window_samples, step_samples):
        if self.segments is None or n_windows * window_samples < LARGE_RANGE_SAMPLES:
            return False
        unit = self.segments.unit
        return (
            start % unit == 0
            and step_samples % unit == 0
            and window_samples % unit == 0
            and window_samples >= self.segments.nperseg
        )

    def _direct_windows(self, picks, start, starts, window_samples, features):
        """Compute the windows one channel at a time: a window may be as long as the record."""
        def channel(pick):
            batches = []
            for local in _window_batches(starts, window_samples):
                data = self.read([pick], start + local[0], start + local[-1] + window_samples)
                batches.append(windowed.window_features(data, self.sfreq, local - local[0], window_samples, features))
            return {name: np.concatenate([batch[name][0] for batch in batches]) for name in features}

        return _stacked([channel(pick) for pick in picks], features)

    def _cached_windows(self, picks, start, starts, window_samples, features):
        unit = self.segments.unit
        first_units = (start + starts) // unit
        n_units = window_samples // unit
        n_segments = spectral.n_welch_segments(window_samples, self.segments.nperseg)
        duration = max(temporal.duration_sec(window_samples, self.sfreq), temporal.DURATION_FLOOR_SEC)
        wanted = set(features)

        def channel(pick):
            values = {}
            if wanted & set(windowed.TIME_FEATURES):
                rows = self.segments.window_pools(pick, first_units, n_units)
                values.update(_window_time_features(rows, wanted, duration))
                if "zero_crossing_rate_hz" in wanted:
                    values["zero_crossing_rate_hz"] = self._window_crossings(
                        pick, start, starts, window_samples, rows[:, segments.COLUMN["mean"]]) / duration
            if wanted & set(windowed.SPECTRAL_FEATURES):
                bands = self.segments.window_band_powers(pick, first_units, n_segments) * 1e12
                band_uv2 = {band: bands[:, column] for column, band in enumerate(spectral.WINDOWED_BANDS)}
                values.update(windowed.spectral_features(band_uv2, features, (len(starts),)))
            return values

        return _stacked([channel(pick) for pick in picks], features)

    def _window_crossings(self, pick, start, starts, window_samples, means):
        counts, done = [], 0
        for local in _window_batches(starts, window_samples):
            data = self.read([pick], start + local[0], start + local[-1] + window_samples)[0]
            counts.append(temporal.zero_crossing_count(_windows_of(data, local - local[0], window_samples),
                                                       means[done : done + len(local)]))  # fmt: skip
            done += len(local)
        return np.concatenate(counts).astype(np.float64)


def _stacked(per_channel, features):
    """Return each feature's per-channel values stacked into shape (n_channels, n_windows)."""
    return {name: np.stack([values[name] for values in per_channel]) for name in features}


def _windows_of(data, offsets, window_samples):
    """The windows of ``data`` starting at ``offsets``, shape (len(offsets), window_samples).

    Evenly spaced windows (every hop the same, as the tools make them) are a strided view of
    ``data``; others are gathered into a copy.
    """
    windows = np.lib.stride_tricks.sliding_window_view(data, window_samples)
    hops = np.diff(offsets)
    if len(offsets) == 1 or (hops[0] > 0 and np.all(hops == hops[0])):
        return windows[offsets[0] :: hops[0] if len(offsets) > 1 else 1][: len(offsets)]
    return windows[offsets]


def _window_batches(starts, window_samples):
    """Split window starts into consecutive batches spanning about :data:`_STREAM_SAMPLES` samples.

    A batch always holds at least one window, so each read covers at most one window or
    ``_STREAM_SAMPLES`` samples, whichever is longer, whatever the hop between windows.
    """
    span = max(_STREAM_SAMPLES, window_samples)
    first = 0
    while first < len(starts):
        last = int(np.searchsorted(starts, starts[first] + span - window_samples, side="right"))
        last = max(last, first + 1)
        yield starts[first:last]
        first = last


# ---------------------------------------------------------------------- pooled rows to features

def _variances(rows):
    """Return the population variances of x, dx and ddx from pooled rows, V²."""
    column = segments.COLUMN
    return (
        rows[..., column["m2"]] / rows[..., column["n"]],
        rows[..., column["dm2"]] / rows[..., column["dn"]],
        rows[..., column["cm2"]] / rows[..., column["cn"]],
    )


def _rms_v(rows):
    column = segments.COLUMN
    mean = rows[..., column["mean"]]
    return np.sqrt(mean * mean + rows[..., column["m2"]] / rows[..., column["n"]])


def _peak_to_peak_uv(rows):
    column = segments.COLUMN
    return rows[..., column["high"]] * 1e6 - rows[..., column["low"]] * 1e6


def _shape_statistics(rows):
    """Return scipy's biased skewness and Fisher kurtosis (of the µV signal) from pooled rows.

    NaN where scipy would give NaN: a variance at or below ``(eps * mean)²``.
    """
    column = segments.COLUMN
    n = rows[..., column["n"]]
    mean_uv = rows[..., column["mean"]] * 1e6
    m2 = rows[..., column["m2"]] / n * 1e12
    m3 = rows[..., column["m3"]] / n * 1e18
    m4 = rows[..., column["m4"]] / n * 1e24
    with np.errstate(all="ignore"):
        degenerate = m2 <= (_EPS * mean_uv) ** 2
        skewness = np.where(degenerate, np.nan, m3 / m2**1.5)
        kurtosis = np.where(degenerate, np.nan, m4 / m2**2 - 3.0)
    return skewness, kurtosis


def _window_time_features(rows, wanted, duration):
    """Return the requested time-domain window features (except the zero-crossing rate)."""
    column = segments.COLUMN
    variance, step_variance, _ = _variances(rows)
    computed = {
        "rms_uv": lambda: _rms_v(rows) * 1e6,
        "std_uv": lambda: np.sqrt(variance) * 1e6,
        "kurtosis": lambda: _shape_statistics(rows)[1],
        "peak_to_peak_uv": lambda: _peak_to_peak_uv(rows),
        "line_length_uv_s": lambda: rows[..., column["dabs"]] * 1e6 / duration,
        "hjorth_mobility": lambda: np.sqrt(step_variance / np.maximum(variance, temporal.VARIANCE_FLOOR)),
    }
    return {name: compute() for name, compute in computed.items() if name in wanted}
