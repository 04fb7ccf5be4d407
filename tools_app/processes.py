"""Tool calls made in processes of their own, so that many episodes of one process call tools at once.

Episodes played on threads of one process (``run_benchmark --sync --concurrency N``) share its
interpreter lock: a tool's Python work holds it, and the other episodes' turns wait behind it.
:class:`ToolProcesses` runs the calls in a few forked processes instead (one per processor by
default), where the work of two calls proceeds at once and the episodes' own process keeps its
lock for the turns. A call gives exactly what :func:`tools_app.call_tool` gives in the process
itself; only the place it is computed changes. Each process keeps its own recordings and maps
the same statistics files (``tools_app.signal.stored``), so the files' pages are shared.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


class ToolProcesses:
    """A pool of forked processes that make tool calls; create it before the threads that use it.

    The processes are forked at once, from the creating thread, so that none is forked while other
    threads hold locks. Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, processes: int | None = None):
        from django.db import connections

        from tools_app.registry import function_schemas

        function_schemas()  # the tools' specs are built once, here, and shared with the processes
        for connection in connections.all(initialized_only=True):
            # A forked process gets no open connection of this one's to use or close (SQLite warns
            # against that); one inside a transaction is left open, and the processes, which read
            # files only, never touch it and leave by os._exit, without closing it.
            if not connection.in_atomic_block:
                connection.close()
        self.processes = max(1, processes or os.cpu_count() or 1)
        self._pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=multiprocessing.get_context("fork"))
        self._pool.submit(os.getpid).result()  # forks every process now (the pool forks them all on first use)

    def call(self, path: Path | str, tool_name: str, arguments: dict, **options) -> dict:
        """:func:`tools_app.call_tool` in one of the processes; waits for its result (raises what it raises)."""
        from tools_app import call_tool

        return self._pool.submit(call_tool, Path(path), tool_name, arguments, **options).result()

    def pids(self) -> list[int]:
        """The processes' ids, for measuring them (read from the pool's table of its processes)."""
        return [process.pid for process in (self._pool._processes or {}).values()]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ToolProcesses:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

