"""The SQLite backend's pool: a closed connection is handed to the next one opened, clean, and never across a fork."""
import os
import threading

import pytest

from config.sqlite import base as pooled
from config.settings import database_config


@pytest.fixture
def wrapper_for(tmp_path, monkeypatch, django_db_blocker):
    """Make DatabaseWrappers of a SQLite file, as Django makes one per thread; the pool starts empty."""
    monkeypatch.setattr(pooled, "_pools", {})
    settings = database_config("", sqlite_path=tmp_path / "pool.sqlite3")
    made = []

    def make(name=None):
        wrapper = pooled.DatabaseWrapper({**settings, "NAME": name or settings["NAME"], "TIME_ZONE": None,
                                          "CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": False, "AUTOCOMMIT": True,
                                          "ATOMIC_REQUESTS": False, "TEST": {}, "USER": "", "PASSWORD": "",
                                          "HOST": "", "PORT": ""}, alias="pool-test")  # fmt: skip
        made.append(wrapper)
        return wrapper

    with django_db_blocker.unblock():  # these are not the test database: wrappers of their own file
        yield make
    for wrapper in made:
        wrapper.connection = None  # what the test left in the pool is closed below, once
    for idle in pooled._pools.values():
        for connection in idle:
            connection.close()


def raw_of(wrapper):
    wrapper.ensure_connection()
    return wrapper.connection


def test_a_closed_connection_is_reused_by_the_next_thread(wrapper_for):
    first = wrapper_for()
    with first.cursor() as cursor:
        cursor.execute("CREATE TABLE t (x INTEGER)")
        cursor.execute("INSERT INTO t VALUES (1)")
    raw = first.connection
    first.close()
    assert first.connection is None

    seen = []

    def another_thread():
        wrapper = wrapper_for()
        with wrapper.cursor() as cursor:  # the same database, clean: autocommit, no transaction open
            cursor.execute("SELECT x FROM t")
            seen.append((wrapper.connection, cursor.fetchall(), wrapper.get_autocommit()))
        seen.append(wrapper.connection.in_transaction)
        wrapper.close()

    thread = threading.Thread(target=another_thread)
    thread.start()
    thread.join()
    assert seen == [(raw, [(1,)], True), False]
    assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert raw_of(wrapper_for()) is raw  # back in the pool once that thread closed it


def test_a_reused_connection_checks_foreign_keys_again(wrapper_for):
    first = wrapper_for()
    raw = raw_of(first)
    first.disable_constraint_checking()  # as a schema change does, and a crash before it switched them back on
    assert raw.execute("PRAGMA foreign_keys").fetchone() == (0,)
    first.close()
    assert raw_of(wrapper_for()) is raw
    assert raw.execute("PRAGMA foreign_keys").fetchone() == (1,)


def test_a_connection_closed_inside_a_transaction_is_not_kept(wrapper_for):
    wrapper = wrapper_for()
    with wrapper.cursor() as cursor:
        cursor.execute("CREATE TABLE t (x INTEGER)")
    wrapper.set_autocommit(False)
    with wrapper.cursor() as cursor:
        cursor.execute("INSERT INTO t VALUES (1)")
    raw = wrapper.connection
    assert raw.in_transaction
    wrapper.close()
    assert pooled._pools == {} or not any(pooled._pools.values())
    assert raw_of(wrapper_for()) is not raw


def test_an_in_memory_database_is_never_pooled(wrapper_for):
    wrapper = wrapper_for(":memory:")
    wrapper.ensure_connection()
    wrapper.close()
    assert not any(pooled._pools.values())


def test_the_pool_keeps_at_most_pool_size_connections(wrapper_for, monkeypatch):
    monkeypatch.setattr(pooled, "POOL_SIZE", 2)
    wrappers = [wrapper_for() for _ in range(3)]
    raws = [raw_of(wrapper) for wrapper in wrappers]
    assert len({id(raw) for raw in raws}) == 3
    for wrapper in wrappers:
        wrapper.close()
    (idle,) = pooled._pools.values()
    assert idle == raws[:2]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_opens_its_own_connections(wrapper_for):
    parent = wrapper_for()
    raw = raw_of(parent)
    parent.close()

    def child():  # its pool is empty, so it opens a connection of its own
        return raw_of(wrapper_for()) is not raw and not any(pooled._pools.values())

    assert in_a_forked_child(child)
    assert raw_of(wrapper_for()) is raw  # the parent still has it


def in_a_forked_child(check):
    """Return what ``check()`` answers (True or False) in a forked child process."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(writer, b"yes" if check() else b"no")
        finally:
            os._exit(0)
    os.close(writer)
    answer = os.read(reader, 16)
    os.close(reader)
    os.waitpid(pid, 0)
    return answer == b"yes"


def test_a_connection_goes_back_to_the_pool_of_the_database_it_was_opened_on(wrapper_for, tmp_path):
    wrapper = wrapper_for()
    raw = raw_of(wrapper)
    other = str(tmp_path / "other.sqlite3")
    wrapper.settings_dict["NAME"] = other  # as Django's test runner renames a database for a worker clone
    wrapper.close()
    fresh = raw_of(wrapper_for(other))
    assert fresh is not raw
    assert fresh.execute("PRAGMA database_list").fetchone()[2] == other
    assert raw_of(wrapper_for()) is raw


def test_connections_with_other_init_commands_are_not_shared(wrapper_for):
    plain = wrapper_for()
    raw = raw_of(plain)
    plain.close()
    read_only = wrapper_for()
    read_only.settings_dict["OPTIONS"] = {**read_only.settings_dict["OPTIONS"], "init_command": "PRAGMA query_only = 1"}
    assert raw_of(read_only) is not raw
    assert read_only.connection.execute("PRAGMA query_only").fetchone() == (1,)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_connection_open_at_the_fork_is_not_pooled_by_the_child(wrapper_for):
    parent = wrapper_for()
    raw = raw_of(parent)

    def child():  # it closes the wrapper it inherited open, then opens one of its own
        parent.close()
        return raw_of(wrapper_for()) is not raw and parent.connection is None

    assert in_a_forked_child(child)
    assert raw.execute("SELECT 1").fetchone() == (1,)  # still open and usable in the parent
