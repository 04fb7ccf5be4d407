"""The loop's prepared statements read and write exactly what their ORM equivalents do (on SQLite and PostgreSQL)."""
from decimal import Decimal

import pytest
from django.db.models import Q
from django.utils import timezone

from runs import db
from runs.episode.engine import EPISODE_DEFERRED, EPISODE_RELATED, load_episode
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step

STEP_COLUMNS = [field.attname for field in Step._meta.concrete_fields if not field.primary_key]
EPISODE_COLUMNS = [field.attname for field in Episode._meta.concrete_fields]


@pytest.fixture
def episodes(run):
    return list(run.episodes.order_by("id"))


def stored_step(episode, index):
    return Step.objects.filter(episode=episode, index=index).values(*STEP_COLUMNS).get()


STEPS = [
    {"kind": Step.Kind.PROMPT, "result": {"messages": [{"role": "user", "content": "Record ünïcode µV"}]}},
    {
        "kind": Step.Kind.AGENT_MESSAGE, "text": "thinking", "reasoning": "alpha?", "prompt_tokens": 120,
        "completion_tokens": 7, "cache_read_tokens": 100, "latency_ms": 12.5, "cost_usd": Decimal("0.00012345"),
        "result": {"action": "tool_call", "tool_calls": [{"id": "c0", "arguments": "{}"}], "final_answer": None},
    },
    {"kind": Step.Kind.TOOL_CALL, "tool_name": "compute_psd", "arguments": {"tmin": 0, "channels": None},
     "result": {"status": "ok", "content": [1, 2.5, None]}, "text": "[Tool Result]\n{...}", "error": ""},
    {"kind": Step.Kind.ERROR, "error": "provider attempt 1 failed", "arguments": None, "result": None},
]  # fmt: skip


@pytest.mark.parametrize("fields", STEPS, ids=[step["kind"] for step in STEPS])
def test_insert_step_stores_the_row_step_create_stores(episodes, fields):
    through_orm, prepared = episodes[0], episodes[1]
    Step.objects.create(episode=through_orm, index=0, **fields)
    db.insert_step(Step(episode_id=prepared.pk, index=0, **fields))
    expected, got = stored_step(through_orm, 0), stored_step(prepared, 0)
    assert abs(got.pop("created_at") - expected.pop("created_at")).total_seconds() < 5
    assert got.pop("episode_id") == prepared.pk and expected.pop("episode_id") == through_orm.pk
    assert got == expected


def test_insert_step_refuses_an_index_that_is_taken(episodes):
    db.insert_step(Step(episode_id=episodes[0].pk, index=0, kind=Step.Kind.PROMPT))
    with pytest.raises(Exception, match="(?i)unique"):
        db.insert_step(Step(episode_id=episodes[0].pk, index=0, kind=Step.Kind.NUDGE))


def test_update_episode_writes_what_an_orm_update_writes_and_only_in_the_given_status(episodes):
    now = timezone.now()
    values = {"status": Status.COMPLETED, "scores": {"correct": True}, "prediction": None, "n_turns": 3,
              "cost_usd": Decimal("0.5"), "wall_time_sec": 1.25, "finished_at": now, "ended_by": "final_answer"}  # fmt: skip
    Episode.objects.filter(pk=episodes[0].pk).update(status=Status.RUNNING)
    Episode.objects.filter(pk=episodes[1].pk).update(status=Status.RUNNING)
    Episode.objects.filter(pk=episodes[0].pk, status=Status.RUNNING).update(**values)
    assert db.update_episode(episodes[1].pk, values, status=Status.RUNNING) == 1
    expected, got = (Episode.objects.values(*EPISODE_COLUMNS).get(pk=episode.pk) for episode in episodes[:2])
    for row in (expected, got):
        del row["id"], row["instance_id"], row["record_id"]
    assert got == expected

    assert db.update_episode(episodes[1].pk, {"n_turns": 9}, status=Status.RUNNING) == 0  # completed now
    assert Episode.objects.get(pk=episodes[1].pk).n_turns == 3


def test_update_episode_of_an_attempt_writes_only_while_that_attempt_runs(episodes):
    episode = episodes[0]
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING, attempt=2)
    assert db.update_episode(episode.pk, {"n_turns": 4}, status=Status.RUNNING, attempt=1) == 0
    assert db.update_episode(episode.pk, {"n_turns": 5}, status=Status.RUNNING, attempt=2) == 1
    assert Episode.objects.get(pk=episode.pk).n_turns == 5


def test_a_step_of_an_attempt_is_stored_only_while_that_attempt_runs(episodes):
    episode = episodes[0]
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING, attempt=2)
    fields = STEPS[2]
    db.insert_step(Step(episode_id=episode.pk, index=0, **fields), attempt=2)
    db.insert_step(Step(episode_id=episodes[1].pk, index=0, **fields))
    guarded, plain = stored_step(episode, 0), stored_step(episodes[1], 0)
    assert abs(guarded.pop("created_at") - plain.pop("created_at")).total_seconds() < 5
    assert guarded.pop("episode_id") == episode.pk and plain.pop("episode_id") == episodes[1].pk
    assert guarded == plain  # the same row as an unguarded insert

    for status, attempt in ((Status.RUNNING, 1), (Status.FAILED, 2), (Status.PENDING, 2)):
        Episode.objects.filter(pk=episode.pk).update(status=status)
        with pytest.raises(db.EpisodeLost, match=f"Episode {episode.pk} is no longer running as attempt {attempt}"):
            db.insert_step(Step(episode_id=episode.pk, index=1, kind=Step.Kind.NUDGE), attempt=attempt)
        Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING)
    assert list(Step.objects.filter(episode=episode).values_list("index", flat=True)) == [0]


def test_a_claim_is_taken_once(episodes):
    claim = {"status": Status.RUNNING, "started_at": timezone.now()}
    assert db.update_episode(episodes[0].pk, claim, status=Status.PENDING) == 1
    assert db.update_episode(episodes[0].pk, claim, status=Status.PENDING) == 0


def test_is_cancelled_sees_the_episode_and_its_run(run, episodes):
    first, second = episodes[0], episodes[1]
    assert not db.is_cancelled(first.pk)
    Episode.objects.filter(pk=first.pk).update(status=Status.CANCELLED)
    assert db.is_cancelled(first.pk) and not db.is_cancelled(second.pk)
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)
    assert db.is_cancelled(second.pk)
    assert not db.is_cancelled(-1)


def test_load_episode_gives_what_the_queryset_gives_with_the_same_related_objects(episodes):
    queryset = Episode.objects.select_related(*EPISODE_RELATED).defer(*EPISODE_DEFERRED)
    for episode in episodes:  # each key in turn: the compiled query takes the new key every time
        expected, got = queryset.get(pk=episode.pk), load_episode(episode.pk)
        for a, b in [(expected, got), (expected.run, got.run), (expected.run.model, got.run.model),
                     (expected.instance, got.instance), (expected.instance.task, got.instance.task),
                     (expected.instance.suite, got.instance.suite),
                     (expected.instance.suite.release, got.instance.suite.release)]:  # fmt: skip
            assert type(a) is type(b) and a.pk == b.pk
            assert a.get_deferred_fields() == b.get_deferred_fields()
            loaded = [field.attname for field in a._meta.concrete_fields if field.attname not in a.get_deferred_fields()]
            assert {name: getattr(b, name) for name in loaded} == {name: getattr(a, name) for name in loaded}
        # The release's file list is left unread, and read on demand when asked for.
        assert got.instance.suite.release.get_deferred_fields() == {"manifest", "descriptor"}
        assert got.instance.suite.release.manifest == expected.instance.suite.release.manifest
    assert load_episode(-1) is None


def test_a_prepared_query_with_other_parameters_is_refused(episodes):
    prepared = db.PreparedGet(lambda: Episode.objects.filter(Q(status="pending") | Q(n_turns=3)))
    with pytest.raises(ValueError, match="no parameter but the key"):
        prepared(episodes[0].pk)


def test_refresh_run_totals_sums_the_episodes_in_one_statement(run, episodes):
    Episode.objects.filter(pk=episodes[0].pk).update(prompt_tokens=100, completion_tokens=5, cache_read_tokens=40,
                                                     reasoning_tokens=3, cost_usd=Decimal("0.25"))  # fmt: skip
    Episode.objects.filter(pk=episodes[1].pk).update(prompt_tokens=300, cache_write_tokens=8, cost_usd=Decimal("0.5"))
    db.refresh_run_totals(run.pk)
    run.refresh_from_db()
    totals = {name: getattr(run, name) for name in TOKEN_FIELDS}
    assert totals == {"prompt_tokens": 400, "completion_tokens": 5, "cache_read_tokens": 40,
                      "cache_write_tokens": 8, "reasoning_tokens": 3}  # fmt: skip
    assert run.cost_usd == Decimal("0.75")

    Episode.objects.filter(pk=episodes[2].pk).update(prompt_tokens=10)  # tokens without a cost: unpriced
    db.refresh_run_totals(run.pk)
    run.refresh_from_db()
    assert (run.prompt_tokens, run.cost_usd) == (410, None)


def test_a_run_without_episodes_costs_nothing(run):
    run.episodes.all().delete()
    db.refresh_run_totals(run.pk)
    run.refresh_from_db()
    assert (run.prompt_tokens, run.cost_usd) == (0, Decimal("0"))
