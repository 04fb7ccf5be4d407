"""Opened EEG recordings for the tools: one interface over every file format of the benchmark.

``open_recording(path, metadata=...)`` gives a :class:`Recording` whose channel names, types, sampling rate,
filter settings and ``get_data`` values are those of the MNE raw object the official implementation
(``528why/EEGAgentBenchmark``, ``tools/implementations/_data_utils.py``) loads for the same file:

- ``.edf``: :mod:`tools_app.edf`, memory-mapped, equal to ``mne.io.read_raw_edf(path, preload=True)``;
- ``.txt`` (Bonn): every line of the file, µV × 1e-6; ``sampling_rate`` from the metadata (173.61 Hz by
  default); the channel is named ``metadata['channel_names'][0]`` or ``EEG``;
- ``.npy`` (EEGdenoiseNet): µV × 1e-6, a 1-D array is one channel; ``sampling_rate`` from the metadata
  (256 Hz by default); ``metadata['channel_names']`` when their number matches the channels, otherwise
  ``EEG`` (one channel) or ``EEG1``, ``EEG2``, ...;
- ``.set`` (EEGLAB), ``.fif``/``.fif.gz`` and ``.bdf``: read by MNE itself.

Files without a header are typed ``eeg`` with MNE's defaults (no filters: 0 Hz to Nyquist). Each channel's
``units`` say what its values are in: volts for a voltage (every channel of a header-less file), or the file's
own unit for any other quantity (an EDF file's temperature in ``DegC``). Error messages never contain the path:
directory names can carry labels.

Like the official loader, opened recordings are cached for the whole process; the official keeps the last 4
opened, ours the last 64 used, keyed on the resolved path, the file's size and modification time, and, for
header-less formats, the metadata that shapes them. An evicted recording costs only a new opening: the
statistics of long ones are kept on disk (:mod:`tools_app.signal.stored`) and mapped again.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from tools_app.edf import EdfError, EdfRecording
from tools_app.signal.stored import file_identity

CACHE_SIZE = 64
BONN_DEFAULT_SFREQ = 173.61
NPY_DEFAULT_SFREQ = 256.0
MICROVOLT = 1e-6


class RecordingError(Exception):
    """A recording that cannot be opened: missing, unreadable or of an unsupported format.

    The message never contains the file's path or directory names.
    """


class Recording:
    """One opened recording: MNE's view of its channels and a reader of its samples.

    Parameters
    ----------
    read : callable
        ``read(picks, start, stop)`` with ``picks`` a list of channel indices and ``0 <= start <= stop <=
        n_times``, returning an ndarray of shape (len(picks), stop - start), float64, each channel in its unit.
    units : sequence of str, optional
        The unit of each channel's values: ``"V"`` for a voltage, else the file's own unit (``""`` where it
        gives none). Every channel in volts by default.

    Attributes
    ----------
    sfreq : float
        Sampling rate in Hz (for EDF files with mixed rates, the highest one).
    n_times : int
        Number of samples per channel.
    highpass, lowpass : float
        Filter settings in Hz, as ``raw.info`` gives them.
    custom_ref_applied : int
        ``raw.info['custom_ref_applied']`` as a plain int (0: no custom reference).
    subject_info : dict or None
        ``raw.info['subject_info']`` as a plain dict (age and sex are usually absent).
    whole_read_channels : frozenset of int
        Channels that cost less to read whole than piece by piece (an EDF channel upsampled
        from a lower rate: each partial read evaluates its interpolation).
    writes_into : bool
        Whether ``read`` takes a fourth argument ``out``, the array to write the samples into.
    identity : callable or None
        ``identity()`` gives what identifies the file's content (:func:`tools_app.signal.stored.file_identity`),
        under which its statistics are kept; None for a recording that is not a file.
    """

    def __init__(
        self,
        *,
        sfreq,
        ch_names,
        ch_types,
        n_times,
        read,
        highpass=0.0,
        lowpass=None,
        custom_ref_applied=0,
        subject_info=None,
        bads=(),
        units=None,
        whole_read_channels=(),
        writes_into=False,
        stored_rates=None,
        stored_lengths=None,
        read_stored=None,
    ):
        if len(ch_names) != len(ch_types):
            raise ValueError("ch_names and ch_types must have the same length.")
        units = ["V"] * len(ch_names) if units is None else [str(unit) for unit in units]
        if len(units) != len(ch_names):
            raise ValueError("units must give one unit per channel.")
        self.sfreq = float(sfreq)
        self._ch_names = tuple(ch_names)
        self._ch_types = tuple(ch_types)
        self._units = tuple(units)
        self._index = {name: i for i, name in enumerate(self._ch_names)}
        self.n_times = int(n_times)
        self._read = read
        self.highpass = float(highpass)
        self.lowpass = self.sfreq / 2.0 if lowpass is None else float(lowpass)
        self.custom_ref_applied = int(custom_ref_applied)
        self.subject_info = None if subject_info is None else dict(subject_info)
        self._bads = tuple(bads)
        self.whole_read_channels = frozenset(whole_read_channels)
        self._writes_into = bool(writes_into)
        n_channels = len(self._ch_names)
        self._stored_rates = tuple(float(rate) for rate in (stored_rates or [self.sfreq] * n_channels))
        self._stored_lengths = tuple(int(length) for length in (stored_lengths or [self.n_times] * n_channels))
        if len(self._stored_rates) != n_channels or len(self._stored_lengths) != n_channels:
            raise ValueError("stored_rates and stored_lengths must give one value per channel.")
        self._read_stored = read_stored
        # What identifies the file's content (tools_app.signal.stored.file_identity), for its kept
        # statistics; open_recording sets it, a recording over an array has none.
        self.identity = None
        # When the recording started, where its file says (EDF); None otherwise.
        self.start_time = None

    def __repr__(self):
        return (
            f"<Recording | {len(self._ch_names)} channels, {self.n_times} samples at {self.sfreq:g} Hz>"
        )

    @property
    def ch_names(self) -> list[str]:
        """Channel names, as MNE's reader names them (a fresh list)."""
        return list(self._ch_names)

    @property
    def ch_types(self) -> list[str]:
        """Channel types, as MNE types them (a fresh list)."""
        return list(self._ch_types)

    @property
    def units(self) -> list[str]:
        """The unit of each channel's values (a fresh list): ``"V"`` for a voltage, else the file's own unit.

        The tools take every value for volts, as the official ones do (MNE types every EDF channel ``eeg``);
        only a plot of the samples labels each channel with its own unit.
        """
        return list(self._units)

    @property
    def bads(self) -> list[str]:
        """Channels the file marks as bad (``info['bads']``)."""
        return list(self._bads)

    @property
    def eeg_picks(self) -> list[int]:
        """Indices of the channels typed ``eeg``, bad ones included (``pick_types(eeg=True, exclude=[])``)."""
        return [i for i, kind in enumerate(self._ch_types) if kind == "eeg"]

    @property
    def times_last(self) -> float:
        """Time of the last sample in s, ``(n_times - 1) / sfreq``: what ``raw.times[-1]`` gives."""
        return (self.n_times - 1) / self.sfreq

    duration_sec = times_last

    def get_data(self, picks=None, start=0, stop=None) -> np.ndarray:
        """Samples of some channels, each in its unit (volts for a voltage), as ``raw.get_data(picks, start, stop)``.

        Parameters
        ----------
        picks : sequence of int or str | None
            Channel indices or names (repeats allowed); ``None`` means every channel.
        start : int
            First sample; negative values count as 0.
        stop : int | None
            One past the last sample; ``None`` or values past the end mean ``n_times``.

        Returns
        -------
        data : ndarray, shape (len(picks), max(stop - start, 0)), float64, in :attr:`units`
        """
        indices = self._pick_indices(picks)
        start = max(int(start), 0)
        stop = self.n_times if stop is None else min(int(stop), self.n_times)
        stop = max(stop, start)
        if not indices:
            return np.empty((0, stop - start))
        return self._read(indices, start, stop)

    def read_into(self, picks, start, stop, out) -> np.ndarray:
        """Samples ``start:stop`` of channel indices ``picks`` (``0 <= start <= stop <= n_times``), in :attr:`units`.

        Written into ``out`` (float64, shape ``(len(picks), stop - start)``) where the reader
        supports it, so that a long pass reuses one buffer; use the returned array, which is
        ``out`` or a fresh one with the same values.
        """
        if self._writes_into:
            return self._read(list(picks), start, stop, out)
        return self._read(list(picks), start, stop)

    @property
    def stored_rates(self) -> list[float]:
        """Each channel's sampling rate as the file stores it (an EDF channel MNE upsamples keeps its own)."""
        return list(self._stored_rates)

    @property
    def stored_lengths(self) -> list[int]:
        """Each channel's number of samples as the file stores it."""
        return list(self._stored_lengths)

    def read_stored(self, pick: int, start: int, stop: int) -> np.ndarray:
        """Samples ``start:stop`` of channel index ``pick`` at its stored rate, in its unit (1-D float64).

        ``0 <= start <= stop <= stored_lengths[pick]``. A channel stored at the recording's rate reads
        as :meth:`get_data` reads it.
        """
        if self._read_stored is not None:
            return self._read_stored(pick, start, stop)
        return self._read([pick], start, stop)[0]

    def _pick_indices(self, picks) -> list[int]:
        if picks is None:
            return list(range(len(self._ch_names)))
        if isinstance(picks, str | int | np.integer):
            picks = [picks]
        indices = []
        for pick in picks:
            if isinstance(pick, str):
                if pick not in self._index:
                    raise ValueError(f"No channel named {pick!r} in this recording.")
                indices.append(self._index[pick])
            elif isinstance(pick, int | np.integer) and 0 <= pick < len(self._ch_names):
                indices.append(int(pick))
            else:
                raise ValueError(
                    f"Channel picks must be names or indices in [0, {len(self._ch_names)}); got {pick!r}."
                )
        return indices


def _from_array(data: np.ndarray, sfreq: float, ch_names: list[str]) -> Recording:
    return Recording(
        sfreq=sfreq,
        ch_names=ch_names,
        ch_types=["eeg"] * len(ch_names),
        n_times=data.shape[1],
        read=lambda picks, start, stop: data[picks, start:stop],
    )


def _sampling_rate(metadata: dict, default: float) -> float:
    sfreq = float(metadata.get("sampling_rate", default))
    if not np.isfinite(sfreq) or sfreq <= 0:
        raise ValueError("The metadata's sampling_rate must be a positive number.")
    return sfreq


def _open_bonn_text(path: Path, metadata: dict) -> Recording:
    data = np.ravel(np.loadtxt(path, dtype=float))[np.newaxis, :] * MICROVOLT
    names = metadata.get("channel_names")
    return _from_array(data, _sampling_rate(metadata, BONN_DEFAULT_SFREQ), [names[0] if names else "EEG"])


def _open_npy(path: Path, metadata: dict) -> Recording:
    data = np.load(path, allow_pickle=False)
    if data.ndim == 1:
        data = data[np.newaxis, :]
    if data.ndim != 2:
        raise ValueError("A .npy recording must be a 1-D or 2-D (channels, samples) array.")
    n_channels = data.shape[0]
    names = metadata.get("channel_names")
    if not names or len(names) != n_channels:
        names = ["EEG"] if n_channels == 1 else [f"EEG{i + 1}" for i in range(n_channels)]
    if not all(isinstance(name, str) for name in names):
        raise ValueError("The metadata's channel_names must be strings.")
    sfreq = _sampling_rate(metadata, NPY_DEFAULT_SFREQ)
    return _from_array(np.asarray(data, dtype=float) * MICROVOLT, sfreq, list(names))


def _open_edf(path: Path, metadata: dict) -> Recording:
    edf = EdfRecording(path)
    recording = Recording(
        sfreq=edf.sfreq,
        ch_names=edf.ch_names,
        ch_types=edf.ch_types,
        units=edf.units,
        n_times=edf.n_times,
        read=edf.read,
        highpass=edf.highpass,
        lowpass=edf.lowpass,
        subject_info=edf.subject_info,
        whole_read_channels=edf.upsampled_channels,
        writes_into=True,
        stored_rates=edf.stored_rates,
        stored_lengths=edf.stored_lengths,
        read_stored=edf.read_stored,
    )
    recording.start_time = edf.start_time
    return recording


def _mne_units(info) -> list[str]:
    """Each channel's unit as ``info`` gives it: volts, tesla, T/m or degrees Celsius; ``""`` for any other,
    and for a stim channel's event codes (which MNE lists in volts). MNE lists every other channel of a
    ``.bdf`` file in volts too, whatever unit the file gives it; no benchmark dataset is a BDF file."""
    from mne.io.constants import FIFF

    names = {FIFF.FIFF_UNIT_V: "V", FIFF.FIFF_UNIT_T: "T", FIFF.FIFF_UNIT_T_M: "T/m", FIFF.FIFF_UNIT_CEL: "°C"}
    return ["" if channel["kind"] == FIFF.FIFFV_STIM_CH else names.get(int(channel["unit"]), "")
            for channel in info["chs"]]


def _open_with_mne(path: Path, metadata: dict) -> Recording:
    import mne

    name = path.name.lower()
    if name.endswith(".set"):
        raw = mne.io.read_raw_eeglab(path, preload=False, verbose="error")
    elif name.endswith(".bdf"):
        # MNE resamples mixed rates over the segment it reads: only preload matches the official tools.
        raw = mne.io.read_raw_bdf(path, preload=True, verbose="error")
    else:
        raw = mne.io.read_raw_fif(path, preload=False, verbose="error")
    info = raw.info
    return Recording(
        sfreq=info["sfreq"],
        ch_names=raw.ch_names,
        ch_types=raw.get_channel_types(),
        units=_mne_units(info),
        n_times=raw.n_times,
        read=lambda picks, start, stop: raw.get_data(picks=picks, start=start, stop=stop),
        highpass=info["highpass"],
        lowpass=info["lowpass"],
        custom_ref_applied=info["custom_ref_applied"],
        subject_info=info["subject_info"],
        bads=info["bads"],
    )


_OPENERS = (  # (file-name endings, opener, whether the metadata shapes the result)
    ((".edf",), _open_edf, False),
    ((".txt",), _open_bonn_text, True),
    ((".npy",), _open_npy, True),
    ((".set", ".fif", ".fif.gz", ".bdf"), _open_with_mne, False),
)
# What a damaged file makes each opener raise. Only EdfError messages are ours; numpy, scipy and MNE
# raise many kinds of exception, with messages that may quote the path.
_READ_ERRORS = {_open_edf: (EdfError, OSError)}


def _opener(path: Path):
    name = path.name.lower()
    for endings, opener, uses_metadata in _OPENERS:
        if name.endswith(endings):
            return opener, uses_metadata
    raise RecordingError("Unsupported recording format: expected .edf, .txt, .npy, .set, .fif or .bdf.")


def _metadata_key(metadata: dict) -> str:
    return repr((metadata.get("sampling_rate"), metadata.get("channel_names")))


_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


def open_recording(path, *, metadata=None) -> Recording:
    """Open a recording, or return it from the cache of the last 64 used.

    Parameters
    ----------
    path : str | Path
        The recording file.
    metadata : dict | None
        The instance's metadata; only header-less formats (``.txt``, ``.npy``) use it
        (``sampling_rate``, ``channel_names``).

    Returns
    -------
    recording : Recording

    Raises
    ------
    RecordingError
        If the file is missing, unreadable or of an unsupported format. The message has no path in it.
    """
    metadata = metadata or {}
    path = Path(path)
    opener, uses_metadata = _opener(path)
    try:
        resolved = path.resolve(strict=True)
        stat = resolved.stat()
    except OSError:
        raise RecordingError("Recording file not found.") from None
    if not resolved.is_file():
        raise RecordingError("Recording file not found.")
    key = (str(resolved), stat.st_size, stat.st_mtime_ns, _metadata_key(metadata) if uses_metadata else None)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    try:
        recording = opener(resolved, metadata)
    except _READ_ERRORS.get(opener, Exception) as exc:
        detail = str(exc) if isinstance(exc, EdfError) else f"{type(exc).__name__} while reading it."
        raise RecordingError(f"Recording file could not be read: {detail}") from None
    recording.identity = functools.cache(functools.partial(file_identity, resolved, stat))
    with _cache_lock:
        _cache[key] = recording
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return recording


def clear_recording_cache() -> None:
    """Forget every cached recording (tests, a worker's tool rehearsal; a changed file is already re-opened on its own)."""
    with _cache_lock:
        _cache.clear()


def warm_statistics(path, *, metadata=None) -> None:
    """Open a recording and map and check every array of its kept statistics now.

    What the first calls that read them would do on the way, done ahead (a tool process does it
    while the model thinks about a header tool's answer). Errors are left to those calls.
    """
    from tools_app.signal.ranges import source_for
    from tools_app.signal.segments import ChannelSegments

    segments = source_for(open_recording(path, metadata=metadata)).segments
    if segments is None:
        return
    for pick in range(segments.n_channels or 0):
        channel = segments.channel(pick)
        for name in ChannelSegments.STORED:
            getattr(channel, name)


def precompute_statistics(path, *, metadata=None) -> str:
    """Make the kept statistics of one recording ready, as its first tool call would.

    Returns ``"computed"``, ``"kept"`` (a usable file was there already), ``"short"`` (a recording
    short enough that tools read it directly: nothing to keep) or ``"memory"`` (no statistics
    directory is configured, or it cannot be written). Raises :class:`RecordingError`.
    """
    from tools_app.signal import stored
    from tools_app.signal.ranges import source_for

    recording = open_recording(path, metadata=metadata)
    segments = source_for(recording).segments
    if segments is None:
        return "short"
    if stored.stats_dir() is None:
        return "memory"
    if segments.stored_file_exists():
        return "kept"
    segments.prepare()
    return "computed" if segments.stored_file_exists() else "memory"


def precompute_pyramid(path, *, metadata=None) -> str:
    """Make the min/max pyramid of one recording ready (the record browser's), as its first page would.

    Returns ``"computed"``, ``"kept"``, ``"short"`` (no channel long enough to need one) or ``"memory"``
    (no statistics directory is configured, or it cannot be written). Raises :class:`RecordingError`.
    """
    from tools_app.signal import pyramid

    recording = open_recording(path, metadata=metadata)
    if not any(pyramid.bucket_sizes(length) for length in recording.stored_lengths):
        return "short"
    return pyramid.pyramid_of(recording).prepare()
