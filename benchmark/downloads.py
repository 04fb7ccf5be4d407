"""Explicit downloads: the official release from the Hugging Face Hub, raw datasets from their publishers.

Nothing else in the platform touches the network. Both downloads can be interrupted and run again:

- ``download_release`` fetches the ``data/`` and ``metadata/`` folders of the Hugging Face dataset
  ``whhhy123/EEGAgentBenchmark`` with ``huggingface_hub``, file by file (complete files are skipped, so a
  second run fetches only what the first one missed), then checks every file's size against the
  Hub's listing and against the release manifest (``benchmark/manifests/files.jsonl``) if present.
  The endpoint is configurable (``endpoint=`` or ``HF_ENDPOINT``), and no stored Hugging Face token is
  ever sent: the dataset is public, and an endpoint given on the command line should not receive one.
- ``download_dataset`` fetches one raw public dataset from its publisher (table ``DATASETS``), file by
  file over HTTP. A file is written to ``<name>.part`` first and resumed with a ``Range`` request; it
  gets its final name only once its size (and checksum, where the publisher lists one) is verified.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.client
import json
import os
import shutil
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ElementTree
import zipfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlencode

HF_REPO_ID = "whhhy123/EEGAgentBenchmark"
HF_RELEASE_PATTERNS = ("data/*", "metadata/*")
RELEASE_FILE_MANIFEST = "benchmark/manifests/files.jsonl"
USER_AGENT = "eegagentbench-download/1"
RETRY_BACKOFF_SEC = 1.0  # doubled after each failed attempt, at most 30 s
_CHUNK_BYTES = 1 << 20


class DownloadError(Exception):
    """A download that did not complete or did not verify; ``problems`` lists what went wrong."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# ── the official release, from the Hugging Face Hub ─────────────────────────────────────────

@dataclass
class ReleaseDownload:
    """What ``download_release`` fetched and checked."""

    root: Path
    files: int
    fetched: int
    manifest: Path | None


def _manifest_sizes(path: Path) -> dict[str, int]:
    sizes = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            sizes[entry["data_path"]] = int(entry["size_bytes"])
        except (ValueError, KeyError, TypeError) as exc:
            raise DownloadError([f"{path}:{number}: not a manifest line ({exc})"]) from None
    return sizes


def download_release(
    *, to: str | Path, endpoint: str | None = None, repo_id: str = HF_REPO_ID, revision: str = "main",
    manifest: str | Path | None = None, max_workers: int = 8,
) -> ReleaseDownload:
    """Fetch the official release's ``data/`` and ``metadata/`` into ``to`` and verify the sizes.

    The Hub's listing decides what to fetch; files already complete are skipped and every file is
    fetched on its own, so one failure does not stop the others and the next run fetches only the rest.

    Parameters
    ----------
    to : str or Path
        The release root; usually a checkout of the official repository, which holds ``benchmark/``.
    endpoint : str, optional
        The Hub's base URL; default ``HF_ENDPOINT`` or huggingface.co.
    manifest : str or Path, optional
        The release manifest to check sizes against; default ``<to>/benchmark/manifests/files.jsonl``
        when it exists.

    Raises
    ------
    DownloadError
        If the Hub cannot be reached, files cannot be fetched, or a size differs from the Hub's listing
        or the manifest. Files already complete stay; run again to resume.
    """
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    failures = (HfHubHTTPError, LocalEntryNotFoundError, OSError, ValueError)
    root = Path(to).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    hub = dict(
        repo_id=repo_id, repo_type="dataset", local_dir=root, token=False,
        cache_dir=root / ".cache" / "huggingface",  # keep even the revision refs inside the release
        endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None,
    )
    try:
        plan = snapshot_download(**hub, revision=revision, allow_patterns=list(HF_RELEASE_PATTERNS), dry_run=True)
    except failures as exc:
        raise DownloadError([f"the Hub's file list is unavailable ({type(exc).__name__}: {exc})"]) from None

    problems, fetched = [], 0
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        jobs = {
            pool.submit(hf_hub_download, **hub, filename=info.filename, revision=info.commit_hash): info
            for info in plan if info.will_download
        }
        for job in as_completed(jobs):
            try:
                job.result()
                fetched += 1
            except failures as exc:
                name = jobs[job].filename
                problems.append(f"{name}: not fetched ({type(exc).__name__}: {exc}); run again to resume")
    for info in plan:
        path = root / info.filename
        if path.is_file() and info.file_size is not None and path.stat().st_size != info.file_size:
            problems.append(f"{info.filename}: {path.stat().st_size} bytes, the Hub lists {info.file_size}")
    manifest_path = Path(manifest) if manifest else root / RELEASE_FILE_MANIFEST
    if manifest_path.is_file():
        for data_path, size in _manifest_sizes(manifest_path).items():
            path = root / data_path
            if not path.is_file():
                problems.append(f"{data_path}: in the manifest but not downloaded")
            elif path.stat().st_size != size:
                problems.append(f"{data_path}: {path.stat().st_size} bytes, the manifest says {size}")
    elif manifest:
        problems.append(f"{manifest_path}: manifest not found")
    if problems:
        raise DownloadError(sorted(problems))
    return ReleaseDownload(
        root=root, files=len(plan), fetched=fetched, manifest=manifest_path if manifest_path.is_file() else None
    )


# ── raw datasets, from their publishers ─────────────────────────────────────────────────────

@dataclass(frozen=True)
class RemoteFile:
    """One file to fetch: where it goes (relative to the dataset folder), its URL and what to verify."""

    path: str
    url: str
    size: int | None = None
    sha256: str | None = None
    extract_to: str | None = None  # a zip archive whose members go into this folder


def _get(url: str, *, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise DownloadError([f"{url}: {exc}"]) from None


def _physionet_files(base_url: str, timeout: float) -> list[RemoteFile]:
    """Every file of a PhysioNet project, from the project's ``SHA256SUMS.txt``."""
    files = [RemoteFile("SHA256SUMS.txt", base_url + "SHA256SUMS.txt")]
    for line in _get(base_url + "SHA256SUMS.txt", timeout=timeout).decode("utf-8").splitlines():
        digest, _, path = line.strip().partition(" ")
        path = path.strip().lstrip("*")
        if len(digest) == 64 and path:
            files.append(RemoteFile(path, base_url + quote(path), sha256=digest.lower()))
    return files


_S3_NAMESPACE = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}


def _s3_files(bucket_url: str, prefix: str, *, timeout: float) -> list[RemoteFile]:
    """Every object under ``prefix`` of a public S3 bucket (ListObjectsV2, followed page by page)."""
    files: list[RemoteFile] = []
    token = None
    while True:
        query = {"list-type": "2", "prefix": prefix, **({"continuation-token": token} if token else {})}
        page = ElementTree.fromstring(_get(f"{bucket_url}?{urlencode(query)}", timeout=timeout))
        for item in page.iterfind("s3:Contents", _S3_NAMESPACE):
            key = item.findtext("s3:Key", "", _S3_NAMESPACE)
            if key.endswith("/"):
                continue
            size = item.findtext("s3:Size", None, _S3_NAMESPACE)
            files.append(RemoteFile(key[len(prefix):], f"{bucket_url}/{quote(key)}", int(size) if size else None))
        token = page.findtext("s3:NextContinuationToken", None, _S3_NAMESPACE)
        if page.findtext("s3:IsTruncated", "false", _S3_NAMESPACE) != "true" or not token:
            return files


def _openneuro_ds004504_files(base_url: str, timeout: float) -> list[RemoteFile]:
    return _s3_files(base_url.rstrip("/"), "ds004504/", timeout=timeout)


@dataclass(frozen=True)
class Dataset:
    """A raw public dataset and how its publisher serves it."""

    description: str
    base_url: str
    list_files: Callable[[str, float], list[RemoteFile]]


def _listed(*entries: tuple[str, str, str | None]) -> Callable[[str, float], list[RemoteFile]]:
    """A fixed file list: (name under the base URL, local path, folder to extract a zip into)."""
    def files(base_url: str, timeout: float) -> list[RemoteFile]:
        return [RemoteFile(path, base_url + remote, extract_to=folder) for remote, path, folder in entries]
    return files


DATASETS: dict[str, Dataset] = {
    "chbmit": Dataset(
        "CHB-MIT Scalp EEG Database 1.0.0 (PhysioNet; ~43 GB), file list and checksums from SHA256SUMS.txt",
        "https://physionet.org/files/chbmit/1.0.0/",
        _physionet_files,
    ),
    "sleep-edfx": Dataset(
        "Sleep-EDF Database Expanded 1.0.0 (PhysioNet; ~8 GB), file list and checksums from SHA256SUMS.txt",
        "https://physionet.org/files/sleep-edfx/1.0.0/",
        _physionet_files,
    ),
    "ds004504": Dataset(
        "OpenNeuro ds004504, AD/FTD/HC resting-state EEG (~5.8 GB), listed from OpenNeuro's public S3 bucket",
        "https://s3.amazonaws.com/openneuro.org",
        _openneuro_ds004504_files,
    ),
    "bonn": Dataset(
        "Bonn epilepsy EEG (Andrzejak et al. 2001), sets Z, O, N, F, S as zip archives",
        "http://epileptologie-bonn.de/cms/upload/workgroup/lehnertz/",
        _listed(*((f"{s}.zip", f"{s}.zip", s) for s in "ZONFS")),
    ),
    "eegdenoisenet": Dataset(
        "EEGdenoiseNet epochs (EEG, EOG, EMG .npy) from the authors' GitHub repository",
        "https://raw.githubusercontent.com/ncclabsustech/EEGdenoiseNet/master/data/",
        _listed(*((f"{kind}_all_epochs.npy", f"{kind}_all_epochs.npy", None) for kind in ("EEG", "EOG", "EMG"))),
    ),
    "medmcqa": Dataset(
        "MedMCQA (train/dev/test JSON) as the authors' Google Drive archive",
        "https://drive.usercontent.google.com/",
        _listed(("download?id=15VkJdq5eyWIkfb_aoD3oS8i4tScbHYky&export=download&confirm=t", "data.zip", ".")),
    ),
}


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK_BYTES), b""):
            digest.update(block)
    return digest.hexdigest()


def _mismatch(path: Path, remote: RemoteFile, expected_size: int | None) -> str | None:
    size = path.stat().st_size
    if expected_size is not None and size != expected_size:
        return f"{remote.path}: {size} bytes, expected {expected_size}"
    if remote.sha256 and _digest(path) != remote.sha256:
        return f"{remote.path}: sha256 differs from the publisher's checksum"
    return None


def _total_size(response, offset: int) -> int | None:
    content_range = response.headers.get("Content-Range", "")
    if "/" in content_range and content_range.rsplit("/", 1)[1].isdigit():
        return int(content_range.rsplit("/", 1)[1])
    length = response.headers.get("Content-Length")
    return offset + int(length) if length and length.isdigit() else None


def fetch_file(remote: RemoteFile, dest: Path, *, retries: int = 3, timeout: float = 60.0) -> bool:
    """Download ``remote`` to ``dest``, resuming ``dest.part``; False if ``dest`` was already complete.

    Raises
    ------
    DownloadError
        When the transfer fails ``retries + 1`` times in a row (the partial file is kept for the next
        run) or the finished file does not verify (the partial file is removed).
    """
    if dest.is_file():
        if _mismatch(dest, remote, remote.size) is None:
            return False
        dest.unlink()  # a damaged earlier download: fetch it again
    part = dest.with_name(dest.name + ".part")
    part.parent.mkdir(parents=True, exist_ok=True)
    expected = remote.size
    for attempt in range(retries + 1):
        offset = part.stat().st_size if part.exists() else 0
        headers = {"User-Agent": USER_AGENT, **({"Range": f"bytes={offset}-"} if offset else {})}
        request = urllib.request.Request(remote.url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                resumed = offset > 0 and response.status == 206
                announced = _total_size(response, offset if resumed else 0)
                expected = expected if expected is not None else announced
                with part.open("ab" if resumed else "wb") as handle:
                    shutil.copyfileobj(response, handle, _CHUNK_BYTES)
            # urllib returns a short body without an error when the connection drops mid-transfer
            received = part.stat().st_size
            if announced is None or received >= announced:
                break
            failure = f"connection closed after {received} of {announced} bytes"
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and offset:  # nothing left to send: the partial file is complete
                break
            if exc.code < 500 and exc.code not in (408, 429):
                raise DownloadError([f"{remote.url}: HTTP {exc.code} {exc.reason}"]) from None
            failure = f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            failure = f"{type(exc).__name__}: {exc}"
        if attempt == retries:
            raise DownloadError([f"{remote.url}: {failure}; {part} keeps what arrived, run again to resume"])
        time.sleep(min(RETRY_BACKOFF_SEC * 2 ** attempt, 30.0))
    problem = _mismatch(part, remote, expected)
    if problem:
        part.unlink()
        raise DownloadError([problem])
    part.replace(dest)
    return True


def _extract(archive: Path, folder: Path) -> int:
    """Unpack the files of a zip archive into ``folder`` by file name (no member paths, no resource forks)."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            name = PurePosixPath(member.filename).name
            if member.is_dir() or not name or name.startswith(".") or "__MACOSX" in member.filename:
                continue
            with bundle.open(member) as source, (folder / name).open("wb") as target:
                shutil.copyfileobj(source, target, _CHUNK_BYTES)
            count += 1
    return count


@dataclass
class DatasetDownload:
    """What ``download_dataset`` fetched."""

    root: Path
    files: list[str] = field(default_factory=list)
    fetched: int = 0
    extracted: int = 0


def download_dataset(
    name: str, *, to: str | Path, base_url: str | None = None, include: Sequence[str] | None = None,
    retries: int = 3, timeout: float = 60.0,
) -> DatasetDownload:
    """Fetch the raw dataset ``name`` (a key of ``DATASETS``) into the folder ``to``.

    Parameters
    ----------
    base_url : str, optional
        Replaces the publisher's base URL (a mirror, or a local server in tests).
    include : sequence of str, optional
        Shell patterns on the files' relative paths (``chb01/*``); default every file.

    Raises
    ------
    DownloadError
        For an unknown dataset, an unreachable publisher, or files that failed; every file that did
        complete stays, so running again resumes.
    """
    if name not in DATASETS:
        raise DownloadError([f"unknown dataset {name!r}; known: {', '.join(DATASETS)}"])
    dataset = DATASETS[name]
    root = Path(to).expanduser().resolve()
    remote_files = dataset.list_files(base_url or dataset.base_url, timeout)
    if include:
        remote_files = [f for f in remote_files if any(fnmatch.fnmatchcase(f.path, p) for p in include)]
    result = DatasetDownload(root=root)
    problems = []
    for remote in remote_files:
        dest = root / remote.path
        if root not in dest.resolve().parents:
            problems.append(f"{remote.path}: outside the dataset folder, not fetched")
            continue
        try:
            result.fetched += fetch_file(remote, dest, retries=retries, timeout=timeout)
        except DownloadError as exc:
            problems += exc.problems
            continue
        result.files.append(remote.path)
        if remote.extract_to is not None:
            result.extracted += _extract(dest, root / remote.extract_to)
    if problems:
        raise DownloadError(problems)
    return result
