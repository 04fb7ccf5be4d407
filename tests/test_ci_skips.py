"""Under ``CI=true`` a skipped test fails the run (``tests/ci_skips.py``); elsewhere it stays a skip."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = '''
import pytest

def test_runs():
    pass

def test_skips_inside():
    pytest.skip("no Chromium here")

@pytest.mark.skipif(True, reason="no driver here")
def test_skipped_by_mark():
    pass

@pytest.mark.xfail(reason="known", run=False)
def test_expected_to_fail():
    pass


@pytest.fixture
def official_package():
    pytest.skip("the official package is not installed")


def test_of_the_official_package(official_package):
    pass
'''


def run_sample(tmp_path, ci):
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.ci_skips", "-p", "no:cacheprovider", "-p", "no:django",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_sample.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def summary(result):
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("ci", [None, "false"])
def test_outside_ci_a_skip_is_a_skip(tmp_path, ci):
    result = run_sample(tmp_path, ci)
    assert result.returncode == 0, result.stdout
    assert "1 passed, 3 skipped, 1 xfailed" in summary(result)


def test_under_ci_a_skip_fails_with_its_reason(tmp_path):
    result = run_sample(tmp_path, "true")
    assert result.returncode == 1, result.stdout
    # a skip inside the test fails it; a skip mark fails its set-up (an error); the official package may skip
    assert summary(result).startswith("1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error in ")
    assert "skipped under CI=true, where every test must run: no Chromium here" in result.stdout
    assert "skipped under CI=true, where every test must run: no driver here" in result.stdout
