"""A pytest plugin: under ``CI=true`` a skipped test fails.

CI installs everything a test needs (Chromium and its driver included), so a skip there is a test that
did not run, and the run must not pass quietly. Outside CI a skip stays a skip, with its reason.
The one exception: tests of the real official package (the ``official_package`` fixture), which CI
cannot install (it is not on a package registry); they may skip anywhere.
"""
import os

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    allowed = "official_package" in getattr(item, "fixturenames", ())
    if report.skipped and not hasattr(report, "wasxfail") and not allowed and os.environ.get("CI") == "true":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {reason}"
