"""Fixtures the tests of runs/ share."""
import pytest

from benchmark.models import ModelSpec
from runs.episode.transcript import STEP_RESULTS
from runs.models import Step
from runs.services import create_run
from tests.runs.test_protocol import OUTPUT_SCHEMAS


@pytest.fixture
def random_run(suite):
    """A ``baseline/random`` run of T1, T2 and T3 on the conftest suite, not played yet."""
    model = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    return create_run(suite=suite, model=model, tasks=["T1", "T2", "T3"], name="random run")


@pytest.fixture
def official_suite(suite):
    """The conftest suite with the official output schemas on its instances."""
    for instance in suite.instances.select_related("task"):
        instance.expected_output_schema = OUTPUT_SCHEMAS[instance.task.code]
        instance.save()
    return suite


@pytest.fixture
def steps_keep_their_shapes(db, request):
    """After the test, every stored step's ``result`` has its kind's shape (``runs.episode.transcript``)."""
    yield
    if request.node.get_closest_marker("steps_by_hand"):
        return
    for kind, result in Step.objects.values_list("kind", "result"):
        shape = STEP_RESULTS.get(kind)
        if shape is not None:
            assert set(result) <= set(shape.__annotations__), (kind, result)
            assert shape.__required_keys__ <= set(result), (kind, result)
