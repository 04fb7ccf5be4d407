"""Uploaded archives are read safely: the official runner's output is unpacked, anything else is refused with
its member's name and nothing of the archive is kept."""
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from submissions.archive import ArchiveError, Limits, extract_archive

RUN = {
    "runs.jsonl": b'{"scenario_id": "c3_a", "status": "completed", "prediction": {"classification": "normal"}}\n',
    "run_status.json": b'{"run_config": {"agent": {"temperature": 0}}}',
    "summary.json": b"{}",
    "trajectories/c3_a.jsonl": b'{"scenario_id": "c3_a", "step": 0, "event_type": "prompt"}\n',
}


def zipped(files: dict, *, links=()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)
            archive.writestr(info, target)
    return buffer.getvalue()


def tarred(files: dict, *, extra=()) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for info in extra:
            archive.addfile(info)
    return buffer.getvalue()


def refused(data: bytes, tmp_path: Path, **limits) -> list[str]:
    destination = tmp_path / "out"
    with pytest.raises(ArchiveError) as caught:
        extract_archive(io.BytesIO(data), destination, limits=Limits(**limits))
    assert list(destination.iterdir()) == []  # nothing of it is kept
    return caught.value.problems


def test_an_export_in_one_top_folder_is_unpacked_and_its_folder_returned(tmp_path):
    root = extract_archive(io.BytesIO(zipped({f"heuristic-run/{name}": data for name, data in RUN.items()})), tmp_path / "out")
    assert root == tmp_path / "out" / "heuristic-run"
    assert (root / "trajectories" / "c3_a.jsonl").read_bytes() == RUN["trajectories/c3_a.jsonl"]


def test_the_run_all_layout_in_a_tar_gz_is_unpacked(tmp_path):
    files = {f"{task}/{name}": data for task in ("T3", "T5") for name, data in RUN.items()}
    root = extract_archive(io.BytesIO(tarred({**files, "benchmark_summary.json": b"{}"})), tmp_path / "out")
    assert root == tmp_path / "out" and (root / "T5" / "runs.jsonl").is_file()


@pytest.mark.parametrize("name, problem", [
    ("../escape.jsonl", "climbs out"),
    ("run/../../escape.jsonl", "climbs out"),
    ("/etc/passwd", "absolute path"),
    ("C:/runs.jsonl", "absolute path"),
    ("trajectories\\..\\x.jsonl", "backslash"),
    ("trajectories/a\x1b[2J.jsonl", "control character"),
    ("trajectories/a\x00.jsonl", ""),  # zipfile and tarfile cut the name at NUL: then not a file of the output
])
def test_a_name_outside_the_archive_is_refused_and_nothing_written(tmp_path, name, problem):
    for data in (zipped({**RUN, name: b"x"}), tarred({**RUN, name: b"x"})):
        problems = refused(data, tmp_path)
        assert any(problem in line for line in problems), problems
    assert not (tmp_path / "escape.jsonl").exists()


def test_links_and_special_files_are_refused(tmp_path):
    assert any("a link" in line for line in refused(zipped(RUN, links=[("trajectories/c3_b.jsonl", "/etc/passwd")]), tmp_path))
    link = tarfile.TarInfo("trajectories/c3_b.jsonl")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    device = tarfile.TarInfo("summary2.json")
    device.type = tarfile.CHRTYPE
    problems = refused(tarred(RUN, extra=[link, device]), tmp_path)
    assert any("c3_b.jsonl: a link" in line for line in problems)
    assert any("summary2.json: a special file" in line for line in problems)


def test_a_file_that_is_not_part_of_a_runs_output_is_named(tmp_path):
    problems = refused(zipped({**RUN, "notes.txt": b"hello", "trajectories/sub/x.jsonl": b"{}"}), tmp_path)
    assert "notes.txt: not a file of the official runner's output" in problems
    assert "trajectories/sub/x.jsonl: not a file of the official runner's output" in problems
    assert refused(zipped({"summary.json": b"{}"}), tmp_path) == ["no runs.jsonl: the archive holds no results"]


def test_a_member_there_twice_is_refused(tmp_path):
    with pytest.warns(UserWarning):  # zipfile warns, and writes it all the same
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, content in RUN.items():
                archive.writestr(name, content)
            archive.writestr("runs.jsonl", b"{}\n")
        data = buffer.getvalue()
    assert "runs.jsonl: in the archive twice" in refused(data, tmp_path)


def test_a_decompression_bomb_and_an_archive_too_large_are_refused(tmp_path):
    bomb = zipped({**RUN, "trajectories/c3_b.jsonl": b"\0" * (40 << 20)})
    assert len(bomb) < 1 << 20
    assert any("decompression bomb" in line for line in refused(bomb, tmp_path))
    tar_bomb = tarred({**RUN, "trajectories/c3_b.jsonl": b"\0" * (40 << 20)})
    assert any("unpacks to more than" in line for line in refused(tar_bomb, tmp_path, unpacked_bytes=8 << 20))
    assert any("at most 100 are taken" in line for line in refused(zipped(RUN), tmp_path, archive_bytes=100))
    many = zipped({**RUN, **{f"trajectories/c3_{index}.jsonl": b"{}" for index in range(10)}})
    assert "more than 8 members" in refused(many, tmp_path, members=8)


def test_what_is_not_an_archive_or_is_cut_off_is_refused(tmp_path):
    assert refused(b"runs.jsonl\n" * 10, tmp_path) == ["not a .zip or .tar.gz archive"]
    cut = tarred(RUN)[:60]
    assert any("damaged or truncated" in line for line in refused(cut, tmp_path))
    assert any("damaged or truncated" in line for line in refused(zipped(RUN)[:-30], tmp_path))


def test_an_encrypted_member_is_refused_not_a_crash(tmp_path):
    data = bytearray(zipped(RUN))
    entry = data.index(b"PK\x01\x02")  # the first member's central directory entry: its flags at +8
    data[entry + 8] |= 0x1  # "encrypted": zipfile then wants a password to read it
    assert any("cannot be unpacked" in line and "encrypted" in line for line in refused(bytes(data), tmp_path))
