"""Benchmark models: the official tasks, release checksums, instance uniqueness and what to_dict reveals."""
import pytest
from django.db import IntegrityError, transaction

from benchmark.models import Instance, Release, Suite, Task

pytestmark = pytest.mark.django_db

# The paper's task table, written out independently of benchmark.models.OFFICIAL_TASKS.
OFFICIAL = [
    ("T1", "knowledge_qa", "EEG knowledge QA", "accuracy", [], 38, 0),
    ("T2", "artifact_identification", "Artifact identification", "macro_f1", ["accuracy"], 300, 999),
    ("T3", "epilepsy_screening", "Normal vs epileptic", "macro_f1", ["accuracy"], 188, 999),
    ("T4", "dementia_cohort_classification", "Dementia cohort classification", "macro_f1", ["accuracy"], 69, 999),
    ("T5", "seizure_detection", "Seizure event detection", "event_f1", ["dice_s"], 280, 999),
    ("T6", "sleep_staging", "Sleep staging", "macro_f1", ["cohen_kappa"], 197, 999),
]


@pytest.mark.parametrize("code, key, name, primary, secondary, count, max_tool_calls", OFFICIAL)
def test_official_task_exists_after_migrate(code, key, name, primary, secondary, count, max_tool_calls):
    task = Task.objects.get(code=code)
    assert (task.key, task.name) == (key, name)
    assert (task.primary_metric, task.secondary_metrics) == (primary, secondary)
    assert (task.expected_count, task.max_tool_calls, task.max_turns) == (count, max_tool_calls, 1000)


def test_official_tasks_total_the_papers_1072_instances():
    assert Task.objects.count() == 6
    assert sum(Task.objects.values_list("expected_count", flat=True)) == 1072


def test_ensure_official_is_idempotent_and_restores_official_values():
    Task.objects.filter(code="T5").update(primary_metric="dice_s", expected_count=1)
    Task.objects.ensure_official()
    Task.objects.ensure_official()
    assert Task.objects.count() == 6
    t5 = Task.objects.get(code="T5")
    assert (t5.primary_metric, t5.expected_count) == ("event_f1", 280)


def test_release_checksum_follows_the_manifest_not_its_key_order():
    x, y = {"sha256": "a" * 64, "size": 1}, {"sha256": "b" * 64, "size": 2}
    first = Release.objects.create(name="a", version="1", manifest={"x.edf": x, "y.edf": y})
    second = Release.objects.create(name="b", version="1", manifest={"y.edf": y, "x.edf": x})
    assert len(first.checksum) == 64
    assert first.checksum == second.checksum


def test_release_checksum_changes_with_the_manifest_even_on_partial_save(release):
    before = release.checksum
    release.manifest = {**release.manifest, "data/extra.edf": {"sha256": "1" * 64, "size": 9}}
    release.save(update_fields=["manifest"])
    release.refresh_from_db()
    assert release.checksum != before
    assert release.checksum == Release.checksum_of(release.manifest)


def test_release_name_and_version_are_unique(release):
    with pytest.raises(IntegrityError), transaction.atomic():
        Release.objects.create(name=release.name, version=release.version)


def test_suite_is_synthetic_follows_its_release(suite):
    assert suite.is_synthetic is True


@pytest.mark.parametrize("field", ["record_id", "scenario_id"])
def test_instance_ids_are_unique_within_a_suite(suite, field):
    existing = suite.instances.get(task__code="T3")
    fresh = {"record_id": "rec-new", "scenario_id": "c3_new"} | {field: getattr(existing, field)}
    with pytest.raises(IntegrityError), transaction.atomic():
        Instance.objects.create(suite=suite, task=existing.task, **fresh)


def test_instance_ids_may_repeat_across_suites(suite):
    existing = suite.instances.get(task__code="T3")
    other = Suite.objects.create(name="other", release=suite.release)
    Instance.objects.create(
        suite=other, task=existing.task, record_id=existing.record_id, scenario_id=existing.scenario_id
    )
    assert Instance.objects.filter(record_id=existing.record_id).count() == 2


def test_instance_to_dict_hides_what_can_reveal_the_label(suite):
    instance = suite.instances.get(task__code="T4")
    shown = instance.to_dict()
    assert shown["record_id"] == instance.record_id
    assert shown["task"] == "T4"
    assert not {"scenario_id", "subject", "recording_path", "reference"} & shown.keys()
    assert "AD" not in repr(shown)


def test_instance_to_dict_with_hidden_fields_includes_the_reference(suite):
    instance = suite.instances.get(task__code="T5")
    full = instance.to_dict(include_hidden=True)
    assert full["scenario_id"] == "c5_seizure_chb17a_03"
    assert full["subject"] == "chb17"
    assert full["reference"]["seizure_events"] == [[2282.0, 2372.0]]
