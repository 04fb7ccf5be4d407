"""``manage.py demo --no-serve``: the main job end to end, then the leaderboard lists its runs."""

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from runs.models import Run, Status

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_demo_builds_runs_the_baselines_and_the_leaderboard_lists_them(settings, tmp_path, client):
    settings.EEGAB_DATA_ROOT = tmp_path / "releases"
    out = io.StringIO()
    call_command("demo", no_serve=True, stdout=out, stderr=io.StringIO())

    runs = Run.objects.filter(suite__name="demo")
    assert sorted(runs.values_list("model__provider_model", flat=True)) == ["baseline/heuristic", "baseline/random"]
    assert all(run.status == Status.COMPLETED for run in runs)
    assert all(run.episodes.filter(status=Status.COMPLETED).count() == run.episodes.count() for run in runs)
    assert "The leaderboard is at http://127.0.0.1:8000/" in out.getvalue()

    page = client.get(reverse("leaderboard:index"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "baseline/heuristic" in html and "baseline/random" in html
    assert "synthetic" in html.lower()

    again = io.StringIO()
    call_command("demo", no_serve=True, stdout=again, stderr=io.StringIO())
    assert again.getvalue().count("Reusing the completed run") == 2
    assert Run.objects.filter(suite__name="demo").count() == 2
