"""Fixtures the interchange tests share."""
import pytest

from tests.runs.demo_suite import import_demo


@pytest.fixture
def demo():
    return import_demo()
