"""Benchmark of the run harness: its own overhead per turn, and the throughput of concurrent episodes.

1. **Overhead per turn.** The heuristic baseline plays every T2 record of the synthetic demo
   suite and its longest T6 night, with the model calls (``agent.respond``) and the tool calls
   timed. A turn's overhead is the wall time between one model call and the next (from the
   episode's start for the first turn, to its end for the last) minus the tool time in between:
   the claim, the step writes, the prompt, the protocol, the scoring. Target: p50 < 20 ms.
2. **Throughput.** 32 episodes at once (``runs.queue.local.run_sync`` on a pool of 32 threads,
   as ``run_benchmark --sync --concurrency 32`` plays them) against a fake OpenAI-compatible
   model server in its own process that answers every request after 200 ms: a few
   ``get_recording_info`` calls, then the answer. The model is ``openai/fake-model`` at an
   ``api_base``, a self-hosted model, so its calls go out directly over HTTP (the default,
   ``runs.model.openai_http``); the same run through litellm (``--transport litellm``) and with the
   model call replaced by a 200-ms sleep in process (no HTTP: the harness alone) are shown
   beside it. The ideal wall time is the model latency alone, (tool calls + 1) × 200 ms; the
   figure is ideal / measured. Each path is played once unmeasured at full size (imports,
   caches, the server's threads), then ``--repeats`` times; the median is reported with every
   measurement. Target (the default transport): >= 80%.

Everything runs on a fresh SQLite file (the laptop default) with ``DEBUG`` off, as deployed.
The demo release is reused from ``EEGAB_DATA_ROOT`` when built, otherwise built once (~10 s).

Run: ``python bench/runs.py`` (``--episodes``, ``--tool-calls``, ``--latency``, ``--repeats`` to vary).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup_django(database: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = str(database)
    settings.DEBUG = False
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# ── 1. overhead per turn ─────────────────────────────────────────────────────────────────────


class Timeline:
    """When each model call and tool call of one episode started and ended (perf_counter seconds)."""

    def __init__(self):
        self.model: list[tuple[float, float]] = []
        self.tools: list[tuple[float, float]] = []

    def timed(self, spans, call, *args, **kwargs):
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spans.append((started, time.perf_counter()))

    def overheads(self, started: float, ended: float) -> list[float]:
        """Harness time of each turn, in seconds: the gaps around the model calls minus the tool time in them."""
        edges = [started] + [t for span in self.model for t in span] + [ended]
        gaps = [(edges[i], edges[i + 1]) for i in range(0, len(edges), 2)]
        turns = []
        for start, end in gaps:
            tools = sum(min(b, end) - max(a, start) for a, b in self.tools if a < end and b > start)
            turns.append(end - start - tools)
        turns[-2] += turns.pop()  # the episode's ending is part of its last turn
        return turns


class TimedAgent:
    def __init__(self, agent, timeline: Timeline):
        self.agent, self.timeline = agent, timeline
        self.protocol, self.pricing = agent.protocol, agent.pricing

    def respond(self, messages, *, tools=None):
        return self.timeline.timed(self.timeline.model, self.agent.respond, messages, tools=tools)


def timed_episode(episode) -> tuple[list[float], Timeline]:
    from runs.agents import build_agent
    from runs.episode.opening import episode_tools
    from runs.queue.worker import play_episode

    timeline = Timeline()
    agent = TimedAgent(build_agent(episode.run, episode.instance, record_id=episode.record_id), timeline)
    tools = episode_tools(episode)
    tool_runner = lambda *args: timeline.timed(timeline.tools, tools, *args)  # noqa: E731
    started = time.perf_counter()
    played = play_episode(episode_id=episode.pk, agent=agent, tool_runner=tool_runner)
    ended = time.perf_counter()
    assert played.status == "completed", played.error_message
    return timeline.overheads(started, ended), timeline


def bench_overhead(suite) -> dict:
    from runs.services import create_run
    from runs.specs import model_spec_for

    spec = model_spec_for("baseline/heuristic")
    longest_night = suite.instances.filter(task__code="T6").order_by("-n_epochs", "-duration_sec").first()
    warm_up = create_run(suite=suite, model=spec, tasks=["T2"], limit=1)
    timed_episode(warm_up.episodes.get())
    results = {}
    night = f"T6 (longest demo night, {longest_night.n_epochs} epochs)"
    for label, task in [("T2 (every demo record)", "T2"), (night, "T6")]:
        run = create_run(suite=suite, model=spec, tasks=[task])
        episodes = run.episodes.select_related("run__model", "instance__task")
        if task == "T6":
            episodes = episodes.filter(instance=longest_night)
        turns, model, tools = [], 0.0, 0.0
        for episode in episodes:
            overheads, timeline = timed_episode(episode)
            turns += overheads
            model += sum(b - a for a, b in timeline.model)
            tools += sum(b - a for a, b in timeline.tools)
        results[label] = {
            "episodes": len(episodes),
            "turns": len(turns),
            "p50_ms": 1000 * statistics.median(turns),
            "p95_ms": 1000 * percentile(turns, 95),
            "max_ms": 1000 * max(turns),
            "model_s": model,
            "tools_s": tools,
        }
    return results


# ── 2. throughput ────────────────────────────────────────────────────────────────────────────


class SleepingModel:
    """The fake model's script in process, with a sleep for the latency: the harness alone."""

    protocol = "text"

    def __init__(self, *, tool_calls: int, latency: float):
        from runs.cost import Pricing

        self.tool_calls, self.latency = tool_calls, latency
        self.pricing = Pricing.free()

    def respond(self, messages, *, tools=None):
        from runs.cost import TokenUsage
        from runs.model.reply import Reply
        from runs.protocol import TOOL_RESULT_PREFIX
        from tests.runs.episode_server import FIRST_CLASS, RECORD_ID

        time.sleep(self.latency)
        results = sum(m["role"] == "user" and m["content"].startswith(TOOL_RESULT_PREFIX) for m in messages)
        if results < self.tool_calls:
            arguments = {"record_id": RECORD_ID.search(messages[1]["content"]).group(1)}
            action = {"action": "tool_call", "tool_name": "get_recording_info", "arguments": arguments}
        else:
            label = FIRST_CLASS.search(messages[1]["content"]).group(1)
            action = {"action": "final_answer", "classification": label, "findings": ["nothing unusual"]}
        return Reply(content=json.dumps(action), usage=TokenUsage(1000, 50), finish_reason="stop")


def concurrent_run(suite, *, model, api_base: str, episodes: int, transport: str = "auto"):
    """A run of ``episodes`` short classification episodes (T2, then T3 to make up the number)."""
    from runs.services import create_run

    run = create_run(
        suite=suite, model=model, tasks=["T2", "T3"], api_base=api_base,
        settings={"temperature": 0, "max_tokens": 256, "tool_protocol": "text", "transport": transport,
                  "timeout_sec": 60},
        limits={"concurrency": episodes},
    )  # fmt: skip
    keep = list(run.episodes.order_by("instance__task__code", "instance__position").values_list("id", flat=True))
    if len(keep) < episodes:
        raise SystemExit(f"the demo suite has only {len(keep)} T2 and T3 records")
    run.episodes.exclude(id__in=keep[:episodes]).delete()  # a benchmark-only trim to exactly N episodes
    return run


def play_concurrently(run, *, episodes: int, model_stand_in=None) -> tuple[float, float]:
    """Wall and CPU seconds to play the run's episodes on ``episodes`` threads.

    Without ``model_stand_in`` this is ``run_sync`` itself. With it, the same per-episode path
    (``play_episode`` on a pool thread) is given the stand-in as its agent.
    """
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    from runs import services
    from runs.queue import local, worker

    def play(episode_id):
        try:
            return worker.play_episode(episode_id=episode_id, agent=model_stand_in)
        finally:
            connections.close_all()

    wall, cpu = time.perf_counter(), time.process_time()
    if model_stand_in is None:
        finished = local.run_sync(run_id=run.pk, concurrency=episodes)
    else:
        worker.settle_process(model=run.model.provider_model)
        with ThreadPoolExecutor(max_workers=episodes) as pool:
            list(pool.map(play, run.episodes.values_list("id", flat=True)))
        finished = services.finish_run(run_id=run.pk)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert finished.status == "completed", finished.progress()
    return wall, cpu


def bench_throughput(suite, *, episodes: int, tool_calls: int, latency: float, repeats: int) -> dict:
    from runs.model.routing import choose_transport
    from runs.specs import model_spec_for
    from tests.runs.episode_server import serve_in_subprocess

    os.environ.setdefault("OPENAI_API_KEY", "sk-fake-model")  # the fake server ignores the key
    model = model_spec_for("openai/fake-model")
    turns = episodes * (tool_calls + 1)
    ideal = (tool_calls + 1) * latency
    results = {}
    with serve_in_subprocess(tool_calls=tool_calls, delay_sec=latency) as api_base:
        paths = [
            ("direct HTTP (the default transport for this self-hosted model)", "auto", None),
            ("through litellm (--transport litellm)", "litellm", None),
            ("harness only (model call = in-process sleep)", "auto",
             SleepingModel(tool_calls=tool_calls, latency=latency)),
        ]  # fmt: skip
        for label, transport, stand_in in paths:
            resolved = choose_transport(model.provider_model, api_base, transport)
            if stand_in is None and resolved != ("litellm" if transport == "litellm" else "direct"):
                raise SystemExit(f"{model.provider_model} at {api_base} resolved to the {resolved} transport")
            # One unmeasured run of the same size first: imports, caches and the server's threads are
            # one-time costs; what is measured is the steady state of a long run.
            play_concurrently(concurrent_run(suite, model=model, api_base=api_base, episodes=episodes,
                                             transport=transport), episodes=episodes, model_stand_in=stand_in)
            measured = []
            for _ in range(repeats):
                run = concurrent_run(suite, model=model, api_base=api_base, episodes=episodes, transport=transport)
                measured.append(play_concurrently(run, episodes=episodes, model_stand_in=stand_in))
            walls = sorted(wall for wall, _ in measured)
            wall = statistics.median(walls)
            results[label] = {"wall_s": wall, "walls": walls, "ideal_s": ideal, "ratio": ideal / wall,
                              "cpu_ms_turn": 1000 * statistics.median(cpu for _, cpu in measured) / turns}  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--tool-calls", type=int, default=3, help="tool calls per throughput episode (default 3)")
    parser.add_argument("--latency", type=float, default=0.2, help="fake model latency in seconds (default 0.2)")
    parser.add_argument("--repeats", type=int, default=3, help="measured runs of each path; the median is shown")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-runs-") as workdir:
        setup_django(Path(workdir) / "db.sqlite3")
        from tests.runs.demo_suite import import_demo

        suite = import_demo()
        print(f"harness benchmark · SQLite, DEBUG off · {os.cpu_count()} CPUs · demo suite ({suite.instances.count()} "
              "instances, synthetic)")  # fmt: skip

        print("\n1. Overhead per turn, excluding model and tool time (heuristic baseline)")
        for label, figures in bench_overhead(suite).items():
            verdict = "meets" if figures["p50_ms"] < 20 else "MISSES"
            print(f"   {label}: {figures['episodes']} episode(s), {figures['turns']} turns · "
                  f"p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, max {figures['max_ms']:.1f} ms "
                  f"(model {figures['model_s']:.2f} s, tools {figures['tools_s']:.2f} s in all) · "
                  f"{verdict} p50 < 20 ms")  # fmt: skip

        print(f"\n2. Throughput of {options.episodes} concurrent episodes, {options.tool_calls} tool calls each, "
              f"model latency {options.latency * 1000:.0f} ms")  # fmt: skip
        figures = bench_throughput(suite, episodes=options.episodes, tool_calls=options.tool_calls,
                                   latency=options.latency, repeats=options.repeats)  # fmt: skip
        for index, (label, result) in enumerate(figures.items()):
            verdict = "meets" if result["ratio"] >= 0.8 else "MISSES"
            spread = " / ".join(f"{wall:.2f}" for wall in result["walls"])
            print(f"   {label}: median {result['wall_s']:.2f} s of {len(result['walls'])} ({spread} s) against an "
                  f"ideal {result['ideal_s']:.2f} s · {result['ratio']:.0%} of ideal · "
                  f"{result['cpu_ms_turn']:.1f} ms CPU per turn"
                  + (f" · {verdict} >= 80%" if index == 0 else ""))  # fmt: skip


if __name__ == "__main__":
    main()
