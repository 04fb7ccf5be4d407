"""The loop's prepared statements read and write exactly what their ORM equivalents do (on SQLite and PostgreSQL).

Rows are compared as the database holds them (``raw_row``: no field converts the values read), so
a JSON ``null`` stored for an SQL ``NULL``, or another spelling of a number or a document, shows.
CI runs this module again with the lowest Django ``pyproject.toml`` allows (``.ci/run``), as
``runs.db`` leans on Django's internals.
"""
import itertools
from decimal import Decimal

import pytest
from django.db import connections, router
from django.db.models import Q, Sum
from django.utils import timezone

from runs import db
from runs.episode.engine import EPISODE_DEFERRED, EPISODE_RELATED, load_episode
from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step
from runs.services import create_run

STEP_COLUMNS = [field.attname for field in Step._meta.concrete_fields if not field.primary_key]
EPISODE_COLUMNS = [field.attname for field in Episode._meta.concrete_fields]
# An episode's own columns: what two episodes written alike have alike.
EPISODE_STATE = [name for name in EPISODE_COLUMNS if name not in ("id", "instance_id", "record_id")]


@pytest.fixture
def episodes(run):
    return list(run.episodes.order_by("id"))


@pytest.fixture
def other_run(suite, model_spec):
    """A second run on the same suite: a statement about ``run`` must leave it alone."""
    return create_run(suite=suite, model=model_spec, tasks=["T1", "T2"], name="other run")


def stored_step(episode, index):
    return Step.objects.filter(episode=episode, index=index).values(*STEP_COLUMNS).get()


def raw_row(model, pk, columns):
    """The row of ``model`` with key ``pk``: column → value as the database driver returns it."""
    connection = connections[router.db_for_read(model)]
    quote = connection.ops.quote_name
    names = ", ".join(quote(model._meta.get_field(name).column) for name in columns)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {names} FROM {quote(model._meta.db_table)} WHERE {quote('id')} = %s", [pk])
        return dict(zip(columns, cursor.fetchone(), strict=True))


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
    {"kind": Step.Kind.FINAL_ANSWER, "arguments": {}, "result": {"final_answer": {"label": "N2"}},
     "cost_usd": Decimal(0), "reasoning_tokens": 0, "cache_write_tokens": 3},
]  # fmt: skip


@pytest.mark.parametrize("fields", STEPS, ids=[step["kind"] for step in STEPS])
def test_insert_step_stores_the_row_step_create_stores(episodes, fields):
    through_orm, prepared = episodes[0], episodes[1]
    created = Step.objects.create(episode=through_orm, index=0, **fields)
    step = Step(episode_id=prepared.pk, index=0, **fields)
    db.insert_step(step)
    assert step.pk is None and step.created_at is not None  # as documented: stamped, its key left unset
    expected, got = stored_step(through_orm, 0), stored_step(prepared, 0)
    assert abs(got.pop("created_at") - expected.pop("created_at")).total_seconds() < 5
    assert got.pop("episode_id") == prepared.pk and expected.pop("episode_id") == through_orm.pk
    assert got == expected
    inserted = Step.objects.get(episode=prepared, index=0)
    assert raw_row(Step, inserted.pk, list(got)) == raw_row(Step, created.pk, list(got))


def test_insert_step_refuses_an_index_that_is_taken(episodes):
    db.insert_step(Step(episode_id=episodes[0].pk, index=0, kind=Step.Kind.PROMPT))
    with pytest.raises(Exception, match="(?i)unique"):
        db.insert_step(Step(episode_id=episodes[0].pk, index=0, kind=Step.Kind.NUDGE))


def test_update_episode_writes_what_an_orm_update_writes_and_only_in_the_given_status(episodes):
    now = timezone.now()
    values = {"status": Status.COMPLETED, "scores": {"correct": True}, "prediction": None, "n_turns": 3,
              "cost_usd": Decimal("0.5"), "wall_time_sec": 1.25, "finished_at": now, "ended_by": "final_answer",
              "final_answer": {"label": "é"}, "error_message": "", "prompt_tokens": 2**40}  # fmt: skip
    Episode.objects.filter(pk=episodes[0].pk).update(status=Status.RUNNING, prediction={"label": "x"})
    Episode.objects.filter(pk=episodes[1].pk).update(status=Status.RUNNING, prediction={"label": "x"})
    assert Episode.objects.filter(pk=episodes[0].pk, status=Status.RUNNING).update(**values) == 1
    assert db.update_episode(episodes[1].pk, values, status=Status.RUNNING) == 1
    expected, got = (Episode.objects.values(*EPISODE_STATE).get(pk=episode.pk) for episode in episodes[:2])
    assert got == expected
    assert raw_row(Episode, episodes[1].pk, EPISODE_STATE) == raw_row(Episode, episodes[0].pk, EPISODE_STATE)
    assert Episode.objects.filter(pk=episodes[1].pk, prediction__isnull=True).exists()  # SQL NULL, not JSON null

    assert db.update_episode(episodes[1].pk, {"n_turns": 9}, status=Status.RUNNING) == 0  # completed now
    assert Episode.objects.get(pk=episodes[1].pk).n_turns == 3


# An episode's (status, attempt), and the condition of a write: (status, attempt or None for any).
EPISODE_STATES = [(Status.PENDING, 1), (Status.RUNNING, 1), (Status.RUNNING, 2), (Status.COMPLETED, 2)]
CONDITIONS = [(Status.PENDING, None), (Status.RUNNING, None), (Status.RUNNING, 2), (Status.COMPLETED, 2)]


@pytest.mark.parametrize("condition", CONDITIONS, ids=[f"{status}-{attempt}" for status, attempt in CONDITIONS])
def test_update_episode_changes_the_rows_an_orm_update_changes(episodes, condition):
    status, attempt = condition
    through_orm, prepared = episodes[0], episodes[1]
    values = {"n_turns": 7, "heartbeat_at": timezone.now(), "error_message": "stalled ⏱", "scores": {}}
    orm_filter = {"status": status} | ({} if attempt is None else {"attempt": attempt})
    changed = []
    for state, state_attempt in EPISODE_STATES:
        Episode.objects.filter(pk__in=[through_orm.pk, prepared.pk]).update(
            status=state, attempt=state_attempt, n_turns=0, heartbeat_at=None, error_message="", scores={"f1": 0.5}
        )
        expected = Episode.objects.filter(pk=through_orm.pk, **orm_filter).update(**values)
        got = db.update_episode(prepared.pk, values, status=status, attempt=attempt)
        assert got == expected, (state, state_attempt)
        assert raw_row(Episode, prepared.pk, EPISODE_STATE) == raw_row(Episode, through_orm.pk, EPISODE_STATE)
        changed.append(expected)
    assert sorted(set(changed)) == [0, 1]  # the condition holds in some states and not in others
    assert db.update_episode(-1, values, status=status, attempt=attempt) == 0


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


def test_is_cancelled_answers_what_the_orm_query_answers(run, episodes, other_run):
    episode = episodes[0]
    cancelled = Q(status=Status.CANCELLED) | Q(run__status=Status.CANCELLED)
    Run.objects.filter(pk=other_run.pk).update(status=Status.CANCELLED)  # another run's status is not this one's
    answers = set()
    for run_status, episode_status in itertools.product(Status.values, repeat=2):
        Run.objects.filter(pk=run.pk).update(status=run_status)
        Episode.objects.filter(pk=episode.pk).update(status=episode_status)
        expected = Episode.objects.filter(cancelled, pk=episode.pk).exists()
        assert db.is_cancelled(episode.pk) is expected, (run_status, episode_status)
        answers.add(expected)
    assert answers == {True, False}
    assert db.is_cancelled(-1) is Episode.objects.filter(cancelled, pk=-1).exists()


# ── PreparedGet ──────────────────────────────────────────────────────────────────────────────


def assert_same_objects(expected, got, path="object"):
    """``got`` is ``expected`` as the queryset made it, and so are the related objects loaded with it.

    The class, the database and saved state, which fields are deferred, each loaded value with
    its type (a Decimal is not a float that equals it), and the related objects cached on it
    (``select_related``; a missing one cached as None), compared in turn.
    """
    assert type(got) is type(expected), path
    assert (got._state.db, got._state.adding) == (expected._state.db, expected._state.adding), path
    deferred = expected.get_deferred_fields()
    assert got.get_deferred_fields() == deferred, path
    loaded = [field.attname for field in expected._meta.concrete_fields if field.attname not in deferred]
    values = {name: (type(getattr(expected, name)), getattr(expected, name)) for name in loaded}
    assert {name: (type(getattr(got, name)), getattr(got, name)) for name in loaded} == values, path
    related = expected._state.fields_cache
    assert got._state.fields_cache.keys() == related.keys(), path
    for name, obj in related.items():
        if obj is None:
            assert got._state.fields_cache[name] is None, f"{path}.{name}"
        else:
            assert_same_objects(obj, got._state.fields_cache[name], f"{path}.{name}")


PREPARED = {
    "episode-for-the-loop": lambda: Episode.objects.select_related(*EPISODE_RELATED).defer(*EPISODE_DEFERRED),
    "episode": lambda: Episode.objects.all(),
    "run-with-its-creator": lambda: Run.objects.select_related("created_by", "model"),
    "step-some-fields": lambda: Step.objects.select_related("episode__run").only(
        "kind", "result", "cost_usd", "created_at", "episode__status", "episode__scores", "episode__run__name"
    ),
}


@pytest.fixture
def varied_rows(run, episodes, other_run, staff_user):
    """Rows whose values need each field's conversion (decimals, datetimes, JSON); a run with a creator, one without."""
    now = timezone.now()
    Episode.objects.filter(pk=episodes[0].pk).update(
        status=Status.COMPLETED, cost_usd=Decimal("0.12345678"), started_at=now, finished_at=now, wall_time_sec=2.5,
        scores={"f1": 0.5, "ok": True}, prediction={"label": "ü", "events": [[1.0, 2.5]]}, final_answer=None,
        prompt_tokens=2**40, ended_by=Episode.EndedBy.FINAL_ANSWER,
    )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(created_by=staff_user, cost_usd=Decimal("1.5"), started_at=now)
    for index, fields in enumerate(STEPS):
        Step.objects.create(episode=episodes[0], index=index, **fields)
    assert Run.objects.filter(created_by=None).exists() and Run.objects.exclude(created_by=None).exists()


@pytest.mark.parametrize("name", PREPARED)
@pytest.mark.usefixtures("varied_rows")
def test_a_prepared_get_makes_the_objects_the_queryset_makes(name, django_assert_num_queries):
    queryset = PREPARED[name]
    prepared = db.PreparedGet(queryset)
    model = queryset().model
    keys = list(model.objects.order_by("pk").values_list("pk", flat=True))
    assert len(keys) >= 2
    for pk in keys:  # each key in turn: the compiled query takes the new key every time
        expected = queryset().filter(pk=pk).first()
        with django_assert_num_queries(1):
            got = prepared(pk)
        assert_same_objects(expected, got, f"{model.__name__} {pk}")
    assert prepared(-1) is None


def test_load_episode_gives_what_the_queryset_gives_with_the_same_related_objects(episodes, django_assert_num_queries):
    queryset = Episode.objects.select_related(*EPISODE_RELATED).defer(*EPISODE_DEFERRED)
    for episode in episodes:
        expected = queryset.get(pk=episode.pk)
        with django_assert_num_queries(1):
            got = load_episode(episode.pk)
            related = [got.run.model, got.instance.task, got.instance.suite.release]  # loaded with it, no query
        assert_same_objects(expected, got, f"episode {episode.pk}")
        assert [type(obj).__name__ for obj in related] == ["ModelSpec", "Task", "Release"]
        # The release's file list is left unread, and read on demand when asked for.
        assert got.instance.suite.release.get_deferred_fields() == {"manifest", "descriptor"}
        assert got.instance.suite.release.manifest == expected.instance.suite.release.manifest
    assert load_episode(-1) is None


def test_a_prepared_query_with_other_parameters_is_refused(episodes):
    prepared = db.PreparedGet(lambda: Episode.objects.filter(Q(status="pending") | Q(n_turns=3)))
    with pytest.raises(ValueError, match="no parameter but the key"):
        prepared(episodes[0].pk)


# ── a run's totals ───────────────────────────────────────────────────────────────────────────


def totals_through_orm(run) -> dict:
    """The run's totals as the ORM sums them; the cost unknown when an episode is unpriced (``refresh_run_totals``)."""
    episodes = Episode.objects.filter(run=run)
    totals = episodes.aggregate(**{name: Sum(name, default=0) for name in TOKEN_FIELDS})
    unpriced = episodes.filter(Q(prompt_tokens__gt=0) | Q(status=Status.COMPLETED), cost_usd__isnull=True).exists()
    cost = episodes.aggregate(cost=Sum("cost_usd", default=Decimal(0)))["cost"]
    return totals | {"cost_usd": None if unpriced else cost}


def test_refresh_totals_stores_and_reads_back_what_the_orm_sums(run, episodes, other_run):
    """Through a sequence of episode states, each changing the one before; another run's episodes are its own."""
    totals_fields = [*TOKEN_FIELDS, "cost_usd"]
    others = [field.attname for field in Run._meta.concrete_fields if field.attname not in totals_fields]
    other_episodes = other_run.episodes.all()
    other_episodes.update(prompt_tokens=1000, completion_tokens=1000, cost_usd=None, status=Status.COMPLETED)
    first, second, third = (Episode.objects.filter(pk=episode.pk) for episode in episodes[:3])
    states = [
        lambda: None,  # pending episodes without usage nor cost: nothing spent, nothing unpriced
        lambda: first.update(prompt_tokens=100, completion_tokens=5, cache_read_tokens=40, cost_usd=Decimal("0.25")),
        lambda: second.update(prompt_tokens=300, reasoning_tokens=3, cache_write_tokens=8, cost_usd=Decimal("0.5")),
        lambda: third.update(status=Status.FAILED),  # failed before any usage: nothing to price
        lambda: third.update(prompt_tokens=10),  # tokens without a cost: unpriced
        lambda: third.update(cost_usd=Decimal("0.00000001")),
        lambda: second.update(status=Status.COMPLETED, cost_usd=None, prompt_tokens=0, reasoning_tokens=0),
    ]
    before = Run.objects.values(*others).get(pk=run.pk)
    costs = []
    for number, change in enumerate(states):
        change()
        expected = totals_through_orm(run)
        db.refresh_totals(run)
        assert {name: getattr(run, name) for name in totals_fields} == expected, number  # read back into the run
        assert Run.objects.values(*totals_fields).get(pk=run.pk) == expected, number
        costs.append(expected["cost_usd"])
    assert None in costs and Decimal("0.75") in costs and Decimal("0.75000001") in costs
    assert Run.objects.values(*others).get(pk=run.pk) == before  # only the totals are written
    untouched = {name: 0 for name in TOKEN_FIELDS} | {"cost_usd": None}  # its episodes' usage is never summed
    assert Run.objects.values(*totals_fields).get(pk=other_run.pk) == untouched


def test_refresh_run_totals_sums_the_episodes_in_one_statement(run, episodes, django_assert_num_queries):
    Episode.objects.filter(pk=episodes[0].pk).update(prompt_tokens=100, completion_tokens=5, cache_read_tokens=40,
                                                     reasoning_tokens=3, cost_usd=Decimal("0.25"))  # fmt: skip
    Episode.objects.filter(pk=episodes[1].pk).update(prompt_tokens=300, cache_write_tokens=8, cost_usd=Decimal("0.5"))
    with django_assert_num_queries(1):
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
