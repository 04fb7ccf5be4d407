"""Prepared SQL: the one module of runs/ that touches Django's internals (compilers, populators, quoting).

The statements the episode loop runs for every episode and every turn are SQL prepared once per database.

Django's ORM builds and compiles the SQL of a query each time it runs it, which costs more
processor time than SQLite takes to run these short statements (loading an episode with
its run, model, instance, task and release: 1.5 ms, of which 0.15 ms is the query; an
INSERT of one step: ~0.3 ms through ``Step.objects.create``, ~0.1 ms here). The loop runs
them for every episode and every turn, and a run plays dozens of episodes at once in one
process, so here they are prepared once, from the models' own metadata (tables, columns,
each field's conversion of its values) or from the ORM's own compilation of the query, and
only executed afterwards. They read and write exactly what their ORM equivalents do;
``tests/runs/test_db.py`` compares them.

Every step and every outcome of an episode is written here (``insert_step``, ``update_episode``;
``runs.services.append_step`` through ``storable`` too), so here a value becomes one that every
database stores (``storable``): an agent's text may hold what PostgreSQL refuses in ``text`` and
``jsonb`` (a NUL character, a NaN; a lone surrogate, which SQLite refuses too).
"""
from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable
from functools import cache

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.utils import timezone

from runs.models import TOKEN_FIELDS, Episode, Run, Status, Step


def _database(model) -> str:
    return router.db_for_write(model)


#: What a NUL character (``\x00``, refused in PostgreSQL's ``text`` and ``jsonb``) or a lone surrogate
#: (not UTF-8, refused by every database) in a stored string is written as: U+FFFD, the replacement character.
REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(value):
    """``value`` as every database stores it: each NUL character and lone surrogate of its strings (its keys
    too, at any depth) replaced by ``REPLACEMENT``, each NaN or infinite float (``jsonb`` has none) by its
    JSON spelling as a string (``"NaN"``, ``"Infinity"``, ``"-Infinity"``).

    ``value`` itself when it holds none (the usual case, checked without copying), else a copy. Both
    walks use a stack of their own, so a value nested as deep as JSON allows is no deeper a call.
    """
    if not _unstorable(value):
        return value
    holder = [value]
    pending = [(holder, 0)]
    while pending:
        container, key = pending.pop()
        item = container[key]
        if isinstance(item, str):
            container[key] = _UNSTORABLE.sub(REPLACEMENT, item)
        elif isinstance(item, float) and not math.isfinite(item):
            container[key] = json.dumps(item)
        elif isinstance(item, dict):
            copy = container[key] = {_UNSTORABLE.sub(REPLACEMENT, k) if isinstance(k, str) else k: v
                                     for k, v in item.items()}
            pending.extend((copy, k) for k in copy)
        elif isinstance(item, list | tuple):
            copy = container[key] = list(item)
            pending.extend((copy, index) for index in range(len(copy)))
    return holder[0]


def _unstorable(value) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            # Searched with C's speed: an ASCII string can hold no surrogate.
            if "\x00" in item or not item.isascii() and _SURROGATE.search(item):
                return True
        elif isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return False


@cache
def _step_insert(vendor: str, of_attempt: bool) -> tuple[str, tuple]:
    connection = connections[_database(Step)]
    quote = connection.ops.quote_name
    fields = tuple(field for field in Step._meta.concrete_fields if not field.primary_key)
    columns = ", ".join(quote(field.column) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    insert = f"INSERT INTO {quote(Step._meta.db_table)} ({columns})"
    if not of_attempt:
        return f"{insert} VALUES ({placeholders})", fields
    # The episode row is share-locked where the database can (PostgreSQL): a reset that holds
    # it (select_for_update) makes the insert wait, and the condition is checked again on the
    # row it committed. SQLite runs one writer at a time anyway.
    lock = " FOR SHARE" if connection.features.has_select_for_update else ""
    episode = (
        f"SELECT 1 FROM {quote(Episode._meta.db_table)} "
        f"WHERE {quote('id')} = %s AND {quote('status')} = %s AND {quote('attempt')} = %s{lock}"
    )
    return f"{insert} SELECT {placeholders} WHERE EXISTS ({episode})", fields


class EpisodeLost(Exception):
    """The episode is no longer the caller's: it has ended, or a newer attempt of it has begun."""


def insert_step(step: Step, *, attempt: int | None = None) -> None:
    """Store the unsaved ``step`` as ``Step.save()`` would (``created_at`` set now); its ``pk`` stays unset.

    Its values are made ``storable`` first, on the step too.

    The unique (episode, index) constraint still refuses an index that is taken. With
    ``attempt``, the step is stored only while the episode is running as that attempt (one
    statement), else EpisodeLost is raised and nothing is written: a worker that stalled
    past its lease never writes into the attempt that replaced its own.
    """
    connection = connections[_database(Step)]
    sql, fields = _step_insert(connection.vendor, attempt is not None)
    step.created_at = timezone.now()
    params = []
    for field in fields:
        value = storable(getattr(step, field.attname))
        setattr(step, field.attname, value)  # the step holds what is stored, as one read back would
        params.append(field.get_db_prep_save(value, connection))
    if attempt is not None:
        params += [step.episode_id, Status.RUNNING.value, attempt]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        stored = cursor.rowcount
    if attempt is not None:
        still_running(stored, step.episode_id, attempt)


def still_running(changed: int, episode_id: int, attempt: int) -> None:
    """Raise EpisodeLost unless a write conditional on the episode running as ``attempt`` changed its row."""
    if changed != 1:
        raise EpisodeLost(f"Episode {episode_id} is no longer running as attempt {attempt}.")


@cache
def _episode_update(vendor: str, names: tuple[str, ...], of_attempt: bool) -> tuple[str, tuple]:
    connection = connections[_database(Episode)]
    quote = connection.ops.quote_name
    fields = tuple(Episode._meta.get_field(name) for name in names)
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    table = quote(Episode._meta.db_table)
    where = f"{quote('id')} = %s AND {quote('status')} = %s" + (f" AND {quote('attempt')} = %s" if of_attempt else "")
    return f"UPDATE {table} SET {assignments} WHERE {where}", fields


def update_episode(episode_id: int, values: dict, *, status: str, attempt: int | None = None) -> int:
    """Write ``values`` (field name → value), made ``storable``, to the episode if its status is ``status``;
    return the rows changed.

    As ``Episode.objects.filter(pk=episode_id, status=status).update(**values)``, with
    ``attempt=attempt`` in the filter when given: the status condition makes a claim
    (pending → running) atomic, and keeps a finished, reset or cancelled episode from being
    written by a worker that no longer holds it; the attempt condition keeps a worker that
    stalled past its lease from writing over the attempt that replaced its own.
    """
    connection = connections[_database(Episode)]
    sql, fields = _episode_update(connection.vendor, tuple(values), attempt is not None)
    params = [field.get_db_prep_save(storable(values[field.name]), connection) for field in fields]
    guard = [episode_id, status] if attempt is None else [episode_id, status, attempt]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *guard])
        return cursor.rowcount


@cache
def _cancellation_query(vendor: str) -> str:
    connection = connections[_database(Episode)]
    quote = connection.ops.quote_name
    episode, run = quote(Episode._meta.db_table), quote(Run._meta.db_table)
    run_id = quote(Episode._meta.get_field("run").column)
    status, pk = quote("status"), quote("id")
    return (
        f"SELECT 1 FROM {episode} JOIN {run} ON {run}.{pk} = {episode}.{run_id} "
        f"WHERE {episode}.{pk} = %s AND ({episode}.{status} = %s OR {run}.{status} = %s)"
    )


def is_cancelled(episode_id: int) -> bool:
    """Whether the episode, or its run, has been cancelled."""
    connection = connections[_database(Episode)]
    cancelled = Status.CANCELLED.value
    with connection.cursor() as cursor:
        cursor.execute(_cancellation_query(connection.vendor), [episode_id, cancelled, cancelled])
        return cursor.fetchone() is not None


# ── a query compiled once ────────────────────────────────────────────────────────────────────


class PreparedGet:
    """``queryset.filter(pk=…).first()``, with its SQL compiled once per database and run again for each key.

    Rows become model instances, with their ``select_related`` objects and ``defer``-red
    fields, exactly as the queryset's own iteration makes them (Django's compiler output:
    the selected columns, the converters of their values, the related-object populators).

    Parameters
    ----------
    queryset : callable
        Returns the queryset to run, without the primary-key filter.
    """

    _PLACEHOLDER = -987_654_321  # the key the query is compiled with, replaced at each run

    def __init__(self, queryset: Callable[[], QuerySet]):
        self._queryset = queryset
        self._prepared: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def _prepare(self, alias: str) -> tuple:
        compiler = self._queryset().filter(pk=self._PLACEHOLDER).query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        if list(params) != [self._PLACEHOLDER]:
            raise ValueError(f"A prepared query may have no parameter but the key; this one has {params!r}.")
        select, klass_info = compiler.select, compiler.klass_info
        columns = klass_info["select_fields"]
        own = slice(columns[0], columns[-1] + 1)
        init_list = [column[0].target.attname for column in select[own]]
        converters = list(compiler.get_converters([column[0] for column in select[: compiler.col_count]]).items())
        populators = get_related_populators(klass_info, select, alias)
        return sql, converters, klass_info["model"], own, init_list, populators

    def __call__(self, pk: int) -> Model | None:
        model = self._queryset().model
        alias = router.db_for_read(model)
        with self._lock:
            prepared = self._prepared.get(alias)
            if prepared is None:
                prepared = self._prepared[alias] = self._prepare(alias)
        sql, converters, model, own, init_list, populators = prepared
        connection = connections[alias]
        with connection.cursor() as cursor:
            cursor.execute(sql, [pk])
            row = cursor.fetchone()
        if row is None:
            return None
        row = list(row)
        for position, (functions, expression) in converters:
            value = row[position]
            for convert in functions:
                value = convert(value, expression, connection)
            row[position] = value
        obj = model.from_db(alias, init_list, row[own])
        for populator in populators:
            populator.populate(row, obj)
        return obj


# ── a run's totals ───────────────────────────────────────────────────────────────────────────


@cache
def _totals_update(vendor: str) -> str:
    connection = connections[_database(Run)]
    quote = connection.ops.quote_name
    episodes = quote(Episode._meta.db_table)
    run_id = quote(Episode._meta.get_field("run").column)
    of_run = f"FROM {episodes} WHERE {run_id} = %(run)s"
    sums = [f"{quote(name)} = (SELECT COALESCE(SUM({quote(name)}), 0) {of_run})" for name in TOKEN_FIELDS]
    cost, status = quote("cost_usd"), quote("status")
    unpriced = (
        f"SELECT 1 {of_run} AND {cost} IS NULL "
        f"AND ({quote('prompt_tokens')} > 0 OR {status} = %(completed)s)"
    )
    cost_sum = f"CASE WHEN EXISTS ({unpriced}) THEN NULL ELSE (SELECT COALESCE(SUM({cost}), 0) {of_run}) END"
    assignments = ", ".join([*sums, f"{cost} = {cost_sum}"])
    return f"UPDATE {quote(Run._meta.db_table)} SET {assignments} WHERE {quote('id')} = %(run)s"


def refresh_run_totals(run_id: int) -> None:
    """A run's tokens and cost, summed over its episodes and stored, in one statement.

    The cost is unknown (``None``) as soon as one episode is unpriced: it used tokens without a
    cost, or it finished without any usage to price (an external agent reports none), so such a
    run shows "unpriced", never $0.
    """
    connection = connections[_database(Run)]
    with connection.cursor() as cursor:
        cursor.execute(_totals_update(connection.vendor), {"run": run_id, "completed": Status.COMPLETED.value})


def refresh_totals(run: Run) -> None:
    """``refresh_run_totals`` for ``run``, its totals read back into it."""
    refresh_run_totals(run.pk)
    run.refresh_from_db(fields=[*TOKEN_FIELDS, "cost_usd"])
