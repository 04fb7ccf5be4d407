"""Repeated runs on the site: the run page, the leaderboard, the API, the run form and the rank-stability view."""
import json
import re
import statistics
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from benchmark.models import ModelSpec
from benchmark.scoring import TASK_IDS
from benchmark.scoring.epochs import overall_over_epochs
from leaderboard import stats
from leaderboard.analysis import charts
from leaderboard.models import RunSummary
from runs.models import Run
from tests.leaderboard.test_browser import browser, wait_for  # noqa: F401 (fixture)
from tests.leaderboard.test_browser import pytestmark as browser_marks
from tests.leaderboard.test_views import new_run_data
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    return import_demo()


def random_run(*extra) -> Run:
    call_command(
        "run_benchmark", "--model", "baseline/random", "--suite", "demo", "--sync", *extra,
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    return Run.objects.latest("id")


@pytest.fixture
def two_runs(demo) -> tuple[Run, Run]:
    """A run of three epochs and a run of one, both of ``baseline/random`` on the whole demo suite."""
    return random_run("--epochs", "3"), random_run()


def figure_json(html: str, figure_id: str) -> dict:
    match = re.search(rf'<script id="{figure_id}" type="application/json">(.*?)</script>', html, re.S)
    assert match, f"no figure {figure_id}"
    return json.loads(match.group(1))


def test_run_page_shows_mean_sd_flip_rate_and_pass_k_per_task(client, two_runs):
    repeated, single = two_runs
    summary = RunSummary.objects.get(run=repeated)
    html = client.get(reverse("leaderboard:run", args=[repeated.pk])).content.decode()
    assert "Over 3 epochs" in html and 'id="epochs"' in html
    t3 = summary.tasks["T3"]
    row = re.search(r'<tr data-task="T3">(.*?)</tr>', html, re.S).group(1)
    assert f"{t3['primary_score']:.3f}</strong> ± {t3['epochs']['sd']:.3f}" in row
    assert f"{t3['epochs']['flip_rate'] * 100:.1f} %" in row
    assert f"{t3['epochs']['pass_hat_k'] * 100:.1f} %" in row and f"{t3['epochs']['pass_at_k'] * 100:.1f} %" in row
    t5 = re.search(r'<tr data-task="T5">(.*?)</tr>', html, re.S).group(1)
    assert 'data-field="pass_hat_k"><span class="muted">–</span>' in t5  # no pass^k for event detection
    sd = overall_over_epochs(summary.tasks)["sd"]
    assert f"± {sd:.3f}" in html
    assert '<th class="sortable num" tabindex="0">Epoch</th>' in html

    plain = client.get(reverse("leaderboard:run", args=[single.pk])).content.decode()
    assert 'id="epochs"' not in plain and ">Epoch</th>" not in plain


def test_leaderboard_shows_mean_and_sd_for_the_repeated_run_only(client, two_runs):
    repeated, single = two_runs
    summary = RunSummary.objects.get(run=repeated)
    html = client.get(reverse("leaderboard:index")).content.decode()
    rows = {cls: row for cls, row in re.findall(r'<tr class="(run(?: other-run)?)" data-source="run">(.*?)</tr>', html, re.S)}
    # one model and settings: the later run is the board's row, the run of three epochs is behind "show every run"
    assert f'href="/runs/{single.pk}/"' in rows["run"] and f'href="/runs/{repeated.pk}/"' in rows["run other-run"]
    repeated_row, single_row = rows["run other-run"], rows["run"]
    spreads = [overall_over_epochs(summary.tasks)["sd"], *(summary.tasks[task]["epochs"]["sd"] for task in TASK_IDS)]
    assert any(round(sd, 3) for sd in spreads)
    for sd in spreads:  # each spread beneath its mean, unless it is 0.000 as shown
        assert (f"± {sd:.3f}" in repeated_row) == bool(round(sd, 3))
    assert "± 0.000" not in html and "× 3 epochs" in repeated_row
    assert "±" not in single_row and "epochs" not in single_row


def test_api_run_and_leaderboard_include_the_epochs(client, two_runs):
    repeated, single = two_runs
    summary = RunSummary.objects.get(run=repeated)
    data = client.get(reverse("api:run", args=[repeated.pk])).json()
    assert data["epochs"] == 3
    assert data["overall_epochs"]["scores"] == pytest.approx(overall_over_epochs(summary.tasks)["scores"])
    assert data["overall_sd"] == pytest.approx(statistics.stdev(data["overall_epochs"]["scores"]))
    t1 = data["epoch_stats"]["T1"]
    assert set(t1) == {"k", "scores", "sd", "flip_rate", "pass_hat_k", "pass_at_k"} and len(t1["scores"]) == 3
    assert t1 == data["tasks"][0]["epochs"]
    assert sorted({episode["epoch"] for episode in data["episodes"]}) == [0, 1, 2]

    rows = client.get(reverse("api:leaderboard"), {"suite": "demo"}).json()["rows"]
    by_run = {row["run_id"]: row for row in rows}
    assert by_run[repeated.pk]["epochs"] == 3
    assert by_run[repeated.pk]["epoch_stats"]["T3"]["flip_rate"] == pytest.approx(
        summary.tasks["T3"]["epochs"]["flip_rate"]
    )
    assert by_run[repeated.pk]["overall"] == pytest.approx(statistics.mean(data["overall_epochs"]["scores"]))
    assert by_run[single.pk]["epochs"] == 1 and by_run[single.pk]["overall_sd"] is None
    assert by_run[single.pk]["epoch_stats"] == {}


def test_the_run_form_accepts_epochs(client, demo, staff_user):
    client.force_login(staff_user)
    spec = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    response = client.post(reverse("leaderboard:new_run"), new_run_data(demo, spec, epochs="3"))
    run = Run.objects.get(name="queued from the form")
    assert response.status_code == 302
    assert run.epochs == 3 and run.episodes.count() == 3 * 2  # T1 and T3, one instance each
    assert sorted(run.episodes.values_list("epoch", flat=True)) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("epochs", ["0", "11"])
def test_the_run_form_rejects_epochs_outside_one_to_ten(client, demo, staff_user, epochs):
    client.force_login(staff_user)
    spec = ModelSpec.objects.create(name="random", provider_model="baseline/random")
    response = client.post(reverse("leaderboard:new_run"), new_run_data(demo, spec, epochs=epochs))
    assert response.status_code == 200 and not Run.objects.exists()
    assert "epochs" in response.context["form"].errors


def test_rank_stability_shares_of_each_pair_sum_to_one(client, two_runs):
    html = client.get(reverse("leaderboard:analysis"), {"suite": "demo"}).content.decode()
    figure = figure_json(html, "analysis-rank-stability")
    z = figure["data"][0]["z"]
    assert len(z) == 2 and z[0][0] is None and z[1][1] is None
    assert z[0][1] + z[1][0] == pytest.approx(1.0)
    assert 0 <= z[0][1] <= 1


def test_rank_stability_has_an_empty_state_below_two_runs(client, demo):
    random_run("--epochs", "2")
    html = client.get(reverse("leaderboard:analysis"), {"suite": "demo"}).content.decode()
    assert 'data-figure="analysis-rank-stability" data-empty>Rank stability needs at least two runs' in html
    assert charts.rank_stability_figure(["only"], [[0.5]])["data"] == []


def test_rank_stability_figure_counts_ties_half():
    identical = np.array([0.4, 0.6, 0.5])
    above = stats.rank_stability([identical, identical.copy(), np.array([0.5, 0.5, 0.9])])
    z = charts.rank_stability_figure(["a", "b", "c"], above)["data"][0]["z"]
    assert z[0][1] == z[1][0] == 0.5  # two runs tied in every resample
    assert z[0][2] == pytest.approx(1 / 3) and z[2][0] == pytest.approx(2 / 3)  # a above c in one resample of three
    assert [z[i][j] + z[j][i] for i, j in ((0, 1), (0, 2), (1, 2))] == pytest.approx([1.0, 1.0, 1.0])


@browser_marks[0]
@browser_marks[1]
@browser_marks[2]
def test_epochs_table_and_rank_stability_heatmap_in_a_browser(browser, live_server, two_runs):
    repeated, _ = two_runs
    browser.get(live_server.url + reverse("leaderboard:analysis") + "?suite=demo")
    wait_for(browser, '[data-figure="analysis-rank-stability"] .main-svg')
    cells = browser.execute_script(
        "return document.querySelector('[data-figure=\"analysis-rank-stability\"]').data[0].z.length"
    )
    assert cells == 2
    try:
        browser.set_window_size(390, 844)
        browser.get(live_server.url + reverse("leaderboard:run", args=[repeated.pk]))
        wait_for(browser, "#epochs tbody tr")
        fits = browser.execute_script(
            "const box = document.querySelector('#epochs').closest('.table-wrap').getBoundingClientRect();"
            "return box.right <= window.innerWidth && document.documentElement.scrollWidth <= window.innerWidth"
        )
        assert fits
    finally:
        browser.set_window_size(1400, 1000)


def test_the_runs_list_says_how_many_epochs_a_run_played(client, db):
    from tests.runs.demo_suite import import_demo

    import_demo()
    call_command("run_benchmark", model="baseline/random", suite="demo", tasks="T3", epochs=3, sync=True, stdout=StringIO())
    call_command("run_benchmark", model="baseline/random", suite="demo", tasks="T3", sync=True, stdout=StringIO())
    html = client.get(reverse("leaderboard:runs")).content.decode()
    assert html.count("× 3 epochs") == 1 and "× 1 epochs" not in html
