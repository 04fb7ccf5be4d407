"""Runs, episodes and steps: uniqueness, the append-only step record, retries and run creation."""
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from benchmark.models import Instance, ModelSpec, Task
from runs import db
from runs.cost import installed_litellm_version
from runs.models import AppendOnlyError, Episode, Run, Status, Step
from runs.services import append_step, create_run, reset_episode_for_retry

pytestmark = pytest.mark.django_db


@pytest.fixture
def episode(run):
    return run.episodes.get(instance__task__code="T5")


def append_three_steps(episode):
    append_step(episode=episode, kind=Step.Kind.PROMPT, text="system and user prompt")
    append_step(
        episode=episode,
        kind=Step.Kind.TOOL_CALL,
        tool_name="get_recording_info",
        arguments={"record_id": episode.instance.record_id},
        result={"sampling_rate": 256.0},
        latency_ms=3.5,
    )
    append_step(episode=episode, kind=Step.Kind.FINAL_ANSWER, text='{"seizure_events": []}', latency_ms=9.0)


def test_one_episode_per_instance_per_run(episode):
    with pytest.raises(IntegrityError), transaction.atomic():
        Episode.objects.create(run=episode.run, instance=episode.instance)


def test_append_step_numbers_steps_contiguously_from_zero(episode):
    append_three_steps(episode)
    assert list(episode.steps.values_list("index", "kind")) == [
        (0, "prompt"),
        (1, "tool_call"),
        (2, "final_answer"),
    ]


def test_step_indexes_restart_at_zero_after_a_retry(episode):
    append_three_steps(episode)
    episode = reset_episode_for_retry(episode=episode)
    append_step(episode=episode, kind=Step.Kind.PROMPT)
    append_step(episode=episode, kind=Step.Kind.AGENT_MESSAGE, text="thinking")
    assert list(episode.steps.values_list("index", flat=True)) == [0, 1]


def test_a_stored_step_cannot_be_changed(episode):
    step = append_step(episode=episode, kind=Step.Kind.AGENT_MESSAGE, text="first words")
    step.text = "rewritten"
    with pytest.raises(AppendOnlyError):
        step.save()
    with pytest.raises(AppendOnlyError):
        Step.objects.filter(pk=step.pk).update(text="rewritten")
    assert Step.objects.get(pk=step.pk).text == "first words"


def test_a_new_step_object_cannot_overwrite_a_stored_row(episode):
    step = append_step(episode=episode, kind=Step.Kind.AGENT_MESSAGE, text="first words")
    impostor = Step(pk=step.pk, episode=episode, index=0, kind=Step.Kind.ERROR, text="rewritten")
    with pytest.raises(IntegrityError), transaction.atomic():
        impostor.save()
    assert Step.objects.get(pk=step.pk).text == "first words"


def test_step_index_is_unique_within_an_episode(episode):
    append_step(episode=episode, kind=Step.Kind.PROMPT)
    with pytest.raises(IntegrityError), transaction.atomic():
        Step.objects.create(episode=episode, index=0, kind=Step.Kind.NUDGE)


def test_step_index_cannot_be_negative(episode):
    with pytest.raises(IntegrityError), transaction.atomic():
        Step.objects.create(episode=episode, index=-1, kind=Step.Kind.NUDGE)


def test_reset_for_retry_clears_the_outcome_and_counts_the_attempt(episode):
    append_three_steps(episode)
    Episode.objects.filter(pk=episode.pk).update(
        status=Status.FAILED,
        ended_by=Episode.EndedBy.PROVIDER_ERROR,
        error_kind=Episode.ErrorKind.INFRASTRUCTURE,
        error_message="HTTP 503 after 5 retries",
        prediction={"seizure_events": []},
        scores={"event_f1": 0.0},
        n_turns=4,
        prompt_tokens=1200,
        cost_usd=Decimal("0.0012"),
    )

    retried = reset_episode_for_retry(episode=episode)

    retried.refresh_from_db()
    assert (retried.status, retried.attempt) == (Status.PENDING, 2)
    assert retried.steps.count() == 0
    assert (retried.ended_by, retried.error_kind, retried.error_message) == ("", "", "")
    assert (retried.prediction, retried.scores, retried.n_turns, retried.prompt_tokens) == (None, {}, 0, 0)
    assert retried.cost_usd is None


def test_reset_for_retry_refuses_a_completed_episode(episode):
    append_three_steps(episode)
    Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED)
    with pytest.raises(ValueError, match="never run again"):
        reset_episode_for_retry(episode=episode)
    assert episode.steps.count() == 3


def test_create_run_makes_one_pending_episode_per_instance(suite, model_spec):
    run = create_run(suite=suite, model=model_spec, tasks=["T6", "T2", "T2"], api_key_env="OPENAI_API_KEY")
    assert run.tasks == ["T2", "T6"]
    assert run.settings == {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}
    assert run.prompt_set == "platform"  # the official package is not installed (tests/conftest.py)
    assert sorted(run.episodes.values_list("instance__task__code", "status", "attempt")) == [
        ("T2", "pending", 1),
        ("T6", "pending", 1),
    ]


def test_create_run_keeps_the_model_rates_of_litellm_map_on_its_spec_for_pages(suite, model_spec):
    hosted = ModelSpec.objects.create(name="GPT-4o", provider_model="openai/gpt-4o")
    create_run(suite=suite, model=hosted, tasks=["T2"])
    hosted.refresh_from_db()
    assert hosted.litellm_rates == {"model": "openai/gpt-4o", "litellm": installed_litellm_version(),
                                    "input": "0.0000025", "output": "0.00001"}  # fmt: skip
    hosted.provider_model = "openai/unlisted-model"  # rates are kept for the model they were taken for
    hosted.save()
    create_run(suite=suite, model=hosted, tasks=["T2"])
    hosted.refresh_from_db()
    assert hosted.litellm_rates["model"] == "openai/unlisted-model" and hosted.litellm_rates["input"] is None
    create_run(suite=suite, model=model_spec, tasks=["T2"])  # a baseline costs nothing, with no map to read
    model_spec.refresh_from_db()
    assert model_spec.litellm_rates is None


def test_create_run_limit_keeps_the_first_instances_of_each_task(suite, model_spec):
    t3 = Task.objects.get(code="T3")
    for position in (1, 2):
        Instance.objects.create(
            suite=suite, task=t3, record_id=f"rec-t3-{position}", scenario_id=f"c3_{position}", position=position
        )
    run = create_run(suite=suite, model=model_spec, tasks=["T2", "T3"], limit=2)
    assert sorted(run.episodes.values_list("instance__record_id", flat=True)) == [
        "rec-t2-7f3a",
        "rec-t3-1",
        "rec-t3-7f3a",
    ]


def test_create_run_is_all_or_nothing(suite, model_spec, monkeypatch):
    def failing_bulk_create(objs, *args, **kwargs):
        raise IntegrityError("simulated failure while creating episodes")

    monkeypatch.setattr(Episode.objects, "bulk_create", failing_bulk_create)
    with pytest.raises(IntegrityError):
        create_run(suite=suite, model=model_spec, tasks=["T1", "T2"])
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    "tasks, message",
    [([], "at least one task"), (["T2", "T9"], "no instances of T9")],
)
def test_create_run_rejects_tasks_the_suite_cannot_serve(suite, model_spec, tasks, message):
    with pytest.raises(ValueError, match=message):
        create_run(suite=suite, model=model_spec, tasks=tasks)
    assert not Run.objects.exists()


def test_create_run_refuses_an_api_key_in_place_of_its_variable_name(suite, model_spec):
    with pytest.raises(ValidationError, match="environment variable"):
        create_run(suite=suite, model=model_spec, tasks=["T1"], api_key_env="sk-proj-abc123")
    assert not Run.objects.exists()


def test_progress_counts_every_status(run):
    run.episodes.filter(instance__task__code__in=["T1", "T2"]).update(status=Status.COMPLETED)
    run.episodes.filter(instance__task__code="T3").update(status=Status.FAILED)
    assert run.progress() == {"pending": 3, "running": 0, "completed": 2, "failed": 1, "cancelled": 0}


def test_refresh_totals_sums_usage_and_reports_unpriced_cost_as_unknown(run):
    episodes = run.episodes
    episodes.filter(instance__task__code="T1").update(prompt_tokens=100, completion_tokens=5, cost_usd=Decimal("0.25"))
    episodes.filter(instance__task__code="T2").update(prompt_tokens=300, completion_tokens=7, cost_usd=Decimal("0.50"))
    db.refresh_totals(run)
    assert (run.prompt_tokens, run.completion_tokens, run.cost_usd) == (400, 12, Decimal("0.75"))

    run.episodes.filter(instance__task__code="T3").update(prompt_tokens=50)
    db.refresh_totals(run)
    run.refresh_from_db()
    assert (run.prompt_tokens, run.cost_usd) == (450, None)


def test_a_finished_episode_without_usage_or_cost_makes_the_run_unpriced_not_free(run):
    """An external agent reports no tokens: its run is "unpriced", never $0; a free baseline is $0."""
    run.episodes.update(cost_usd=Decimal("0"))
    db.refresh_totals(run)
    assert run.cost_usd == Decimal("0")

    run.episodes.filter(instance__task__code="T1").update(cost_usd=None, status="completed")
    db.refresh_totals(run)
    assert run.cost_usd is None


def test_episode_to_dict_reports_outcome_and_usage_without_the_scenario_id(episode):
    Episode.objects.filter(pk=episode.pk).update(
        status=Status.COMPLETED,
        ended_by=Episode.EndedBy.FINAL_ANSWER,
        prediction={"seizure_events": [[2280.0, 2370.0]]},
        scores={"event_f1": 1.0},
        n_tool_calls=2,
        cost_usd=Decimal("0.0123"),
    )
    episode.refresh_from_db()
    data = episode.to_dict()
    assert data["record_id"] == episode.record_id
    assert (data["task"], data["status"]) == ("T5", "completed")
    assert data["scores"] == {"event_f1": 1.0}
    assert data["usage"]["tool_calls"] == 2
    assert data["usage"]["cost_usd"] == pytest.approx(0.0123)
    assert episode.instance.scenario_id not in repr(data)
