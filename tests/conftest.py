"""Shared fixtures: named users, a tiny suite with one instance per task, a model and a run; the
official package (the real one, or its stand-in) for the tests of the official prompt set."""
import importlib
import importlib.util
import sys
from pathlib import Path

import pytest
from django.db.backends.signals import connection_created

from benchmark.models import Instance, ModelSpec, Release, Suite, Task
from benchmark.wording import OFFICIAL_PACKAGE
from runs.services import create_run

pytest_plugins = ["tests.ci_skips"]
STANDIN = Path(__file__).resolve().parent / "official_standin"


# Key variables the tests' runs name, besides the providers' usual ones.
TEST_KEY_ENVS = ("FAKE_LLM_KEY", "SCRIPTED_KEY", "UNSET_TEST_API_KEY")


#: Bounds on the tests' statements (PostgreSQL), so a test that would hang the suite until CI's time
#: runs out fails instead, naming the statement: how long one waits for a lock another connection
#: holds (a connection left in a transaction), and how long one runs at all. pyproject.toml's
#: ``faulthandler_timeout`` prints every thread's stack when a test runs longer than any should.
LOCK_TIMEOUT = "120s"
STATEMENT_TIMEOUT = "300s"
#: No nested-loop joins where another join will do. Autovacuum analyses the tables while a test's rows
#: are still uncommitted, and so records them as empty; the planner then joins thousands of rows by
#: nested loops over whole indexes, and an UPDATE filtered through a join ran for over ten minutes
#: (tests/leaderboard/analysis/test_failure_modes.py, in CI and here). A hash join of the same rows takes
#: milliseconds; a server whose statistics see committed rows never meets this.
PLANNER_SETTINGS = {"enable_nestloop": "off"}


def _bounded_statements(sender, connection, **kwargs):
    if connection.vendor == "postgresql":
        settings = {"lock_timeout": LOCK_TIMEOUT, "statement_timeout": STATEMENT_TIMEOUT, **PLANNER_SETTINGS}
        with connection.cursor() as cursor:
            for name, value in settings.items():
                cursor.execute("SELECT set_config(%s, %s, false)", [name, value])


connection_created.connect(_bounded_statements, dispatch_uid="tests-bounded-statements")

#: Fixtures through which a test reaches the database (pytest-django's; live_server and the rest request them).
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"})


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only", action="store_true",
        help="run only the tests that use the database (CI's PostgreSQL job: the others ran on SQLite already)",
    )


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--database-tests-only"):
        return
    kept, dropped = [], []
    for item in items:
        uses = item.get_closest_marker("django_db") is not None or DATABASE_FIXTURES & set(item.fixturenames)
        (kept if uses else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True, scope="session")
def _statistics_directory(tmp_path_factory):
    """Long recordings' kept statistics go to a directory of the test session's own."""
    from tools_app.signal import stored

    stored.configure(tmp_path_factory.mktemp("record-stats"))


@pytest.fixture(autouse=True)
def _test_settings(settings):
    """Key variables the tests name; a fast password hash (the tests' passwords are not secrets)."""
    settings.EEGAB_PROVIDER_KEY_ENVS = [*settings.EEGAB_PROVIDER_KEY_ENVS, *TEST_KEY_ENVS]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _platform_wording_by_default(request, monkeypatch):
    """Tests see the official package as absent, so they behave alike with and without it installed.

    A test of the official prompt set asks for it: ``official_standin`` (tests/official_standin)
    or ``official_package`` (the real package, where it is installed).
    """
    if {"official_standin", "official_package"} & set(request.fixturenames):
        return
    monkeypatch.setattr("benchmark.wording.official_available", lambda: False)


def _official_modules() -> dict:
    return {name: module for name, module in sys.modules.items()
            if name == OFFICIAL_PACKAGE or name.startswith(OFFICIAL_PACKAGE + ".")}


@pytest.fixture
def official_standin(monkeypatch):
    """The stand-in of the official package (tests/official_standin) in its place, for the test."""
    hidden = _official_modules()
    for name in hidden:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(STANDIN))
    yield STANDIN
    for name in _official_modules():
        del sys.modules[name]
    sys.modules.update(hidden)


@pytest.fixture
def official_package():
    """The real official package; the test is skipped (and allowed to be, even in CI) where it is absent."""
    if importlib.util.find_spec(OFFICIAL_PACKAGE) is None:
        pytest.skip(f"the official package ({OFFICIAL_PACKAGE}) is not installed: pip install -e '.[official]'")
    module = importlib.import_module(OFFICIAL_PACKAGE)
    if Path(module.__file__).resolve().is_relative_to(STANDIN):
        pytest.skip("the stand-in, not the official package, is on the path")
    return module

# One small instance per task, shaped like the official scenarios and answer keys.
TINY_INSTANCES = {
    "T1": {
        "scenario_id": "c1_knowledge_medmcqa_0001",
        "prompt_input": {
            "question": "Which rhythm dominates the relaxed, eyes-closed adult EEG?",
            "options": {"A": "Delta", "B": "Alpha", "C": "Beta", "D": "Gamma"},
        },
        "expected_output_schema": {"answer": "A|B|C|D"},
        "reference": {"answer": "B"},
    },
    "T2": {
        "scenario_id": "c2_artifact:edn_eog_m7_0000",
        "sfreq": 256.0,
        "n_channels": 1,
        "duration_sec": 2.0,
        "metadata": {"sampling_rate": 256.0, "n_channels": 1, "duration_sec": 2.0},
        "expected_output_schema": {"classification": "clean|ocular_contaminated|muscle_contaminated"},
        "recording_path": "data/eegdenoisenet/seg_0000.npy",
        "reference": {"label": "ocular_contaminated", "finding_tags": []},
    },
    "T3": {
        "scenario_id": "c3_routine_bonn_S001",
        "sfreq": 173.61,
        "n_channels": 1,
        "duration_sec": 23.6,
        "recording_path": "data/bonn/S/S001.txt",
        "reference": {"label": "epileptic", "label_binary": 1, "finding_tags": []},
    },
    "T4": {
        "scenario_id": "c4_dementia_ds004504_sub-001",
        "subject": "sub-001",
        "sfreq": 500.0,
        "n_channels": 19,
        "recording_path": "data/ds004504/sub-001/eeg/sub-001_task-eyesclosed_eeg.set",
        "reference": {"label": "AD"},
    },
    "T5": {
        "scenario_id": "c5_seizure_chb17a_03",
        "subject": "chb17",
        "sfreq": 256.0,
        "n_channels": 23,
        "duration_sec": 3600.0,
        "recording_path": "data/chbmit/chb17/chb17a_03.edf",
        "reference": {
            "label": "seizure",
            "has_seizure": True,
            "n_seizures": 1,
            "seizure_events": [[2282.0, 2372.0]],
        },
    },
    "T6": {
        "scenario_id": "c6_sleep_SC4001E0",
        "subject": "SC400",
        "sfreq": 100.0,
        "n_channels": 7,
        "duration_sec": 120.0,
        "n_epochs": 4,
        "recording_path": "data/sleep-edfx/SC4001E0-PSG.edf",
        "reference": {
            "label": "sleep_session",
            "epoch_labels_aasm": ["W", "N1", "N2", "N2"],
            "n_epochs_total": 4,
        },
    },
}


@pytest.fixture
def staff_user(django_user_model):
    """An admin of the platform: Django staff with every permission."""
    return django_user_model.objects.create_user(
        username="staff", password="staff-password", is_staff=True, is_superuser=True
    )


@pytest.fixture
def visitor(django_user_model):
    """A signed-in user with no staff rights."""
    return django_user_model.objects.create_user(username="visitor", password="visitor-password")


@pytest.fixture
def release(db):
    return Release.objects.create(
        name="tiny",
        version="1.0",
        source="tests/conftest.py",
        is_synthetic=True,
        manifest={"benchmark/scenarios/T1.jsonl": {"sha256": "0" * 64, "size": 1}},
    )


@pytest.fixture
def suite(release):
    """A suite with one instance per task, record ids opaque and distinct."""
    suite = Suite.objects.create(name="tiny", release=release, description="One instance per task.")
    for task in Task.objects.all():
        Instance.objects.create(
            suite=suite, task=task, record_id=f"rec-{task.code.lower()}-7f3a", **TINY_INSTANCES[task.code]
        )
    return suite


@pytest.fixture
def model_spec(db):
    return ModelSpec.objects.create(
        name="Heuristic baseline", provider_model="baseline/heuristic", family="baseline", is_open_weight=True
    )


@pytest.fixture
def run(suite, model_spec):
    """A pending run of ``model_spec`` on every task of ``suite``."""
    tasks = list(Task.objects.values_list("code", flat=True))
    return create_run(suite=suite, model=model_spec, tasks=tasks, name="tiny run")

