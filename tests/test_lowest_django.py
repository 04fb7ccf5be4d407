"""CI installs the lowest Django ``pyproject.toml`` allows, read off its requirement (``tests/ci/lowest_django.py``)."""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.ci.lowest_django import lowest_allowed

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("specifier", "lowest"),
    [(">=5.2,<5.3", "5.2"), ("<6,>=5.1,>=5.2.2", "5.2.2"), ("~=5.2.3", "5.2.3"), ("==5.2.4", "5.2.4")],
)
def test_the_lowest_version_is_the_highest_lower_bound(specifier, lowest):
    assert lowest_allowed(SpecifierSet(specifier)) == Version(lowest)


@pytest.mark.parametrize(
    ("specifier", "reason"),
    [("<5.3", "has no lower bound"), (">=5.2,!=5.2.0,<5.3", "excludes its own lower bound 5.2")],
)
def test_a_specifier_without_an_allowed_lower_bound_is_refused(specifier, reason):
    with pytest.raises(ValueError, match=reason):
        lowest_allowed(SpecifierSet(specifier))


def test_the_script_prints_the_lowest_django_of_pyproject():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (specifier,) = [Requirement(line).specifier for line in dependencies if Requirement(line).name.lower() == "django"]
    result = subprocess.run(
        [sys.executable, "tests/ci/lowest_django.py"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lowest = Version(result.stdout.strip())
    lower_bounds = [Version(spec.version) for spec in specifier if spec.operator in (">=", "~=", "==")]
    assert specifier.contains(lowest) and lowest == max(lower_bounds)
