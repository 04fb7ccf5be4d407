"""``--database-tests-only`` (CI's PostgreSQL job) keeps every test that reaches the database and drops the others."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ["tests/tools_app/test_pyramid.py", "tests/leaderboard/explorer/test_record_browser.py",
         "tests/leaderboard/explorer/test_browser_record.py"]


def collected(*options) -> list[str]:
    output = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                             *options, *FILES], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in output.splitlines() if "::" in line]


def test_only_the_tests_that_use_the_database_are_kept():
    every, kept = collected(), collected("--database-tests-only")
    dropped = sorted(set(every) - set(kept))
    assert dropped and all(name.startswith("tests/tools_app/test_pyramid.py::") for name in dropped)
    assert len(dropped) == len([name for name in every if name.startswith("tests/tools_app/test_pyramid.py::")])
    # Kept: a module marked django_db (even its test of a recording made in memory), and the browser tests,
    # which reach it through live_server.
    assert any(re.search(r"test_record_browser.py::test_a_notch", name) for name in kept)
    assert any(name.startswith("tests/leaderboard/explorer/test_browser_record.py::") for name in kept)
