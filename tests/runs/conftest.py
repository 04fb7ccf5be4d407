"""Fixtures the tests of runs/ share."""
import pytest

from tests.runs.test_protocol import OUTPUT_SCHEMAS


@pytest.fixture
def official_suite(suite):
    """The conftest suite with the official output schemas on its instances."""
    for instance in suite.instances.select_related("task"):
        instance.expected_output_schema = OUTPUT_SCHEMAS[instance.task.code]
        instance.save()
    return suite
