"""The README opens with the two commands of a new user, and CI runs exactly its test command."""

from pathlib import Path

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
