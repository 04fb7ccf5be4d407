"""A queue worker run as a child process (what ``manage.py demo`` serves with); whether one is up is ``runs.queue.dispatch``'s."""
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from django.conf import settings

#: What starts a worker, as a page tells it.
WORKER_COMMAND = "python manage.py qcluster"
#: How long a stopping cluster may take to end its workers before they are killed. An episode
#: cut short is played again once its lease runs out (``runs.sweep``).
STOP_GRACE_SEC = 10.0

# The child asks Linux for SIGTERM when its parent ends, however it ends (runserver leaves by
# os._exit when it cannot serve; a parent may be SIGKILLed), so that a cluster never outlives the
# command that started it; then it becomes ``manage.py qcluster``.
_LAUNCHER = """
import ctypes, os, signal, sys
if sys.platform == "linux":
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != int(sys.argv[1]):
        sys.exit(0)  # the parent ended before the request was made
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def start_worker(*, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """Start ``manage.py qcluster`` as a child process, in a process group of its own.

    Its own group keeps a Ctrl-C at the terminal from reaching it: the parent stops it
    (``stop_worker``). ``env`` adds to or replaces variables of this process's environment.
    """
    manage = settings.BASE_DIR / "manage.py"
    return subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(os.getpid()), str(manage), "qcluster"],
        cwd=settings.BASE_DIR,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def stop_worker(process: subprocess.Popen, *, grace_sec: float = STOP_GRACE_SEC) -> None:
    """Stop a cluster started by ``start_worker``: SIGTERM, then SIGKILL to what is left of its group."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace_sec)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@contextmanager
def running_worker(*, env: Mapping[str, str] | None = None) -> Iterator[subprocess.Popen]:
    """A ``manage.py qcluster`` child process for the ``with`` block, stopped however the block ends."""
    process = start_worker(env=env)
    try:
        yield process
    finally:
        stop_worker(process)
