"""CI check of the scale-out queue: two ``qcluster`` processes on django-q2's Redis broker play every episode once.

Usage (``.ci/run`` does this with its own PostgreSQL and Redis servers)::

    DATABASE_URL=postgres://… REDIS_URL=redis://127.0.0.1:6379/0 python tests/ci/redis_two_workers.py

``DATABASE_URL`` must name an empty database: it is migrated here, the demo release is built
into a temporary ``EEGAB_DATA_ROOT`` and imported, and a ``baseline/heuristic`` run over
every task of the demo suite is queued through ``runs.queue.dispatch.queue_run`` once both clusters
are up. Both clusters share the database, the broker, ``SECRET_KEY`` and the data root, as
workers on separate machines would. When every episode has ended (within ``--timeout``), the
clusters are stopped and the check fails unless every episode completed on its first attempt
with one prompt and contiguous steps, one task per episode ran, no task ran twice, and both
clusters ran some of them. Exits 0 on success, 1 with the reasons otherwise.
"""
from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = 2
READY_TIMEOUT_SEC = 60
STOP_TIMEOUT_SEC = 30
# django-q2's worker logs "<process> processing <task name> '<function>' [<group>]" for each task it starts.
PROCESSING = re.compile(r"processing (?P<task>\S+) 'runs\.tasks\.run_episode_task' \[(?P<group>[^\]]+)\]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="T1,T2,T3,T4,T5,T6", help="demo tasks to run (default: all six)")
    parser.add_argument("--min-episodes", type=int, default=40, help="fail if the run has fewer episodes")
    parser.add_argument("--concurrency", type=int, default=8, help="the run's episodes in flight at once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for every episode")
    return parser.parse_args(argv)


def start_cluster(index: int, env: dict, log_dir: Path) -> tuple[subprocess.Popen, Path]:
    log = log_dir / f"qcluster-{index}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return process, log


def wait_until_running(clusters) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SEC
    for process, log in clusters:
        while "running." not in log.read_text(errors="replace"):
            if process.poll() is not None:
                raise SystemExit(f"qcluster exited with status {process.returncode}:\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise SystemExit(f"qcluster did not report running within {READY_TIMEOUT_SEC} s:\n{log.read_text()}")
            time.sleep(0.2)


def stop(clusters) -> None:
    for process, _ in clusters:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process, _ in clusters:
        try:
            process.wait(timeout=STOP_TIMEOUT_SEC)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_episodes(run_id: int, timeout: float, clusters) -> tuple[float, int]:
    """Wait until none of the run's episodes is pending or running; (seconds, unfinished).

    Gives up after ``timeout`` seconds, or as soon as a cluster has exited.
    """
    from runs.models import Episode, FINISHED

    started = time.monotonic()
    last = None
    while True:
        unfinished = Episode.objects.filter(run_id=run_id).exclude(status__in=FINISHED).count()
        elapsed = time.monotonic() - started
        if unfinished != last:
            print(f"  {unfinished} episodes still to end after {elapsed:.0f} s", flush=True)
            last = unfinished
        if not unfinished or elapsed > timeout or any(process.poll() is not None for process, _ in clusters):
            return elapsed, unfinished
        time.sleep(0.5)


def problems_of(run_id: int, per_cluster: list[Counter]) -> list[str]:
    """Everything that shows an episode not played exactly once; empty when all is well."""
    from django_q.models import Task

    from runs.models import Episode, Run, Status, Step

    problems = []
    run = Run.objects.get(pk=run_id)
    if run.status != Status.COMPLETED:
        problems.append(f"the run is {run.status}, not completed")
    episodes = list(Episode.objects.filter(run_id=run_id).order_by("id"))
    for episode in episodes:
        if episode.status != Status.COMPLETED:
            problems.append(f"episode {episode.pk} is {episode.status}: {episode.error_message}")
        if episode.attempt != 1:
            problems.append(f"episode {episode.pk} is at attempt {episode.attempt}")
        kinds = list(Step.objects.filter(episode=episode).order_by("index").values_list("index", "kind"))
        if [index for index, _ in kinds] != list(range(len(kinds))):
            problems.append(f"episode {episode.pk} has step indexes {[index for index, _ in kinds]}")
        prompts = sum(kind == Step.Kind.PROMPT for _, kind in kinds)
        if prompts != 1:
            problems.append(f"episode {episode.pk} has {prompts} prompt steps")

    group = f"run-{run_id}"
    tasks = list(Task.objects.filter(group=group))
    episode_ids = sorted(episode.pk for episode in episodes)
    task_episode_ids = sorted(task.args[0] for task in tasks)
    if task_episode_ids != episode_ids:
        problems.append(f"the queue's tasks were for episodes {task_episode_ids}, not one each for {episode_ids}")
    failed = [task.name for task in tasks if not task.success]
    if failed:
        problems.append(f"tasks failed: {failed}")

    started = sum(per_cluster, Counter())
    twice = sorted(name for name, count in started.items() if count > 1)
    if twice:
        problems.append(f"tasks started more than once: {twice}")
    if sum(started.values()) != len(episodes):
        problems.append(f"the clusters started {sum(started.values())} tasks for {len(episodes)} episodes")
    idle = [index for index, counts in enumerate(per_cluster) if not counts]
    if idle:
        problems.append(f"cluster(s) {idle} ran no task: the broker did not share the work")
    return problems


def tasks_started(log: Path, group: str) -> Counter:
    return Counter(
        match["task"] for match in PROCESSING.finditer(log.read_text(errors="replace")) if match["group"] == group
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    missing = [name for name in ("DATABASE_URL", "REDIS_URL") if not os.environ.get(name)]
    if missing:
        print(f"Set {' and '.join(missing)}: an empty database shared by the clusters, and the Redis broker.")
        return 1
    work = Path(tempfile.mkdtemp(prefix="eegab-two-workers-"))
    try:
        return check(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(args, work: Path) -> int:
    os.environ["EEGAB_DATA_ROOT"] = str(work / "releases")
    os.environ["EEGAB_WORKERS"] = "2"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))

    import django
    from django.core.management import call_command

    django.setup()
    from benchmark.models import Suite
    from runs import specs
    from runs.queue import dispatch
    from runs.services import create_run

    began = time.monotonic()
    call_command("migrate", verbosity=0)
    call_command("build_demo_release", stdout=io.StringIO())
    tasks = [code.strip().upper() for code in args.tasks.split(",") if code.strip()]
    run = create_run(
        suite=Suite.objects.get(name="demo"),
        model=specs.model_spec_for("baseline/heuristic"),
        tasks=tasks,
        name="two qcluster workers on Redis",
        limits={"concurrency": args.concurrency},
    )
    n_episodes = run.episodes.count()
    print(f"run {run.pk}: {n_episodes} episodes of {','.join(tasks)}, set up in {time.monotonic() - began:.0f} s")
    if n_episodes < args.min_episodes:
        print(f"FAIL: only {n_episodes} episodes (at least {args.min_episodes} wanted); give more --tasks")
        return 1

    clusters = [start_cluster(index, dict(os.environ), work) for index in range(CLUSTERS)]
    try:
        wait_until_running(clusters)
        dispatch.queue_run(run_id=run.pk)
        elapsed, unfinished = wait_for_episodes(run.pk, args.timeout, clusters)
        exited = [f"qcluster {index} exited with status {process.returncode} during the run"
                  for index, (process, _) in enumerate(clusters) if process.poll() is not None]
    finally:
        stop(clusters)
    per_cluster = [tasks_started(log, f"run-{run.pk}") for _, log in clusters]
    problems = exited + ([f"{unfinished} episodes had not ended after {elapsed:.0f} s"] if unfinished else [])
    problems += problems_of(run.pk, per_cluster)
    if problems:
        print("FAIL:", *problems, sep="\n  ")
        for _, log in clusters:
            print(f"--- {log.name}, last lines:", *log.read_text(errors="replace").splitlines()[-40:], sep="\n")
        return 1
    shares = " + ".join(str(sum(counts.values())) for counts in per_cluster)
    print(f"OK: {n_episodes} episodes played by {CLUSTERS} qcluster processes ({shares} tasks) in {elapsed:.0f} s, "
          "each exactly once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
