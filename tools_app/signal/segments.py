"""Per-segment sufficient statistics of a long recording, and their exact combination.

A long recording is cut into *units* of one Welch hop (``nperseg - nperseg // 2`` samples,
1 s at integer sampling rates). For each unit of each channel a *row* of statistics is kept
that pools exactly, up to floating-point summation order, into the statistics of any
stretch of units: the count, mean and central moment sums of the samples and their extremes,
and the count, mean and squared-deviation sum of the first and second differences, with the
summed absolute step. A difference that straddles a unit boundary belongs to no unit; the
three per boundary are kept on their own and join a range only when all their samples are
inside it. Rows of 64 consecutive units are also kept pooled, so a long range pools a few
hundred rows.

For every Welch segment (segments start on unit boundaries) its integrals over the six
windowed-feature bands are kept, and for every block of :data:`SEGMENTS_PER_BLOCK` segments
the summed periodogram, so the Welch PSD of a unit-aligned range is a sum of blocks plus the
few segments at its edges, recomputed. Whole-recording figures that only the noise metrics
need (the share of flat steps, counted while the channel is read; the share of samples at
the extremes, counted afterwards in the few units that reach them) and the whole-recording
zero-crossing count are computed once, exactly.

A unit's statistics depend on its samples alone, so the cache holds the same numbers however
it was filled (pieces, threads, channel sets) and a result never depends on call history.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from threadpoolctl import threadpool_limits

from tools_app.signal import noise, spectral, temporal
from tools_app.signal.workspace import Workspace, scratch

_blas_lock = threading.Lock()
_blas_limited = False


def single_threaded_blas():
    """Limit BLAS to one thread in this process, once and for good.

    The tools' own threads are the parallelism: BLAS threads on top of them (OpenBLAS starts
    them for larger products) would only compete for the same cores. A limit set and lifted
    around each computation (``threadpool_limits`` as a context) is process-wide state that
    concurrent tool calls would undo for one another; set once, it cannot be.
    """
    global _blas_limited
    with _blas_lock:
        if not _blas_limited:
            threadpool_limits(limits=1, user_api="blas")
            _blas_limited = True


#: Segment periodograms are summed in blocks of this many segments; unit rows are pooled in
#: blocks of as many units.
SEGMENTS_PER_BLOCK = 64
#: A channel is read and processed in pieces of about this many samples, small enough for the
#: processor cache, whose intermediate arrays reuse one scratch workspace per channel ...
_COMPUTE_SAMPLES = 1 << 17
#: ... except a channel that is cheaper to read whole (a resampled EDF channel costs a
#: whole-channel FFT per read), read in chunks of at most this many samples (one for most
#: recordings).
_READ_SAMPLES = 1 << 23
#: Windows' segment band integrals are summed this many segments (all windows together) at a time.
_GATHERED_SEGMENTS = 1 << 18
#: Unit rows are pooled into blocks this many blocks at a time.
_BLOCKS_PER_POOL = 16
#: Channels are built by this many threads at once (numpy releases the GIL).
_WORKERS = max(1, min(2, os.cpu_count() or 1))

#: Columns of a statistics row: the samples' count, mean, Σ(x - mean)^k for k = 2..4 and
#: extremes; the first differences' count, mean, Σ(dx - mean)² and Σ|dx|; the second
#: differences' count, mean and Σ(ddx - mean)².
FIELDS = ("n", "mean", "m2", "m3", "m4", "low", "high", "dn", "dmean", "dm2", "dabs", "cn", "cmean", "cm2")
COLUMN = {name: index for index, name in enumerate(FIELDS)}
_N, _MEAN, _M2, _M3, _M4, _LOW, _HIGH, _DN, _DMEAN, _DM2, _DABS, _CN, _CMEAN, _CM2 = range(len(FIELDS))


def rows_of(values, count=None, *, workspace=None):
    """Return the statistics row of everything that starts in ``values[..., :count]``.

    Parameters
    ----------
    values : ndarray, shape (..., n), V
        Samples; those past ``count`` only complete the differences that start before it.
    count : int, optional
        How many leading samples the row covers (default: all), at least 1.
    workspace : Workspace, optional
        Scratch memory for the intermediate arrays (the rows are the same without it).

    Returns
    -------
    rows : ndarray, shape (..., len(FIELDS))
    """
    values = np.asarray(values, dtype=np.float64)
    count = values.shape[-1] if count is None else count
    lead = values.shape[:-1]
    inside = values[..., :count]
    covered = values[..., : count + 2]
    n_steps = covered.shape[-1] - 1
    all_steps = np.subtract(covered[..., 1:], covered[..., :-1], out=scratch(workspace, "steps", lead + (n_steps,)))
    steps = all_steps[..., :count]
    rows = np.empty(lead + (len(FIELDS),))
    mean = inside.mean(axis=-1)
    deviation = np.subtract(inside, mean[..., np.newaxis], out=scratch(workspace, "deviation", inside.shape))
    squared = np.multiply(deviation, deviation, out=scratch(workspace, "squared", inside.shape))
    rows[..., _N] = count
    rows[..., _MEAN] = mean
    rows[..., _M2] = squared.sum(axis=-1)
    rows[..., _M3] = np.einsum("...i,...i->...", squared, deviation)
    rows[..., _M4] = np.einsum("...i,...i->...", squared, squared)
    rows[..., _LOW] = inside.min(axis=-1)
    rows[..., _HIGH] = inside.max(axis=-1)
    _second_order(steps, rows, _DN)
    rows[..., _DABS] = np.abs(steps, out=scratch(workspace, "deviation", steps.shape)).sum(axis=-1)
    curvatures = scratch(workspace, "squared", lead + (max(n_steps - 1, 0),))
    np.subtract(all_steps[..., 1:], all_steps[..., :-1], out=curvatures)
    _second_order(curvatures[..., :count], rows, _CN)
    return rows


def _second_order(values, rows, first_column):
    """Write the count, mean and Σ(v - mean)² of ``values`` into three columns of ``rows``."""
    size = values.shape[-1]
    rows[..., first_column] = size
    if size == 0:
        rows[..., first_column + 1] = rows[..., first_column + 2] = 0.0
        return
    total = values.sum(axis=-1)
    rows[..., first_column + 1] = total / size
    rows[..., first_column + 2] = np.einsum("...i,...i->...", values, values) - total * total / size


def boundary_rows(step, curvature_before, curvature_after, *, step_in, after_in):
    """Return rows holding the differences straddling unit boundaries.

    Each boundary gives two rows: the step and the second difference that end on the next
    unit's first sample (present when ``step_in``), and the second difference that ends one
    sample later (present when ``after_in``). The rows hold no samples.

    Returns
    -------
    rows : ndarray, shape (..., 2 * n_boundaries, len(FIELDS))
    """
    shape = np.shape(step)
    first = np.zeros(shape + (len(FIELDS),))
    second = np.zeros(shape + (len(FIELDS),))
    for rows in (first, second):
        rows[..., _LOW] = np.inf
        rows[..., _HIGH] = -np.inf
    step = np.where(step_in, step, 0.0)
    first[..., _DN] = step_in
    first[..., _DMEAN] = step
    first[..., _DABS] = np.abs(step)
    first[..., _CN] = step_in
    first[..., _CMEAN] = np.where(step_in, curvature_before, 0.0)
    second[..., _CN] = after_in
    second[..., _CMEAN] = np.where(after_in, curvature_after, 0.0)
    return np.concatenate([first, second], axis=-2)


def pool(rows):
    """Return the row of the union of the stretches in ``rows`` (second-to-last axis).

    Uses the exact formulas for pooling central moments of several groups about the
    pooled mean.

    Parameters
    ----------
    rows : ndarray, shape (..., n_rows, len(FIELDS))

    Returns
    -------
    pooled : ndarray, shape (..., len(FIELDS))
    """
    pooled = np.empty(rows.shape[:-2] + (len(FIELDS),))
    n, mean = rows[..., _N], rows[..., _MEAN]
    m2, m3 = rows[..., _M2], rows[..., _M3]
    total = n.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (n * mean).sum(axis=-1) / total
    delta = np.where(n > 0, mean - centre[..., np.newaxis], 0.0)
    delta2 = delta * delta
    pooled[..., _N] = total
    pooled[..., _MEAN] = centre
    pooled[..., _M2] = (m2 + n * delta2).sum(axis=-1)
    pooled[..., _M3] = (m3 + 3 * delta * m2 + n * delta2 * delta).sum(axis=-1)
    pooled[..., _M4] = (rows[..., _M4] + 4 * delta * m3 + 6 * delta2 * m2 + n * delta2 * delta2).sum(axis=-1)
    pooled[..., _LOW] = rows[..., _LOW].min(axis=-1)
    pooled[..., _HIGH] = rows[..., _HIGH].max(axis=-1)
    for count in (_DN, _CN):
        n, mean = rows[..., count], rows[..., count + 1]
        total = n.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            centre = (n * mean).sum(axis=-1) / total
        delta = np.where(n > 0, mean - centre[..., np.newaxis], 0.0)
        pooled[..., count] = total
        pooled[..., count + 1] = centre
        pooled[..., count + 2] = (rows[..., count + 2] + n * delta * delta).sum(axis=-1)
    pooled[..., _DABS] = rows[..., _DABS].sum(axis=-1)
    return pooled


class ChannelSegments:
    """The cached statistics of one channel.

    Attributes
    ----------
    unit : int
        Samples per unit.
    units : ndarray, shape (n_units, len(FIELDS))
    steps, curvatures_before, curvatures_after : ndarray, shape (n_units,)
        The differences straddling the end of each unit; NaN where they would leave the
        recording.
    unit_blocks : ndarray, shape (n_unit_blocks, len(FIELDS))
        Units ``[k * 64, (k + 1) * 64)`` pooled with the differences straddling their inner
        boundaries.
    segment_bands : ndarray, shape (n_segments, 6), V²
        Each segment periodogram integrated over :data:`spectral.WINDOWED_BANDS`.
    block_psd : ndarray, shape (n_blocks, n_freqs), V²/Hz
        Summed periodograms of segments ``[k * 64, (k + 1) * 64)``.
    saturation_ratio, flat_line_ratio : float
        The whole recording's noise-metric ratios, exactly as the official definitions.
    whole_zero_crossings : tuple of (float, int) or None
        The whole recording's mean as pooled here and the sign changes of ``x - mean``;
        not kept for a channel read whole that took more than one read (a second pass would
        cost it a second round of whole reads).
    """

    def __init__(self, unit, units, boundaries, segment_bands, block_psd, unit_blocks=None):
        self.unit = unit
        self.units = units
        self.steps, self.curvatures_before, self.curvatures_after = boundaries
        self.segment_bands = segment_bands
        self.block_psd = block_psd
        self.unit_blocks = self._pooled_blocks() if unit_blocks is None else unit_blocks
        self.saturation_ratio = self.flat_line_ratio = None
        self.whole_zero_crossings = None

    # The arrays a statistics file holds per channel, in file order (tools_app.signal.stored).
    STORED = ("units", "steps", "curvatures_before", "curvatures_after", "unit_blocks", "segment_bands", "block_psd")

    def stored(self):
        """This channel as :meth:`tools_app.signal.stored.StatisticsFile.save` takes it."""
        whole = self.whole_zero_crossings
        scalars = {
            "saturation_ratio": self.saturation_ratio,
            "flat_line_ratio": self.flat_line_ratio,
            "whole_zero_crossings": None if whole is None else [float(whole[0]), int(whole[1])],
        }
        return {"arrays": [getattr(self, name) for name in self.STORED], "scalars": scalars}

    def _pooled_blocks(self):
        n_units = len(self.units)
        full = n_units // SEGMENTS_PER_BLOCK * SEGMENTS_PER_BLOCK
        index = np.arange(full).reshape(-1, SEGMENTS_PER_BLOCK)
        blocks = [  # a few blocks at a time, so that pooling works in the processor cache
            pool(np.concatenate([self.units[chunk], self.boundaries(chunk[:, :-1])], axis=1))
            for chunk in np.split(index, range(_BLOCKS_PER_POOL, len(index), _BLOCKS_PER_POOL))
        ]
        if full < n_units:
            rest = np.arange(full, n_units)
            blocks.append(pool(np.concatenate([self.units[rest], self.boundaries(rest[:-1])]))[np.newaxis])
        return np.concatenate(blocks)

    def boundaries(self, index, stop=None):
        """Return the boundary rows of units ``index``, only those ending before ``stop`` if given."""
        steps, after = self.steps[index], self.curvatures_after[index]
        step_in, after_in = np.isfinite(steps), np.isfinite(after)
        if stop is not None:
            ends = (np.asarray(index) + 1) * self.unit
            step_in &= ends < stop
            after_in &= ends + 1 < stop
        return boundary_rows(steps, self.curvatures_before[index], after, step_in=step_in, after_in=after_in)

    def window_pools(self, first_units, n_units):
        """Return the statistics of windows of ``n_units`` units starting at ``first_units``.

        A window's rows are its whole blocks (:attr:`unit_blocks`) and the units before and
        after them, with the differences straddling their inner boundaries, as :meth:`rows`
        takes a range; a window that holds no whole block takes its units one by one. Windows
        are pooled in groups of the same layout (units before the first block, blocks), so that
        each group is one array operation, with no padding.

        Parameters
        ----------
        first_units : ndarray of int, shape (n_windows,)
            First unit of each window.
        n_units : int
            Units per window (≥ 1); windows must lie inside the recording.

        Returns
        -------
        pooled : ndarray, shape (n_windows, len(FIELDS))
        """
        first_units = np.asarray(first_units, dtype=np.int64)
        pooled = np.empty((len(first_units), len(FIELDS)))
        first_block = -(-first_units // SEGMENTS_PER_BLOCK)
        n_blocks = (first_units + n_units) // SEGMENTS_PER_BLOCK - first_block
        unblocked = np.flatnonzero(n_blocks <= 0)
        if len(unblocked):
            index = first_units[unblocked, np.newaxis] + np.arange(n_units)
            pooled[unblocked] = pool(np.concatenate([self.units[index], self.boundaries(index[:, :-1])], axis=1))
        head = first_block * SEGMENTS_PER_BLOCK - first_units
        blocked = np.flatnonzero(n_blocks > 0)
        layouts = head[blocked] * (n_units + 1) + n_blocks[blocked]
        for layout in np.unique(layouts):
            windows = blocked[layouts == layout]
            n_head, n_block = divmod(int(layout), n_units + 1)
            n_tail = n_units - n_head - n_block * SEGMENTS_PER_BLOCK
            heads = first_units[windows, np.newaxis] + np.arange(n_head)
            blocks = first_block[windows, np.newaxis] + np.arange(n_block)
            tails = (blocks[:, -1:] + 1) * SEGMENTS_PER_BLOCK + np.arange(n_tail)
            # Every inner boundary: after each unit before the blocks, each block but a last one that
            # ends the window, and each unit after the blocks but the window's last.
            block_ends = (blocks if n_tail else blocks[:, :-1]) * SEGMENTS_PER_BLOCK + SEGMENTS_PER_BLOCK - 1
            pooled[windows] = pool(np.concatenate([
                self.units[heads], self.boundaries(heads),
                self.unit_blocks[blocks], self.boundaries(block_ends),
                self.units[tails], self.boundaries(tails[:, :-1]),
            ], axis=1))  # fmt: skip
        return pooled

    def rows(self, first, last, stop):
        """Return rows pooling units ``[first, last)`` and their boundaries that end before ``stop``."""
        first_block, last_block = -(-first // SEGMENTS_PER_BLOCK), last // SEGMENTS_PER_BLOCK
        if last_block <= first_block:
            index = np.arange(first, last)
            return np.concatenate([self.units[index], self.boundaries(index, stop)])
        head = np.arange(first, first_block * SEGMENTS_PER_BLOCK)
        tail = np.arange(last_block * SEGMENTS_PER_BLOCK, last)
        block_ends = np.arange(first_block + 1, last_block + 1) * SEGMENTS_PER_BLOCK - 1
        return np.concatenate([
            self.units[head], self.boundaries(head, stop),
            self.unit_blocks[first_block:last_block], self.boundaries(block_ends, stop),
            self.units[tail], self.boundaries(tail, stop),
        ])


class StoredChannelSegments(ChannelSegments):
    """A channel of a mapped statistics file: each array is checked and mapped on its first use.

    Reading an array that fails its CRC-32 raises :class:`tools_app.signal.stored.StoreError`.
    """

    def __init__(self, unit, mapped, index):
        # Not ChannelSegments.__init__, which takes the arrays: they are read when first asked for.
        self.unit = unit
        self._mapped, self._index = mapped, index
        scalars = mapped.scalars(index)
        self.saturation_ratio = scalars["saturation_ratio"]
        self.flat_line_ratio = scalars["flat_line_ratio"]
        whole = scalars["whole_zero_crossings"]
        self.whole_zero_crossings = None if whole is None else (whole[0], whole[1])

    def __getattr__(self, name):  # only for attributes not set yet: the arrays, on first use
        if name not in ChannelSegments.STORED:
            raise AttributeError(name)
        array = self._mapped.array(self._index, name)
        setattr(self, name, array)
        return array


class RecordSegments:
    """Per-segment statistics of one recording, built per channel on first use.

    Parameters
    ----------
    read : callable
        ``read(picks, start, stop, out=None) -> ndarray (len(picks), stop - start)`` in volts,
        written into ``out`` when given and possible; called from worker threads, several at
        a time.
    sfreq : float
        Sampling rate, Hz.
    n_times : int
        Samples per channel; at least ``int(2 * sfreq)`` and 4.
    n_channels : int, optional
        The recording's channel count. With it, the first use of any channel makes all of them
        ready at once (mapped, or computed in one pass and stored); without it, each channel is
        computed on its own first use, in memory.
    whole_reads : collection of int, optional
        Channels to read in as few reads as possible rather than piece by piece (those whose
        partial reads cost more than a whole one). The numbers are the same either way.
    identity : callable, optional
        ``identity()`` gives the recording file's identity (:func:`tools_app.signal.stored.file_identity`):
        with it and a statistics directory, the statistics are kept in a file.
    """

    def __init__(self, read, sfreq, n_times, *, n_channels=None, whole_reads=(), identity=None):
        self.read = read
        self.whole_reads = frozenset(whole_reads)
        self.sfreq = float(sfreq)
        self.n_times = int(n_times)
        self.n_channels = n_channels
        self.nperseg = spectral.welch_nperseg(self.sfreq, self.n_times)
        self.unit = spectral.welch_step(self.nperseg)
        self.n_units = -(-self.n_times // self.unit)
        self.n_segments = spectral.n_welch_segments(self.n_times, self.nperseg)
        self.freqs = spectral.welch_frequencies(self.sfreq, self.nperseg)
        self._band_weights = spectral.band_weights(self.freqs, spectral.WINDOWED_BANDS)
        self._channels = {}
        self._lock = threading.Lock()
        self._identity = identity
        self._mapped = None  # the statistics file this process maps, once loaded
        self._checked = set()  # its channels whose CRC-32 has been checked

    def channel(self, pick):
        """Return the :class:`ChannelSegments` of channel index ``pick``.

        With ``n_channels``, the first use loads every channel: mapped from the recording's
        statistics file where there is one (:mod:`tools_app.signal.stored`; each channel's
        CRC-32 is checked on its first use), else computed in one pass over the recording and
        stored. Without it, only the channel asked for is computed, in memory.
        """
        cached = self._channels.get(pick)
        if cached is not None:
            return cached
        if self.n_channels is None:
            self.build([pick])
        else:
            self.prepare(pick)
        return self._channels[pick]

    def prepare(self, pick=None):
        """Map or compute the statistics of every channel; with ``pick``, make that channel ready."""
        with self._lock:
            if self._mapped is None and len(self._channels) < self.n_channels:
                self._open()
            if pick is not None and pick not in self._channels:
                self._channels[pick] = StoredChannelSegments(self.unit, self._mapped, pick)

    def discard_stored(self, error):
        """Forget the mapped file, which failed a check (``error``), and delete it: it is rebuilt on next use."""
        from tools_app.signal import stored

        with self._lock:
            if self._mapped is None:
                return
            stored.logger.warning("record statistics %s: %s; rebuilding them", self._mapped.path.name, error)
            self._store().discard()
            self._mapped, self._channels = None, {}

    def _open(self):
        """Map the statistics file, or compute every channel and write it (the caller holds the lock)."""
        from tools_app.signal import stored

        store = self._store()
        if store is not None:
            self._mapped = store.load(self._shapes())
            if self._mapped is not None:
                return
            try:
                with store.exclusive():  # another process may be writing it: wait, then map it
                    self._mapped = store.load(self._shapes())
                    if self._mapped is not None:
                        return
                    self._build_missing(range(self.n_channels))
                    store.save([self._channels[pick].stored() for pick in range(self.n_channels)])
                return  # this process keeps what it computed; later ones map the file
            except OSError as error:  # a read-only or full directory: keep them in memory only
                stored.logger.warning("record statistics could not be stored (%s); kept in memory", error)
        self._build_missing(range(self.n_channels))

    def stored_file_exists(self):
        """Whether this recording's statistics file is there and passes its header checks."""
        store = self._store()
        return store is not None and store.load(self._shapes()) is not None

    def _store(self):
        from tools_app.signal import stored

        directory = stored.stats_dir() if self._identity is not None else None
        if directory is None:
            return None
        geometry = {
            "sfreq": self.sfreq, "n_times": self.n_times, "n_channels": self.n_channels,
            "nperseg": self.nperseg, "unit": self.unit, "fields": list(FIELDS),
            "bands": {name: list(band) for name, band in spectral.WINDOWED_BANDS.items()},
            "segments_per_block": SEGMENTS_PER_BLOCK,
        }
        return stored.StatisticsFile(directory, self._identity(), geometry)

    def _shapes(self):
        n_unit_blocks = -(-self.n_units // SEGMENTS_PER_BLOCK)
        n_blocks = -(-self.n_segments // SEGMENTS_PER_BLOCK)
        return {
            "units": (self.n_units, len(FIELDS)),
            "steps": (self.n_units,),
            "curvatures_before": (self.n_units,),
            "curvatures_after": (self.n_units,),
            "unit_blocks": (n_unit_blocks, len(FIELDS)),
            "segment_bands": (self.n_segments, len(spectral.WINDOWED_BANDS)),
            "block_psd": (n_blocks, len(self.freqs)),
        }

    def build(self, picks):
        """Compute, in memory, every channel in ``picks`` that is not in the cache yet."""
        with self._lock:
            self._build_missing(picks)

    def _build_missing(self, picks):
        """Compute the channels ``picks`` that are missing (the caller holds the lock).

        The channels read piece by piece are built together, one stretch of time after another
        (one pass over the file), the stretches shared among the worker threads; each channel
        read whole is built by one worker thread.
        """
        missing = sorted(set(picks) - set(self._channels))
        if not missing:
            return
        whole = [pick for pick in missing if pick in self.whole_reads]
        streamed = [pick for pick in missing if pick not in self.whole_reads]
        single_threaded_blas()
        local = threading.local()  # one scratch workspace per worker thread, for all its channels
        with ThreadPoolExecutor(max_workers=_WORKERS) as workers:
            built = [workers.submit(self._build_whole, pick, local) for pick in whole]
            if streamed:
                self._channels.update(self._build_streamed(streamed, workers, local))
            self._channels.update(zip(whole, (future.result() for future in built)))

    def _saturation_ratio(self, pick, units, data=None):
        """Return the share of the channel's samples at its minimum or maximum.

        The samples equal to an extreme are counted only in the units whose own extreme it is
        (usually one or two), read again unless ``data``, the whole channel, is given.
        """
        low, high = units[:, _LOW].min(), units[:, _HIGH].max()
        if low == high:
            return 1.0
        at_extremes = 0
        for value, column in ((low, _LOW), (high, _HIGH)):
            for first, last in _runs(np.flatnonzero(units[:, column] == value)):
                stop = min(self.n_times, last * self.unit)
                for begin in range(first * self.unit, stop, _COMPUTE_SAMPLES):
                    end = min(stop, begin + _COMPUTE_SAMPLES)
                    samples = data[begin:end] if data is not None else self.read([pick], begin, end)[0]
                    at_extremes += int(np.count_nonzero(samples == value))
        return at_extremes / self.n_times

    def _units_per_piece(self):
        """Units per piece of computation: whole blocks, about :data:`_COMPUTE_SAMPLES` samples."""
        return max(1, _COMPUTE_SAMPLES // self.unit // SEGMENTS_PER_BLOCK) * SEGMENTS_PER_BLOCK

    def _build_streamed(self, picks, workers, local):
        """Build channels ``picks`` together, reading each stretch of time once for all of them."""
        filling = _Filling(self, len(picks))
        units_per_piece = self._units_per_piece()
        # Channels are computed a few at a time, so that each computation stays about as large.
        per_group = max(1, _COMPUTE_SAMPLES // (units_per_piece * self.unit))
        groups = [(first, min(first + per_group, len(picks))) for first in range(0, len(picks), per_group)]
        lookahead = max(self.nperseg - self.unit, 2)

        def fill(first):
            workspace = local.__dict__.setdefault("workspace", Workspace())
            last = min(self.n_units, first + units_per_piece)
            start, stop = first * self.unit, min(self.n_times, last * self.unit)
            read_stop = min(self.n_times, stop + lookahead)
            data = self.read(picks, start, read_stop, out=workspace.array("read", (len(picks), read_stop - start)))
            self._fill_boundaries(filling.boundaries, data, first, last)
            return np.concatenate([
                self._fill_piece(filling.channels(a, b), data[a:b], start, first, last, workspace) for a, b in groups
            ])  # fmt: skip

        flat_steps = sum(workers.map(fill, range(0, self.n_units, units_per_piece)))
        built = {
            pick: filling.cached(index, int(flat_steps[index]), self._saturation_ratio(pick, filling.units[index]))
            for index, pick in enumerate(picks)
        }
        means = np.array([pool(self._rows(built[pick], pick, 0, self.n_times))[_MEAN] for pick in picks])

        def crossings(first):  # each stretch overlaps the next by one sample
            workspace = local.__dict__.setdefault("workspace", Workspace())
            stop = min(self.n_times, first + units_per_piece * self.unit + 1)
            data = self.read(picks, first, stop, out=workspace.array("read", (len(picks), stop - first)))
            return temporal.zero_crossing_count(data, means)

        counts = sum(workers.map(crossings, range(0, self.n_times - 1, units_per_piece * self.unit)))
        for index, pick in enumerate(picks):
            built[pick].whole_zero_crossings = (means[index], int(counts[index]))
        return built

    def _build_whole(self, pick, local):
        """Build channel ``pick`` alone, in as few reads as possible."""
        filling = _Filling(self, 1)
        unit = self.unit
        units_per_piece = self._units_per_piece()
        units_per_read = max(1, _READ_SAMPLES // unit // SEGMENTS_PER_BLOCK) * SEGMENTS_PER_BLOCK
        lookahead = max(self.nperseg - unit, 2)
        workspace = local.__dict__.setdefault("workspace", Workspace())
        flat_steps = 0
        for first in range(0, self.n_units, units_per_read):
            last = min(self.n_units, first + units_per_read)
            start, stop = first * unit, min(self.n_times, last * unit)
            read_stop = min(self.n_times, stop + lookahead)
            # Its own buffer: the pieces below use the workspace's scratch arrays.
            data = self.read([pick], start, read_stop, out=workspace.array("whole", (1, read_stop - start)))
            self._fill_boundaries(filling.boundaries, data, first, last)
            for piece in range(first, last, units_per_piece):
                piece_last = min(last, piece + units_per_piece)
                flat_steps += int(self._fill_piece(filling, data, start, piece, piece_last, workspace)[0])
        one_read = units_per_read >= self.n_units
        cached = filling.cached(0, flat_steps, self._saturation_ratio(pick, filling.units[0], data[0] if one_read else None))
        if one_read:
            mean = pool(self._rows(cached, pick, 0, self.n_times))[_MEAN]
            crossings = sum(  # piece by piece, each overlapping the next by one sample
                int(temporal.zero_crossing_count(data[0, first : min(self.n_times, first + _COMPUTE_SAMPLES + 1)], mean))
                for first in range(0, self.n_times - 1, _COMPUTE_SAMPLES)
            )
            cached.whole_zero_crossings = (mean, crossings)
        return cached

    def _fill_piece(self, filling, data, start, first, last, workspace):
        """Compute the rows of units ``[first, last)`` and of the segments starting in them.

        ``data`` holds the samples from ``start`` of the channels of ``filling`` (one row
        each). Returns each channel's number of flat steps (those starting in the piece), for
        the whole-recording flat-line ratio.
        """
        unit = self.unit
        offset = first * unit - start
        stop = min(self.n_times, last * unit) - start
        n_channels = data.shape[0]
        n_full = (stop - offset) // unit
        full = data[:, offset : offset + n_full * unit].reshape(n_channels, n_full, unit)
        filling.units[:, first : first + n_full] = rows_of(full, workspace=workspace)
        if first + n_full < last:
            filling.units[:, first + n_full] = rows_of(data[:, offset + n_full * unit : stop], workspace=workspace)
        stepped = data[:, offset : stop + 1]
        n_steps = stepped.shape[1] - 1
        steps = np.subtract(stepped[:, 1:], stepped[:, :-1], out=scratch(workspace, "piece_steps", (n_channels, n_steps)))
        flat = np.less(np.abs(steps, out=steps), noise.FLAT_STEP_V, out=scratch(workspace, "flat", steps.shape, dtype=bool))
        flat_steps = np.count_nonzero(flat, axis=1)
        last_segment = min(last, self.n_segments)
        if last_segment > first:
            self._fill_segments(filling, data, offset, first, last_segment, workspace)
        return flat_steps

    def _fill_segments(self, filling, data, offset, first, last_segment, workspace):
        """Compute the band integrals and block sums of segments ``[first, last_segment)``."""
        unit = self.unit
        covered = data[:, offset : offset + (last_segment - first - 1) * unit + self.nperseg]
        periodograms = spectral.segment_periodograms(covered, self.sfreq, self.nperseg, workspace=workspace)
        block_of = np.arange(first, last_segment) // SEGMENTS_PER_BLOCK
        edges = np.flatnonzero(np.diff(block_of, prepend=-1))
        for channel, periodogram in enumerate(periodograms):
            filling.bands[channel, first:last_segment] = periodogram @ self._band_weights
            filling.blocks[channel, block_of[edges]] += np.add.reduceat(periodogram, edges, axis=0)

    def _fill_boundaries(self, boundaries, data, first, last):
        """Compute the differences straddling the ends of units ``[first, last)`` (``data`` from unit ``first``)."""
        ends = self.unit * np.arange(first + 1, last + 1)
        local = ends - first * self.unit
        has_step, has_after = ends < self.n_times, ends + 1 < self.n_times
        at = local[has_step]
        step = data[:, at] - data[:, at - 1]
        boundaries[:, 0, first:last][:, has_step] = step
        boundaries[:, 1, first:last][:, has_step] = step - (data[:, at - 1] - data[:, at - 2])
        at = local[has_after]
        boundaries[:, 2, first:last][:, has_after] = (data[:, at + 1] - data[:, at]) - (data[:, at] - data[:, at - 1])

    # ------------------------------------------------------------------ range queries

    def range_rows(self, pick, start, stop):
        """Return the rows whose pool is the statistics of samples ``[start, stop)`` of a channel.

        Whole units come from the cache; a partial unit at either end is read and computed
        directly, with the differences that link it to its neighbour.

        Returns
        -------
        rows : ndarray, shape (n_rows, len(FIELDS))
        """
        return self._rows(self.channel(pick), pick, start, stop)

    def _rows(self, cached, pick, start, stop):
        unit = self.unit
        first_full = -(-start // unit)
        last_full = max(first_full, self.n_units if stop >= self.n_times else stop // unit)
        head_stop = min(first_full * unit, stop)
        parts = []
        if head_stop > start:
            head = self.read([pick], start, min(stop, head_stop + 2))[0]
            parts.append(rows_of(head, head_stop - start)[np.newaxis])
        parts.append(cached.rows(first_full, last_full, stop))
        tail_start = max(last_full * unit, head_stop)
        if stop > tail_start:
            parts.append(rows_of(self.read([pick], tail_start, stop)[0])[np.newaxis])
        return np.concatenate(parts, axis=0)

    def window_pools(self, pick, first_units, n_units):
        """Return the statistics of unit-aligned windows of a channel (:meth:`ChannelSegments.window_pools`).

        Returns
        -------
        pooled : ndarray, shape (n_windows, len(FIELDS))
        """
        return self.channel(pick).window_pools(first_units, n_units)

    def window_band_powers(self, pick, first_units, n_segments):
        """Return the mean segment band integrals of windows starting at ``first_units``.

        Returns
        -------
        bands : ndarray, shape (n_windows, 6), V²
            The Welch PSD of each window (``n_segments`` segments) integrated over the six
            windowed-feature bands.
        """
        cached = self.channel(pick)
        per_batch = max(1, _GATHERED_SEGMENTS // n_segments)  # bounds the memory of the gathered integrals
        return np.concatenate([
            cached.segment_bands[first_units[first : first + per_batch, np.newaxis] + np.arange(n_segments)].sum(axis=1)
            for first in range(0, len(first_units), per_batch)
        ]) / n_segments

    def psd_sum(self, pick, start, n_segments):
        """Return the summed periodogram of ``n_segments`` segments from sample ``start``.

        ``start`` must be a multiple of :attr:`unit`, so that the segments are cached ones.
        """
        cached = self.channel(pick)
        first = start // self.unit
        last = first + n_segments
        first_block = -(-first // SEGMENTS_PER_BLOCK)
        last_block = last // SEGMENTS_PER_BLOCK
        if last_block <= first_block:
            return self._direct_segments(pick, first, last)
        total = cached.block_psd[first_block:last_block].sum(axis=0)
        total = total + self._direct_segments(pick, first, first_block * SEGMENTS_PER_BLOCK)
        return total + self._direct_segments(pick, last_block * SEGMENTS_PER_BLOCK, last)

    def _direct_segments(self, pick, first, last):
        if last <= first:
            return np.zeros(len(self.freqs))
        data = self.read([pick], first * self.unit, (last - 1) * self.unit + self.nperseg)[0]
        return spectral.segment_periodogram_sum(data, self.sfreq, self.nperseg)[0]


class _Filling:
    """The arrays of channels being built together (first axis: the channel), filled piece by piece."""

    def __init__(self, segments, n_channels, *, arrays=None):
        self.unit, self.n_times = segments.unit, segments.n_times
        self.units, self.boundaries, self.bands, self.blocks = arrays or (
            np.empty((n_channels, segments.n_units, len(FIELDS))),
            np.full((n_channels, 3, segments.n_units), np.nan),
            np.empty((n_channels, segments.n_segments, len(spectral.WINDOWED_BANDS))),
            np.zeros((n_channels, -(-segments.n_segments // SEGMENTS_PER_BLOCK), len(segments.freqs))),
        )
        self._segments = segments

    def channels(self, first, last):
        """Return the filling of channels ``[first, last)`` (views of the same arrays)."""
        arrays = (self.units[first:last], self.boundaries[first:last], self.bands[first:last], self.blocks[first:last])
        return _Filling(self._segments, last - first, arrays=arrays)

    def cached(self, index, flat_steps, saturation_ratio):
        """Return the :class:`ChannelSegments` of channel ``index``, once every piece is filled."""
        cached = ChannelSegments(self.unit, self.units[index], self.boundaries[index], self.bands[index], self.blocks[index])
        cached.saturation_ratio = saturation_ratio
        cached.flat_line_ratio = flat_steps / (self.n_times - 1)
        return cached


def _runs(index):
    """Return the runs of consecutive integers in the sorted ``index`` as ``[(first, last + 1), ...]``."""
    if len(index) == 0:
        return []
    parts = np.split(index, np.flatnonzero(np.diff(index) != 1) + 1)
    return [(int(part[0]), int(part[-1]) + 1) for part in parts]
