"""The submissions tests' shared fixtures: the demo suite with the heuristic baseline played and exported, a
submitter, archives made from the export, and a queue that checks at once."""
import io
import shutil
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.module_loading import import_string

from runs.interchange.export import export_run
from submissions import services
from tests.runs.demo_suite import import_demo
from tests.runs.interchange.played import baseline_run

CARD = {
    "display_name": "Heuristic-Submitted", "provider_model": "acme/heuristic-1", "organisation": "ACME Lab",
    "family": "Heuristic", "parameters": "not reported", "open_weights": True, "link": "https://example.org/model",
    "methodology": "The built-in heuristic, run with the official runner.",
}


@pytest.fixture(scope="session")
def export_cache(tmp_path_factory) -> Path:
    """Where the first test that plays the heuristic keeps its export for the others (the demo imports alike)."""
    return tmp_path_factory.mktemp("heuristic-export") / "export"


@pytest.fixture
def played(db, tmp_path, export_cache):
    """The demo suite, the heuristic baseline played on it, and the run exported in the official layout."""
    suite = import_demo()
    run = baseline_run(suite, "baseline/heuristic")
    export_run(run=run, out_dir=tmp_path / "export")
    if not export_cache.exists():
        shutil.copytree(tmp_path / "export", export_cache)
    return suite, run, tmp_path / "export"


@pytest.fixture
def exported(db, tmp_path, export_cache, request):
    """The demo suite and the heuristic's run on it exported (a copy of an earlier test's export; the run
    itself is not in this test's database, None)."""
    if not export_cache.exists():
        request.getfixturevalue("played")
    suite = import_demo()
    shutil.copytree(export_cache, tmp_path / "cached-export")
    return suite, None, tmp_path / "cached-export"


def zip_directory(root: Path, *, top: str = "heuristic-run", skip=(), extra=None) -> bytes:
    """``root``'s files in a zip, under one top folder, without ``skip`` (names relative to root), with ``extra``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and relative not in skip:
                archive.writestr(f"{top}/{relative}", path.read_bytes())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload(data: bytes, name: str = "run.zip") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/zip")


@pytest.fixture
def submitter(db):
    submitter, password, key = services.invite_submitter(email="ada@example.org", name="Ada")
    submitter.password, submitter.key = password, key
    return submitter


@pytest.fixture(autouse=True)
def checks_at_once(monkeypatch, settings, tmp_path):
    """Submissions' files go to the test's directory, and the queue runs a task (a check, a publication) as soon as
    it is sent."""
    settings.EEGAB_SUBMISSIONS_DIR = tmp_path / "submissions"
    monkeypatch.setattr("runs.queue.dispatch.send_task", lambda function, *args, group: import_string(function)(*args))
