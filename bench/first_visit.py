"""Benchmark: a first visit's load time and bytes, in headless Chromium with an empty cache, of a served site.

Each page is opened in a new headless Debian Chromium with a profile of its own (nothing cached,
no connection kept), ``--repeat`` times, and the script prints the median time from the start of
the navigation to the end of the page's load event, the bytes the browser received for the page
and everything it loaded (headers included, as Chromium counts them), how many files it loaded,
and the largest with its Content-Encoding. Point it at a site as a visitor meets it, e.g. the
demo as the README's first command serves it (``manage.py demo``, on 127.0.0.1:8000), or a
deployment behind gunicorn.

Targets: the leaderboard's text painted within 1 s and its chart drawn within 2.5 s, and the
demo's pages without a chart (the runs list, the login page) load no plotly.js. ``--mbps`` limits
the link, to see what the bytes cost off loopback.

    python bench/first_visit.py [--url http://127.0.0.1:8000] [--pages / /runs/ ...] [--repeat 5] [--mbps 20]
"""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.chromium import installed, start_chromium  # noqa: E402 (after the path)

TARGET_MS = {"paint": 1000, "charts": 2500}
PAGES = ("/", "/runs/", "/accounts/login/", "/analysis/")
CHARTLESS = ("/runs/", "/accounts/login/")  # pages of the demo that draw no chart


def first_visit(url: str, *, mbps: float | None) -> dict:
    """One page opened by a fresh Chromium: its times (ms), bytes received, files, the largest file.

    ``paint_ms`` is the first contentful paint (the page's text shown), ``charts_ms`` when every chart
    of the page is drawn (None on a page without one), ``load_ms`` the end of the load event; each
    from the start of the navigation. ``mbps`` limits the link to that many megabits a second.
    """
    with tempfile.TemporaryDirectory(prefix="first-visit-") as profile:
        driver = start_chromium(Path(profile), logs={"performance": "ALL"})
        try:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
            if mbps:
                rate = mbps * 1e6 / 8  # bytes a second
                driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
                    "offline": False, "latency": 0, "downloadThroughput": rate, "uploadThroughput": rate,
                })
            driver.get(url)
            times = driver.execute_async_script(TIMES)
            files = received_files(driver.get_log("performance"), site=url.split("/", 3)[:3])
        finally:
            driver.quit()
    largest = max(files.values(), key=lambda file: file["bytes"])
    return {
        **times,
        "bytes": sum(file["bytes"] for file in files.values()),
        "files": len(files),
        "largest": largest,
        "plotly": any("plotly" in file["url"] for file in files.values()),
    }


# Run once the page has loaded (WebDriver's get returns then): waits for the charts and for the first
# contentful paint (a light page may load before its first frame), then reads the times.
TIMES = """
const done = arguments[arguments.length - 1];
const charts = () => [...document.querySelectorAll('div.chart[data-figure]')];
let drawn = null;
const wait = () => {
  if (charts().some(chart => !chart.querySelector('svg.main-svg'))) { setTimeout(wait, 5); return; }
  drawn = drawn || performance.now();
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  if (!paint) { setTimeout(wait, 5); return; }
  const nav = performance.getEntriesByType('navigation')[0];
  done({load_ms: nav.loadEventEnd - nav.startTime, paint_ms: paint.startTime,
        charts_ms: charts().length ? drawn : null});
};
wait();
"""


def received_files(log: list[dict], *, site: list[str]) -> dict[str, dict]:
    """Each request to ``site`` (scheme, "", host): its URL, Content-Encoding and bytes received.

    The bytes are Network.loadingFinished's encodedDataLength. Chromium's own pages (its new-tab
    page loads in the same log) are left out.
    """
    origin = "/".join(site) + "/"
    files = {}
    for entry in log:
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.responseReceived" and params["response"]["url"].startswith(origin):
            headers = {name.lower(): value for name, value in params["response"]["headers"].items()}
            files[params["requestId"]] = {
                "url": params["response"]["url"], "encoding": headers.get("content-encoding", "none"), "bytes": 0,
            }
        elif message["method"] == "Network.loadingFinished" and params["requestId"] in files:
            files[params["requestId"]]["bytes"] = int(params["encodedDataLength"])
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the served site (default the demo's)")
    parser.add_argument("--pages", nargs="+", default=PAGES, help=f"paths to open (default {' '.join(PAGES)})")
    parser.add_argument("--repeat", type=int, default=5, help="first visits per page; the medians are printed")
    parser.add_argument("--mbps", type=float, help="limit the link to this many megabits a second (default: none)")
    args = parser.parse_args()
    if not installed():
        sys.exit("Needs Debian's Chromium and its driver: apt-get install chromium chromium-driver")
    site = args.url.rstrip("/")
    link = f"a {args.mbps:g} Mbit/s link" if args.mbps else "no limit on the link"
    print(f"First visits to {site}, headless Chromium, empty cache, {link}, median of {args.repeat}")
    print(f"{'page':<18} {'paint ms':>8} {'charts ms':>9} {'load ms':>8} {'bytes':>11} {'files':>5}  plotly  largest file")
    met = True
    for page in args.pages:
        visits = [first_visit(site + page, mbps=args.mbps) for _ in range(args.repeat)]
        median = {key: statistics.median(visit[key] for visit in visits) if visits[0][key] is not None else None
                  for key in ("paint_ms", "charts_ms", "load_ms")}  # fmt: skip
        last, largest = visits[-1], visits[-1]["largest"]
        charts = "-" if median["charts_ms"] is None else f"{median['charts_ms']:.0f}"
        print(
            f"{page:<18} {median['paint_ms']:>8.0f} {charts:>9} {median['load_ms']:>8.0f} {last['bytes']:>11,} "
            f"{last['files']:>5}  {'yes' if last['plotly'] else 'no':<6}  {largest['url'].removeprefix(site)} "
            f"({largest['bytes']:,} bytes, {largest['encoding']})"
        )
        if page == "/":
            met &= median["paint_ms"] <= TARGET_MS["paint"] and (median["charts_ms"] or 0) <= TARGET_MS["charts"]
        if page in CHARTLESS:
            met &= not any(visit["plotly"] for visit in visits)
    print(
        f"targets: the leaderboard painted within {TARGET_MS['paint']} ms and its chart drawn within "
        f"{TARGET_MS['charts']} ms, "
        f"{' and '.join(CHARTLESS)} without plotly.js: {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
