"""Benchmark: server time, page weight and queries of the public pages on a full-size database.

Seeds a temporary SQLite file with the official suite (1,072 instances, T6 nights at their real
length), the paper's 29 published rows, and models × 1,072 episodes of ~10 steps each
(bulk_create), plus one 100-step T5 episode with large tool results. Then it requests the
leaderboard, the analysis page, three task pages, a run page and the 100-step episode with
django.test.Client (and the matching API endpoints), first with ``--small`` models, then with
``--models``, to show that the number of queries per page does not grow with the data. Then it adds
runs (without summaries) until the database holds ``--search-episodes`` episodes, and requests the
search across runs (``/episodes/``, ``/api/episodes/``) with each kind of filter, and its exports.

Episodes get failure modes and evidence coverage by rule (a share of each task's episodes per
mode), as ``classify_episodes`` would store them.

Targets: leaderboard, analysis and two full runs compared < 300 ms; episode < 500 ms and < 1.5 MB;
each search on 100,000 episodes < 500 ms, but a text in the replies < 1.5 s (no index serves a
substring: every reply is read, ~110 MB on that database); queries constant.

    python bench/web.py [--models 30] [--small 5] [--search-episodes 100000] [--repeat 5] [--keep]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TARGETS_MS = {"leaderboard": 300, "analysis": 300, "episode": 500, "compare runs": 300}
SEARCH_TARGET_MS = 500
TEXT_SEARCH_TARGET_MS = 1500
EPISODE_MAX_BYTES = 1_500_000
STEPS_PER_EPISODE = 10
LONG_EPISODE_STEPS = 100
LONG_RESULT_CHARS = 16_000  # a windowed-features result near the 8,000-token budget


def configure(database: Path) -> None:
    """Point Django at a fresh SQLite file, production-like (DEBUG off), before it starts."""
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("SECRET_KEY", "bench-web-not-secret")
    os.environ["EEGAB_API_ANON_RATE"] = "1000000/min"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    # Production storage serves the collected, hashed static files (as `manage.py collectstatic` makes them).
    call_command("collectstatic", interactive=False, verbosity=0)


def seed_models(suite, first: int, count: int) -> list:
    """``count`` more models with complete runs; each run's summary refreshed as a finished run's is."""
    from leaderboard.summaries.scoring import refresh_run_summary
    from tests.leaderboard.boards import add_run, model_spec

    runs = []
    for index in range(first, first + count):
        started = time.perf_counter()
        model = model_spec(f"Bench model {index:02d}", family=f"Family {index % 6}", is_open_weight=index % 3 > 0)
        run = add_run(suite=suite, model=model, skill=0.3 + 0.6 * index / 30, steps_per_episode=STEPS_PER_EPISODE,
                      result_chars=600, seed=index)
        seeded = time.perf_counter()
        refresh_run_summary(run)
        refreshed = time.perf_counter()
        runs.append(run)
        print(f"  model {index + 1:2d}: seeded in {seeded - started:5.2f} s, summary in {refreshed - seeded:5.2f} s",
              flush=True)
    return runs


def seed_episodes(suite, first: int, episodes: int) -> int:
    """Runs of more models (their summaries not refreshed: the search does not read them) until the
    database holds ``episodes`` episodes; returns the number of models."""
    from runs.models import Episode
    from tests.leaderboard.boards import add_run, model_spec

    index = first
    while Episode.objects.count() < episodes:
        add_run(suite=suite, model=model_spec(f"Bench model {index:02d}", family=f"Family {index % 6}"),
                skill=0.3 + 0.6 * (index % 30) / 30, steps_per_episode=STEPS_PER_EPISODE, result_chars=600, seed=index)
        index += 1
    return index


#: The failure modes the episodes get for the search, by the remainder of their id divided by ten:
#: (remainder, tasks, codes). Signal episodes get an evidence coverage of (id mod 100) / 100.
BENCH_MODES = (
    (0, ("T2", "T3", "T4", "T5", "T6"), ("no_tool_call",)),
    (1, ("T2", "T3", "T4", "T5", "T6"), ("repeated_call",)),
    (2, ("T5",), ("low_coverage", "missed_all_seizures")),
    (3, ("T6",), ("constant_hypnogram", "low_coverage")),
    (4, ("T2", "T3", "T4", "T5", "T6"), ("tool_errors", "rescope_loop")),
)


def mark_failure_modes() -> None:
    """Failure modes and evidence coverage stored on every episode by ``BENCH_MODES``, as classification stores them."""
    from django.db.models import F, FloatField
    from django.db.models.functions import Cast, Mod

    from runs.episode.engine import failure_codes
    from runs.models import Episode

    Episode.objects.update(failure_modes=[], failure_codes=failure_codes([]), evidence_coverage=None)
    Episode.objects.exclude(instance__task__code="T1").update(
        evidence_coverage=Cast(Mod(F("id"), 100), FloatField()) / 100)
    for remainder, tasks, codes in BENCH_MODES:
        modes = [{"code": code, "steps": [2]} for code in codes]
        Episode.objects.annotate(remainder=Mod(F("id"), 10)).filter(
            remainder=remainder, instance__task__code__in=tasks).update(
            failure_modes=modes, failure_codes=failure_codes(modes))


def search_pages(run) -> dict[str, str]:
    """The searches to measure: each kind of filter, a sort, a text found nowhere (every reply read), the exports."""
    from django.urls import reverse

    page, api = reverse("leaderboard:episodes"), reverse("api:episodes")
    csv, jsonl = (reverse("leaderboard:episodes_export", args=[fmt]) for fmt in ("csv", "jsonl"))
    return {
        "search": page,
        "search task+mode": f"{page}?task=T5&failure_mode=low_coverage",
        "search outcome": f"{page}?outcome=wrong&task=T3",
        "search tool ×3": f"{page}?tool=compute_windowed_features&tool_min=3",
        "search ranges+sort": f"{page}?coverage_max=0.2&tool_calls_min=4&sort=-tokens",
        "search run+model": f"{page}?run={run.pk}&model={run.model.name}&ended_by=final_answer",
        "search text (none)": f"{page}?q=a+reply+nobody+wrote",
        "api search": f"{api}?task=T6&sort=coverage&page_size=100",
        "export csv (T5)": f"{csv}?task=T5&failure_mode=missed_all_seizures",
        "export jsonl (run)": f"{jsonl}?run={run.pk}",
    }


def long_episode(run):
    """Replace the steps of the run's first T5 episode with a 100-step trajectory."""
    from runs.models import Step
    from tests.leaderboard.boards import trajectory_steps

    episode = run.episodes.filter(instance__task__code="T5").select_related("instance").first()
    episode.steps.all().delete()
    Step.objects.bulk_create(trajectory_steps(episode, "T5", LONG_EPISODE_STEPS, LONG_RESULT_CHARS))
    return episode


def pages(run, episode, other) -> dict[str, str]:
    """The URLs to measure: the pages (when the pages engineer's routes exist) and the API."""
    from django.urls import NoReverseMatch, reverse

    urls = {}
    page_routes = {
        "leaderboard": ("leaderboard:index", [], ""),
        "analysis": ("leaderboard:analysis", [], "?suite=eegagentbench"),
        "task T2": ("leaderboard:task", ["T2"], "?suite=eegagentbench"),
        "task T5": ("leaderboard:task", ["T5"], "?suite=eegagentbench"),
        "task T6": ("leaderboard:task", ["T6"], "?suite=eegagentbench"),
        "run": ("leaderboard:run", [run.pk], ""),
        "episode": ("leaderboard:episode", [episode.pk], ""),
        "compare runs": ("leaderboard:compare_runs", [], f"?a={run.pk}&b={other.pk}"),
    }
    for label, (name, args, query) in page_routes.items():
        try:
            urls[label] = reverse(name, args=args) + query
        except NoReverseMatch:
            print(f"  (no route {name}: page {label} not measured)")
    urls |= {
        "api leaderboard": reverse("api:leaderboard") + "?suite=eegagentbench",
        "api run": reverse("api:run", args=[run.pk]),
        "api episode": reverse("api:episode", args=[episode.pk]),
        "api instances": reverse("api:instances") + "?suite=eegagentbench",
        "api compare runs": reverse("api:compare_runs") + f"?a={run.pk}&b={other.pk}",
    }
    return urls


def measure(urls: dict[str, str], repeat: int) -> dict[str, dict]:
    """Median and worst server time, page weight and query count of each URL (after one warm-up)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    results = {}
    for label, url in urls.items():
        response = client.get(url, secure=True)  # as deployed: with DEBUG off, plain HTTP is redirected
        if response.status_code != 200:
            raise SystemExit(f"{label} {url}: HTTP {response.status_code} {response.get('Location', '')}")
        times, queries = [], []
        for _ in range(repeat):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url, secure=True)
                content = b"".join(response.streaming_content) if response.streaming else response.content
                times.append((time.perf_counter() - started) * 1000)
            queries.append(len(captured))
        results[label] = {
            "median_ms": statistics.median(times),
            "max_ms": max(times),
            "bytes": len(content),
            "queries": max(queries),
        }
    return results


def selector_times(run, episode, other, repeat: int) -> dict[str, float]:
    """Median time of the selectors alone (no template, no middleware); two runs compared afresh, not kept."""
    from leaderboard.analysis import selectors as analysis_reads
    from leaderboard.api import selectors as api_reads
    from leaderboard.board import ranking
    from leaderboard.comparison import selectors as comparison_reads
    from leaderboard.summaries import pairs
    from leaderboard.summaries.scoring import current_summary, stored_summary

    def compared_afresh():
        a, b = comparison_reads.compared_runs(run.pk, other.pk)
        return pairs.compare_summaries(*(current_summary(r, stored=stored_summary(r)) for r in (a, b)), keep=False)

    calls = {
        "leaderboard()": lambda: ranking.leaderboard(),
        "analysis()": lambda: analysis_reads.analysis(),
        "task_analysis(T2)": lambda: analysis_reads.task_analysis(task="T2"),
        "run_detail()": lambda: api_reads.run_detail(run_id=run.pk),
        "episode_detail()": lambda: api_reads.episode_detail(episode_id=episode.pk),
        "two runs compared": compared_afresh,
    }
    times = {}
    for label, call in calls.items():
        call()
        samples = []
        for _ in range(repeat):
            started = time.perf_counter()
            call()
            samples.append((time.perf_counter() - started) * 1000)
        times[label] = statistics.median(samples)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=30, help="models on the large database (default 30)")
    parser.add_argument("--small", type=int, default=5, help="models on the small database (default 5)")
    parser.add_argument("--search-episodes", type=int, default=100_000,
                        help="episodes on the database the search is measured on (default 100,000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed requests per page (default 5)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary database and print its path")
    args = parser.parse_args()
    if not 0 < args.small < args.models:
        parser.error("need 0 < --small < --models")

    folder = Path(tempfile.mkdtemp(prefix="eegab-bench-web-"))
    database = folder / "bench.sqlite3"
    try:
        configure(database)
        from leaderboard.board.published import import_published
        from runs.models import Episode, Step
        from tests.leaderboard.boards import official_suite

        def described(n_models: int) -> str:
            return f"{n_models} models, {Episode.objects.count():,} episodes, {Step.objects.count():,} steps"

        started = time.perf_counter()
        suite = official_suite(epochs_per_night=None)
        import_published()
        print(f"Suite of {suite.instances.count()} instances and the paper's 29 rows in "
              f"{time.perf_counter() - started:.1f} s")
        runs = seed_models(suite, 0, args.small)
        episode = long_episode(runs[0])
        urls, searches = pages(runs[0], episode, runs[1]), search_pages(runs[0])

        sizes = {}
        for n_models in (args.small, args.models):
            if n_models > len(runs):
                runs += seed_models(suite, len(runs), n_models - len(runs))
            mark_failure_modes()
            label = described(n_models)
            print(f"\nMeasuring with {label} ({database.stat().st_size / 1e6:.0f} MB database)", flush=True)
            sizes[n_models] = (label, measure(urls | searches, args.repeat),
                               selector_times(runs[0], episode, runs[1], args.repeat))

        started = time.perf_counter()
        n_models = seed_episodes(suite, len(runs), args.search_episodes)
        mark_failure_modes()
        searched_on = described(n_models)
        print(f"\nSeeded to {searched_on} in {time.perf_counter() - started:.0f} s "
              f"({database.stat().st_size / 1e6:.0f} MB database); measuring the search", flush=True)
        searched = measure(searches, args.repeat)

        small, large = sizes[args.small][1], sizes[args.models][1]
        failures = []

        def report(results: dict, baseline: dict, targets: dict, baseline_label: str, label: str) -> None:
            print(f"\n{'page':20s} {'median ms':>10s} {'max ms':>8s} {'KB':>9s} "
                  f"{'queries @' + baseline_label:>11s} {'@' + label:>7s}  target")
            for page, result in results.items():
                target = targets.get(page)
                notes = []
                if target is not None:
                    ok = result["median_ms"] < target
                    notes.append(f"< {target} ms {'ok' if ok else 'MISSED'}")
                    failures.extend([] if ok else [f"{page} time"])
                if page == "episode":
                    ok = result["bytes"] < EPISODE_MAX_BYTES
                    notes.append(f"< 1.5 MB {'ok' if ok else 'MISSED'}")
                    failures.extend([] if ok else ["episode weight"])
                constant = baseline[page]["queries"] == result["queries"]
                notes.append("queries constant" if constant else "QUERIES GROW")
                failures.extend([] if constant else [f"{page} queries"])
                print(f"{page:20s} {result['median_ms']:10.1f} {result['max_ms']:8.1f} {result['bytes'] / 1024:9.1f} "
                      f"{baseline[page]['queries']:11d} {result['queries']:7d}  {', '.join(notes)}")

        print(f"\nPages and API at {sizes[args.models][0]}:")
        report({page: large[page] for page in urls}, small, TARGETS_MS, str(args.small), str(args.models))
        print(f"\nThe search at {searched_on}:")
        search_targets = dict.fromkeys(searches, SEARCH_TARGET_MS) | {"search text (none)": TEXT_SEARCH_TARGET_MS}
        report(searched, small, search_targets, str(args.small), str(n_models))
        print(f"\nSelectors alone, median ms ({sizes[args.models][0]}):")
        for label, value in sizes[args.models][2].items():
            print(f"  {label:20s} {value:8.1f}")
        print("\nAll targets met." if not failures else f"\nMissed: {', '.join(failures)}.")
    finally:
        if args.keep:
            print(f"Database kept at {database}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
