"""A submission the size of a full run: a ~200 MB archive of 1,072 instances, taken and checked.

Seeds a fresh SQLite database with a suite of the official suite's shape (T1 38, T2 300, T3 188, T4 69,
T5 280, T6 197 instances, with answer keys), writes one run's output in the official runner's layout
(``runs.jsonl``, ``run_status.json``, ``summary.json`` and one trajectory per instance whose tool results
carry enough numbers to make the archive about ``--archive-mb`` MB), zips it, then measures:

- the upload as a web worker does it (``submissions.services.submit``: the file saved, the check queued),
- the check as a queue worker does it (``check_submission``: unpacked, every trajectory read, rescored),

against the target: the check within a minute, the upload in a few seconds.

    python bench/submissions.py [--archive-mb 200]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHECK_TARGET_SEC = 60.0
COUNTS = {"T1": 38, "T2": 300, "T3": 188, "T4": 69, "T5": 280, "T6": 197}
N_EPOCHS = 900


def configure(database: Path, directory: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-submissions-not-secret")
    os.environ["EEGAB_SUBMISSIONS_DIR"] = str(directory)
    os.environ["EEGAB_SUBMISSION_MAX_BYTES"] = str(1 << 30)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def reference_and_answer(task: str, index: int) -> tuple[dict, dict]:
    if task == "T1":
        return {"answer": "B"}, {"answer": "B" if index % 3 else "C"}
    if task == "T2":
        return ({"label": "clean", "snr_db": 0.0, "finding_tags": []},
                {"classification": "clean" if index % 2 else "ocular_contaminated", "findings": []})
    if task == "T3":
        return ({"label": "epileptic", "label_binary": 1, "finding_tags": []},
                {"classification": "epileptic" if index % 4 else "normal", "findings": []})
    if task == "T4":
        return {"label": "AD"}, {"classification": "AD" if index % 2 else "FTD", "findings": []}
    if task == "T5":
        positive = index % 2 == 0
        events = [[600.0, 660.0]] if positive else []
        return ({"label": "seizure" if positive else "no_seizure", "has_seizure": positive, "n_seizures": len(events),
                 "seizure_events": events},
                {"seizure_events": [{"onset_sec": 610.0, "offset_sec": 650.0}] if index % 3 else []})
    stages = ["W"] * 100 + ["N2"] * (N_EPOCHS - 100)
    return ({"label": "sleep_session", "epoch_labels_aasm": stages, "n_epochs_total": N_EPOCHS},
            {"hypnogram_rle": [{"start_epoch": 0, "end_epoch": 99, "stage": "W"},
                               {"start_epoch": 100, "end_epoch": N_EPOCHS - 1, "stage": "N2"}],
             "architecture": {"REM_pct": 0, "N3_pct": 0, "sleep_efficiency": 0.9}})


def seed_suite():
    from benchmark.models import Instance, Release, Suite, Task

    Task.objects.ensure_official()
    release = Release.objects.create(name="bench-full", version="1", source="/nonexistent", is_synthetic=True)
    suite = Suite.objects.create(name="bench-full", release=release)
    tasks = {task.code: task for task in Task.objects.all()}
    rows, answers = [], {}
    for task, count in COUNTS.items():
        for index in range(count):
            reference, answer = reference_and_answer(task, index)
            # T5's scorer reads each record's CHB-MIT subject from its scenario id.
            scenario = f"c5_bench_chb{index % 24 + 1:02d}a_{index:04d}" if task == "T5" else f"c{task[1]}_bench:rec_{index:04d}"
            rows.append(Instance(
                suite=suite, task=tasks[task], scenario_id=scenario, record_id=f"r{task}{index:04d}", reference=reference,
                position=index, recording_path="" if task == "T1" else f"data/{scenario}.edf",
                duration_sec=3600.0 if task == "T5" else N_EPOCHS * 30.0 if task == "T6" else 20.0,
                n_epochs=N_EPOCHS if task == "T6" else None,
                prompt_input={"options": {"A": "a", "B": "b", "C": "c", "D": "d"}} if task == "T1" else {},
            ))
            answers[scenario] = (task, answer)
    Instance.objects.bulk_create(rows, batch_size=500)
    return suite, answers


def trajectory(scenario: str, answer: dict, padding: int, rng: random.Random) -> str:
    events = [{"scenario_id": scenario, "step": 0, "event_type": "prompt", "timestamp": "2026-01-01T00:00:00Z",
               "agent_message": {"messages": [{"role": "user", "content": "Analyse the record."}]}}]
    step = 1
    written = 0
    while written < padding:
        numbers = [round(rng.uniform(-300, 300), 4) for _ in range(2000)]
        events.append({"scenario_id": scenario, "step": step, "event_type": "tool_call", "timestamp": "2026-01-01T00:00:01Z",
                       "tool_call": {"name": "compute_windowed_features",
                                     "arguments": {"record_id": "x", "window_sec": 30, "features": ["rms_uv"]}},
                       "observation": {"status": "ok", "content": {"values": numbers}, "latency_ms": 12.0}})
        written += 2000 * 11
        step += 1
    events.append({"scenario_id": scenario, "step": step, "event_type": "final_answer", "timestamp": "2026-01-01T00:00:02Z",
                   "agent_message": {"thought": "done", "final_answer": answer}})
    return "".join(json.dumps(event) + "\n" for event in events)


def write_archive(path: Path, answers: dict, archive_mb: int) -> int:
    rng = random.Random(7)
    padding = archive_mb * (1 << 20) * 2 // len(answers)  # the numbers compress about twofold
    status = {"run_config": {"agent": {"tool_protocol": "text", "max_tokens": 8192, "temperature": 0}}}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for task in COUNTS:
            rows = [{"scenario_id": scenario, "status": "completed", "invalid": False, "prediction": answer,
                     "usage": {"tool_calls": 1, "turns": 2}} for scenario, (code, answer) in answers.items() if code == task]
            archive.writestr(f"run/{task}/runs.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
            archive.writestr(f"run/{task}/run_status.json", json.dumps(status))
            archive.writestr(f"run/{task}/summary.json", json.dumps({"official": True, "task_id": task, "primary_score": 0.5}))
            for row in rows:
                archive.writestr(f"run/{task}/trajectories/{row['scenario_id']}.jsonl",
                                 trajectory(row["scenario_id"], row["prediction"], padding, rng))
    return path.stat().st_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive-mb", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        configure(scratch / "bench.sqlite3", scratch / "submissions")
        from django.core.files.uploadedfile import TemporaryUploadedFile

        from submissions import services
        from submissions.models import Submission

        suite, answers = seed_suite()
        began = time.perf_counter()
        size = write_archive(scratch / "run.zip", answers, args.archive_mb)
        print(f"archive: {len(answers)} instances, {size / 1e6:.0f} MB, written in {time.perf_counter() - began:.1f} s",
              flush=True)
        services.queue_check = lambda submission_id: None  # the web side only queues; the check is timed below
        submitter, _, _ = services.invite_submitter(email="bench@example.org")
        upload = TemporaryUploadedFile("run.zip", "application/zip", size, None)
        with open(scratch / "run.zip", "rb") as source:
            while chunk := source.read(1 << 20):
                upload.write(chunk)
        upload.seek(0)
        card = {"display_name": "Bench", "provider_model": "bench/model", "organisation": "Bench"}
        began = time.perf_counter()
        submission = services.submit(submitter=submitter, suite=suite, card=card, upload=upload)
        upload_sec = time.perf_counter() - began
        began = time.perf_counter()
        outcome = services.check_submission(submission.pk)
        check_sec = time.perf_counter() - began
        submission = Submission.objects.get(pk=submission.pk)
        print(f"upload (web worker: the file saved, the check queued): {upload_sec:.2f} s")
        print(f"check (queue worker: unpacked, {len(answers)} trajectories read, rescored): {check_sec:.1f} s -> "
              f"{outcome}, {'verified' if submission.verified else 'unverified'}, progress {submission.progress}")
        for reason in submission.report.get("reasons", [])[:5]:
            print(f"  unverified: {reason}")
        print("scores: " + ", ".join(f"{task} {entry['score']:.3f}" for task, entry in submission.report["tasks"].items()))
        began = time.perf_counter()
        approved = services.approve(submission.pk, by=None, reason="bench")
        print(f"approval (the run imported: {approved.run.episodes.count()} episodes): {time.perf_counter() - began:.1f} s")
        met = check_sec <= CHECK_TARGET_SEC and outcome == Submission.Status.PENDING and submission.verified
        print(f"targets: the check within {CHECK_TARGET_SEC:g} s, verified: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
