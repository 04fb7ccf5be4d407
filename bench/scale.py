"""Benchmark at scale: many long recordings played at once, their statistics kept, reads that never write.

1. **Recordings.** Generated once under ``bench/out/scale/`` (each in a process of its own):
   16 Sleep-EDF-like nights of 8-10 h (7 channels, EEG and EOG at 100 Hz) and 16 CHB-MIT-like
   one-hour records (23 channels at 256 Hz), every file distinct (its own seed). They become
   the suite ``scale`` (a T6 instance per night, a T5 per hour record) in a fresh SQLite file,
   and ``manage.py precompute_records scale`` computes their statistics, in its own process.
2. **First call.** In a fresh process, the first statistics-reading call on a night and on an
   hour record (the statistics kept), as a worker that just started makes it.
3. **Default transport.** 32 concurrent episodes, one per recording (``run_sync`` on 32
   threads, which make their tool calls in a process per processor), each a realistic session of 13-15 tool calls (whole-record windowed features,
   band power, PSD, noise, transients, correlation, asymmetry) scripted by a fake
   OpenAI-compatible server in its own process that answers every request after 200 ms;
   meanwhile another process requests the leaderboard, task, run and API pages 200 times,
   counting the INSERT, UPDATE and DELETE statements they make and timing them.
4. **litellm on two workers.** The same episodes through litellm (``--transport litellm``), the
   model named as a hosted one that litellm prices (``HOSTED_MODEL``),
   queued to two ``qcluster`` processes of 16 workers each (one per episode) that
   share the SQLite file and a Redis broker of this benchmark's own (``redis-server`` from the
   system), as two machines would, once every worker has warmed up.

The ideal wall time is the model's latency alone: (tool calls + 1) × 200 ms of the longest
session; throughput is ideal / measured. Targets: first call <= 50 ms; tool p95 < 100 ms;
throughput >= 70 % of ideal on each path; peak RSS of a worker < 1.5 GB; 0 writes from GETs;
leaderboard p95 < 300 ms during the run.

Run: ``python bench/scale.py`` (``--episodes`` to play fewer, ``--skip-workers`` to skip part 4).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "bench" / "out" / "scale"
STATS = OUT / "record-stats"
NIGHTS = [(f"night-{index:02d}.edf", 8 + index % 3) for index in range(16)]  # 8, 9 or 10 hours
HOURS = [f"hour-{index:02d}.edf" for index in range(16)]
LATENCY_SEC = 0.2
GETS = 200
# One worker per episode each cluster plays: a cluster pulls a task only for a free worker
# (runs.queue.dispatch.cluster_broker), so the 32 tasks go 16 to each. (Before, a cluster could hold
# two tasks beyond its busy workers, and each had four spare workers so that no episode waited.)
WORKERS_PER_CLUSTER = 16
# Part 4 stands for a hosted provider's model, which litellm's price map lists (an unlisted name
# costs litellm about 2 ms more a call: it tries every way to price it and formats the failure).
HOSTED_MODEL = "openai/gpt-4o-mini"

EEG, EEG2, EOG = "EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal"
TEMPORAL = ["F7-T7", "T7-P7", "F8-T8", "T8-P8"]


# ── scripted sessions ─────────────────────────────────────────────────────────────────────────


def night_script(record_id: str, hours: int) -> list[tuple[str, dict]]:
    """A T6 session: montage, quality, whole-night screens, then a few epochs in detail."""
    calls = [
        ("get_recording_info", {}),
        ("get_channel_list", {}),
        ("compute_noise_metrics", {"channels": [EEG, EEG2, EOG], "line_freq": 50}),
        ("compute_band_power", {"channels": [EEG, EEG2]}),
        ("compute_psd", {"channels": [EEG]}),
        ("compute_temporal_features", {"channels": [EEG, EOG]}),
        ("compute_windowed_features", {"channels": [EEG], "features": ["delta_relative", "alpha_relative", "sigma_power"],
                                       "window_sec": 300, "step_sec": 300}),
        ("compute_windowed_features", {"channels": [EOG], "features": ["rms_uv", "zero_crossing_rate_hz"],
                                       "window_sec": 300}),
    ]
    for hour in (1, hours // 2, hours - 2):
        calls.append(("compute_windowed_features", {
            "channels": [EEG], "features": ["delta_relative", "theta_relative", "alpha_relative"],
            "window_sec": 30, "step_sec": 30, "tmin": hour * 3600, "tmax": hour * 3600 + 3600}))
    calls += [
        ("detect_transients", {"channels": [EEG], "tmin": 7200, "tmax": 7260, "min_amplitude_uv": 50}),
        ("compute_channel_correlation", {"channels": [EEG, EEG2, EOG], "tmin": 3600, "tmax": 3630}),
        ("compute_asymmetry", {}),
        ("compute_band_power", {"channels": [EEG], "tmin": 5400, "tmax": 5430}),
    ]
    return [(name, {"record_id": record_id, **arguments}) for name, arguments in calls]


def hour_script(record_id: str) -> list[tuple[str, dict]]:
    """A T5 session: montage, quality, a whole-hour screen, then candidate periods."""
    calls = [
        ("get_channel_list", {}),
        ("get_recording_info", {}),
        ("compute_noise_metrics", {}),
        ("compute_band_power", {"channels": TEMPORAL}),
        ("compute_windowed_features", {"channels": TEMPORAL[:2], "features": ["rms_uv", "line_length_uv_s"],
                                       "window_sec": 30}),
        ("compute_windowed_features", {"channels": TEMPORAL[2:], "features": ["beta_relative", "theta_relative"],
                                       "window_sec": 60}),
        ("compute_psd", {"channels": TEMPORAL[:2]}),
        ("compute_temporal_features", {"channels": TEMPORAL}),
        ("detect_transients", {"channels": TEMPORAL[:2], "tmin": 900, "tmax": 960}),
        ("compute_channel_correlation", {"channels": TEMPORAL, "tmin": 900, "tmax": 930}),
        ("compute_asymmetry", {"tmin": 900, "tmax": 960}),
        ("compute_band_power", {"tmin": 2400, "tmax": 2460}),
        ("compute_windowed_features", {"channels": ["F7-T7"], "features": ["rms_uv"], "window_sec": 5,
                                       "tmin": 2400, "tmax": 2520}),
    ]
    return [(name, {"record_id": record_id, **arguments}) for name, arguments in calls]


def session(record_id: str, plan: dict) -> tuple[list[tuple[str, dict]], dict]:
    """The tool calls and the final answer of one episode, from its plan (``{"task", ...}``)."""
    from runs.baselines.common import hypnogram_answer

    if plan["task"] == "T6":
        return night_script(record_id, plan["hours"]), hypnogram_answer(["N2"] * plan["n_epochs"])
    answer = {"action": "final_answer", "seizure_events": [{"onset_sec": 900.0, "offset_sec": 960.0}]}
    return hour_script(record_id), answer


def _serve(connection, plans: dict, delay_sec: float) -> None:
    import gc
    import re

    from runs.protocol import TOOL_RESULT_PREFIX
    from tests.runs.fake_llm import FakeLLM, text

    record = re.compile(r"Record ID\*\*: `([^`]+)`")

    class ScriptedSessions(FakeLLM):
        """Plays each episode's session: the episode is known by the record id in its prompt."""

        def _next_reply(self, request, headers):
            messages = request.get("messages") or []
            results = sum(message.get("role") == "user" and str(message.get("content", "")).startswith(TOOL_RESULT_PREFIX)
                          for message in messages)  # fmt: skip
            record_id = record.search(" ".join(str(message.get("content", "")) for message in messages[:2])).group(1)
            calls, answer = session(record_id, plans[record_id])
            if results < len(calls):
                name, arguments = calls[results]
                action = {"action": "tool_call", "tool_name": name, "arguments": arguments}
            else:
                action = answer
            return {**text(json.dumps(action)), "delay": delay_sec}

    gc.freeze()
    server = ScriptedSessions().start()
    connection.send(server.api_base)
    connection.recv()
    server.stop()


class ModelServer:
    """The scripted model server in a process of its own (it must not share the episodes' GIL)."""

    def __init__(self, plans: dict, delay_sec: float):
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, plans, delay_sec), daemon=True)

    def __enter__(self) -> "ModelServer":
        self._process.start()
        self.api_base = self._parent.recv()
        return self

    @property
    def pid(self) -> int:
        return self._process.pid

    def cpu_sec(self) -> float:
        """The processor time the server has used so far (it stands in for a remote provider's), seconds."""
        return tree_cpu_sec([self._process.pid])

    def __exit__(self, *exc):
        self._parent.send("stop")
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()


# ── the recordings, the suite and their statistics ───────────────────────────────────────────


def make_recordings() -> None:
    """Write every missing recording, each in a process of its own (a night's arrays take 1 GB)."""
    todo = [("night", name, hours) for name, hours in NIGHTS] + [("hour", name, 1) for name in HOURS]
    for kind, name, hours in todo:
        if (OUT / name).exists():
            continue
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--write", kind, name, str(hours)], check=True, cwd=ROOT)
        print(f"  wrote {name} ({(OUT / name).stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - started:.1f} s",
              flush=True)


def write_one(kind: str, name: str, hours: int) -> None:
    import warnings

    from bench.tools import make_chb_recording, make_sleep_recording

    seed = 7000 + int(name.split("-")[1].split(".")[0]) + (100 if kind == "hour" else 0)
    with warnings.catch_warnings():  # pyedflib warns that a forced record duration may change rates; it does not
        warnings.simplefilter("ignore", UserWarning)
        (make_sleep_recording if kind == "night" else make_chb_recording)(OUT / name, hours=hours, seed=seed)


def environment(database: Path, **extra) -> dict:
    """The environment of every process of this benchmark: one SQLite file, the kept statistics."""
    return {**os.environ, "EEGAB_BENCH_SQLITE": str(database), "EEGAB_STATS_DIR": str(STATS), "DEBUG": "false",
            "SECRET_KEY": "bench-scale-not-secret", "EEGAB_API_ANON_RATE": "1000000/min",
            "OPENAI_API_KEY": "sk-fake-model", **extra}  # fmt: skip


def setup_django() -> None:
    """Configure Django on the benchmark's SQLite file (``EEGAB_BENCH_SQLITE``) and start it."""
    for name in ("DATABASE_URL",):
        os.environ.pop(name, None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = os.environ["EEGAB_BENCH_SQLITE"]
    import django

    django.setup()


def make_suite():
    """The suite ``scale``: a T6 instance per night, a T5 instance per hour record."""
    from benchmark.models import Instance, Release, Suite, Task

    release = Release.objects.create(name="scale", version="1", source=str(OUT), is_synthetic=True)
    suite = Suite.objects.create(name="scale", release=release, description="bench/scale.py")
    t5, t6 = Task.objects.get(code="T5"), Task.objects.get(code="T6")
    instances = []
    for position, (name, hours) in enumerate(NIGHTS):
        n_epochs = hours * 120
        instances.append(Instance(
            suite=suite, task=t6, position=position, scenario_id=f"c6_sleep_SC4{position:03d}E0", record_id=f"SC4{position:03d}E0",
            subject=f"SC4{position:02d}", sfreq=100.0, n_channels=7, duration_sec=hours * 3600.0, n_epochs=n_epochs,
            recording_path=name,
            reference={"label": "sleep_session", "epoch_labels_aasm": ["N2"] * n_epochs, "n_epochs_total": n_epochs},
        ))  # fmt: skip
    for position, name in enumerate(HOURS):
        instances.append(Instance(
            suite=suite, task=t5, position=position, scenario_id=f"c5_seizure_chb{position + 1:02d}a_01", record_id=f"chb{position:02d}_01",
            subject=f"chb{position:02d}", sfreq=256.0, n_channels=23, duration_sec=3600.0, recording_path=name,
            reference={"label": "seizure", "has_seizure": True, "n_seizures": 1, "seizure_events": [[900.0, 960.0]]},
        ))  # fmt: skip
    Instance.objects.bulk_create(instances)
    return suite


def manage(database: Path, *arguments: str, **kwargs) -> subprocess.CompletedProcess:
    """``manage.py`` in a process of its own, on the benchmark's database."""
    return subprocess.run([sys.executable, __file__, "--manage", *arguments], cwd=ROOT, env=environment(database),
                          **kwargs)  # fmt: skip


def first_call_ms(database: Path) -> dict:
    """The first statistics-reading call on a night and on an hour record, in a fresh process."""
    done = subprocess.run([sys.executable, __file__, "--first-call"], cwd=ROOT, env=environment(database),
                          check=True, capture_output=True, text=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_call_child() -> None:
    setup_django()
    from tools_app import call_tool, tool_specs

    tool_specs()  # a worker has the tools loaded before its first episode
    figures = {}
    for label, name, tool, arguments in (("night", NIGHTS[0][0], "compute_band_power", {"channels": [EEG]}),
                                         ("hour", HOURS[0], "compute_noise_metrics", {})):
        started = time.perf_counter()
        result = call_tool(OUT / name, tool, {"record_id": "r", **arguments}, record_id="r")
        figures[label] = 1000 * (time.perf_counter() - started)
        assert "error" not in result, result
    print(json.dumps(figures))


# ── reads during a run ───────────────────────────────────────────────────────────────────────


def reader_child(run_id: int, count: int, interval: float) -> None:
    """Request the public pages ``count`` times while the run plays; print their writes and times."""
    setup_django()
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.db import connection
    from django.urls import reverse

    pages = {"leaderboard": reverse("leaderboard:index"), "task": reverse("leaderboard:task", args=["T5"]) + "?suite=scale",
             "run": reverse("leaderboard:run", args=[run_id]), "API board": reverse("api:leaderboard") + "?suite=scale",
             "API run": reverse("api:run", args=[run_id]), "progress": reverse("leaderboard:run_progress", args=[run_id])}  # fmt: skip
    labels = list(pages)
    client = Client()
    client.get(pages["leaderboard"], secure=True)  # a web worker serves many requests: its first one's imports do not count
    cpu_started = time.process_time()
    times, writes, statuses = {label: [] for label in labels}, [], []
    for index in range(count):
        label = labels[index % len(labels)]
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(pages[label], secure=True)
            times[label].append(time.perf_counter() - started)
        statuses.append(response.status_code)
        writes += [query["sql"][:80] for query in queries.captured_queries
                   if query["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
        time.sleep(interval)
    print(json.dumps({"times": times, "writes": writes, "bad_statuses": [s for s in statuses if s != 200],
                      "cpu_sec": time.process_time() - cpu_started}))


# ── the runs ─────────────────────────────────────────────────────────────────────────────────


def scale_run(suite, *, episodes: int, api_base: str, transport: str, model: str = "openai/fake-model"):
    from runs.services import create_run
    from runs.specs import model_spec_for

    run = create_run(
        suite=suite, model=model_spec_for(model), tasks=["T5", "T6"], api_base=api_base,
        settings={"temperature": 0, "max_tokens": 4096, "tool_protocol": "text", "transport": transport,
                  "timeout_sec": 120},
        limits={"concurrency": episodes},
        name=f"scale ({transport})",
    )  # fmt: skip
    # Nights and hour records alternately, so that a smaller --episodes still plays both.
    ordered = sorted(run.episodes.select_related("instance__task"),
                     key=lambda episode: (episode.instance.position, episode.instance.task.code))  # fmt: skip
    run.episodes.exclude(id__in=[episode.pk for episode in ordered[:episodes]]).delete()
    return run


def plans_of(run) -> dict:
    """Each episode's record id → what its scripted session needs to know."""
    plans = {}
    for episode in run.episodes.select_related("instance__task"):
        instance = episode.instance
        plans[episode.record_id] = {"task": instance.task.code, "n_epochs": instance.n_epochs,
                                    "hours": round(instance.duration_sec / 3600)}  # fmt: skip
    return plans


def ideal_seconds(run) -> float:
    plans = plans_of(run)
    longest = max(len(session(record_id, plan)[0]) for record_id, plan in plans.items())
    return (longest + 1) * LATENCY_SEC


def played_figures(run, count: int = 3) -> dict:
    """A played run's tool latencies (sorted, ms), its ``count`` slowest tools (p95 and median) and its turns."""
    from django.db.models import Sum

    from runs.models import Step

    by_tool: dict[str, list[float]] = {}
    for name, latency in Step.objects.filter(episode__run=run, kind=Step.Kind.TOOL_CALL).values_list("tool_name", "latency_ms"):
        by_tool.setdefault(name, []).append(latency)
    ranked = sorted(by_tool.items(), key=lambda item: -percentile(item[1], 95))[:count]
    return {
        "tools": sorted(latency for values in by_tool.values() for latency in values),
        "slowest": ", ".join(f"{name} p95 {percentile(values, 95):.0f} / p50 {percentile(values, 50):.0f}"
                             for name, values in ranked),  # fmt: skip
        "turns": run.episodes.aggregate(turns=Sum("n_turns"))["turns"],
    }


def check_played(run) -> None:
    from runs.models import Status

    run.refresh_from_db()
    bad = list(run.episodes.exclude(status=Status.COMPLETED).values_list("id", "status", "error_message")[:5])
    if bad:
        raise SystemExit(f"episodes did not complete: {bad}")
    short = [e.pk for e in run.episodes.all() if e.n_tool_calls < 10]
    if short:
        raise SystemExit(f"episodes {short} made fewer than 10 tool calls: the script did not play")


def peak_rss_mb(pid="self") -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM:")), 0.0)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def default_transport(suite, database: Path, episodes: int) -> dict:
    from runs.queue import local, worker

    run = scale_run(suite, episodes=episodes, api_base="http://127.0.0.1:9/v1", transport="auto")
    plans = plans_of(run)
    with ModelServer(plans, LATENCY_SEC) as server:
        run.api_base = server.api_base
        run.save(update_fields=["api_base"])
        ideal = ideal_seconds(run)
        reader = subprocess.Popen(
            [sys.executable, __file__, "--reader", str(run.pk), str(GETS), str(max(0.0, ideal / GETS))],
            cwd=ROOT, env=environment(database), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        worker.settle_process(model=run.model.provider_model)  # as a worker is, before its first episode
        started, cpu_started, server_started = time.perf_counter(), time.process_time(), server.cpu_sec()
        with ForkedChildren(others=[server.pid, reader.pid]) as tool_processes:
            local.run_sync(run_id=run.pk, concurrency=episodes)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        tools_cpu = tree_cpu_sec(tool_processes.pids)  # run_sync's tool processes, forked for this run
        server_cpu = server.cpu_sec() - server_started
        reads = json.loads(reader.communicate(timeout=600)[0].strip().splitlines()[-1])
    check_played(run)
    return {"wall": wall, "ideal": ideal, "rss": max(peak_rss_mb(), tool_processes.peak_rss_mb), "reads": reads,
            "cpu": cpu, "tools_cpu": tools_cpu, "server_cpu": server_cpu, **played_figures(run)}


class ForkedChildren:
    """Watches this process's children other than ``others`` (run_sync's tool processes): their ids and peak RSS."""

    def __init__(self, *, others):
        import threading

        self.others, self.peak_rss_mb, self.pids = {str(pid) for pid in others}, 0.0, set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        me = str(os.getpid())
        while not self._stop.wait(0.2):
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    parent = stat.read_text().rsplit(")", 1)[1].split()[1]
                except (OSError, IndexError):
                    continue
                if parent == me and stat.parent.name not in self.others:
                    self.pids.add(int(stat.parent.name))
                    self.peak_rss_mb = max(self.peak_rss_mb, peak_rss_mb(stat.parent.name))

    def __enter__(self) -> "ForkedChildren":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def redis_server(workdir: Path):
    """A private Redis broker (``redis-server`` from the system) on a free port; (process, url)."""
    import socket

    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("part 4 needs redis-server (apt-get install redis-server), or run with --skip-workers")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                                "--dir", str(workdir)], stdout=subprocess.DEVNULL)  # fmt: skip
    time.sleep(0.5)
    return process, f"redis://127.0.0.1:{port}/0"


def two_workers(suite, database: Path, episodes: int, workdir: Path, redis_url: str) -> dict:
    from runs.models import Run
    from runs.queue import dispatch
    from runs.queue.worker import WARMED_UP

    ready = WARMED_UP.rsplit("; ", 1)[-1]  # the end of the line each worker logs once it has warmed up

    run = scale_run(suite, episodes=episodes, api_base="http://127.0.0.1:9/v1", transport="litellm", model=HOSTED_MODEL)
    clusters = []
    try:
        with ModelServer(plans_of(run), LATENCY_SEC) as server:
            run.api_base = server.api_base
            run.save(update_fields=["api_base"])
            env = environment(database, EEGAB_WORKERS=str(WORKERS_PER_CLUSTER))
            logs = [workdir / f"qcluster-{index}.log" for index in range(2)]
            for log in logs:
                clusters.append(subprocess.Popen([sys.executable, __file__, "--manage", "qcluster"], cwd=ROOT, env=env,
                                                 stdout=log.open("wb"), stderr=subprocess.STDOUT))  # fmt: skip
            # The run is queued once every worker has said it is ready (runs.queue.worker.warm_worker), as a run
            # queued to clusters started earlier finds them: a worker's warm-up (about 120 ms of processor time)
            # belongs to the cluster's start, and 32 of them would otherwise compete with the run's first turns.
            deadline = time.monotonic() + 120
            while sum(log.read_text(errors="replace").count(ready) for log in logs) < 2 * WORKERS_PER_CLUSTER:
                if time.monotonic() > deadline:
                    raise SystemExit("the qclusters' workers did not all warm up:\n" + logs[0].read_text())
                time.sleep(0.2)
            cluster_pids = [process.pid for process in clusters]
            cpu_started, server_started = tree_cpu_sec(cluster_pids), server.cpu_sec()
            queued_at, started = time.time(), time.perf_counter()
            dispatch.queue_run(run_id=run.pk)
            peak = 0.0
            while Run.objects.filter(pk=run.pk, finished_at__isnull=True).exists():  # its last worker finishes it
                peak = max(peak, *(worker_rss_mb(process.pid) for process in clusters))
                if time.perf_counter() - started > 1200:
                    raise SystemExit("the two workers did not finish within 20 minutes")
                time.sleep(0.25)
            cpu = tree_cpu_sec(cluster_pids) - cpu_started
            server_cpu = server.cpu_sec() - server_started
    finally:
        for process in clusters:
            process.send_signal(signal.SIGTERM)
        for process in clusters:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
    check_played(run)
    # The run's end is the time its last episode's worker finished it (Run.finished_at), not the poll of
    # this loop that sees it, which comes up to a quarter of a second later.
    wall = run.finished_at.timestamp() - queued_at
    return {"wall": wall, "ideal": ideal_seconds(run), "rss": peak, "cpu": cpu, "cpu_of": "the two clusters' processes",
            "server_cpu": server_cpu,
            **played_figures(run)}


def tree_cpu_sec(pids) -> float:
    """Processor time used so far by processes ``pids`` and all their descendants (a cluster's sentinel and workers), seconds."""
    parents, ticks = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[stat.parent.name] = fields[1]
        ticks[stat.parent.name] = int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    tree = {str(pid) for pid in pids}
    grown = True
    while grown:  # the cluster forks a sentinel, which forks the workers
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= found
        grown = bool(found)
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def worker_rss_mb(cluster_pid: int) -> float:
    """The largest resident memory among a qcluster's processes (it and its worker children), MB."""
    largest = 0.0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if int(fields.get("PPid", "0").strip()) == cluster_pid or status.parent.name == str(cluster_pid):
            largest = max(largest, int(fields.get("VmRSS", "0 kB").split()[0]) / 1024)
    return largest


# ── report ───────────────────────────────────────────────────────────────────────────────────


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def report_run(label: str, figures: dict, targets: list) -> None:
    tools = figures["tools"]
    ratio = figures["ideal"] / figures["wall"]
    print(f"   {label}: {figures['wall']:.2f} s against an ideal {figures['ideal']:.2f} s · {ratio:.0%} of ideal · "
          f"{len(tools)} tool calls: p50 {percentile(tools, 50):.1f} ms, p95 {percentile(tools, 95):.1f} ms, "
          f"max {max(tools):.1f} ms · peak RSS of a worker {figures['rss']:.0f} MB")  # fmt: skip
    print(f"   slowest tools (ms): {figures['slowest']}")
    if "cpu" in figures:
        of = figures.get("cpu_of", "the episodes' process")
        pool = f"; of its tool processes {figures['tools_cpu']:.2f} s" if "tools_cpu" in figures else ""
        print(f"   processor time of {of}: {figures['cpu']:.2f} s, "
              f"{1000 * figures['cpu'] / figures['turns']:.1f} ms a turn ({figures['turns']} turns){pool}; "
              f"of the scripted model server (on the same cores, unlike a remote provider): {figures['server_cpu']:.2f} s")
    targets += [(f"{label}: throughput >= 70% of ideal", ratio >= 0.70),
                (f"{label}: tool p95 < 100 ms", percentile(tools, 95) < 100),
                (f"{label}: peak RSS of a worker < 1.5 GB", figures["rss"] < 1536)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=32, help="episodes at once, one per recording (default 32)")
    parser.add_argument("--skip-workers", action="store_true", help="skip part 4 (litellm on two qcluster processes)")
    options = parser.parse_args()
    if not 2 <= options.episodes <= len(NIGHTS) + len(HOURS):
        raise SystemExit(f"--episodes must be between 2 and {len(NIGHTS) + len(HOURS)}")

    print(f"scale benchmark · SQLite, DEBUG off · {os.cpu_count()} CPUs")
    print("\n1. Recordings (generated once under bench/out/scale)")
    OUT.mkdir(parents=True, exist_ok=True)
    make_recordings()
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    database = workdir / "db.sqlite3"
    redis = None
    if not options.skip_workers:  # the broker of part 4, which every process here must know from the start
        redis, os.environ["REDIS_URL"] = redis_server(workdir)
    os.environ.update(environment(database))
    try:
        setup_django()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        suite = make_suite()
        shutil.rmtree(STATS, ignore_errors=True)
        started = time.perf_counter()
        manage(database, "precompute_records", "scale", check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        size = sum(path.stat().st_size for path in STATS.rglob("*.stats"))
        print(f"   precompute_records scale: {len(NIGHTS) + len(HOURS)} recordings in {time.perf_counter() - started:.1f} s "
              f"({size / 1e6:.0f} MB of statistics)")  # fmt: skip

        targets = []
        first = first_call_ms(database)
        print(f"\n2. First statistics call in a fresh process: night {first['night']:.1f} ms, hour record {first['hour']:.1f} ms")
        targets.append(("first call <= 50 ms", max(first.values()) <= 50))

        print(f"\n3. {options.episodes} concurrent episodes, default transport (direct HTTP), model latency "
              f"{LATENCY_SEC * 1000:.0f} ms, {GETS} page and API requests meanwhile from another process")
        figures = default_transport(suite, database, options.episodes)
        report_run("default transport", figures, targets)
        reads = figures["reads"]
        board = reads["times"]["leaderboard"]
        every = [t for times in reads["times"].values() for t in times]
        print(f"   reads: {len(every)} GETs, {len(reads['writes'])} writes, {len(reads['bad_statuses'])} not 200 · "
              f"leaderboard p95 {1000 * percentile(board, 95):.0f} ms, all pages p95 {1000 * percentile(every, 95):.0f} ms · "
              f"{reads['cpu_sec']:.2f} s of processor time")
        print("   each page's median / max (ms): " + ", ".join(
            f"{page} {1000 * percentile(times, 50):.0f} / {1000 * max(times):.0f}" for page, times in reads["times"].items()))
        for sql in reads["writes"][:5]:
            print(f"     write: {sql}")
        targets += [("0 writes from GETs", not reads["writes"] and not reads["bad_statuses"]),
                    ("leaderboard p95 < 300 ms during the run", percentile(board, 95) < 0.300)]

        if not options.skip_workers:
            print(f"\n4. The same through litellm on two qcluster processes ({WORKERS_PER_CLUSTER} workers each, Redis), "
                  f"as {HOSTED_MODEL}")
            figures = two_workers(suite, database, options.episodes, workdir, os.environ["REDIS_URL"])
            report_run("litellm, two workers", figures, targets)
        print("\ntargets: " + "; ".join(f"{name}: {verdict(met)}" for name, met in targets))
    finally:
        if redis is not None:
            redis.terminate()
        shutil.rmtree(workdir, ignore_errors=True)


def child() -> bool:
    """The modes this script runs itself in, as a separate process; False when it is the main one."""
    if len(sys.argv) > 1 and sys.argv[1] == "--write":
        write_one(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--first-call":
        first_call_child()
    elif len(sys.argv) > 1 and sys.argv[1] == "--reader":
        reader_child(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--manage":
        setup_django()
        from django.core.management import execute_from_command_line

        execute_from_command_line(["manage.py", *sys.argv[2:]])
    else:
        return False
    return True


if __name__ == "__main__":
    if not child():
        main()
