"""An uploaded archive of the official runner's output, read safely into a directory of its own.

A submission is one ``.zip`` or ``.tar.gz`` (told apart by their first bytes, not their names) holding
one run in the layout ``import_official_run`` reads and ``export_run`` writes: a task directory
(``runs.jsonl``, ``trajectories/<scenario>.jsonl``, ``run_status.json``, ``summary.json``,
``failed_cases.json``, ``run_config.yaml``) or the run-all layout with one such directory per task
(``T1/`` … ``T6/``) and ``benchmark_summary.json``; everything may sit in one folder at the top.

Nothing else is written: a member whose name is absolute, climbs out (``..``), holds a backslash or
a control character, is a link, a device or any other special file, is not one of those files, or
is there twice, is refused; so is an archive over ``MAX_ARCHIVE_BYTES``, over ``MAX_MEMBERS``
members, whose contents unpack to more than ``MAX_UNPACKED_BYTES`` (counted as they are unpacked,
never trusting the sizes the archive declares), or a member that unpacks to over
``MAX_RATIO`` times its compressed size (a decompression bomb). Every problem is reported with its
member's name; when there is one, nothing of the archive is kept.
"""
from __future__ import annotations

import re
import shutil
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

TASKS = ("T1", "T2", "T3", "T4", "T5", "T6")
TASK_FILES = frozenset({"runs.jsonl", "run_status.json", "summary.json", "failed_cases.json", "run_config.yaml"})
TOP_FILES = frozenset({"benchmark_summary.json"})
MAX_ARCHIVE_BYTES = 256 << 20
MAX_UNPACKED_BYTES = 2 << 30
MAX_MEMBERS = 20_000
MAX_RATIO = 200
#: Small files compress well without being bombs: the ratio is checked only past this size.
RATIO_FROM_BYTES = 1 << 20
_CHUNK = 1 << 20
_TRAJECTORY = re.compile(r"^[^./\\][^/\\]{0,249}\.jsonl$")  # a scenario id (they hold ':') and .jsonl
_ZIP_MAGIC, _GZIP_MAGIC = b"PK\x03\x04", b"\x1f\x8b"
_KINDS = {0o100000: "file", 0o040000: "directory", 0o120000: "link"}


class ArchiveError(ValueError):
    """An archive refused; ``problems`` lists each, naming its member where there is one."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class Limits:
    archive_bytes: int = MAX_ARCHIVE_BYTES
    unpacked_bytes: int = MAX_UNPACKED_BYTES
    members: int = MAX_MEMBERS
    ratio: int = MAX_RATIO


def _expected(parts: tuple[str, ...]) -> bool:
    """Whether a file at ``parts`` (below the archive's top folder, if any) belongs to a run's output."""
    if parts and parts[0] in TASKS:  # run-all: the task directories
        parts = parts[1:]
    elif len(parts) == 1 and parts[0] in TOP_FILES:
        return True
    if len(parts) == 1:
        return parts[0] in TASK_FILES
    return len(parts) == 2 and parts[0] == "trajectories" and bool(_TRAJECTORY.match(parts[1]))


def _name_problem(name: str) -> str | None:
    if not name or "\\" in name or any(ord(character) < 32 or ord(character) == 127 for character in name):
        return "a name with a backslash or a control character"
    path = PurePosixPath(name)
    if path.is_absolute() or re.match(r"^[A-Za-z]:", name):
        return "an absolute path"
    if ".." in path.parts:
        return "a path that climbs out of the archive (..)"
    return None


def _printable(name: str) -> str:
    """The name as a message shows it: quoted with escapes where it holds a control character."""
    controls = any(ord(character) < 32 or ord(character) == 127 for character in name)
    return repr(name[:200]) if controls else name[:200]


class _Reader:
    """What both formats share: the names' checks, the caps, and writing each member's bytes."""

    def __init__(self, destination: Path, limits: Limits):
        self.destination = destination
        self.limits = limits
        self.problems: list[str] = []
        self.seen: set[str] = set()
        self.unpacked = 0
        self.members = 0
        self.prefix: str | None = None  # the one top folder every member sits in, if there is one

    def admit(self, name: str, kind: str) -> PurePosixPath | None:
        """The member's path if it may be written (a file), None otherwise (a problem is recorded)."""
        self.members += 1
        if self.members > self.limits.members:
            if self.members == self.limits.members + 1:
                self.problems.append(f"more than {self.limits.members} members")
            return None
        problem = _name_problem(name)
        if problem:
            self.problems.append(f"{_printable(name)}: {problem}")
            return None
        path = PurePosixPath(name)
        if kind == "directory":
            return None
        if kind != "file":
            self.problems.append(f"{name}: a {kind}, not a file (links and special files are refused)")
            return None
        key = str(path)
        if key in self.seen:
            self.problems.append(f"{name}: in the archive twice")
            return None
        self.seen.add(key)
        return path

    def write(self, path: PurePosixPath, stream, compressed: int | None) -> None:
        target = self.destination.joinpath(*path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with open(target, "xb") as out:
            while chunk := stream.read(_CHUNK):
                written += len(chunk)
                self.unpacked += len(chunk)
                if self.unpacked > self.limits.unpacked_bytes:
                    raise ArchiveError([*self.problems, f"{path}: the archive unpacks to more than "
                                                        f"{self.limits.unpacked_bytes} bytes"])
                if compressed is not None and written > RATIO_FROM_BYTES and written > self.limits.ratio * max(compressed, 1):
                    raise ArchiveError([*self.problems, f"{path}: unpacks to over {self.limits.ratio} times its "
                                                        "compressed size (a decompression bomb)"])
                out.write(chunk)

    def check_layout(self) -> None:
        """Every file belongs to a run's output (below one top folder where the archive has one)."""
        paths = [PurePosixPath(name) for name in self.seen]
        tops = {path.parts[0] for path in paths}
        prefixed = len(tops) == 1 and all(len(path.parts) > 1 for path in paths) and not tops & {*TASKS, "trajectories"}
        for path in sorted(paths):
            parts = path.parts[1:] if prefixed else path.parts
            if not _expected(parts):
                self.problems.append(f"{path}: not a file of the official runner's output")
        self.prefix = tops.pop() if prefixed else None
        if not any(path.name == "runs.jsonl" for path in paths):
            self.problems.append("no runs.jsonl: the archive holds no results")


def _read_zip(handle, reader: _Reader) -> None:
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            mode = (info.external_attr >> 16) & 0o170000
            kind = "directory" if info.is_dir() else _KINDS.get(mode, "special file") if mode else "file"
            path = reader.admit(info.filename, kind)
            if path is not None:
                with archive.open(info) as stream:
                    reader.write(path, stream, info.compress_size)


def _read_tar(handle, reader: _Reader) -> None:
    with tarfile.open(fileobj=handle, mode="r|gz") as archive:
        for member in archive:
            kind = "file" if member.isreg() else "directory" if member.isdir() else \
                "link" if member.issym() or member.islnk() else "special file"
            path = reader.admit(member.name, kind)
            if path is not None:
                stream = archive.extractfile(member)
                reader.write(path, stream, None)


def extract_archive(source, destination: Path, *, limits: Limits = Limits()) -> Path:
    """Unpack the archive ``source`` (a path or a binary file) into the empty directory ``destination``.

    Returns the directory that holds the run's output (``destination``, or its one top folder).
    Raises :class:`ArchiveError` listing every problem; ``destination`` is then emptied.
    """
    destination = Path(destination)
    destination.mkdir(parents=True, exist_ok=True)
    if any(destination.iterdir()):
        raise ValueError("The destination of an archive must be an empty directory.")
    reader = _Reader(destination, limits)
    try:
        with (open(source, "rb") if isinstance(source, str | Path) else _Borrowed(source)) as handle:
            size = handle.seek(0, 2)
            handle.seek(0)
            if size > limits.archive_bytes:
                raise ArchiveError([f"the archive is {size} bytes; at most {limits.archive_bytes} are taken"])
            magic = handle.read(4)
            handle.seek(0)
            if magic.startswith(_ZIP_MAGIC):
                _read_zip(handle, reader)
            elif magic.startswith(_GZIP_MAGIC):
                _read_tar(handle, reader)
            else:
                raise ArchiveError(["not a .zip or .tar.gz archive"])
        reader.check_layout()
        if reader.problems:
            raise ArchiveError(reader.problems)
    except ArchiveError:
        _empty(destination)
        raise
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, zlib.error) as error:
        _empty(destination)
        detail = "damaged or truncated" if not isinstance(error, OSError) else "unreadable"
        raise ArchiveError([*reader.problems, f"the archive is {detail} ({type(error).__name__})"]) from None
    except (RuntimeError, NotImplementedError) as error:  # zipfile: an encrypted member, an unknown compression
        _empty(destination)
        raise ArchiveError([*reader.problems, f"the archive cannot be unpacked: {str(error)[:200]}"]) from None
    return destination / reader.prefix if reader.prefix else destination


class _Borrowed:
    """A caller's open file, used in a ``with`` without being closed."""

    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        return False


def _empty(directory: Path) -> None:
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
