"""A recording's min/max pyramid: each channel's minimum and maximum over buckets of its samples, at
every scale, so that a window of any length is drawn from about as many values as it shows.

Level 0 holds, per channel, the minimum and the maximum of each run of ``BASE`` stored samples;
level ``k`` those of ``BASE * FACTOR**k`` samples, down to the level whose buckets still split the
channel in two. Each channel has its own pyramid at its stored rate (a 1 Hz respiration channel of
a Sleep-EDF night is not upsampled first), built in one pass over its samples and reduced level
from level exactly: a bucket's minimum is the minimum of the samples it covers, never an estimate.

The pyramid of a file is kept beside its statistics (:mod:`tools_app.signal.stored`: one file per
recording in ``EEGAB_STATS_DIR``, its header and arrays checked as theirs are), built by
``manage.py precompute_records`` or on first use; without a statistics directory it is built in
memory, once per opened recording.

:func:`envelope` answers one channel's window: the minimum and maximum of the samples under each
pixel, pixels bounded on bucket edges of the coarsest level whose buckets fit ``FACTOR`` times in a
pixel, so the values read are those of a few buckets a pixel, plus the partial buckets at the
window's two ends, read from the file.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from tools_app.signal import stored

BASE = 64
FACTOR = 4
FORMAT = 1
#: Channels with no more samples than this get no pyramid: any window of them is read whole.
MIN_SAMPLES = 4 * BASE
_CHUNK = BASE * 16384  # samples read at a time while building


def bucket_sizes(n_samples: int) -> list[int]:
    """The bucket length of each level of a channel of ``n_samples`` samples (none for a short channel)."""
    if n_samples <= MIN_SAMPLES:
        return []
    sizes, size = [], BASE
    while 2 * size <= n_samples:
        sizes.append(size)
        size *= FACTOR
    return sizes


def _reduce(values: np.ndarray, size: int, how) -> np.ndarray:
    """``how`` (np.minimum or np.maximum) over consecutive runs of ``size`` values; a last run may be shorter."""
    n_runs = -(-values.size // size)
    padded = np.pad(values, (0, n_runs * size - values.size), mode="edge")  # repeats a value of the last run
    return how.reduce(padded.reshape(n_runs, size), axis=1)


def build_channel(read, n_samples: int) -> dict[str, np.ndarray]:
    """The pyramid of one channel: ``{"min0", "max0", "min1", ...}``, from ``read(start, stop)`` (1-D samples)."""
    sizes = bucket_sizes(n_samples)
    if not sizes:
        return {}
    lows, highs = [], []
    for begin in range(0, n_samples, _CHUNK):
        values = np.asarray(read(begin, min(begin + _CHUNK, n_samples)), dtype=np.float64)
        lows.append(_reduce(values, BASE, np.minimum))
        highs.append(_reduce(values, BASE, np.maximum))
    arrays = {"min0": np.concatenate(lows), "max0": np.concatenate(highs)}
    for level in range(1, len(sizes)):
        arrays[f"min{level}"] = _reduce(arrays[f"min{level - 1}"], FACTOR, np.minimum)
        arrays[f"max{level}"] = _reduce(arrays[f"max{level - 1}"], FACTOR, np.maximum)
    return arrays


def _shapes(n_samples: int) -> dict[str, tuple[int]]:
    shapes = {}
    for level, size in enumerate(bucket_sizes(n_samples)):
        shapes[f"min{level}"] = shapes[f"max{level}"] = (-(-n_samples // size),)
    return dict(sorted(shapes.items(), key=lambda item: (int(item[0][3:]), item[0])))


class Pyramid:
    """The min/max pyramid of every channel of one recording (kept in a file, or in memory)."""

    def __init__(self, recording):
        self.recording = recording
        self.lengths = recording.stored_lengths
        self._arrays: list[dict[str, np.ndarray]] | None = None
        self._mapped = None
        self._saved = False  # built here and written to its file
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ storage

    def _store(self):
        directory = stored.stats_dir() if self.recording.identity is not None else None
        if directory is None:
            return None
        geometry = {
            "kind": "minmax-pyramid", "version": FORMAT, "base": BASE, "factor": FACTOR,
            "n_channels": len(self.lengths), "lengths": self.lengths, "rates": self.recording.stored_rates,
        }
        return stored.StatisticsFile(directory, self.recording.identity(), geometry)

    def _channel_shapes(self) -> list[dict]:
        return [_shapes(length) for length in self.lengths]

    def _build(self) -> list[dict[str, np.ndarray]]:
        recording = self.recording
        return [build_channel(lambda start, stop, pick=pick: recording.read_stored(pick, start, stop), length)
                for pick, length in enumerate(self.lengths)]

    def prepare(self) -> str:
        """Map the kept pyramid, or build it (and keep it where a statistics directory is set).

        Returns ``"kept"``, ``"computed"`` (built and written) or ``"memory"`` (built, not written).
        """
        with self._lock:
            if self._mapped is not None or self._saved:
                return "kept"
            if self._arrays is not None:
                return "memory"
            store = self._store()
            if store is not None:
                self._mapped = store.load(self._channel_shapes())
                if self._mapped is not None:
                    return "kept"
                try:
                    with store.exclusive():  # another process may be writing it: wait, then map it
                        self._mapped = store.load(self._channel_shapes())
                        if self._mapped is not None:
                            return "kept"
                        arrays = self._build()
                        store.save([{"arrays": [channel[name] for name in shapes], "scalars": {}}
                                    for channel, shapes in zip(arrays, self._channel_shapes())])
                        self._arrays, self._saved = arrays, True  # this process keeps what it built
                        return "computed"
                except OSError as error:  # a read-only or full directory: kept in memory only
                    stored.logger.warning("record pyramid could not be stored (%s); kept in memory", error)
            self._arrays = self._build()
            return "memory"

    def file_exists(self) -> bool:
        """Whether this recording's pyramid file is there and passes its header checks."""
        store = self._store()
        return store is not None and store.load(self._channel_shapes()) is not None

    def level(self, pick: int, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Channel ``pick``'s bucket minima and maxima at ``level`` (read-only arrays).

        Raises :class:`tools_app.signal.stored.StoreError` when a kept array fails its CRC-32 (the
        file is then deleted: the next use builds it again).
        """
        self.prepare()
        if self._mapped is None:
            channel = self._arrays[pick]
            return channel[f"min{level}"], channel[f"max{level}"]
        try:
            return self._mapped.array(pick, f"min{level}"), self._mapped.array(pick, f"max{level}")
        except stored.StoreError:
            with self._lock:
                store, self._mapped = self._store(), None
            if store is not None:
                store.discard()
            raise


_pyramids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_pyramids_lock = threading.Lock()


def pyramid_of(recording) -> Pyramid:
    """The pyramid of an opened recording (one per recording object; prepared on first use)."""
    with _pyramids_lock:
        pyramid = _pyramids.get(recording)
        if pyramid is None:
            pyramid = _pyramids[recording] = Pyramid(recording)
        return pyramid


@dataclass(frozen=True)
class Envelope:
    """One channel's window as pixels: ``starts[i]`` the first stored sample of pixel ``i``, ``lows[i]`` and
    ``highs[i]`` the minimum and maximum of its samples ``starts[i]:starts[i + 1]`` (the last up to ``stop``)."""

    starts: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    stop: int
    level: int | None  # the pyramid level read; None when the samples were read from the file


def pixel_edges(start: int, stop: int, n_pixels: int, bucket: int = 1) -> np.ndarray:
    """``n_pixels + 1`` sample edges splitting ``start:stop`` evenly, the inner ones on multiples of ``bucket``.

    ``stop - start`` must be at least ``n_pixels * bucket``, so that every pixel keeps a sample.
    """
    n = stop - start
    edges = start + np.arange(n_pixels + 1, dtype=np.int64) * n // n_pixels
    if bucket > 1:
        edges = np.round(edges / bucket).astype(np.int64) * bucket
    edges[0], edges[-1] = start, stop
    return edges


def envelope(recording, pick: int, start: int, stop: int, n_pixels: int, *, pyramid: Pyramid | None = None) -> Envelope:
    """The minimum and maximum of channel ``pick``'s stored samples under each of ``n_pixels`` pixels.

    ``0 <= start < stop <= stored_lengths[pick]`` and ``1 <= n_pixels <= stop - start``. The pixels
    cover ``start:stop`` exactly; where they hold at least ``FACTOR * BASE`` samples each, they are read
    from the pyramid level with the longest buckets that fit ``FACTOR`` times in a pixel (and the
    partial buckets at the two ends from the file), otherwise from the file's samples.
    """
    n = stop - start
    if not 1 <= n_pixels <= n:
        raise ValueError(f"n_pixels must be between 1 and the {n} samples of the window, not {n_pixels}.")
    sizes = bucket_sizes(recording.stored_lengths[pick])
    # Levels whose buckets fit FACTOR times in a pixel: pixels then differ by a quarter bucket at most.
    fitting = [level for level, size in enumerate(sizes) if size * FACTOR * n_pixels <= n]
    if not fitting:
        edges = pixel_edges(start, stop, n_pixels)
        values = recording.read_stored(pick, start, stop)
        starts = edges[:-1] - start
        return Envelope(edges[:-1], np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts), stop, None)
    level = fitting[-1]
    size = sizes[level]
    pyramid = pyramid or pyramid_of(recording)
    lows, highs = pyramid.level(pick, level)
    edges = pixel_edges(start, stop, n_pixels, size)
    first, last = -(-start // size), stop // size  # the whole buckets inside the window
    parts = []  # (first sample, minima, maxima) of the window's pieces, in order
    if start < first * size:  # the partial bucket at the start, from the file
        head = recording.read_stored(pick, start, min(first * size, stop))
        parts.append(([start], [head.min()], [head.max()]))
    if first < last:
        parts.append((np.arange(first, last, dtype=np.int64) * size, lows[first:last], highs[first:last]))
    if max(last, first) * size < stop:  # the partial bucket at the end
        begin = max(last * size, start)
        tail = recording.read_stored(pick, begin, stop)
        parts.append(([begin], [tail.min()], [tail.max()]))
    element_starts = np.concatenate([np.asarray(starts, dtype=np.int64) for starts, _, _ in parts])
    element_lows = np.concatenate([np.asarray(part, dtype=np.float64) for _, part, _ in parts])
    element_highs = np.concatenate([np.asarray(part, dtype=np.float64) for _, _, part in parts])
    indices = np.searchsorted(element_starts, edges[:-1], side="left")
    return Envelope(edges[:-1], np.minimum.reduceat(element_lows, indices),
                    np.maximum.reduceat(element_highs, indices), stop, level)
