"""Django's SQLite backend, with the connections a thread closes kept open for the next thread to use.

Opening a SQLite connection is the dearest thing a short database task does: Django registers
its SQL functions and runs its PRAGMAs, and the first statements parse the schema and read
every page afresh (about 4 ms together, where a statement on an open connection takes 0.1 ms).
A run played on a pool of threads closes each thread's connection when its episode ends, and
the queue workers and the web server close theirs after every task and request. Here a closed
connection goes back to a pool of this process instead (up to ``POOL_SIZE`` per database) and
the next connection of any thread takes it, as Django's own pool does for PostgreSQL.

Only connections with nothing under way are kept (no open transaction), and one taken from the
pool gets Django's per-connection settings again (foreign-key checks on); an in-memory database
is never pooled (closing it would lose it, as Django knows). A connection goes back to the pool
it was opened for (its database file and its settings, init commands included) even if the
wrapper's settings have changed since, as Django's test runner changes a database's name.
SQLite connections must not cross a fork: a child process leaves the connections it inherited
alone, idle or open, and opens its own.
"""
import os
import threading

from django.db.backends.sqlite3 import base

POOL_SIZE = 64

_pools: dict[tuple, list] = {}
_pools_lock = threading.Lock()
_inherited: list = []  # connections a forked child must neither use nor close


def _forget_the_parents_connections() -> None:
    global _pools_lock
    _pools_lock = threading.Lock()  # another thread of the parent may have held it at the fork
    _inherited.extend(_pools.values())
    _pools.clear()


os.register_at_fork(after_in_child=_forget_the_parents_connections)


def _key(conn_params: dict, init_commands) -> tuple:
    return (tuple(sorted((name, repr(value)) for name, value in conn_params.items())), tuple(init_commands))


class DatabaseWrapper(base.DatabaseWrapper):
    #: The pool the open connection belongs to and the process that opened it (None: unpooled).
    _opened_for = None

    def get_new_connection(self, conn_params):
        self._opened_for = None
        if self.is_in_memory_db():
            return super().get_new_connection(conn_params)
        key = _key(conn_params, self.init_commands)  # get_connection_params() has just set them
        with _pools_lock:
            idle = _pools.get(key)
            connection = idle.pop() if idle else None
        if connection is None:
            connection = super().get_new_connection(conn_params)
        else:
            # As Django opens every connection, whatever its last user switched off.
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA legacy_alter_table = OFF")
        self._opened_for = (key, os.getpid())
        return connection

    def _close(self):
        connection, opened_for = self.connection, self._opened_for
        self._opened_for = None
        if connection is not None and opened_for is not None and opened_for[1] != os.getpid():
            _inherited.append(connection)  # opened before a fork: the parent still uses it
            return None
        if connection is None or opened_for is None or self.in_atomic_block or connection.in_transaction:
            return super()._close()
        with _pools_lock:
            idle = _pools.setdefault(opened_for[0], [])
            if len(idle) < POOL_SIZE:
                idle.append(connection)
                return None
        return super()._close()
