"""Release import and export: the official files, the real Bonn segments, malformed releases, versions."""

import hashlib
import io
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark import releases
from benchmark.models import Instance, Release, Suite
from benchmark.releases import ReleaseError, export_release, import_release, new_record_id, release_manifest
from tests.benchmark.release_dirs import (
    BONN,
    UPSTREAM,
    edit_lines,
    lines,
    link_bonn,
    official_release,
    placeholder_data,
    runtime_paths,
    smoke_release,
    write_edf,
    write_lines,
)

pytestmark = pytest.mark.django_db

RECORD_ID = re.compile(r"rec_[a-z2-7]{10}")
# Sizes of some Bonn segments in the official release manifest (benchmark/manifests/files.jsonl upstream).
OFFICIAL_BONN_SIZES = {
    "data/bonn/Z/Z005.txt": 18651, "data/bonn/Z/Z009.txt": 17040, "data/bonn/Z/Z010.txt": 19079,
    "data/bonn/O/O001.txt": 17868, "data/bonn/S/S001.txt": 21410, "data/bonn/S/S020.txt": 20845,
}


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def nothing_imported():
    return (Release.objects.count(), Suite.objects.count(), Instance.objects.count()) == (0, 0, 0)


@pytest.fixture
def t1_release(tmp_path):
    return official_release(tmp_path / "release", ("T1",))


@pytest.fixture
def bonn_release(tmp_path):
    """The official T3 files with the real Bonn segments present (001–020 of each set) and a manifest."""
    root = official_release(tmp_path / "release", ("T3",))
    link_bonn(root)
    present = [path for path in runtime_paths(root, "T3") if (root / path).is_file()]
    write_lines(root / "benchmark/manifests/files.jsonl", [
        {"display_id": "T3", "scenario_id": "c3_routine_bonn_" + path.rsplit("/", 1)[1][:-4], "data_path": path,
         "size_bytes": (root / path).stat().st_size}
        for path in present
    ])
    return root


# ── the official files ──────────────────────────────────────────────────────────────────────

def test_imports_official_t1_completely(t1_release):
    result = import_release(path=t1_release)
    suite = result.suite
    assert result.created and result.counts == {"T1": 38}
    assert (suite.name, suite.version, suite.is_partial, suite.skipped) == ("eegagentbench", 1, False, [])
    keys = [json.loads(line) for line in lines(UPSTREAM / "answer_keys/T1.jsonl")]
    instances = list(suite.instances.order_by("position"))
    assert [i.scenario_id for i in instances] == [key["scenario_id"] for key in keys]
    assert [i.reference for i in instances] == [key["gold"] for key in keys]
    assert all(RECORD_ID.fullmatch(i.record_id) for i in instances)
    assert all(i.recording_path == "" and i.release_record_id == "" and i.allowed_tools == [] for i in instances)
    assert instances[0].prompt_input["options"]["A"] == "Diet and weight reduction"


def test_release_records_its_source_files_and_checksum(t1_release):
    suite = import_release(path=t1_release).suite
    release = suite.release
    scenario_file = t1_release / "benchmark/scenarios/T1.jsonl"
    assert (release.name, release.version, release.source) == ("EEGAgentBench", "1.0.0", str(t1_release.resolve()))
    assert release.manifest["benchmark/scenarios/T1.jsonl"] == {
        "size": scenario_file.stat().st_size, "sha256": hashlib.sha256(scenario_file.read_bytes()).hexdigest(),
    }
    assert release.checksum == Release.checksum_of(release.manifest)
    assert release.descriptor == (UPSTREAM / "benchmark.json").read_text(encoding="utf-8")


def test_manifest_gives_data_sizes_and_leaves_out_hidden_files(t1_release):
    (t1_release / "data/x").mkdir(parents=True)
    (t1_release / "data/x/a.npy").write_bytes(b"12345")
    (t1_release / ".cache/huggingface").mkdir(parents=True)
    (t1_release / "data/.cache").mkdir()
    (t1_release / "data/.cache/partial").write_bytes(b"0")
    (t1_release / "README.md").write_text("not part of the release")
    manifest = release_manifest(t1_release)
    assert manifest["data/x/a.npy"] == {"size": 5}
    assert not [path for path in manifest if ".cache" in path or path == "README.md"]


def test_imports_t3_scenarios_whose_bonn_files_are_present_and_lists_the_rest(bonn_release):
    result = import_release(path=bonn_release, skip_missing=True)
    all_paths = runtime_paths(bonn_release, "T3")
    present = [path for path in all_paths if (bonn_release / path).is_file()]
    assert len(present) == 37 and len(all_paths) == 188
    suite = result.suite
    assert result.counts == {"T3": 37} and suite.is_partial
    assert [i.recording_path for i in suite.instances.order_by("position")] == present
    assert {entry["data_path"] for entry in suite.skipped} == set(all_paths) - set(present)
    assert all(entry["reason"] == "data file missing" for entry in suite.skipped)
    labels = sorted(suite.instances.values_list("reference__label", flat=True))
    assert labels.count("epileptic") == 19 and labels.count("normal") == 18
    z002 = suite.instances.get(scenario_id="c3_routine_bonn_Z002")
    assert (z002.release_record_id, z002.sfreq, z002.n_channels, z002.duration_sec) == ("EEG_0002", 173.61, 1, 23.59)
    assert z002.metadata == {"channels": 1, "sampling_rate": 173.61, "n_samples": 4096, "duration_sec": 23.59}


def test_local_bonn_segments_have_the_sizes_of_the_official_release():
    for data_path, size in OFFICIAL_BONN_SIZES.items():
        assert (BONN / data_path.removeprefix("data/bonn/")).stat().st_size == size


def test_import_command_reports_the_missing_files_one_a_line(bonn_release):
    output = run("import_release", str(bonn_release), "--skip-missing")
    assert "Imported suite eegagentbench (partial), version 1: T3 37" in output
    assert "Skipped 151 scenario(s) whose data file is missing:" in output
    assert "  T3 c3_routine_bonn_Z021: data/bonn/Z/Z021.txt\n" in output


def test_missing_data_files_refuse_the_release_without_skip_missing(bonn_release):
    with pytest.raises(ReleaseError) as caught:
        import_release(path=bonn_release)
    assert len(caught.value.problems) == 151
    assert "benchmark/runtime/T3.jsonl:10: data file data/bonn/Z/Z021.txt of scenario c3_routine_bonn_Z021 is missing" \
        in caught.value.problems
    assert nothing_imported()


def test_import_command_fails_with_every_problem_and_imports_nothing(bonn_release):
    with pytest.raises(CommandError, match=r"nothing imported; 151 problem\(s\):\nbenchmark/runtime/T3.jsonl:10: "):
        run("import_release", str(bonn_release))
    assert nothing_imported()


# ── malformed releases ──────────────────────────────────────────────────────────────────────

def _drop_line(number):
    return lambda n, line: None if n == number else line


def _break_json(number):
    return lambda n, line: line[:-1] if n == number else line


MALFORMED = [
    ("answer_keys/T1.jsonl", _drop_line(5), "benchmark/scenarios/T1.jsonl:5: scenario k0_medmcqa_", "has no answer key in benchmark/answer_keys/T1.jsonl"),
    ("runtime/T1.jsonl", _drop_line(7), "benchmark/scenarios/T1.jsonl:7: scenario k0_medmcqa_", "has no line in benchmark/runtime/T1.jsonl"),
    ("scenarios/T1.jsonl", _break_json(3), "benchmark/scenarios/T1.jsonl:3: invalid JSON", ""),
    ("answer_keys/T1.jsonl", _break_json(38), "benchmark/answer_keys/T1.jsonl:38: invalid JSON", ""),
    ("scenarios/T1.jsonl", lambda n, line: line.replace('"task_id":"T1"', '"task_id":"T2"') if n == 2 else line,
     "benchmark/scenarios/T1.jsonl:2: \"task_id\" is 'T2', expected 'T1'", ""),
    ("answer_keys/T1.jsonl", lambda n, line: line.replace("k0_medmcqa_", "k0_other_") if n == 1 else line,
     "benchmark/answer_keys/T1.jsonl:1: scenario k0_other_", "is not in benchmark/scenarios/T1.jsonl"),
    ("scenarios/T1.jsonl", lambda n, line: line.replace("k0_medmcqa_", "k0_" + "x" * 200) if n == 4 else line,
     "benchmark/scenarios/T1.jsonl:4: \"scenario_id\" is longer than 200 characters", ""),
]


@pytest.mark.parametrize("relative, edit, starts, contains", MALFORMED)
def test_malformed_release_is_refused_with_file_and_line(t1_release, relative, edit, starts, contains):
    edit_lines(t1_release / "benchmark" / relative, edit)
    with pytest.raises(ReleaseError) as caught:
        import_release(path=t1_release)
    matching = [p for p in caught.value.problems if p.startswith(starts) and contains in p]
    assert matching, caught.value.problems
    assert nothing_imported()


def test_a_record_id_too_long_to_store_is_refused(bonn_release):
    long_id = "EEG_" + "9" * 70
    for relative in ("scenarios/T3.jsonl", "runtime/T3.jsonl"):
        edit_lines(bonn_release / "benchmark" / relative,
                   lambda n, line: line.replace('"record_id":"EEG_0002"', f'"record_id":"{long_id}"'))  # fmt: skip
    with pytest.raises(ReleaseError) as caught:
        import_release(path=bonn_release, skip_missing=True)
    assert caught.value.problems == [
        'benchmark/scenarios/T3.jsonl:1: the "record_id" is longer than 64 characters'
    ]
    assert nothing_imported()


def test_data_file_of_the_wrong_size_is_refused(bonn_release):
    edit_lines(bonn_release / "benchmark/manifests/files.jsonl",
               lambda n, line: line.replace('"size_bytes":', '"size_bytes":1') if n == 1 else line)
    with pytest.raises(ReleaseError) as caught:
        import_release(path=bonn_release, skip_missing=True)
    size = (BONN / "Z/Z002.txt").stat().st_size
    assert caught.value.problems == [
        f"benchmark/manifests/files.jsonl:1: data/bonn/Z/Z002.txt is {size} bytes, the manifest says 1{size}"
    ]
    assert nothing_imported()


def test_every_problem_of_every_file_is_reported_at_once(t1_release):
    edit_lines(t1_release / "benchmark/scenarios/T1.jsonl", _break_json(3))
    edit_lines(t1_release / "benchmark/runtime/T1.jsonl", _drop_line(10))
    edit_lines(t1_release / "benchmark/answer_keys/T1.jsonl", _drop_line(20))
    with pytest.raises(ReleaseError) as caught:
        import_release(path=t1_release)
    places = sorted(problem.split(": ")[0] for problem in caught.value.problems)
    # The unreadable scenario also leaves its runtime line and answer key without a scenario.
    assert places == ["benchmark/answer_keys/T1.jsonl:3", "benchmark/runtime/T1.jsonl:3",
                      "benchmark/scenarios/T1.jsonl:10", "benchmark/scenarios/T1.jsonl:20",
                      "benchmark/scenarios/T1.jsonl:3"]


def test_missing_runtime_file_and_unknown_tool_are_problems(tmp_path):
    root = official_release(tmp_path / "release", ("T3",))
    placeholder_data(root, ["T3"])
    (root / "benchmark/runtime/T3.jsonl").unlink()
    edit_lines(root / "benchmark/scenarios/T3.jsonl",
               lambda n, line: line.replace('"get_channel_list"', '"read_raw_file"') if n == 4 else line)
    with pytest.raises(ReleaseError) as caught:
        import_release(path=root)
    assert caught.value.problems == [
        "benchmark/runtime/T3.jsonl: missing; every T3 scenario needs its line in it",
        "benchmark/scenarios/T3.jsonl:4: unknown tools in \"access.allowed_tools\": read_raw_file",
    ]


def test_a_failure_while_writing_leaves_the_database_unchanged(t1_release, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Instance.objects, "bulk_create", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        import_release(path=t1_release)
    assert nothing_imported()


def test_path_that_is_not_a_release_is_refused(tmp_path):
    with pytest.raises(ReleaseError, match="not a release directory"):
        import_release(path=tmp_path)


def test_a_path_that_does_not_exist_is_said_to_be_missing(tmp_path):
    with pytest.raises(ReleaseError) as raised:
        import_release(path=tmp_path / "releases" / "official")
    assert raised.value.problems == [
        f"{tmp_path / 'releases' / 'official'}: no such directory (manage.py download_release --to DIR fetches the "
        "official release; build_release and build_demo_release build one)"
    ]


def test_data_path_outside_the_release_is_refused(tmp_path):
    root = official_release(tmp_path / "release", ("T3",))
    placeholder_data(root, ["T3"])
    edit_lines(root / "benchmark/runtime/T3.jsonl",
               lambda n, line: line.replace("data/bonn/Z/Z002.txt", "../../etc/passwd") if n == 1 else line)
    with pytest.raises(ReleaseError) as caught:
        import_release(path=root)
    assert caught.value.problems == [
        "benchmark/runtime/T3.jsonl:1: \"data_path\" must be a path inside the release, got '../../etc/passwd'"
    ]


# ── versions, task selection, names ─────────────────────────────────────────────────────────

def test_reimporting_the_same_release_is_a_no_op(t1_release):
    first = import_release(path=t1_release)
    ids = list(first.suite.instances.order_by("position").values_list("record_id", flat=True))
    again = import_release(path=t1_release)
    assert not again.created and again.suite == first.suite
    assert (Release.objects.count(), Suite.objects.count(), Instance.objects.count()) == (1, 1, 38)
    assert list(again.suite.instances.order_by("position").values_list("record_id", flat=True)) == ids
    assert run("import_release", str(t1_release)) == (
        "Suite eegagentbench already holds this release; nothing imported.\nIts references are public.\n")


def test_a_changed_release_becomes_the_next_suite_version(t1_release):
    first = import_release(path=t1_release).suite
    edit_lines(t1_release / "benchmark/answer_keys/T1.jsonl",
               lambda n, line: line.replace('"answer":"A"', '"answer":"B"', 1) if n == 1 else line)
    second = import_release(path=t1_release).suite
    assert (second.name, second.version) == ("eegagentbench-v2", 2)
    assert second.release != first.release and second.release.version == f"1.0.0+{second.release.checksum[:12]}"
    assert second.instances.get(position=0).reference["answer"] == "B"
    assert first.instances.get(position=0).reference["answer"] == "A"
    assert import_release(path=t1_release).suite == second


def test_a_new_version_skips_a_suite_name_another_release_holds(t1_release):
    first = import_release(path=t1_release, suite_name="eegagentbench-v2").suite  # a version-1 suite of that name
    edit_lines(t1_release / "benchmark/answer_keys/T1.jsonl",
               lambda n, line: line.replace('"answer":"A"', '"answer":"B"', 1) if n == 1 else line)
    second = import_release(path=t1_release).suite
    assert (first.name, first.version) == ("eegagentbench-v2", 1)
    assert (second.name, second.version) == ("eegagentbench-v3", 3)


@pytest.mark.parametrize("listed", ['"compute_psd"', "7"])
def test_official_tools_that_are_not_a_list_of_names_are_a_problem(t1_release, listed):
    descriptor = t1_release / "benchmark" / "benchmark.json"
    text = descriptor.read_text(encoding="utf-8") if descriptor.is_file() else "{}"
    data = json.loads(text)
    data["official_tools"] = json.loads(listed)
    descriptor.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReleaseError) as caught:
        import_release(path=t1_release)
    assert any("official_tools must be a list of tool names" in problem for problem in caught.value.problems)
    assert nothing_imported()


def test_record_ids_are_random_per_suite_and_never_the_release_ids(bonn_release):
    one = import_release(path=bonn_release, skip_missing=True, suite_name="one").suite
    two = import_release(path=bonn_release, skip_missing=True, suite_name="two").suite
    pairs = [(a.record_id, b.record_id, a.release_record_id) for a, b in zip(
        one.instances.order_by("position"), two.instances.order_by("position"))]
    for ours, theirs, release_id in pairs:  # EEG_0002 -> EEG_4817: the release id's prefix and digit count
        assert re.fullmatch(r"EEG_[0-9]{4}", ours) and len(ours) == len(release_id) and ours != release_id
    assert len({a for a, _, _ in pairs}) == len(pairs)
    assert [a for a, _, _ in pairs] != [b for _, b, _ in pairs]  # drawn anew for each suite


@pytest.mark.parametrize("like, shape", [
    ("EEG_0002", r"EEG_[0-9]{4}"), ("EPOCH_00001", r"EPOCH_[0-9]{5}"), ("7", r"[0-9]"),
    ("", r"rec_[a-z2-7]{10}"), ("sub-001_task-eyesclosed", r"rec_[a-z2-7]{10}"),
])
def test_a_new_record_id_has_the_shape_of_the_release_id(like, shape):
    drawn = {new_record_id(set(), like=like) for _ in range(50)}
    assert all(re.fullmatch(shape, record_id) for record_id in drawn) and like not in drawn


def test_record_ids_of_one_shape_run_out_with_a_clear_error():
    taken = set()
    for _ in range(9):  # ten one-digit ids, one of them the release's own
        taken.add(new_record_id(taken, like="7"))
    assert taken == set("012345689")
    with pytest.raises(ValueError, match="every record id of the shape N is taken"):
        new_record_id(taken, like="7")


def test_tasks_option_imports_only_those_tasks(tmp_path):
    root = official_release(tmp_path / "release", ("T1", "T3"))
    placeholder_data(root, ["T3"])
    output = run("import_release", str(root), "--tasks", "t1")
    suite = Suite.objects.get()
    assert suite.name == "eegagentbench-t1" and suite.is_partial
    assert suite.skipped == [{"task": "T3", "reason": "not selected"}]
    assert set(suite.instances.values_list("task__code", flat=True)) == {"T1"}
    assert "Skipped task T3: not selected" in output
    both = import_release(path=root, tasks=["T1", "T3"], suite_name="both").suite
    assert both.instances.count() == 38 + 188 and not both.is_partial


def test_tasks_that_are_unknown_or_absent_are_problems(t1_release):
    with pytest.raises(ReleaseError) as caught:
        import_release(path=t1_release, tasks=["T1", "T4", "T9"])
    assert caught.value.problems == [
        "benchmark/scenarios/T4.jsonl: missing, so T4 cannot be imported",
        "unknown task 'T9'; tasks are T1, T2, T3, T4, T5, T6",
    ]


def test_suite_name_must_be_a_slug(t1_release):
    with pytest.raises(ReleaseError, match="must be a slug"):
        import_release(path=t1_release, suite_name="My Suite")
    assert import_release(path=t1_release, suite_name="my-suite").suite.name == "my-suite"


def test_suite_names_fit_their_column_with_room_for_a_version(t1_release):
    with pytest.raises(ReleaseError, match="longer than 100 characters"):
        import_release(path=t1_release, suite_name="s" * 101)
    descriptor = t1_release / "benchmark" / "benchmark.json"
    data = json.loads(descriptor.read_text(encoding="utf-8")) if descriptor.is_file() else {}
    descriptor.write_text(json.dumps({**data, "name": "a-very-long-release-name " * 8}), encoding="utf-8")
    first = import_release(path=t1_release, tasks=["T1"]).suite
    assert first.name == ("a-very-long-release-name-" * 4)[:89].rstrip("-") + "-t1"
    edit_lines(t1_release / "benchmark/answer_keys/T1.jsonl",
               lambda n, line: line.replace('"answer":"A"', '"answer":"B"', 1) if n == 1 else line)
    second = import_release(path=t1_release, tasks=["T1"]).suite
    assert (second.name, second.version) == (f"{first.name}-v2", 2)

    own = import_release(path=t1_release, suite_name="n" * 100).suite
    assert own.name == "n" * 100
    edit_lines(t1_release / "benchmark/answer_keys/T1.jsonl",
               lambda n, line: line.replace('"answer":"B"', '"answer":"C"', 1) if n == 1 else line)
    releases_before = Release.objects.count()
    with pytest.raises(ReleaseError, match="would be longer than 100 characters: choose a shorter suite name"):
        import_release(path=t1_release, suite_name="n" * 100)
    assert Release.objects.count() == releases_before and Suite.objects.count() == 3


def test_list_suites_prints_one_name_a_line(t1_release):
    import_release(path=t1_release, suite_name="zeta")
    import_release(path=t1_release, suite_name="alpha")
    assert run("list_suites") == "alpha\nzeta\n"


# ── T2, T4, T5, T6 (smoke lines and synthetic files) ────────────────────────────────────────

def test_smoke_release_fills_subjects_durations_and_epochs(tmp_path):
    root = smoke_release(tmp_path / "smoke")
    placeholder_data(root, ["T2", "T3", "T4", "T5", "T6"])
    suite = import_release(path=root).suite
    assert import_release(path=root).created is False
    assert set(suite.instances.values_list("task__code", flat=True)) == {"T1", "T2", "T3", "T4", "T5", "T6"}
    t5 = suite.instances.get(scenario_id="c1_seizure_chb01_03")
    assert (t5.subject, t5.duration_sec, t5.n_channels, t5.sfreq) == ("chb01", 3600.0, 23, 256.0)
    assert t5.reference["seizure_events"] == [[2996.0, 3036.0]]
    t6 = suite.instances.get(task__code="T6")
    assert (t6.subject, t6.n_epochs, t6.n_channels, t6.duration_sec) == ("SC400", 903, 7, 27090.0)
    assert set(t6.metadata) == {"channels", "eeg_channels", "n_channels", "n_samples", "sex", "source", "epoch_sec",
                                "age", "sampling_rate", "n_epochs_total", "duration_sec", "night"}
    t4 = suite.instances.filter(task__code="T4").order_by("position").first()
    assert (t4.subject, t4.n_channels, t4.sfreq) == ("sub-001", 19, 500.0)
    assert "mmse" not in t4.metadata and t4.metadata["gender"] == "F"
    t2 = suite.instances.filter(task__code="T2").first()
    assert t2.recording_path.startswith("data/eegdenoisenet/signals/") and t2.allowed_tools[0] == "get_recording_info"


def test_t5_duration_comes_from_the_edf_header_when_the_scenario_has_none(tmp_path):
    root = smoke_release(tmp_path / "smoke", ("T5",))

    def drop_duration(number, line):
        scenario = json.loads(line)
        for metadata in (scenario["records"][0]["metadata"], scenario["input"]["metadata"]):
            metadata.pop("duration_sec")
        return json.dumps(scenario, separators=(",", ":"))

    edit_lines(root / "benchmark/scenarios/T5.jsonl", drop_duration)
    for data_path, records in zip(runtime_paths(root, "T5"), (90, 45)):
        write_edf(root / data_path, n_records=records, record_seconds=2)
    suite = import_release(path=root).suite
    assert sorted(suite.instances.values_list("duration_sec", flat=True)) == [90.0, 180.0]


def test_t5_without_duration_or_readable_edf_is_refused(tmp_path):
    root = smoke_release(tmp_path / "smoke", ("T5",))
    edit_lines(root / "benchmark/scenarios/T5.jsonl", lambda n, line: line.replace(',"duration_sec":3600.0', ""))
    placeholder_data(root, ["T5"])
    with pytest.raises(ReleaseError, match=r"benchmark/runtime/T5.jsonl:1: no duration_sec, and the EDF header"):
        import_release(path=root)


def test_leaky_metadata_never_reaches_the_instance(tmp_path):
    root = official_release(tmp_path / "release", ("T3",))
    placeholder_data(root, ["T3"])
    edit_lines(root / "benchmark/scenarios/T3.jsonl",
               lambda n, line: line.replace('"channels":1,', '"channels":1,"recording_type":"intracranial",', 1))
    suite = import_release(path=root).suite
    assert not suite.instances.filter(metadata__has_key="recording_type").exists()
    assert suite.instances.count() == 188


# ── export ──────────────────────────────────────────────────────────────────────────────────

def test_export_of_the_imported_official_release_is_byte_identical(tmp_path):
    root = official_release(tmp_path / "release")
    placeholder_data(root, ["T2", "T3", "T4"])
    suite = import_release(path=root).suite
    assert suite.instances.count() == 38 + 300 + 188 + 69 and not suite.is_partial
    out = tmp_path / "exported"
    run("export_release", suite.name, "--out", str(out))
    for kind in ("scenarios", "runtime", "answer_keys"):
        for task in ("T1", "T2", "T3", "T4"):
            assert (out / "benchmark" / kind / f"{task}.jsonl").read_bytes() == \
                (UPSTREAM / kind / f"{task}.jsonl").read_bytes(), f"{kind}/{task}"
    assert (out / "benchmark/benchmark.json").read_bytes() == (UPSTREAM / "benchmark.json").read_bytes()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        [f"benchmark/{kind}/{task}.jsonl" for kind in ("scenarios", "runtime", "answer_keys")
         for task in ("T1", "T2", "T3", "T4")] + ["benchmark/benchmark.json"]
    )


def test_export_keeps_each_files_own_line_order_and_separators(tmp_path):
    root = smoke_release(tmp_path / "smoke", ("T4",))
    placeholder_data(root, ["T4"])
    runtime = root / "benchmark/runtime/T4.jsonl"
    reordered = list(reversed(lines(runtime)))
    reordered[0] = json.dumps(json.loads(reordered[0]), separators=(", ", ": "))
    write_lines(runtime, reordered)
    suite = import_release(path=root).suite
    export_release(suite=suite, out_dir=tmp_path / "out")
    assert (tmp_path / "out/benchmark/runtime/T4.jsonl").read_bytes() == runtime.read_bytes()


def test_export_of_a_partial_suite_writes_its_lines_with_data_and_manifest(bonn_release, tmp_path):
    suite = import_release(path=bonn_release, skip_missing=True).suite
    out = tmp_path / "out"
    export_release(suite=suite, out_dir=out, with_data=True)
    imported = {i.scenario_id for i in suite.instances.all()}
    expected = [line for line in lines(UPSTREAM / "scenarios/T3.jsonl") if json.loads(line)["scenario_id"] in imported]
    assert lines(out / "benchmark/scenarios/T3.jsonl") == expected
    assert lines(out / "benchmark/manifests/files.jsonl") == lines(bonn_release / "benchmark/manifests/files.jsonl")
    assert (out / "data/bonn/S/S001.txt").read_bytes() == (BONN / "S/S001.txt").read_bytes()
    again = import_release(path=out, suite_name="reimported")
    assert again.created and again.suite.instances.count() == 37 and not again.suite.is_partial


def test_export_never_overwrites_existing_files(t1_release, tmp_path):
    suite = import_release(path=t1_release).suite
    (tmp_path / "out/benchmark/scenarios").mkdir(parents=True)
    (tmp_path / "out/benchmark/scenarios/T1.jsonl").write_text("mine")
    with pytest.raises(CommandError, match="T1.jsonl: already exists"):
        run("export_release", suite.name, "--out", str(tmp_path / "out"))
    assert (tmp_path / "out/benchmark/scenarios/T1.jsonl").read_text() == "mine"
    assert not (tmp_path / "out/benchmark/runtime").exists()


@pytest.mark.parametrize("into_existing", [False, True])
def test_an_export_that_fails_midway_leaves_nothing_behind(bonn_release, tmp_path, monkeypatch, into_existing):
    suite = import_release(path=bonn_release, skip_missing=True).suite
    exports = tmp_path / "exports"
    out = exports / "out"
    if into_existing:
        (out / "benchmark").mkdir(parents=True)
        (out / "notes.txt").write_text("mine")
    copies, copy = [], shutil.copyfile

    def copy_until_the_disk_is_full(source, target):
        if copies:
            raise OSError(28, "No space left on device")
        copies.append(copy(source, target))

    monkeypatch.setattr("benchmark.releases.shutil.copyfile", copy_until_the_disk_is_full)
    with pytest.raises(OSError, match="No space left"):
        export_release(suite=suite, out_dir=out, with_data=True)
    left = sorted(str(path.relative_to(exports)) for path in exports.rglob("*"))
    assert left == (["out", "out/benchmark", "out/notes.txt"] if into_existing else [])


def test_an_export_into_an_existing_directory_adds_its_files(bonn_release, tmp_path):
    suite = import_release(path=bonn_release, skip_missing=True).suite
    out = tmp_path / "exports" / "out"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    written = export_release(suite=suite, out_dir=out, with_data=True)
    assert all(path.is_file() for path in written) and (out / "data/bonn/S/S001.txt").is_file()
    assert (out / "notes.txt").read_text() == "mine"
    assert [path.name for path in out.parent.iterdir()] == ["out"]  # no staging left beside it


def test_an_export_into_an_existing_directory_is_staged_inside_it(bonn_release, tmp_path, monkeypatch):
    """A directory that exists may be a mount point: the export is written on its own file system."""
    suite = import_release(path=bonn_release, skip_missing=True).suite
    out = tmp_path / "exports" / "out"
    out.mkdir(parents=True)
    staged_in, mkdtemp = [], tempfile.mkdtemp

    def recording_mkdtemp(*args, dir=None, **kwargs):
        staged_in.append(Path(dir))
        return mkdtemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr("benchmark.releases.tempfile.mkdtemp", recording_mkdtemp)
    export_release(suite=suite, out_dir=out)
    assert staged_in == [out]
    assert sorted(path.name for path in out.iterdir()) == ["benchmark"]


def test_instances_sharing_a_recording_export_it_once(bonn_release, tmp_path):
    suite = import_release(path=bonn_release, skip_missing=True).suite
    first, second = suite.instances.order_by("position")[:2]
    Instance.objects.filter(pk=second.pk).update(recording_path=first.recording_path)
    out = tmp_path / "out"
    out.mkdir()
    written = export_release(suite=suite, out_dir=out, with_data=True)
    assert written.count(out / first.recording_path) == 1 and (out / first.recording_path).is_file()


def test_a_file_made_while_the_export_was_written_is_kept_and_the_export_undone(t1_release, tmp_path, monkeypatch):
    suite = import_release(path=t1_release).suite
    out = tmp_path / "out"
    out.mkdir()
    move_into = releases._move_into

    def someone_else_writes_first(staging, target, relatives):
        (target / "benchmark").mkdir()
        (target / "benchmark/benchmark.json").write_text("theirs")
        move_into(staging, target, relatives)

    monkeypatch.setattr(releases, "_move_into", someone_else_writes_first)
    with pytest.raises(ReleaseError, match="benchmark.json: already exists") as raised:
        export_release(suite=suite, out_dir=out)
    assert raised.value.problems == [f"{out / 'benchmark/benchmark.json'}: already exists"]  # not the staging copy
    assert (out / "benchmark/benchmark.json").read_text() == "theirs"
    assert sorted(str(path.relative_to(out)) for path in out.rglob("*")) == ["benchmark", "benchmark/benchmark.json"]


def test_an_export_onto_a_file_is_refused(t1_release, tmp_path):
    suite = import_release(path=t1_release).suite
    (tmp_path / "out").write_text("a file")
    with pytest.raises(ReleaseError, match="not a directory"):
        export_release(suite=suite, out_dir=tmp_path / "out")


def test_export_of_an_unknown_suite_names_the_problem():
    with pytest.raises(CommandError, match="no suite named 'nope'"):
        run("export_release", "nope", "--out", "/nonexistent")


def test_imported_official_t3_instances_answer_every_tool(bonn_release):
    """The official T3 instances whose Bonn files are present run all ten tools on their recording."""
    from tools_app import TOOL_NAMES, call_tool

    suite = import_release(path=bonn_release, skip_missing=True).suite
    root = bonn_release
    for instance in suite.instances.all():
        for tool in TOOL_NAMES:
            result = call_tool(root / instance.recording_path, tool, {"record_id": instance.record_id},
                               record_id=instance.record_id, metadata=instance.metadata)
            if tool == "compute_channel_correlation":  # one channel: the official "need 2 channels" error
                assert result["error"].startswith("Need at least 2 valid channels"), result
                continue
            assert "error" not in result, (instance.scenario_id, tool, result)
            assert result["record_id"] == instance.record_id
        info = call_tool(root / instance.recording_path, "get_recording_info", {"record_id": instance.record_id},
                         record_id=instance.record_id, metadata=instance.metadata)
        assert (info["sampling_rate"], info["n_channels"]) == (173.6, 1)
