"""Where the tests find real data: the folders of ``tests/data``.

Each folder holds real files copied unchanged from a public source, with ``PROVENANCE.md`` (where they
come from, their licence) and ``SHA256SUMS`` (checked by ``tests/test_datafiles.py``). A test reads
these paths directly: a missing file is a failure, never a skip.
"""
import hashlib
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"

OFFICIAL = DATA / "official" / "benchmark"  # the official release's benchmark files (528why/EEGAgentBenchmark)
BONN = DATA / "bonn"  # segments 001-020 of the Bonn sets Z, O, N, F, S
CHBMIT = DATA / "chbmit"  # the CHB-MIT summaries, RECORDS lists and chb01's seizure annotations
SLEEP_EDFX = DATA / "sleep-edfx"  # four Sleep-EDF hypnograms and a 300-s crop of SC4001E0-PSG.edf
DS004504 = DATA / "ds004504"  # every BIDS sidecar of ds004504 (no .set)
MEDMCQA = DATA / "medmcqa"  # the MedMCQA dev split

FOLDERS = (DATA / "official", BONN, CHBMIT, SLEEP_EDFX, DS004504, MEDMCQA)


def checksums(folder: Path) -> dict[str, str]:
    """The ``SHA256SUMS`` of ``folder``: relative path -> hex digest (``sha256sum`` text format)."""
    listed = {}
    for number, line in enumerate((folder / "SHA256SUMS").read_text(encoding="ascii").splitlines(), start=1):
        digest, separator, name = line.partition("  ")
        assert separator and len(digest) == 64 and name, f"{folder.name}/SHA256SUMS line {number}: {line!r}"
        assert name not in listed, f"{folder.name}/SHA256SUMS lists {name} twice"
        listed[name] = digest
    return listed


def assert_checksums(folder: Path) -> None:
    """Every file of ``folder`` but its notes is listed in its ``SHA256SUMS``, with the digest it has."""
    listed = checksums(folder)
    notes = {"SHA256SUMS", "PROVENANCE.md", "CITATION.md"}
    present = {path.relative_to(folder).as_posix() for path in folder.rglob("*")
               if path.is_file() and path.relative_to(folder).as_posix() not in notes}
    assert present == set(listed), (
        f"{folder.name}: not listed {sorted(present - set(listed))}, listed but absent {sorted(set(listed) - present)}")
    for name, digest in listed.items():
        actual = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert actual == digest, f"{folder.name}/{name}: SHA-256 {actual}, SHA256SUMS says {digest}"
