"""Print the lowest Django version ``pyproject.toml`` allows, for CI to install (``.ci/run``).

Usage::

    python tests/ci/lowest_django.py        # e.g. 5.2 (pip's ``Django==5.2`` installs 5.2.0)

The version is the lower bound of the Django requirement among the project's dependencies
(``>=X``, ``~=X`` or ``==X``); it must itself be allowed by the whole specifier (a ``>=5.2``
with a ``!=5.2`` beside it has no lowest version to read off). Exits 1 with the reason when the
requirement is missing, has no lower bound, or its bound is excluded.
"""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOWER_BOUNDS = (">=", "~=", "==")


def lowest_allowed(specifier: SpecifierSet) -> Version:
    """The lowest version ``specifier`` allows, read off its lower bound."""
    bounds = [Version(spec.version) for spec in specifier if spec.operator in LOWER_BOUNDS]
    if not bounds:
        raise ValueError(f"the specifier {str(specifier)!r} has no lower bound (>=, ~= or ==)")
    lowest = max(bounds)
    if not specifier.contains(lowest, prereleases=True):
        raise ValueError(f"the specifier {str(specifier)!r} excludes its own lower bound {lowest}")
    return lowest


def django_specifier(pyproject: Path) -> SpecifierSet:
    """The specifier of the Django requirement among the project's dependencies in ``pyproject``."""
    dependencies = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    for line in dependencies:
        requirement = Requirement(line)
        if requirement.name.lower() == "django":
            return requirement.specifier
    raise ValueError(f"{pyproject} has no Django among its dependencies")


def main() -> int:
    try:
        print(lowest_allowed(django_specifier(ROOT / "pyproject.toml")))
    except ValueError as error:
        print(f"lowest_django: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
