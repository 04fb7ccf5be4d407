"""A run started from the site plays out of the box: ``manage.py demo`` as a newcomer starts it, in a browser.

The demo runs in a process of its own, exactly as from a fresh clone, on its own SQLite file and
data root (the session's demo release is copied in, to skip the ten-second build): it serves the
site and starts its queue worker. Staff log in, start ``baseline/random`` on two T3 instances from
the form, and the run finishes and appears in /runs/ and on the leaderboard without another
command; SIGTERM to the demo then ends the server and its worker, process group and all.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from benchmark.management.commands.build_demo_release import DEMO_VERSION
from tests.leaderboard.test_browser import browser, no_console_errors, pytestmark, wait_for  # noqa: F401 (fixture, marks)
from tests.runs.demo_suite import demo_release
from tests.runs.worker import wait_until

STAFF, PASSWORD = "staff", "a-staff-password-for-the-demo"
RUN_SEC = 90  # the worker's start and the two episodes, on a busy machine



@dataclass
class DemoSite:
    url: str
    process: subprocess.Popen
    log: Path

    def worker_pid(self) -> int:
        return int(re.search(r"Started a queue worker \(python manage\.py qcluster, process (\d+)\)",
                             self.log.read_text()).group(1))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def demo_site(tmp_path):
    """``manage.py demo`` serving on a free port, with a staff account made by ``createsuperuser``."""
    releases = tmp_path / "releases"
    shutil.copytree(demo_release(), releases / f"demo-{DEMO_VERSION}")
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "EEGAB_DATA_ROOT": str(releases),
            "EEGAB_STATS_DIR": "", "DJANGO_SUPERUSER_PASSWORD": PASSWORD}  # fmt: skip
    port, log = free_port(), tmp_path / "demo.log"
    with open(log, "wb") as output:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "demo", "--addrport", f"127.0.0.1:{port}"],
            cwd=settings.BASE_DIR, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )
    site = DemoSite(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        wait_until(lambda: answers(site.url + "/"), timeout=120, what="the demo to serve", interval=0.5)
        subprocess.run(
            [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", STAFF, "--email", "s@example.org"],
            cwd=settings.BASE_DIR, env=env, check=True, capture_output=True,
        )
        yield site
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def log_in(browser, site: DemoSite, next_path: str) -> None:
    browser.get(f"{site.url}/accounts/login/?next={next_path}")
    browser.find_element(By.ID, "id_username").send_keys(STAFF)
    browser.find_element(By.ID, "id_password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "form [type=submit]").click()


def start_random_baseline_on_two_t3_instances(browser) -> int:
    """Fill in the new-run form and queue the run; return its id, from the page it lands on."""
    wait_for(browser, "#new-run-form")
    model = Select(browser.find_element(By.ID, "id_model"))
    [random_baseline] = [option.text for option in model.options if "baseline/random" in option.text]
    model.select_by_visible_text(random_baseline)
    suite = Select(browser.find_element(By.ID, "id_suite"))
    [demo] = [option.text for option in suite.options if option.text.startswith("demo ")]
    suite.select_by_visible_text(demo)
    for box in browser.find_elements(By.CSS_SELECTOR, "input[name=tasks]"):
        if box.is_selected() != (box.get_attribute("value") == "T3"):
            box.click()
    browser.find_element(By.ID, "id_limit").send_keys("2")
    browser.find_element(By.CSS_SELECTOR, "#new-run-form button[type=submit]").click()
    WebDriverWait(browser, 30).until(lambda _: re.search(r"/runs/(\d+)/$", browser.current_url))
    return int(re.search(r"/runs/(\d+)/$", browser.current_url).group(1))


def test_a_run_started_from_the_site_plays_and_is_listed_without_another_command(browser, demo_site):
    log_in(browser, demo_site, "/runs/new/")
    run_id = start_random_baseline_on_two_t3_instances(browser)

    # The page polls its progress and reloads once the run has ended: the demo's own worker plays it.
    WebDriverWait(browser, RUN_SEC).until(
        lambda _: browser.find_element(By.ID, "run-status").text == "completed", message=demo_site.log.read_text()
    )
    assert browser.find_elements(By.ID, "no-worker") == []
    progress = browser.find_element(By.ID, "progress").text
    assert re.search(r"Episodes done\s+2 / 2", progress, re.IGNORECASE)
    [t3] = [row for row in browser.find_elements(By.CSS_SELECTOR, "#scores tbody tr") if row.text.startswith("T3")]
    assert "not scored yet" not in t3.text and re.search(r"\b2 / 2\b", t3.text)  # judged against its two instances

    browser.get(demo_site.url + "/runs/")
    row = wait_for(browser, f"tr[data-run='{run_id}']")[0]
    assert "completed" in row.text and "2 / 2" in row.text and STAFF in row.text
    assert re.search(r"T3 \d\.\d{3} Macro-F1", row.text)

    browser.get(demo_site.url + "/")
    assert wait_for(browser, f"a[href='/runs/{run_id}/']")

    # SIGTERM to the demo ends the server, and its worker with it.
    worker = demo_site.worker_pid()
    demo_site.process.send_signal(signal.SIGTERM)
    assert demo_site.process.wait(timeout=30) == 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the queue worker outlived the demo")
