"""The README opens with the two commands of a new user, CI runs exactly its test command, and its scoring example runs."""

import json
import shlex
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from benchmark.management.commands.build_demo_release import DEMO_VERSION
from leaderboard.management.commands.demo import BASELINES
from runs.models import Run
from runs.reports import run_report
from tests.runs.demo_suite import demo_release, import_demo

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_readme_opens_with_setup_and_main_job_then_setup_and_tests():
    main_job, tests = _readme_commands()
    assert main_job.startswith("python3 -m venv .venv && ")
    assert tests.startswith("python3 -m venv .venv && ") and tests.endswith("-m pytest")


def test_ci_runs_exactly_the_readme_test_command():
    _, tests = _readme_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci_lines


def test_ci_installs_the_browser_fails_on_skips_and_checks_migrations():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = ci.splitlines()
    assert "export CI=true" in lines  # tests/ci_skips.py: a skip fails the run
    assert "apt-get install -y chromium chromium-driver" in ci
    _, tests = _readme_commands()
    assert lines.index("export CI=true") < lines.index(tests)
    assert any(line.startswith(".venv/bin/python manage.py makemigrations --check --dry-run") for line in lines)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "apt-get install chromium chromium-driver" in readme.split("```", 2)[1]


def _scoring_commands() -> list[list[str]]:
    """The manage.py commands of the README's scoring example, each as its arguments after ``manage.py``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Scoring predictions", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(command)[2:] for command in block.replace("\\\n", " ").splitlines() if command.strip()]


@pytest.mark.slow
@pytest.mark.django_db
def test_the_scoring_example_runs_after_the_demo_and_prints_what_the_readme_says(tmp_path):
    """The demo's release where the demo builds it, its first run (the heuristic) exported, its T3 predictions scored."""
    export, score = _scoring_commands()
    release = f"var/releases/demo-{DEMO_VERSION}"
    assert BASELINES[0] == "baseline/heuristic"  # the demo's first run, "run 1" in a new clone
    assert export[:2] == ["export_run", "1"] and score[0] == "score"
    assert all(path.startswith((release + "/", "outputs/")) for path in (*export[3:], *score[2:-2:2]))
    import_demo()
    call_command("run_benchmark", model="baseline/heuristic", suite="demo", tasks="T3", sync=True, stdout=StringIO())
    run = Run.objects.get()

    def here(argument: str) -> str:
        if argument.startswith(release + "/"):
            return str(demo_release() / argument.removeprefix(release + "/"))
        return str(tmp_path / argument) if argument.startswith("outputs/") else argument

    call_command(export[0], str(run.pk), *map(here, export[2:]), stdout=StringIO())
    out = StringIO()
    call_command(*map(here, score), stdout=out)
    printed = json.loads(out.getvalue())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert (printed["task_id"], printed["n_items"], printed["official"]) == ("T3", 12, False)
    assert printed["reasons"] == ["T3 requires 188 scenarios, found 12"]
    assert printed["primary_score"] == run_report(run)["tasks"]["T3"]["primary_score"]
    assert f'"primary_score": {printed["primary_score"]}' in readme and json.dumps(printed["reasons"]) in readme
