"""A long recording's statistics are computed once, kept on disk, and mapped by every later process."""
import io
import json
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.tools_app.test_recording import pyedflib_edf
from tools_app.recording import clear_recording_cache, open_recording
from tools_app.registry import call_tool
from tools_app.signal import ranges, segments, stored

ROOT = Path(__file__).resolve().parents[2]
# Calls that read the segment statistics of a whole 20-minute record (2^17 samples or more).
CALLS = [
    ("compute_windowed_features", {"channels": ["A", "Resp"], "features": ["rms_uv", "alpha_power"],
                                   "window_sec": 60, "step_sec": 60}),
    ("compute_band_power", {"channels": ["A", "B", "C"]}),
    ("compute_psd", {"channels": ["B"]}),
    ("compute_temporal_features", {"channels": ["A", "C"]}),
]


@pytest.fixture
def stats(tmp_path):
    """A statistics directory of this test's own (set back to the session's afterwards)."""
    directory = tmp_path / "stats"
    previous = stored.stats_dir()
    stored.configure(directory)
    clear_recording_cache()
    yield directory
    stored.configure(previous)
    clear_recording_cache()


@pytest.fixture(scope="module")
def night(tmp_path_factory):
    return pyedflib_edf(tmp_path_factory.mktemp("night") / "night.edf", ["A", "B", "Resp", "C"], [200, 200, 1, 200], 1200)


def results(path):
    return [call_tool(path, name, {"record_id": "r1", **arguments}, record_id="r1") for name, arguments in CALLS]


def files(directory):
    return sorted(directory.rglob("*.stats"))


def fresh():
    """Forget the opened recordings, as a new process would have none."""
    clear_recording_cache()


def refuse_to_compute(monkeypatch):
    def computing(self, picks):
        raise AssertionError("the statistics were computed, not mapped")

    monkeypatch.setattr(segments.RecordSegments, "_build_missing", computing)


def test_the_first_use_stores_them_and_a_later_one_maps_the_same_numbers(stats, night, monkeypatch):
    first = results(night)
    assert all("error" not in result for result in first), first
    [kept] = files(stats)
    fresh()
    refuse_to_compute(monkeypatch)
    assert results(night) == first
    # What a process without kept statistics computes in memory is the same again.
    monkeypatch.undo()
    stored.configure(None)
    fresh()
    assert results(night) == first and files(stats) == [kept]


def test_a_fresh_process_maps_them_without_computing(stats, night):
    first = results(night)
    script = f"""
import json, os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
os.environ["EEGAB_STATS_DIR"] = {str(stats)!r}
import django; django.setup()
from tools_app.signal import segments
def computing(self, picks): raise SystemExit("computed")
segments.RecordSegments._build_missing = computing
from tests.tools_app.test_stored_statistics import results
print(json.dumps(results({str(night)!r})))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == json.loads(json.dumps(first))


def test_recording_info_and_channel_list_compute_nothing(stats, night, monkeypatch):
    refuse_to_compute(monkeypatch)
    for name in ("get_recording_info", "get_channel_list"):
        assert "error" not in call_tool(night, name, {"record_id": "r1"}, record_id="r1")
    assert files(stats) == []


@pytest.mark.parametrize("damage", ["flip a sample", "truncate", "garbage header"])
def test_a_damaged_file_is_detected_and_rebuilt_never_used(stats, night, damage, caplog, monkeypatch):
    first = results(night)
    [kept] = files(stats)
    data = bytearray(kept.read_bytes())
    if damage == "flip a sample":
        data[-5] ^= 0x40  # inside the last channel's arrays
    elif damage == "truncate":
        del data[len(data) // 2:]
    else:
        data[8:40] = b"x" * 32
    kept.write_bytes(bytes(data))
    fresh()
    assert results(night) == first
    assert "unusable" in caplog.text or "CRC-32" in caplog.text
    [rebuilt] = files(stats)
    assert rebuilt.read_bytes() != bytes(data)
    fresh()
    refuse_to_compute(monkeypatch)
    assert results(night) == first


def test_a_changed_recording_gets_statistics_of_its_own(stats, tmp_path):
    path = pyedflib_edf(tmp_path / "rec.edf", ["A", "B", "Resp", "C"], [200, 200, 1, 200], 1200)
    first = results(path)
    pyedflib_edf(path, ["A", "B", "Resp", "C"], [200, 200, 1, 200], 1200)  # same samples, newer file
    os.utime(path, ns=(1, 1))
    fresh()
    assert results(path) == first
    assert len(files(stats)) == 2


def test_a_directory_that_cannot_be_written_keeps_them_in_memory(tmp_path, night, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    previous = stored.stats_dir()
    stored.configure(blocker / "stats")  # cannot be created, even by root
    fresh()
    try:
        first = results(night)
        assert "could not be stored" in caplog.text
        stored.configure(None)
        fresh()
        assert results(night) == first
    finally:
        stored.configure(previous)
        fresh()


def test_two_processes_building_at_once_write_one_file(stats, night):
    recording = open_recording(night)
    built, errors = [], []

    def build():
        try:  # each with statistics of its own, as two processes would have
            built.append(ranges.SignalSource(recording).segments.channel(1).units.copy())
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(built) == 3
    assert all((units == built[0]).all() for units in built)
    assert len(files(stats)) == 1


# -- manage.py precompute_records ------------------------------------------------------------------------


@pytest.fixture
def long_suite(db, tmp_path):
    from benchmark.models import Instance, Release, Suite, Task

    root = tmp_path / "release"
    (root / "data").mkdir(parents=True)
    pyedflib_edf(root / "data" / "night.edf", ["A", "B", "Resp", "C"], [200, 200, 1, 200], 1200)
    pyedflib_edf(root / "data" / "short.edf", ["A"], [200], 60)
    release = Release.objects.create(name="long", version="1", source=str(root), is_synthetic=True)
    suite = Suite.objects.create(name="long", release=release)
    for position, (code, name) in enumerate([("T5", "night.edf"), ("T6", "night.edf"), ("T3", "short.edf")]):
        Instance.objects.create(suite=suite, task=Task.objects.get(code=code), record_id=f"r{position}", scenario_id=f"s{position}",
                                position=position, recording_path=f"data/{name}")
    return suite, root


def precompute_output(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("precompute_records", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_precompute_records_computes_each_long_recording_once(stats, long_suite, monkeypatch):
    suite, root = long_suite
    printed, progress = precompute_output("long")
    assert "2 recording(s) of long" in printed and "1 computed, 0 kept already, 1 short" in printed
    assert "min/max pyramids (the record browser's): 2 computed, 0 kept already" in printed
    assert "[" + "#" * 30 + "] 2/2" in progress
    assert len(files(stats)) == 3  # the night's statistics, and both recordings' pyramids
    again, _ = precompute_output("long")
    assert "0 computed, 1 kept already, 1 short" in again
    assert "pyramids (the record browser's): 0 computed, 2 kept already" in again
    fresh()
    refuse_to_compute(monkeypatch)  # an episode's first call on the night maps what was computed
    assert "error" not in call_tool(root / "data" / "night.edf", "compute_band_power", {"record_id": "r0"},
                                    record_id="r0")


def test_precompute_records_names_what_it_cannot_do(stats, long_suite):
    suite, root = long_suite
    with pytest.raises(CommandError, match=r"No suite named 'nope' \(suites: long\)"):
        precompute_output("nope")
    (root / "data" / "night.edf").unlink()
    with pytest.raises(CommandError, match=r"1 recording\(s\) could not be read:\ndata/night.edf: Recording file not found"):
        precompute_output("long")


def crc_checks(monkeypatch) -> list:
    """Count the CRC-32s the statistics module computes from now on."""
    counted = []
    real = stored.zlib.crc32

    def crc32(data, *args):
        counted.append(1)
        return real(data, *args)

    monkeypatch.setattr(stored.zlib, "crc32", crc32)
    return counted


def verify_all(path):
    """Map the recording's statistics in a fresh state and check every array (a tool process's warm-up)."""
    from tools_app.recording import warm_statistics

    fresh()
    warm_statistics(path)


def test_once_every_array_has_passed_later_processes_skip_the_checks(stats, night, monkeypatch):
    first = results(night)
    [kept] = files(stats)
    monkeypatch.setattr(stored, "MARKER_AFTER_SEC", 0.0)
    verify_all(night)
    marker = stored.verified_marker(kept)
    assert json.loads(marker.read_text()) == stored.file_stamp(kept.stat())

    checks = crc_checks(monkeypatch)
    verify_all(night)
    fresh()
    assert results(night) == first and checks == []


def test_no_marker_while_the_file_is_younger_than_a_clock_tick_can_tell(stats, night, monkeypatch):
    results(night)
    [kept] = files(stats)
    monkeypatch.setattr(stored, "MARKER_AFTER_SEC", 3600.0)
    verify_all(night)
    assert not stored.verified_marker(kept).exists()
    checks = crc_checks(monkeypatch)
    verify_all(night)
    assert checks  # every process checks the arrays again


def test_a_file_damaged_after_its_marker_was_written_is_checked_detected_and_rebuilt(stats, night, caplog):
    import time

    first = results(night)
    [kept] = files(stats)
    time.sleep(stored.MARKER_AFTER_SEC + 0.1)  # the file is old enough for a marker
    verify_all(night)
    assert stored.verified_marker(kept).exists()
    data = bytearray(kept.read_bytes())
    data[-5] ^= 0x40  # written in place: same inode and size, a later change time
    kept.write_bytes(bytes(data))
    fresh()
    assert results(night) == first
    assert "CRC-32" in caplog.text
    [rebuilt] = files(stats)
    assert rebuilt.read_bytes() != bytes(data)


@pytest.mark.parametrize("marker", ["not json", "[1, 2, 3, 4]", "{}"])
def test_a_marker_that_does_not_match_is_ignored(stats, night, marker, monkeypatch):
    results(night)
    [kept] = files(stats)
    stored.verified_marker(kept).write_text(marker)
    checks = crc_checks(monkeypatch)
    verify_all(night)
    assert checks


def test_a_file_replaced_while_a_process_opens_it_is_read_whole_from_the_one_it_opened(stats, night, monkeypatch):
    """A rebuilt file renamed into place between reading a header and mapping the data: the marker of
    the file opened must not vouch for the other one's arrays (here, a damaged copy)."""
    first = results(night)
    [kept] = files(stats)
    monkeypatch.setattr(stored, "MARKER_AFTER_SEC", 0.0)
    verify_all(night)  # the file opened is marked: its arrays are not checked again
    data = bytearray(kept.read_bytes())
    (header_length,) = struct.unpack("<Q", data[len(stored.MAGIC) : len(stored.MAGIC) + 8])
    arrays = np.frombuffer(data, dtype="<f8", offset=len(stored.MAGIC) + 8 + header_length)
    other = kept.with_name("other.tmp")
    other.write_bytes(bytes(data[: len(data) - arrays.nbytes]) + (arrays * 2 + 1).astype("<f8").tobytes())

    real_fstat, replaced = os.fstat, []

    def fstat_then_replace(descriptor):
        found = real_fstat(descriptor)
        if not replaced:
            replaced.append(os.replace(other, kept))  # another process's rename, just after this header was read
        return found

    monkeypatch.setattr(stored.os, "fstat", fstat_then_replace)
    fresh()
    assert results(night) == first and replaced
