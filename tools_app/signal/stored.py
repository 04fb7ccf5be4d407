"""Record statistics kept on disk: computed once per file, then mapped read-only by every process.

The per-segment statistics of a long recording (:mod:`tools_app.signal.segments`) take seconds
to compute for a whole night. The first process that needs them computes them and writes one
file into the statistics directory (``EEGAB_STATS_DIR``); every later process, on any machine
that shares the directory, maps that file read-only, so a fresh worker answers its first tool
call in milliseconds and memory is what the tools touch of the mapping.

The file is named by a key: the SHA-256 of the recording file's identity (its size,
modification time and a digest of its first and last 64 KiB) and of everything that shapes
the statistics (this format's version, the sampling rate, the sample and channel counts, the
Welch segment length and the feature bands). A file that changes gets a new key, so its old
statistics are never read for it.

Layout: the 8-byte magic, the header's length (8 bytes, little-endian), a JSON header padded
to a multiple of 64 bytes, then for each channel its float64 arrays one after another (units,
the three boundary differences, pooled unit blocks, segment band integrals, block PSD sums; or
the levels of a recording's min/max pyramid, :mod:`tools_app.signal.pyramid`, whose channels
differ in length).
The header gives every channel's offset, each array's CRC-32 and the channel's scalar figures.
A file that fails a check is deleted and rebuilt, never used: its magic, header, geometry and
length when it is mapped, an array's CRC-32 the first time a process uses that array (so a
call reads only what it needs of the file). An array that fails its check raises
:class:`StoreError` in the middle of a tool call; the call is then run again
(``tools_app.registry.call_tool``), on statistics rebuilt.

Once a process has checked every array of a file, it writes a marker beside it
(``<key>.verified``) with the file's inode, size, modification and change times, and a later
process that finds the marker matching the file skips the CRC-32s (a whole night's take
milliseconds of every worker's first tool calls): nothing has written to the file since, as
any write moves its change time on. The kernel keeps those times to a clock tick, so a marker
is written only once the file's last change is at least ``MARKER_AFTER_SEC`` old; a write
after it cannot share the change time the marker holds.

Writers take an exclusive ``flock`` on ``<key>.lock`` and rename a finished temporary file
into place, so two processes never compute the same file at once and a reader never sees
half of one.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import struct
import threading
import time
import zlib
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1
MAGIC = b"EEGABST1"
MARKER_AFTER_SEC = 1.0
_DIGEST_BYTES = 64 * 1024
_ALIGN = 64

logger = logging.getLogger(__name__)


class StoreError(Exception):
    """A statistics file that cannot be used: missing, damaged, or of another geometry."""


_directory: Path | None = None
_configured = False


def configure(directory) -> None:
    """Set the statistics directory for this process (``EEGAB_STATS_DIR``; empty or None: memory only)."""
    global _directory, _configured
    _directory, _configured = (Path(directory) if directory else None), True


def stats_dir() -> Path | None:
    """The statistics directory: as configured (tools_app's app config does), else ``$EEGAB_STATS_DIR``."""
    if _configured:
        return _directory
    value = os.environ.get("EEGAB_STATS_DIR", "")
    return Path(value) if value else None


def file_identity(path, stat) -> dict:
    """What identifies a recording file's content: size, modification time, head and tail digest."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(_DIGEST_BYTES))
        if stat.st_size > 2 * _DIGEST_BYTES:
            handle.seek(-_DIGEST_BYTES, os.SEEK_END)
        digest.update(handle.read(_DIGEST_BYTES))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "digest": digest.hexdigest()}


class StatisticsFile:
    """The statistics file of one recording's geometry, in ``directory``.

    Parameters
    ----------
    directory : Path
        The statistics directory.
    identity : dict
        :func:`file_identity` of the recording file.
    geometry : dict
        What shapes the statistics (JSON-serialisable): the same values give the same file.
    """

    def __init__(self, directory: Path, identity: dict, geometry: dict):
        self.geometry = {"format": FORMAT_VERSION, **geometry}
        text = json.dumps({"identity": identity, "geometry": self.geometry}, sort_keys=True)
        self.key = hashlib.sha256(text.encode()).hexdigest()
        self.path = Path(directory) / self.key[:2] / f"{self.key}.stats"

    # ------------------------------------------------------------------ reading

    def load(self, shapes) -> MappedStatistics | None:
        """The mapped statistics, or None when there is no usable file (a damaged one is deleted).

        ``shapes`` maps each array's name to its shape, in file order: one dict for every channel, or a
        list of one dict per channel where the channels' arrays differ in length.
        """
        try:
            return MappedStatistics(self.path, self.geometry, shapes)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:  # there, but not readable here: compute them
            logger.warning("record statistics %s cannot be read (%s)", self.path.name, error)
            return None
        except (StoreError, ValueError) as error:
            logger.warning("record statistics %s are unusable (%s); rebuilding them", self.path.name, error)
            self.discard()
            return None

    def discard(self) -> None:
        for path in (self.path, verified_marker(self.path)):
            with contextlib.suppress(OSError):
                path.unlink()

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def exclusive(self):
        """Hold the file's write lock (other processes that would build it wait here)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def save(self, channels: list[dict]) -> None:
        """Write the statistics of every channel, atomically.

        ``channels``: per channel, ``{"arrays": [ndarray, ...] (file order), "scalars": dict}``.
        """
        entries, offset = [], 0
        for channel in channels:
            arrays = [np.ascontiguousarray(array, dtype="<f8") for array in channel["arrays"]]
            length = sum(array.nbytes for array in arrays)
            crcs = [zlib.crc32(array) for array in arrays]
            entries.append({"offset": offset, "bytes": length, "crc32": crcs, "scalars": channel["scalars"]})
            channel["_contiguous"] = arrays
            offset += length
        header = json.dumps({"geometry": self.geometry, "channels": entries}, sort_keys=True).encode()
        header += b" " * (-(len(MAGIC) + 8 + len(header)) % _ALIGN)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(temporary, "wb") as handle:
                handle.write(MAGIC + struct.pack("<Q", len(header)) + header)
                for channel in channels:
                    for array in channel.pop("_contiguous"):
                        handle.write(memoryview(array).cast("B"))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()


def verified_marker(path: Path) -> Path:
    """Where the marker that a statistics file's arrays all passed their CRC-32 lies."""
    return path.with_suffix(".verified")


def file_stamp(stat) -> list[int]:
    """What changes whenever a file is written or replaced: inode, size, modification and change times."""
    return [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


class MappedStatistics:
    """A statistics file mapped read-only, its header checked; each array is CRC-checked on first use.

    Unless its marker says every array passed since the file last changed: then none is checked.
    """

    def __init__(self, path: Path, geometry: dict, shapes: dict):
        # Header, stamp and data all come from the one file opened here, even if another process
        # renames a rebuilt file into ``path`` meanwhile: a marker matching this file's stamp then
        # vouches for the arrays mapped, never for another file's.
        with open(path, "rb") as handle:
            header, data_start, stat = self._read_header(handle)
            self._check_layout(header, geometry, shapes, data_start, stat.st_size)
            self._data = np.memmap(handle, dtype="<f8", mode="r", offset=data_start) if self.channels else None
        self.path = path
        self._stamp = file_stamp(stat)
        self._lock = threading.Lock()
        verified = self._read_marker() == self._stamp
        self._unchecked = set() if verified else {
            (index, name) for index in range(len(self.channels)) for name in self._shapes[index]
        }

    @staticmethod
    def _read_header(handle) -> tuple[dict, int, os.stat_result]:
        """The header, where the data starts, and the file's stat."""
        head = handle.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
            raise StoreError("not a statistics file")
        (header_length,) = struct.unpack("<Q", head[len(MAGIC):])
        if header_length > 1 << 26:
            raise StoreError("header too long")
        try:
            header = json.loads(handle.read(header_length))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise StoreError("damaged header") from None
        return header, len(MAGIC) + 8 + header_length, os.fstat(handle.fileno())

    def _check_layout(self, header, geometry: dict, shapes, data_start: int, size: int) -> None:
        if not isinstance(header, dict) or header.get("geometry") != geometry:
            raise StoreError("another geometry")
        self.channels = header.get("channels")
        if not isinstance(self.channels, list) or len(self.channels) != geometry["n_channels"]:
            raise StoreError("wrong channel count")
        # One dict of shapes for every channel, or one per channel (channels of different lengths).
        self._shapes = [shapes] * len(self.channels) if isinstance(shapes, dict) else list(shapes)
        if len(self._shapes) != len(self.channels):
            raise StoreError("wrong channel count")
        self._counts = [[int(np.prod(shape)) for shape in channel.values()] for channel in self._shapes]
        self._starts = [dict(zip(channel, np.cumsum([0, *counts[:-1]]).tolist()))
                        for channel, counts in zip(self._shapes, self._counts)]
        offset = 0
        for index, entry in enumerate(self.channels):
            length = sum(self._counts[index]) * 8
            if (not isinstance(entry, dict) or entry.get("bytes") != length or entry.get("offset") != offset
                    or not isinstance(entry.get("crc32"), list) or len(entry["crc32"]) != len(self._shapes[index])
                    or not isinstance(entry.get("scalars"), dict)):
                raise StoreError("wrong channel layout")
            offset += length
        if size != data_start + offset:
            raise StoreError("wrong length")

    @property
    def verified(self) -> bool:
        """Whether every array has passed its CRC-32 (here, or in a process that left the marker)."""
        return not self._unchecked

    def _read_marker(self):
        try:
            return json.loads(verified_marker(self.path).read_text())
        except (OSError, ValueError):  # none, or not ours to read: the arrays are checked
            return None

    def _write_marker(self) -> None:
        """Record that every array passed, for later processes; left unwritten while the file is newer than a tick."""
        if time.time_ns() - self._stamp[3] < MARKER_AFTER_SEC * 1e9:
            return
        marker = verified_marker(self.path)
        temporary = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(self._stamp))
            os.replace(temporary, marker)
        except OSError:  # a read-only directory: every process checks the arrays itself
            with contextlib.suppress(OSError):
                temporary.unlink()

    def scalars(self, index: int) -> dict:
        return self.channels[index]["scalars"]

    def array(self, index: int, name: str) -> np.ndarray:
        """Channel ``index``'s array ``name`` (a read-only view); StoreError if its CRC-32 fails."""
        shapes = self._shapes[index]
        position = list(shapes).index(name)
        first = self.channels[index]["offset"] // 8 + self._starts[index][name]
        view = self._data[first : first + self._counts[index][position]]
        if (index, name) in self._unchecked:
            if zlib.crc32(view) != self.channels[index]["crc32"][position]:
                raise StoreError(f"channel {index}'s {name} fails its CRC-32")
            with self._lock:  # two threads may check one array at once: only the one that empties the set writes
                emptied = (index, name) in self._unchecked and len(self._unchecked) == 1
                self._unchecked.discard((index, name))
            if emptied:
                self._write_marker()
        return np.asarray(view).reshape(shapes[name])
