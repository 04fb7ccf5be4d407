"""Held-out suites from the command line: build_release and import_release --held-out, suite_references."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.models import Suite
from benchmark.releases import ReleaseError, import_release, set_references
from tests.benchmark.release_dirs import official_release
from tests.datafiles import BONN

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*[str(arg) for arg in args], stdout=out)
    return out.getvalue()


def descriptor(release) -> dict:
    return json.loads((release / "benchmark" / "benchmark.json").read_text())


@pytest.fixture
def t1_release(tmp_path):
    return official_release(tmp_path / "release", ("T1",))


def test_a_suite_is_public_unless_imported_held_out(t1_release):
    assert import_release(path=t1_release).suite.references == "public"
    held = import_release(path=t1_release, suite_name="secret", held_out=True).suite
    assert Suite.objects.get(pk=held.pk).is_held_out


def test_import_command_holds_out_and_says_so(t1_release):
    output = run("import_release", t1_release, "--held-out", "--no-precompute")
    assert "Its references are held-out." in output
    assert Suite.objects.get().is_held_out


def test_importing_again_with_held_out_holds_the_existing_suite_out(t1_release):
    suite = import_release(path=t1_release).suite
    again = import_release(path=t1_release, held_out=True)
    assert not again.created and again.suite.pk == suite.pk
    assert Suite.objects.get(pk=suite.pk).is_held_out
    # importing without the flag never publishes a held-out suite
    assert Suite.objects.get(pk=import_release(path=t1_release).suite.pk).is_held_out


def test_a_release_built_held_out_is_imported_held_out_and_keeps_it_as_tasks_are_added(tmp_path):
    release = tmp_path / "release"
    run("build_release", "bonn", BONN, "--out", release, "--held-out")
    assert descriptor(release)["references"] == "held-out"
    run("build_release", "bonn", BONN, "--out", release)  # rebuilt without the flag: still held out
    assert descriptor(release)["references"] == "held-out"
    assert import_release(path=release, skip_missing=True).suite.is_held_out


def test_a_release_built_public_has_no_references_key(tmp_path):
    run("build_release", "bonn", BONN, "--out", tmp_path / "release")
    assert "references" not in descriptor(tmp_path / "release")


def test_an_unknown_references_value_in_benchmark_json_is_refused(t1_release):
    path = t1_release / "benchmark" / "benchmark.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "references": "secret"}))
    with pytest.raises(ReleaseError, match="references must be one of public, held-out"):
        import_release(path=t1_release)
    assert not Suite.objects.exists()


def test_suite_references_command_changes_it_both_ways(t1_release):
    suite = import_release(path=t1_release).suite
    assert "references are now held-out" in run("suite_references", suite.name, "held-out")
    assert Suite.objects.get(pk=suite.pk).is_held_out
    assert "already held-out; nothing changed" in run("suite_references", suite.name, "held-out")
    assert "references are now public" in run("suite_references", suite.name, "public")
    assert not Suite.objects.get(pk=suite.pk).is_held_out


def test_suite_references_command_refuses_an_unknown_suite_or_value(t1_release):
    with pytest.raises(CommandError, match="no suite is named 'nope'"):
        run("suite_references", "nope", "held-out")
    suite = import_release(path=t1_release).suite
    with pytest.raises(CommandError, match="invalid choice"):
        run("suite_references", suite.name, "secret")


def test_set_references_refuses_an_unknown_value(t1_release):
    suite = import_release(path=t1_release).suite
    with pytest.raises(ValueError, match="references must be one of public, held-out, not 'hidden'"):
        set_references(suite, "hidden")
