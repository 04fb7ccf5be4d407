"""The runs list (/runs/) and what a run page says of its scores, its outcomes and a missing queue worker."""
import re

import pytest
from django.urls import reverse

from benchmark.scoring import EXPECTED_COUNTS
from benchmark.scoring.epochs import T6_CORRECT_MACRO_F1
from leaderboard.outcomes import with_outcome
from leaderboard.run_pages import views as run_pages_views
from leaderboard.summaries.scoring import current_summary, refresh_run_summary
from runs import reports, specs
from runs.models import Run, Status
from runs.queue import dispatch, local
from runs.services import create_run
from tests.runs.demo_suite import import_demo
from tests.runs.queue.test_workers import status_cache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_cluster_seen(settings, tmp_path):
    """django-q2's cluster status in a directory of the test's own, where no cluster reports unless started."""
    settings.CACHES = status_cache(tmp_path / "queue-status")


def page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def listed_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr data-run="(\d+)"', html)]


def listed_row(html: str, run: Run) -> str:
    """The HTML of the runs list's row of ``run``."""
    start = html.index(f'<tr data-run="{run.pk}"')
    return html[start:html.index("</tr>", start)]


@pytest.fixture
def three_runs(bench, suite, model_spec):
    """The bench's two finished runs (alpha completed, beta failed) and a newer pending run on the tiny suite."""
    pending = create_run(suite=suite, model=model_spec, tasks=["T1", "T3"], name="waiting run")
    return bench, pending


# ── /runs/ ──────────────────────────────────────────────────────────────────────────────────


def test_runs_list_shows_every_run_newest_first_with_progress_and_score(client, three_runs):
    bench, pending = three_runs
    html = page(client, reverse("leaderboard:runs"))
    assert listed_ids(html) == [pending.pk, bench.beta.pk, bench.alpha.pk]
    alpha = listed_row(html, bench.alpha)
    overall = current_summary(bench.alpha, stored=None).overall  # scored in memory: the fixture saved no summary
    assert "6 / 6" in alpha and f"<strong>{overall:.3f}</strong> <span class=\"muted\">Overall</span>" in alpha
    beta = listed_row(html, bench.beta)  # no T6 answer and a failed T4: scored, with its failure counted
    assert "6 / 6" in beta and "1 failed" in beta
    waiting = listed_row(html, pending)
    assert "0 / 2" in waiting and "0 running, 2 waiting" in waiting and "not scored yet" in waiting
    assert f'href="{reverse("leaderboard:runs")}" aria-current="page">Runs</a>' in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"status": "pending"}, ["pending"]),
        ({"status": "failed"}, ["beta"]),
        ({"model": "Alpha-1"}, ["alpha"]),
        ({"suite": "bench"}, ["beta", "alpha"]),
        ({"suite": "tiny", "status": "completed"}, []),
    ],
)
def test_runs_list_filters_by_status_model_and_suite(client, three_runs, query, expected):
    bench, pending = three_runs
    by_name = {"alpha": bench.alpha.pk, "beta": bench.beta.pk, "pending": pending.pk}
    html = page(client, reverse("leaderboard:runs") + "?" + "&".join(f"{k}={v}" for k, v in query.items()))
    assert listed_ids(html) == [by_name[name] for name in expected]
    if not expected:
        assert "No run matches these filters." in html


def test_runs_list_is_paginated_keeping_the_filters(client, suite, model_spec, monkeypatch):
    monkeypatch.setattr(run_pages_views, "RUNS_PER_PAGE", 2)
    runs = [create_run(suite=suite, model=model_spec, tasks=["T1"], name=f"run {n}") for n in range(5)]
    first = page(client, reverse("leaderboard:runs") + "?status=pending")
    assert listed_ids(first) == [runs[4].pk, runs[3].pk]
    assert "page 1 of 3" in first and "?status=pending&amp;page=2" in first
    last = page(client, reverse("leaderboard:runs") + "?status=pending&page=3")
    assert listed_ids(last) == [runs[0].pk]


def test_visitors_see_the_runs_but_no_actions_and_no_creator(client, three_runs, staff_user):
    bench, pending = three_runs
    Run.objects.filter(pk=pending.pk).update(created_by=staff_user)
    html = page(client, reverse("leaderboard:runs"))
    assert 'data-action="cancel"' not in html and 'data-action="resume"' not in html
    assert "<th>By</th>" not in html and ">staff<" not in html
    assert "/episodes/" not in html  # nothing of an episode, ended or not


def test_staff_see_cancel_and_resume_buttons_that_post_to_the_run_actions(client, three_runs, staff_user):
    bench, pending = three_runs
    Run.objects.filter(pk=pending.pk).update(created_by=staff_user)
    client.force_login(staff_user)
    html = page(client, reverse("leaderboard:runs"))
    cancel = reverse("leaderboard:run_cancel", args=[pending.pk])
    resume = reverse("leaderboard:run_resume", args=[bench.beta.pk])
    # Cancelling asks first (static/js/confirm.js reads the question); without script it posts as it stands.
    question = (f"Cancel run {pending.pk}, {pending.name} ({pending.model.name})? Its waiting episodes end at once, "
                "its running ones at their next turn. Resuming it later plays them again.")
    assert f'<form method="post" action="{cancel}" class="inline" data-confirm="{question}">' in html
    assert f'<form method="post" action="{resume}" class="inline">' in html
    assert '<script src="/static/js/confirm.js"></script>' in html
    assert reverse("leaderboard:run_cancel", args=[bench.alpha.pk]) not in html  # a completed run has neither
    assert reverse("leaderboard:run_resume", args=[bench.alpha.pk]) not in html
    completed = re.search(rf'<tr data-run="{bench.alpha.pk}">.*?</tr>', html, re.DOTALL).group(0)
    assert re.search(r'<td class="actions"><span class="muted" title="A completed run can be neither cancelled '
                     r'nor resumed">–</span></td>', completed)
    assert "<td>staff</td>" in html

    response = client.post(cancel)
    assert response.status_code == 302
    assert Run.objects.get(pk=pending.pk).status == Status.CANCELLED


# ── the run page ────────────────────────────────────────────────────────────────────────────


def test_run_page_shows_overall_with_its_95_percent_interval(client, bench):
    summary = current_summary(bench.alpha, stored=None)
    assert summary.overall_ci is not None
    html = page(client, reverse("leaderboard:run", args=[bench.alpha.pk]))
    low, high = summary.overall_ci
    assert f'<strong class="overall-score">{summary.overall:.3f}</strong>' in html
    assert f"95&nbsp;% CI [{low:.3f}, {high:.3f}]" in html


def test_a_pending_run_is_not_shown_as_scored(client, run):
    html = page(client, reverse("leaderboard:run", args=[run.pk]))
    assert "Not scored yet: no episode of T1, T2, T3, T4, T5, T6 has ended." in html
    assert html.count("not scored yet") == 6
    assert "0.000" not in html
    assert 'class="overall-score"' not in html


def test_a_run_of_some_tasks_says_why_it_has_no_overall(client, suite, model_spec):
    partial = create_run(suite=suite, model=model_spec, tasks=["T3"])
    local.run_sync(run_id=partial.pk)
    html = page(client, reverse("leaderboard:run", args=[partial.pk]))
    assert "No Overall: it is the mean of all six tasks' primary metrics, and this run has T3." in html
    assert "not scored yet" not in html


def test_a_baseline_run_page_says_it_is_free_and_a_priced_one_gives_its_cost(client, suite, model_spec, bench):
    baseline = create_run(suite=suite, model=model_spec, tasks=["T1"])
    local.run_sync(run_id=baseline.pk)
    html = page(client, reverse("leaderboard:run", args=[baseline.pk]))
    assert "free <span class=\"muted\">(a built-in baseline calls no model)</span>" in html
    assert "$0" not in html and 'data-field="cost_usd"' not in html
    priced = page(client, reverse("leaderboard:run", args=[bench.alpha.pk]))
    assert 'data-field="cost_usd" data-format="usd">$0.0' in priced and "built-in baseline" not in priced


@pytest.mark.parametrize("references", [True, False])
def test_run_page_states_what_makes_an_outcome_correct(client, bench, settings, references):
    settings.EEGAB_PUBLIC_REFERENCES = references
    html = page(client, reverse("leaderboard:run", args=[bench.alpha.pk]))
    legend = html[html.index('id="outcome-legend"'):html.index("</p>", html.index('id="outcome-legend"'))]
    if references:
        assert f"T6: a night's macro-F1 of at\n      least {T6_CORRECT_MACRO_F1}" in legend
        assert "a miss or a false alarm is wrong whatever its Event-F1" in legend
    else:
        assert "correct" not in legend and "answered" in legend


def test_the_t6_cut_off_on_the_page_is_the_one_outcomes_use(bench):
    episode = bench.episode(bench.alpha, "T6")
    outcome = lambda: with_outcome(type(episode).objects.filter(pk=episode.pk)).get().outcome  # noqa: E731
    for macro_f1, expected in [(T6_CORRECT_MACRO_F1, "correct"), (T6_CORRECT_MACRO_F1 - 0.001, "wrong")]:
        type(episode).objects.filter(pk=episode.pk).update(scores={**episode.scores, "macro_f1": macro_f1})
        assert outcome() == expected


# ── a run waiting for a queue worker ───────────────────────────────────────────────────────


def test_queued_episodes_with_no_worker_say_so_and_name_the_command(client, suite, model_spec):
    queued = create_run(suite=suite, model=model_spec, tasks=["T1", "T3"])
    dispatch.queue_run(run_id=queued.pk)
    html = page(client, reverse("leaderboard:run", args=[queued.pk]))
    assert 'id="no-worker"' in html
    assert "no worker is running to play them" in html and "<code>python manage.py qcluster</code>" in html


def test_no_worker_notice_for_a_run_whose_episodes_are_not_queued(client, run):
    # Played by a --sync command, or not handed to the queue at all: no worker is awaited.
    html = page(client, reverse("leaderboard:run", args=[run.pk]))
    assert 'id="no-worker"' not in html


def test_no_worker_notice_once_nothing_waits(client, bench):
    assert 'id="no-worker"' not in page(client, reverse("leaderboard:run", args=[bench.alpha.pk]))


# ── completeness against the run's own selection ──────────────────────────────────────────


def test_a_run_of_two_selected_instances_is_judged_against_those_two(client):
    suite = import_demo()
    assert suite.instances.filter(task__code="T3").count() > 2
    model = specs.model_spec_for("baseline/random")
    selected = create_run(suite=suite, model=model, tasks=["T3"], limit=2)

    [pending] = client.get(reverse("api:run", args=[selected.pk])).json()["tasks"]
    assert pending["completeness"]["expected"] == 2 and pending["completeness"]["missing"] == 2
    assert f"T3 requires {EXPECTED_COUNTS['T3']} scenarios, found 2" in pending["reasons"]
    assert "T3 result is incomplete: missing=2, extra=0, noncompleted=0" in pending["reasons"]
    assert not pending["official"]

    local.run_sync(run_id=selected.pk)
    refresh_run_summary(selected)
    [done] = client.get(reverse("api:run", args=[selected.pk])).json()["tasks"]
    assert done["completeness"] | {"expected": 2, "completed": 2, "missing": 0} == done["completeness"]
    assert done["reasons"] == [f"T3 requires {EXPECTED_COUNTS['T3']} scenarios, found 2"]
    scored = reports.task_summaries(selected)["T3"]
    assert done["primary_score"] == scored["primary_score"]  # the same as the scorer over the run's results
