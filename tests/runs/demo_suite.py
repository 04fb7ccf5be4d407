"""The synthetic demo release, built once per test session and imported into any test's database.

Building it takes about ten seconds, so the directory is made once (or reused from
``EEGAB_DATA_ROOT`` when a complete build of this version is already there) and every test
that needs the ``demo`` suite imports it, which takes a fraction of a second.
"""
import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from django.conf import settings


@functools.cache
def demo_release() -> Path:
    """The directory of the demo release."""
    from benchmark.management.commands.build_demo_release import (
        build_demo_release,
        demo_release_dir,
        is_complete_demo_release,
    )

    if is_complete_demo_release(demo_release_dir()):
        return demo_release_dir()
    root = Path(tempfile.mkdtemp(prefix="demo-release-", dir=settings.VAR_DIR))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return build_demo_release(root / "demo")


def import_demo(suite_name: str = "demo"):
    """Import the demo release as ``suite_name`` into the current database; return the suite."""
    from benchmark.releases import import_release

    return import_release(path=demo_release(), suite_name=suite_name).suite
