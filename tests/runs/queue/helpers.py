"""Helpers the queue's tests share: a run's episodes in order, an episode left as a killed worker leaves it, a model run."""
from datetime import timedelta

from django.utils import timezone

from benchmark.models import ModelSpec
from runs.models import Episode, Status, Step
from runs.services import append_step, create_run
from tests.runs.test_protocol import OUTPUT_SCHEMAS


def episodes_of(run):
    return list(run.episodes.order_by("id"))


def abandon(episode, *, seconds_ago=3600, steps=2):
    """Leave ``episode`` as a killed worker would: running, a few steps in, silent for a while."""
    then = timezone.now() - timedelta(seconds=seconds_ago)
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING, started_at=then, heartbeat_at=then)
    for kind in [Step.Kind.PROMPT, Step.Kind.AGENT_MESSAGE][:steps]:
        append_step(episode=episode, kind=kind, result={"messages": [], "protocol": "text", "tools": None})
    episode.refresh_from_db()
    return episode


def model_run(suite, api_base, *, tasks=("T1",), limits=None):
    for instance in suite.instances.select_related("task"):
        instance.expected_output_schema = OUTPUT_SCHEMAS[instance.task.code]
        instance.save()
    model, _ = ModelSpec.objects.get_or_create(name="fake", provider_model="openai/fake-model")
    return create_run(
        suite=suite, model=model, tasks=list(tasks), api_base=api_base, api_key_env="FAKE_LLM_KEY",
        settings={"temperature": 0, "max_tokens": 64, "tool_protocol": "text", "timeout_sec": 5},
        limits=limits or {},
    )  # fmt: skip
