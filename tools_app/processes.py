"""Tool calls made in processes of their own, so that many episodes of one process call tools at once.

Episodes played on threads of one process (``run_benchmark --sync --concurrency N``) share its
interpreter lock: a tool's Python work holds it, and the other episodes' turns wait behind it.
:class:`ToolProcesses` runs the calls in a few forked processes instead (one per processor by
default), where two calls proceed at once and the episodes' own process keeps its lock for the
turns. A call gives exactly what :func:`tools_app.call_tool` gives in the process itself; only
the place it is computed changes (and the header tools, which read no samples, stay here). Each recording is given to one process, the first time it is
called on, and keeps going there, so a recording is opened, and its statistics mapped and
checked (``tools_app.signal.stored``), once.

A call can also be given a deadline: a call still running then is stopped by ending its
process (a thread cannot be stopped), and answers the ``timeout`` error object. A web request
makes its calls so (:func:`request_tool_processes`), below the server's worker timeout.
"""
from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path


#: The tools that read a recording's header only (its "Data Overview"): they take a tenth of a
#: millisecond here, less than sending them to another process would, and are answered here.
HEADER_TOOLS = frozenset({"get_recording_info", "get_channel_list"})


class ToolProcessLost(RuntimeError):
    """A tool process ended while a call was made there (killed, or out of memory)."""


def timed_out(tool_name, arguments, *, record_id=None, deadline):
    """Return the error object of a call stopped at its deadline, as ``call_tool`` shapes errors."""
    from tools_app.errors import ErrorCode, ToolError
    from tools_app.registry import echoed_record_id

    return ToolError(
        ErrorCode.TIMEOUT,
        f"Tool {tool_name} took longer than the {deadline:g} s a call may take here and was stopped; nothing was "
        f"returned. Rescope to fit, e.g.: use fewer channels or a shorter time range via tmin/tmax. Then call again.",
        deadline_sec=deadline,
    ).to_result(echoed_record_id(arguments, record_id))


@dataclass
class _Child:
    process: multiprocessing.process.BaseProcess
    connection: Connection
    calling: threading.Lock = field(default_factory=threading.Lock)  # a call's request and its reply, paired
    sending: threading.Lock = field(default_factory=threading.Lock)  # one message at a time on the pipe

    def send(self, message) -> None:
        with self.sending:
            self.connection.send(message)


class ToolProcesses:
    """Forked processes that make tool calls; create it before the threads that use it.

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
        context = multiprocessing.get_context("fork")
        self._children: list[_Child] = []
        for _ in range(max(1, processes or os.cpu_count() or 1)):
            ours, theirs = context.Pipe()
            # This process's ends of the pipes, its own included: a forked process holds a copy of
            # each, and must close them to see its pipe close when this process dies.
            creators_ends = [child.connection for child in self._children] + [ours]
            process = context.Process(target=_serve, args=(theirs, creators_ends), daemon=True, name="tool-process")
            process.start()
            theirs.close()
            self._children.append(_Child(process, ours))
        self._assigned: dict[str, int] = {}
        self._assigning = threading.Lock()

    def call(self, path: Path | str, tool_name: str, arguments: dict, *, timeout: float | None = None,
             **options) -> dict:
        """:func:`tools_app.call_tool` in the recording's process; waits for its result (raises what it raises).

        The header tools (``HEADER_TOOLS``) are called in this process; the first call on a
        recording, which is usually one, has its process get the recording's statistics ready.
        With a ``timeout`` (s), a call without a result by then ends its process, which has
        to be replaced (:meth:`alive` is false), and answers the error object of
        :func:`timed_out`.
        """
        key = str(path)
        with self._assigning:
            new = key not in self._assigned
            index = self._assigned.setdefault(key, len(self._assigned) % len(self._children))
        child = self._children[index]
        if tool_name in HEADER_TOOLS:
            from tools_app import call_tool

            if new:  # its process gets the recording's statistics ready while the model reads this answer
                try:  # no reply comes, so this does not wait for a call another thread is making there
                    child.send(("warm", key, None, None, {"metadata": options.get("metadata")}))
                except OSError:  # it has ended: the next call there says so
                    pass
            return call_tool(Path(path), tool_name, arguments, **options)
        with child.calling:
            try:
                child.send(("call", key, tool_name, arguments, options))
                if timeout is not None and not child.connection.poll(timeout):
                    child.process.kill()
                    child.process.join()
                    return timed_out(tool_name, arguments, record_id=options.get("record_id"), deadline=timeout)
                succeeded, value = child.connection.recv()
            except (EOFError, OSError) as exc:
                raise ToolProcessLost(
                    f"The tool process {child.process.pid} ended during {tool_name} (exit code {child.process.exitcode})."
                ) from exc
        if not succeeded:
            raise value
        return value

    def pids(self) -> list[int]:
        """The processes' ids, for measuring them."""
        return [child.process.pid for child in self._children]

    def alive(self) -> bool:
        """Whether every process is still there to take calls."""
        return all(child.process.is_alive() for child in self._children)

    def close(self) -> None:
        """Ask each process to end, and end it if it does not within a few seconds."""
        for child in self._children:
            try:
                child.send(None)
            except OSError:  # it has ended already
                pass
        for child in self._children:
            child.process.join(timeout=5)
            if child.process.is_alive():
                child.process.kill()
                child.process.join()
            child.connection.close()

    def __enter__(self) -> ToolProcesses:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


class _PerProcess:
    """One :class:`ToolProcesses` of a process: forked on first use, kept until the process exits,
    forked again when one of its processes has ended (or when asked for in a forked child)."""

    def __init__(self, processes: int | None = None):
        self.processes = processes
        self.pool: ToolProcesses | None = None
        self.pid: int | None = None
        self.lock = threading.Lock()

    def get(self) -> ToolProcesses:
        with self.lock:
            if self.pool is not None and self.pid == os.getpid() and self.pool.alive():
                return self.pool
            if self.pool is not None and self.pid == os.getpid():
                self.pool.close()
            self.pool, self.pid = ToolProcesses(self.processes), os.getpid()
            atexit.register(self.pool.close)
            return self.pool


_shared = _PerProcess()
_for_requests = _PerProcess(processes=1)


def shared_tool_processes() -> ToolProcesses:
    """This process's tool processes: forked on first use, kept for later runs until the process exits.

    Forking them takes tens of milliseconds and each starts with no recording open, so a process
    that plays several runs one after another keeps the same ones; they are forked again if one
    has ended. Call it from the thread that starts the episode threads, before it starts them.
    """
    return _shared.get()


def request_tool_processes() -> ToolProcesses:
    """The one tool process of a web server's worker, in which its requests make their tool calls.

    A worker serves one request at a time, so one process is enough; a call stopped at its
    deadline ends it, and the next request forks another (tens of milliseconds; the recording
    is opened and its kept statistics mapped again there). It is kept apart from
    :func:`shared_tool_processes`, whose calls a stopped call must not end.
    """
    return _for_requests.get()


def call_for_request(path: Path | str, tool_name: str, arguments: dict, **options) -> dict:
    """:func:`tools_app.call_tool` as a web request makes it: in the worker's tool process, stopped at
    ``settings.EEGAB_TOOL_DEADLINE_SEC``, then answered with the ``timeout`` error object."""
    from django.conf import settings

    return request_tool_processes().call(path, tool_name, arguments, timeout=settings.EEGAB_TOOL_DEADLINE_SEC,
                                         **options)


def _serve(connection: Connection, creators_ends: list[Connection]) -> None:
    """A tool process: answer calls until asked to end or the creating process has gone."""
    from tools_app import call_tool
    from tools_app.recording import warm_statistics

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the creating process's to handle: it ends us
    for end in creators_ends:  # else no pipe would close when the creator dies, and we would wait forever
        end.close()
    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        if request is None:
            return
        kind, path, tool_name, arguments, options = request
        if kind == "warm":  # no answer is awaited
            try:
                warm_statistics(Path(path), metadata=options.get("metadata"))
            except Exception:  # the calls that read the statistics meet the error themselves
                pass
            continue
        try:
            reply = (True, call_tool(Path(path), tool_name, arguments, **options))
        except Exception as exc:  # a platform bug: raised again where the call was made
            reply = (False, exc)
        try:
            connection.send(reply)
        except Exception as exc:  # an exception that cannot be pickled: its text crosses instead
            connection.send((False, RuntimeError(f"{tool_name} raised {type(exc).__name__}: {reply[1]!r}")))
