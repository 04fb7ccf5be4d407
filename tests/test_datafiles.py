"""The real data in ``tests/data``: each folder documented and checksummed, and nothing read from outside.

A user's fresh clone has nothing beside it, so the tests read their real files from the repository only,
and no file of the repository names a path of the machine it was written on.
"""
import subprocess
from pathlib import Path

import pytest

from tests.datafiles import DATA, FOLDERS, assert_checksums

REPO = Path(__file__).resolve().parents[1]
# Built from pieces, so that this file does not match what it looks for.
# The last four are where checkouts live on the machines this project was written on.
OUTSIDE = ("../" + "shared", 'parent / "' + 'shared"', "/" + "work/", "/" + "root/", "/" + "home/", "/" + "Users/")


def tracked_text_files() -> dict[str, str]:
    """The text of every file git tracks in the checkout (binary files left out)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    texts = {}
    for name in filter(None, listed.decode().split("\0")):
        path = REPO / name
        if not path.is_file():
            continue  # deleted in the work tree, not yet committed
        try:
            texts[name] = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return texts


def test_every_data_folder_is_listed_and_documented():
    assert sorted(path.name for path in DATA.iterdir() if path.is_dir()) == sorted(folder.name for folder in FOLDERS)
    index = (DATA / "README.md").read_text(encoding="utf-8")
    assert all(f"`{folder.name}/`" in index for folder in FOLDERS)
    for folder in FOLDERS:
        provenance = (folder / "PROVENANCE.md").read_text(encoding="utf-8")
        assert "## Licen" in provenance, f"{folder.name}/PROVENANCE.md names no licence"
        assert "SHA256SUMS" in provenance, folder.name


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda folder: folder.name)
def test_every_data_file_has_the_checksum_it_was_received_with(folder):
    assert_checksums(folder)


def test_a_changed_or_unlisted_file_is_found(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"1\r\n")
    (folder / "SHA256SUMS").write_text(f"{'0' * 64}  a.txt\n", encoding="ascii")
    with pytest.raises(AssertionError, match="a.txt: SHA-256"):
        assert_checksums(folder)
    (folder / "b.txt").write_bytes(b"")
    with pytest.raises(AssertionError, match=r"not listed \['b.txt'\]"):
        assert_checksums(folder)


def test_no_file_reads_outside_the_checkout_or_names_this_machine():
    found = [f"{name}: {needle}" for name, text in tracked_text_files().items() for needle in OUTSIDE if needle in text]
    assert found == []
