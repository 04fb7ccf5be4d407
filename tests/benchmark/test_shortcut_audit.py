"""The one-feature shortcut audit: the feature a suite makes separable, held-out folds, the real Bonn T3.

A synthetic T3 suite is built here whose two classes differ only in the sign of a DC offset, so the
mean amplitude (``compute_temporal_features.mean_uv``) is the one separating feature; the official T3
instances with the real Bonn segments of ``tests/data`` must show the known amplitude shortcut.
"""
import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Instance, Release, Suite, Task
from benchmark.releases import import_release
from benchmark.scoring import ScoringItem
from leaderboard.audit import features as audit_features
from leaderboard.audit import rules
from leaderboard.audit.runner import audit_instance
from leaderboard.models import ShortcutAudit
from leaderboard.summaries.scoring import task_sample
from tests.benchmark.release_dirs import link_bonn, official_release

pytestmark = pytest.mark.django_db
SFREQ = 128.0
OFFSET_UV = 10.0
N_PER_CLASS = 6


def offset_suite(root, *, name="offset", n_per_class=N_PER_CLASS, tasks=("T3",)):
    """T3 instances of noise with a +/-10 µV offset: epileptic positive, normal negative; same RMS and spectrum."""
    release = Release.objects.create(name=name, version="1", source=str(root), is_synthetic=True)
    suite = Suite.objects.create(name=name, release=release)
    task = Task.objects.get(code="T3")
    rng = np.random.default_rng(7)
    for position in range(2 * n_per_class):
        label = "epileptic" if position % 2 else "normal"
        signal = 20.0 * rng.standard_normal(int(20 * SFREQ)) + (OFFSET_UV if label == "epileptic" else -OFFSET_UV)
        relative = f"data/rec_{position:03d}.npy"
        (root / "data").mkdir(parents=True, exist_ok=True)
        np.save(root / relative, signal[np.newaxis, :])
        Instance.objects.create(
            suite=suite, task=task, scenario_id=f"c3_offset_{label}_{position:03d}", record_id=f"{name}-{position:03d}",
            recording_path=relative, sfreq=SFREQ, n_channels=1, duration_sec=20.0, position=position,
            metadata={"sampling_rate": SFREQ, "channel_names": ["EEG"], "duration_sec": 20.0},
            reference={"label": label, "label_binary": int(label == "epileptic"), "finding_tags": []},
        )
    return suite


def audited(suite, task="T3"):
    instances = Instance.objects.filter(suite=suite, task__code=task).select_related("task", "suite__release")
    return [audit_instance(instance) for instance in instances.order_by("position")]


def run_audit(*arguments) -> dict:
    out = StringIO()
    call_command("shortcut_audit", *arguments, "--json", stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_the_audit_picks_the_feature_that_separates_the_classes_by_construction(tmp_path):
    suite = offset_suite(tmp_path / "offset")
    result = rules.audit_task("T3", audited(suite), n_folds=3, seed=0,
                                  sample_of=lambda rows: task_sample("T3", rows), n_resamples=200)
    assert result.best.feature.startswith("compute_temporal_features.mean_uv[")
    assert result.best.score == 1.0
    assert result.best.description.startswith("threshold on compute_temporal_features.mean_uv")
    # Nothing else sees the sign of the offset: every other feature stays well below.
    others = [candidate for candidate in result.ranked if ".mean_uv[" not in candidate.feature]
    assert others and max(candidate.score for candidate in others) < 0.9


def test_no_instance_is_predicted_by_a_rule_fitted_on_it(tmp_path):
    suite = offset_suite(tmp_path / "offset", n_per_class=10)
    instances = audited(suite)
    result = rules.audit_task("T3", instances, n_folds=5, seed=3, sample_of=lambda rows: task_sample("T3", rows),
                                  n_resamples=50)
    labels = [instance.item.gold["label"] for instance in instances]
    assert sorted(np.bincount(result.folds)) == [4] * 5
    for fold in range(5):  # stratified: two of each class in every fold
        assert sorted(label for label, f in zip(labels, result.folds) if f == fold) == ["epileptic"] * 2 + ["normal"] * 2
    for candidate in result.ranked:
        assert len(candidate.fits) == 5
        for index, fold in enumerate(candidate.predicted_by):
            assert fold == result.folds[index]
            assert index not in set(candidate.fits[fold].train.tolist())
            assert set(candidate.fits[fold].train.tolist()) == set(np.flatnonzero(result.folds != fold).tolist())


def test_folds_keep_a_subject_whole_and_need_enough_of_each_class():
    groups = ["chb01", "chb01", "chb02", "chb03", "chb03", "chb03", "chb04"]
    folds = audit_features.group_folds(groups, 2, seed=1)
    for group in set(groups):
        assert len({fold for g, fold in zip(groups, folds) if g == group}) == 1
    assert set(folds) == {0, 1}
    with pytest.raises(audit_features.AuditError, match="fewer than the 5 folds"):
        audit_features.group_folds(groups, 5)
    with pytest.raises(audit_features.AuditError, match="class 'normal' has 2 instance"):
        audit_features.stratified_folds(["normal", "normal", "epileptic", "epileptic", "epileptic"], 3)


@pytest.mark.parametrize("values, labels, expected", [
    ([1, 2, 3, 10, 11, 12], ["normal"] * 3 + ["epileptic"] * 3, ("normal", "epileptic")),
    ([10, 11, 12, 1, 2, 3], ["normal"] * 3 + ["epileptic"] * 3, ("epileptic", "normal")),
])
def test_a_threshold_is_fitted_halfway_between_the_classes_in_either_direction(values, labels, expected):
    instances = [audit_features.AuditInstance(item=ScoringItem("s", {"label": label}), group=str(i), label=label)
                 for i, label in enumerate(labels)]
    order, cuts = rules.OrderedThresholds().fit(values, instances, ("normal", "epileptic"))
    assert order == expected and cuts == (6.5,)


def test_three_classes_get_two_ordered_thresholds_and_a_nearest_mean_rule():
    classes = ("AD", "FTD", "HC")
    labels = ["HC"] * 3 + ["AD"] * 3 + ["FTD"] * 3
    values = [1.0, 2.0, 3.0, 11.0, 12.0, 13.0, 21.0, 22.0, 23.0]
    instances = [audit_features.AuditInstance(item=ScoringItem("s", {"label": label}), group=str(i), label=label)
                 for i, label in enumerate(labels)]
    order, cuts = rules.OrderedThresholds().fit(values, instances, classes)
    assert order == ("HC", "AD", "FTD") and cuts == (7.0, 17.0)
    means = rules.NearestClassMean().fit(values, instances, classes)
    assert means == {"AD": 12.0, "FTD": 22.0, "HC": 2.0}
    assert rules.NearestClassMean().predict(means, 15.0, instances[0])["classification"] == "AD"


def test_scalar_features_are_per_channel_with_mean_and_max_and_skip_errors():
    result = {"_meta": {"approx_response_bytes": 10}, "record_id": "r", "n_channels": 2, "channels": [
        {"channel": "C3", "rms_uv": 10.0, "bands": {"alpha": 1.0}},
        {"channel": "C4", "rms_uv": 30.0, "bands": {"alpha": 3.0}, "flag": True},
    ]}
    features = audit_features.scalar_features("tool", result)
    assert features == {
        "tool.n_channels": 2.0,
        "tool.rms_uv[C3]": 10.0, "tool.rms_uv[C4]": 30.0, "tool.rms_uv[mean]": 20.0, "tool.rms_uv[max]": 30.0,
        "tool.bands.alpha[C3]": 1.0, "tool.bands.alpha[C4]": 3.0,
        "tool.bands.alpha[mean]": 2.0, "tool.bands.alpha[max]": 3.0,
    }
    assert audit_features.scalar_features("tool", {"record_id": "r", "error": "no"}) == {}


def test_windowed_events_merge_adjacent_windows():
    starts = np.arange(10) * 5.0
    instance = audit_features.AuditInstance(item=ScoringItem("s", {}, duration_sec=50.0), group="chb01",
                                       window_starts=starts, window_sec=5.0)
    series = np.array([0, 0, 9, 9, 9, 0, 0, 9, 0, 0], dtype=float)
    answer = rules.WindowThreshold().predict(("above", 5.0), series, instance)
    assert answer["seizure_events"] == [{"onset_sec": 10.0, "offset_sec": 25.0}, {"onset_sec": 35.0, "offset_sec": 40.0}]


def test_the_command_stores_the_json_and_a_rerun_replaces_it(tmp_path):
    suite = offset_suite(tmp_path / "offset")
    first = run_audit(suite.name, "--tasks", "T3", "--folds", "3")
    assert list(first) == ["tasks"] and list(first["tasks"]) == ["T3"]
    audit = first["tasks"]["T3"]
    assert set(audit) == {"primary_metric", "best", "candidates", "folds"} and audit["folds"] == 3
    assert audit["primary_metric"] == "macro_f1"
    assert set(audit["best"]) == {"feature", "rule", "score", "ci"}
    assert len(audit["candidates"]) == 4 and all(set(c) == {"feature", "rule", "score", "ci"} for c in audit["candidates"])
    low, high = audit["best"]["ci"]
    assert low <= audit["best"]["score"] <= high
    stored = ShortcutAudit.objects.get(suite=suite, task="T3")
    assert (stored.result, stored.folds, stored.seed) == (audit, 3, 0)
    run_audit(suite.name, "--tasks", "T3", "--folds", "2", "--seed", "4")
    replaced = ShortcutAudit.objects.get(suite=suite, task="T3")
    assert replaced.pk != stored.pk and (replaced.folds, replaced.seed) == (2, 4)
    assert replaced.created_at >= stored.created_at


def test_more_folds_than_a_task_can_fill_are_capped_and_recorded(tmp_path):
    suite = offset_suite(tmp_path / "offset")
    smallest = N_PER_CLASS  # two classes of N_PER_CLASS instances each
    out, err = StringIO(), StringIO()
    call_command("shortcut_audit", suite.name, "--folds", str(smallest + 5), "--json", stdout=out, stderr=err)
    stored = ShortcutAudit.objects.get(suite=suite, task="T3")
    assert json.loads(out.getvalue())["tasks"]["T3"]["folds"] == stored.folds == stored.result["folds"] == smallest
    assert f"T3: {smallest} folds, as many as" in err.getvalue()


def test_a_task_that_cannot_fill_two_folds_is_refused():
    instances = [audit_features.AuditInstance(item=ScoringItem(scenario_id=f"s{n}", gold={"label": label}), group="",
                                         features={"x": float(n)}, label=label)
                 for n, label in enumerate(["normal", "epileptic", "epileptic"])]
    with pytest.raises(audit_features.AuditError, match="T3 has 1 instance.*at least 2"):
        audit_features.feasible_folds("T3", instances, 5)


@pytest.mark.parametrize("arguments, message", [
    (("nosuch",), "no suite is named 'nosuch'"),
    (("offset", "--tasks", "T9"), "unknown task 'T9'"),
    (("offset", "--tasks", "T1"), "unknown task 'T1'"),
    (("offset", "--tasks", "T4"), "has no T4 instances"),
    (("offset", "--folds", "1"), "--folds must be at least 2"),
    (("offset", "--seed", "-1"), "--seed must be 0 or more"),
])
def test_the_command_explains_bad_input(tmp_path, arguments, message):
    offset_suite(tmp_path / "offset")
    with pytest.raises(CommandError, match=message):
        call_command("shortcut_audit", *arguments, stdout=StringIO(), stderr=StringIO())
    assert not ShortcutAudit.objects.exists()


@pytest.mark.slow
def test_the_official_t3_on_the_real_bonn_segments_has_an_amplitude_shortcut(tmp_path, capsys):
    root = official_release(tmp_path / "release", ("T3",))
    link_bonn(root)
    suite = import_release(path=root, skip_missing=True).suite
    assert suite.instances.count() == 37
    result = run_audit(suite.name, "--tasks", "T3")
    audit = result["tasks"]["T3"]
    with capsys.disabled():
        print("\nofficial T3 (real Bonn) audit:\n" + json.dumps(result, indent=2, ensure_ascii=False))
    assert audit["primary_metric"] == "macro_f1"
    assert audit["best"]["score"] > 0.9
    amplitude = ("rms_uv", "std_uv", "peak_to_peak_uv", "hjorth_activity", "amplitude", "power", "line_length")
    assert any(word in audit["best"]["feature"] for word in amplitude), audit["best"]["feature"]


@pytest.mark.slow
def test_the_demo_suites_windowed_tasks_are_audited_end_to_end():
    """T5 (subject folds, windows merged into events) and T6 (night folds, 30-s epochs) on the demo release."""
    from tests.runs.demo_suite import import_demo

    suite = import_demo()
    result = run_audit(suite.name, "--tasks", "T5,T6", "--folds", "2")
    assert list(result["tasks"]) == ["T5", "T6"]
    assert result["tasks"]["T5"]["primary_metric"] == "event_f1"
    assert result["tasks"]["T6"]["primary_metric"] == "macro_f1"
    for task, rule in (("T5", "window threshold on compute_windowed_features."),
                       ("T6", "per-epoch nearest class mean on compute_windowed_features.")):
        best = result["tasks"][task]["best"]
        assert best["rule"].startswith(rule) and best["feature"].startswith("compute_windowed_features.")
        assert 0.0 <= best["ci"][0] <= best["score"] <= best["ci"][1] <= 1.0
    # The demo generator's EMG tone follows the stage, and the audit finds it.
    assert result["tasks"]["T6"]["best"]["feature"] == "compute_windowed_features.rms_uv[EMG submental]"
    assert set(ShortcutAudit.objects.filter(suite=suite).values_list("task", flat=True)) == {"T5", "T6"}


def test_t6_epochs_are_staged_by_the_nearest_class_mean():
    gold = {"epoch_labels_aasm": ["W", "W", "N3", "N3"]}
    instance = audit_features.AuditInstance(item=ScoringItem("night", gold, n_epochs=4), group="night",
                                       window_starts=np.arange(4) * 30.0, window_sec=30.0)
    rule = rules.EpochNearestMean()
    means = rule.fit([np.array([10.0, 12.0, 1.0, 3.0])], [instance], rules.STAGES)
    assert means == {"W": 11.0, "N3": 2.0}
    answer = rule.predict(means, np.array([9.0, 2.5, 2.5]), instance)  # a window short: the last stage repeats
    assert answer["hypnogram_rle"] == [{"start_epoch": 0, "end_epoch": 0, "stage": "W"},
                                       {"start_epoch": 1, "end_epoch": 3, "stage": "N3"}]
    assert answer["architecture"] == {"REM_pct": 0.0, "N3_pct": 0.75, "sleep_efficiency": 0.75}
