"""The site's pages: what they show, the downloads and JSON endpoints, and who may do what."""
import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from benchmark.models import ModelSpec
from leaderboard.board.published import import_published
from leaderboard.explorer.signal import MAX_CHANNELS, MAX_POINTS
from runs.environment.service import agent_spec
from runs.models import Episode, Run, Status, Step
from tests.leaderboard.conftest import make_suite

pytestmark = pytest.mark.django_db


def signal_url(step: Step) -> str:
    return reverse("leaderboard:episode_signal", args=[step.episode_id, step.index])


# ── leaderboard ──────────────────────────────────────────────────────────────────────────────


def test_leaderboard_ranks_both_runs_with_intervals(client, bench):
    response = client.get(reverse("leaderboard:index"))
    assert response.status_code == 200
    html = response.content.decode()
    rows = response.context["sections"][0]["board"].rows
    assert [(row.rank, row.model) for row in rows] == [(1, "Alpha-1"), (2, "Beta-2")]
    assert all(row.overall_ci for row in rows)
    assert 'data-figure="overall-bench"' in html
    assert "[95&nbsp;% CI]" in html
    assert reverse("leaderboard:run", args=[bench.alpha.pk]) in html


def test_leaderboard_shows_published_rows_badged_beside_runs(client, bench):
    import_published(board="bench")
    html = client.get(reverse("leaderboard:index")).content.decode()
    assert "GPT-5.6-sol" in html
    assert 'class="badge published"' in html
    assert "Alpha-1" in html


def test_leaderboard_filters_by_source(client, bench):
    import_published(board="bench")
    html = client.get(reverse("leaderboard:index"), {"source": "run"}).content.decode()
    assert "Alpha-1" in html and "GPT-5.6-sol" not in html


def test_leaderboard_filters_by_weights_and_family(client, bench):
    html = client.get(reverse("leaderboard:index"), {"weights": "open"}).content.decode()
    assert "Alpha-1" in html and "Beta-2" not in html
    html = client.get(reverse("leaderboard:index"), {"family": "Beta"}).content.decode()
    assert "Beta-2" in html and "Alpha-1" not in html


def test_synthetic_suite_gets_its_own_board_marked_synthetic(client, bench, tmp_path):
    from tests.leaderboard.conftest import GOOD_ANSWERS, finished_run

    demo = make_suite(tmp_path / "demo", name="demo", synthetic=True)
    finished_run(demo, bench.alpha.model, GOOD_ANSWERS)
    html = client.get(reverse("leaderboard:index")).content.decode()
    assert 'id="board-demo"' in html and 'id="board-bench"' in html
    assert html.index('id="board-bench"') < html.index('id="board-demo"')
    assert "Synthetic data." in html


def test_leaderboard_downloads_csv_and_json(client, bench):
    response = client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "bench"})
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["model"] for row in rows] == ["Alpha-1", "Beta-2"]
    response = client.get(reverse("leaderboard:download", args=["json"]), {"suite": "bench", "source": "run"})
    data = json.loads(response.content)
    assert data["suite"] == "bench" and len(data["rows"]) == 2


def test_download_of_an_unknown_board_is_404(client, db):
    assert client.get(reverse("leaderboard:download", args=["csv"]), {"suite": "nope"}).status_code == 404


def test_empty_site_still_renders_every_page(client, db):
    for name in ("leaderboard:index", "leaderboard:analysis"):
        assert client.get(reverse(name)).status_code == 200
    assert client.get(reverse("leaderboard:task", args=["T3"])).status_code == 200


# ── tasks and analysis ───────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("code", "figure"),
    [("T1", "confusion-1"), ("T2", "task-snr"), ("T3", "confusion-2"), ("T4", "confusion-1"),
     ("T5", "task-miss"), ("T6", "task-duration")],
)
def test_task_pages_show_their_analyses(client, bench, code, figure):
    response = client.get(reverse("leaderboard:task", args=[code]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-figure="task-scores"' in html
    assert f'data-figure="{figure}"' in html


def test_unknown_task_is_404(client, bench):
    assert client.get(reverse("leaderboard:task", args=["T9"])).status_code == 404


def test_analysis_page_has_every_figure(client, bench):
    import_published(board="bench")
    html = client.get(reverse("leaderboard:analysis"), {"suite": "bench"}).content.decode()
    for figure in ("distributions", "cost", "scale", "tools", "calls", "tokens"):
        assert f'data-figure="analysis-{figure}"' in html
    assert "LongCat-2" in html  # Table 5 rows of the paper


def test_analysis_of_an_unknown_board_is_404(client, bench):
    assert client.get(reverse("leaderboard:analysis"), {"suite": "nope"}).status_code == 404


def test_pages_load_the_plotly_shipped_with_the_package(client, bench):
    html = client.get(reverse("leaderboard:index")).content.decode()
    assert "/static/plotly/plotly.min.js" in html
    assert "cdn" not in html.lower()


# ── runs ─────────────────────────────────────────────────────────────────────────────────────


def test_run_page_shows_tasks_and_episodes(client, bench):
    response = client.get(reverse("leaderboard:run", args=[bench.beta.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("/episodes/") >= 6
    assert "partial" in html or "official" in html
    assert reverse("leaderboard:run_progress", args=[bench.beta.pk]) in html


@pytest.mark.parametrize(
    ("query", "tasks"),
    [
        ({"outcome": "correct"}, {"T3", "T5"}),
        ({"outcome": "wrong"}, {"T1", "T2"}),
        ({"outcome": "missing"}, {"T6"}),
        ({"outcome": "error"}, {"T4"}),
        ({"task": "T2"}, {"T2"}),
        ({"ended_by": "turn_limit"}, {"T6"}),
        ({"q": "Final answer"}, {"T1", "T2", "T3", "T5"}),
    ],
)
def test_run_episode_table_filters(client, bench, query, tasks):
    response = client.get(reverse("leaderboard:run", args=[bench.beta.pk]), query)
    shown = {row["episode"].instance.task.code for row in response.context["rows"]}
    assert shown == tasks


def test_run_progress_json_counts_episodes_tokens_and_cost(client, bench):
    data = client.get(reverse("leaderboard:run_progress", args=[bench.beta.pk])).json()
    assert data["total"] == 6
    assert data["done"] == 5 and data["failed"] == 1
    assert data["tokens"]["prompt_tokens"] == 5 * 3500
    assert data["cost_usd"] == pytest.approx(0.02)
    assert data["paper_cost_usd"] == pytest.approx(5 * (3500 * 3 + 140 * 12) / 1e6)
    assert data["finished"] is True


def test_progress_of_a_pending_run_is_not_finished(client, run):
    data = client.get(reverse("leaderboard:run_progress", args=[run.pk])).json()
    assert data["finished"] is False and data["episodes"]["pending"] == 6


# ── episodes ─────────────────────────────────────────────────────────────────────────────────


def test_episode_page_shows_header_prompt_steps_and_outcome(client, bench):
    episode = bench.episode(bench.alpha, "T5")
    response = client.get(reverse("leaderboard:episode", args=[episode.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert episode.instance.record_id in html
    assert episode.instance.scenario_id not in html  # scenario ids name the label
    assert "Analyse record" in html
    assert f"{episode.run.prompt_set} prompt set, text protocol: the opening messages exactly as the model got them" in html
    assert "compute_windowed_features" in html
    assert f'data-figure="outcome-{episode.pk}"' in html
    assert reverse("leaderboard:episode_step", args=[episode.pk, 2]) in html


def test_episode_of_t6_draws_both_hypnograms(client, bench):
    episode = bench.episode(bench.alpha, "T6")
    figure = client.get(reverse("leaderboard:episode", args=[episode.pk])).context["summary"]["figure"]
    assert [trace["name"] for trace in figure["data"]] == ["reference", "predicted"]


def test_episode_of_t3_shows_predicted_and_reference_labels(client, bench):
    html = client.get(reverse("leaderboard:episode", args=[bench.episode(bench.beta, "T3").pk])).content.decode()
    assert 'id="predicted-label">epileptic' in html and 'id="reference-label">epileptic' in html


def test_references_can_be_kept_from_visitors(client, bench, settings, staff_user):
    settings.EEGAB_PUBLIC_REFERENCES = False
    episode = bench.episode(bench.alpha, "T5")
    url = reverse("leaderboard:episode", args=[episode.pk])
    response = client.get(url)
    assert [trace["name"] for trace in response.context["summary"]["figure"]["data"]] == ["predicted"]
    assert response.context["summary"]["outcome"] == "answered"
    client.force_login(staff_user)
    response = client.get(url)
    assert [trace["name"] for trace in response.context["summary"]["figure"]["data"]] == ["reference", "predicted"]


def test_long_episodes_are_paged_and_stay_small(client, bench):
    from runs.services import append_step

    episode = bench.episode(bench.alpha, "T2")
    big = {"status": "ok", "content": {"rows": [{"value": index} for index in range(2000)]}, "tool_call_id": "x"}
    for index in range(300):
        append_step(episode=episode, kind=Step.Kind.TOOL_CALL, tool_name="compute_psd",
                    arguments={"channels": ["EEG"]}, result=big, text="x" * 5000)
    response = client.get(reverse("leaderboard:episode", args=[episode.pk]))
    assert len(response.context["steps"]) == 50
    assert len(response.content) < 1_500_000
    last = client.get(reverse("leaderboard:episode", args=[episode.pk]), {"page": 7})
    assert len(last.context["steps"]) == episode.steps.count() - 1 - 6 * 50


def test_step_details_show_windowed_rows_as_tables(client, bench):
    step = bench.windowed_step(bench.alpha)
    response = client.get(reverse("leaderboard:episode_step", args=[step.episode_id, step.index]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "EEG1: windows" in html and "alpha_relative" in html
    assert signal_url(step) in html


def test_step_details_of_an_unknown_step_is_404(client, bench):
    episode = bench.episode(bench.alpha, "T2")
    assert client.get(reverse("leaderboard:episode_step", args=[episode.pk, 999])).status_code == 404


def test_compare_shows_two_episodes_of_one_instance(client, bench):
    first, second = bench.episode(bench.alpha, "T5"), bench.episode(bench.beta, "T5")
    response = client.get(reverse("leaderboard:compare"), {"a": first.pk, "b": second.pk})
    assert response.status_code == 200
    assert [side["summary"]["episode"].pk for side in response.context["sides"]] == [first.pk, second.pk]


def test_compare_refuses_episodes_of_different_instances(client, bench):
    first, second = bench.episode(bench.alpha, "T5"), bench.episode(bench.beta, "T6")
    assert client.get(reverse("leaderboard:compare"), {"a": first.pk, "b": second.pk}).status_code == 400


# ── the signal endpoint ──────────────────────────────────────────────────────────────────────


def test_signal_endpoint_plots_the_calls_channels_and_time_range(client, bench):
    step = bench.windowed_step(bench.alpha)
    data = client.get(signal_url(step)).json()
    assert data["channels"] == ["EEG1", "EEG2", "EEG3"]
    assert data["time_range"] == [0.0, 20.0]
    traces = data["figure"]["data"]
    assert [trace["name"] for trace in traces] == ["EEG1", "EEG2", "EEG3"]
    assert all(len(trace["x"]) <= MAX_POINTS and len(trace["x"]) == len(trace["y"]) for trace in traces)
    assert min(traces[0]["x"]) >= 0.0 and max(traces[0]["x"]) < 20.0
    assert data["features_figure"]["data"][0]["name"] == "EEG1"


def test_signal_endpoint_decimates_and_caps_channels(client, bench):
    from runs.services import append_step

    episode = bench.episode(bench.alpha, "T5")
    step = append_step(episode=episode, kind=Step.Kind.TOOL_CALL, tool_name="compute_psd", arguments={},
                       result={"status": "ok", "content": {"channels": []}, "tool_call_id": "c"})
    data = client.get(signal_url(step)).json()
    traces = data["figure"]["data"]
    assert len(traces) == MAX_CHANNELS  # 12 EEG channels by default, 8 plotted
    assert all(len(trace["x"]) <= MAX_POINTS for trace in traces)
    assert len(traces[0]["x"]) > 1000  # 15,360 samples decimated, not dropped
    assert max(traces[0]["y"]) > 150  # the spike survives
    assert "8 of the 12" in " ".join(data["notes"])
    assert data["features_figure"] is None


def test_signal_endpoint_plots_each_channel_of_a_real_psg_in_its_own_unit(client, bench):
    from benchmark.models import Instance
    from runs.services import append_step
    from tests.datafiles import SLEEP_EDFX

    episode = bench.episode(bench.alpha, "T6")
    shutil.copy(SLEEP_EDFX / "short_psg.edf", Path(bench.suite.release.source) / "data/sleep-edfx/psg.edf")
    Instance.objects.filter(pk=episode.instance_id).update(recording_path="data/sleep-edfx/psg.edf", metadata={})
    step = append_step(episode=episode, kind=Step.Kind.TOOL_CALL, tool_name="compute_psd", arguments={},
                       result={"status": "ok", "content": {"channels": []}, "tool_call_id": "c"})
    figure = client.get(signal_url(step)).json()["figure"]
    titles = [figure["layout"][f"yaxis{row + 1 if row else ''}"]["title"]["text"] for row in range(7)]
    assert titles == ["EEG Fpz-Cz<br>(µV)", "EEG Pz-Oz<br>(µV)", "EOG horizontal<br>(µV)",
                      "Resp oro-nasal<br>(no unit)", "EMG submental<br>(µV)", "Temp rectal<br>(DegC)",
                      "Event marker<br>(no unit)"]
    values = {trace["name"]: trace["y"] for trace in figure["data"]}
    # Each within its header's physical range: nothing scaled by 10^6 but the voltages, into µV.
    for name, low, high in [("EEG Fpz-Cz", -192, 192), ("EOG horizontal", -1009, 1009), ("EMG submental", -5, 5),
                            ("Resp oro-nasal", -2048, 2048), ("Temp rectal", 34, 40), ("Event marker", -2047, 2048)]:
        assert low <= min(values[name]) and max(values[name]) <= high, name


def test_signal_endpoint_for_a_bad_step_index_is_404(client, bench):
    episode = bench.episode(bench.alpha, "T5")
    assert client.get(reverse("leaderboard:episode_signal", args=[episode.pk, 999])).status_code == 404


def test_signal_endpoint_for_a_non_signal_step_is_404(client, bench):
    episode = bench.episode(bench.alpha, "T5")
    for step in episode.steps.exclude(tool_name="compute_windowed_features"):
        assert client.get(signal_url(step)).status_code == 404, step.kind


def test_signal_endpoint_reports_a_missing_recording(client, bench):
    step = bench.windowed_step(bench.alpha)
    (Path(bench.suite.release.source) / step.episode.instance.recording_path).unlink()
    data = client.get(signal_url(step)).json()
    assert data["figure"] is None and data["features_figure"] is not None
    assert "not found" in data["notes"][0]


# ── staff ────────────────────────────────────────────────────────────────────────────────────


def new_run_data(suite, spec, **overrides):
    return {"model": spec.pk, "suite": suite.pk, "tasks": ["T1", "T3"], "limit": "1", "concurrency": "2",
            "api_key_env": "OPENAI_API_KEY", "name": "queued from the form", "prompt_set": "platform",
            "tool_protocol": "text", "temperature": "0", "max_tokens": "8192", "max_cost_usd": "0.5", **overrides}


def test_login_page_renders_with_csrf(client, db):
    html = client.get(reverse("login")).content.decode()
    assert "csrfmiddlewaretoken" in html


def test_anonymous_cannot_see_or_post_the_run_form(client, bench):
    url = reverse("leaderboard:new_run")
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    before = Run.objects.count()
    response = client.post(url, new_run_data(bench.suite, bench.alpha.model))
    assert response.status_code == 302 and Run.objects.count() == before


def test_visitor_without_staff_rights_gets_403(client, bench, visitor):
    client.force_login(visitor)
    assert client.get(reverse("leaderboard:new_run")).status_code == 403
    assert client.post(reverse("leaderboard:run_cancel", args=[bench.alpha.pk])).status_code == 403


def test_staff_queues_a_run_from_the_form(client, bench, staff_user):
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), new_run_data(bench.suite, bench.alpha.model))
    run = Run.objects.get(name="queued from the form")
    assert response.status_code == 302 and response["Location"] == reverse("leaderboard:run", args=[run.pk])
    assert run.tasks == ["T1", "T3"] and run.episodes.count() == 2
    assert run.limits == {"concurrency": 2, "max_cost_usd": 0.5}
    assert run.created_by == staff_user and run.api_key_env == "OPENAI_API_KEY"
    assert run.episodes.filter(queued_at__isnull=False).count() == 2
    assert run.prompt_set == "platform"
    assert run.settings == {"tool_protocol": "text", "temperature": 0, "max_tokens": 8192}


def test_the_run_form_offers_the_official_defaults(client, bench, staff_user):
    client.force_login(staff_user)
    form = client.get(reverse("leaderboard:new_run")).context["form"]
    assert (form["tool_protocol"].value(), form["temperature"].value(), form["max_tokens"].value()) == ("text", 0, 8192)
    # Without the official package only the platform wording is offered, and the form says how to get it.
    assert [value for value, _ in form.fields["prompt_set"].choices] == ["platform"]
    assert "pip install -e '.[official]'" in form.fields["prompt_set"].help_text


def test_the_run_form_refuses_the_official_prompt_set_without_the_package(client, bench, staff_user):
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:new_run"), new_run_data(bench.suite, bench.alpha.model,
                                                                         prompt_set="official"))  # fmt: skip
    assert response.status_code == 200 and "prompt_set" in response.context["form"].errors
    assert not Run.objects.filter(name="queued from the form").exists()


def test_run_form_creates_a_model_from_a_litellm_string(client, bench, staff_user):
    client.force_login(staff_user)
    data = new_run_data(bench.suite, bench.alpha.model, model="", provider_model="baseline/heuristic")
    client.post(reverse("leaderboard:new_run"), data)
    assert Run.objects.get(name="queued from the form").model.provider_model == "baseline/heuristic"


def test_a_paper_model_is_run_once_given_its_model_string_which_it_keeps(client, bench, staff_user):
    import_published(board="bench")
    paper = ModelSpec.objects.get(name="GPT-5.5")
    assert paper.provider_model == ""
    client.force_login(staff_user)
    url = reverse("leaderboard:new_run")
    response = client.post(url, new_run_data(bench.suite, paper))
    assert response.status_code == 200 and not Run.objects.filter(name="queued from the form").exists()
    assert response.context["form"].errors["provider_model"] == [
        "GPT-5.5 has no litellm model string yet: give the one that calls it (e.g. openai/<name>); "
        "it is kept for its next runs."
    ]
    assert client.post(url, new_run_data(bench.suite, paper, provider_model=" openai/gpt-5.5 ")).status_code == 302
    run = Run.objects.get(name="queued from the form")
    paper.refresh_from_db()
    assert run.model == paper and paper.provider_model == "openai/gpt-5.5"
    # Next time it is runnable as it is, and another string for it is refused.
    assert client.post(url, new_run_data(bench.suite, paper, name="again")).status_code == 302
    response = client.post(url, new_run_data(bench.suite, paper, name="other", provider_model="openai/gpt-5.4"))
    assert response.context["form"].errors["provider_model"] == [
        "GPT-5.5 runs openai/gpt-5.5: leave this blank, or choose no model above to run another string."
    ]
    assert Run.objects.filter(model=paper).count() == 2


def test_run_form_refuses_a_model_it_does_not_offer(client, bench, staff_user):
    client.force_login(staff_user)
    human = agent_spec("pat", human=True)
    response = client.post(reverse("leaderboard:new_run"), new_run_data(bench.suite, human))
    assert "model" in response.context["form"].errors
    response = client.post(reverse("leaderboard:new_run"), new_run_data(bench.suite, bench.alpha.model, model="x"))
    assert "model" in response.context["form"].errors
    assert not Run.objects.filter(name="queued from the form").exists()


def test_run_form_refuses_a_key_in_place_of_its_variable_name(client, bench, staff_user):
    client.force_login(staff_user)
    data = new_run_data(bench.suite, bench.alpha.model, api_key_env="sk-live-1234")
    response = client.post(reverse("leaderboard:new_run"), data)
    assert response.status_code == 200 and "api_key_env" in response.context["form"].errors
    assert not Run.objects.filter(name="queued from the form").exists()


def test_anonymous_cannot_cancel_or_resume(client, run):
    for name in ("leaderboard:run_cancel", "leaderboard:run_resume"):
        response = client.post(reverse(name, args=[run.pk]))
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    run.refresh_from_db()
    assert run.status == Status.PENDING


def test_cancel_and_resume_only_accept_posts(client, run, staff_user):
    client.force_login(staff_user)
    assert client.get(reverse("leaderboard:run_cancel", args=[run.pk])).status_code == 405


def test_staff_cancels_then_resumes_a_run(client, run, staff_user):
    client.force_login(staff_user)
    client.post(reverse("leaderboard:run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == Status.CANCELLED
    assert run.episodes.filter(status=Status.CANCELLED).count() == 6
    client.post(reverse("leaderboard:run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.episodes.filter(status=Status.PENDING).count() == 6
    assert run.episodes.filter(queued_at__isnull=False).count() == 6


def test_staff_sees_the_run_buttons_visitors_do_not(client, run, staff_user):
    url = reverse("leaderboard:run", args=[run.pk])
    assert 'id="cancel-run"' not in client.get(url).content.decode()
    client.force_login(staff_user)
    html = client.get(url).content.decode()
    assert 'id="cancel-run"' in html and "csrfmiddlewaretoken" in html


def test_forms_are_protected_by_csrf(bench, staff_user):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    response = client.post(reverse("leaderboard:run_cancel", args=[bench.alpha.pk]))
    assert response.status_code == 403
    response = client.post(reverse("leaderboard:new_run"), new_run_data(bench.suite, bench.alpha.model))
    assert response.status_code == 403


def test_failed_episode_is_highlighted(client, bench):
    episode = Episode.objects.get(run=bench.beta, instance__task__code="T4")
    html = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    assert "has-error" in html and "HTTP 503 (Service Unavailable)" in html


# ── no query per row ─────────────────────────────────────────────────────────────────────────


def count_queries(client, url: str, **query) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.summaries.scoring import refresh_run_summary

    for run in Run.objects.all():  # as the workers leave them: pages only read summaries
        refresh_run_summary(run)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, query).status_code == 200
    return len(queries)


def test_run_page_queries_do_not_grow_with_its_episodes(client, bench):
    from benchmark.models import Instance, Task
    from runs.episode.scoring import score_prediction

    url = reverse("leaderboard:run", args=[bench.beta.pk])
    before = count_queries(client, url)
    task = Task.objects.get(code="T1")
    for number in range(30):
        instance = Instance.objects.create(suite=bench.suite, task=task, scenario_id=f"c1_extra_{number}",
                                           record_id=f"extra-{number}", reference={"answer": "A"}, position=number + 1)
        Episode.objects.create(run=bench.beta, instance=instance, status=Status.COMPLETED, final_answer={"answer": "A"},
                               prediction={"answer": "A"}, scores=score_prediction(instance, {"answer": "A"}))
    assert count_queries(client, url) == before
    assert count_queries(client, url, outcome="correct", q="Final") == count_queries(client, url, outcome="correct")


def test_episode_page_queries_do_not_grow_with_its_steps(client, bench):
    from runs.services import append_step

    episode = bench.episode(bench.alpha, "T5")
    url = reverse("leaderboard:episode", args=[episode.pk])
    before = count_queries(client, url)
    for _ in range(80):
        append_step(episode=episode, kind=Step.Kind.NUDGE, text="Please answer.", result={"reason": "invalid_action"})
    assert count_queries(client, url) == before


def test_leaderboard_queries_do_not_grow_with_its_runs(client, bench):
    from tests.leaderboard.conftest import GOOD_ANSWERS, finished_run

    url = reverse("leaderboard:index")
    before = count_queries(client, url)
    finished_run(bench.suite, bench.beta.model, GOOD_ANSWERS)
    assert count_queries(client, url) == before


# ── reads never write ────────────────────────────────────────────────────────────────────────


def test_no_page_or_api_read_writes_even_with_a_stale_summary_and_each_shows_the_episodes_as_they_stand(client, bench):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.models import RunSummary
    from leaderboard.summaries.scoring import refresh_run_summary

    run = bench.beta
    refresh_run_summary(run)
    stored = RunSummary.objects.get(run=run)
    pending = run.episodes.exclude(status=Status.COMPLETED).first() or run.episodes.first()
    Episode.objects.filter(pk=pending.pk).update(status=Status.FAILED, prediction=None)  # the summary is now stale
    urls = [
        reverse("leaderboard:index") + "?suite=bench", reverse("leaderboard:task", args=["T1"]) + "?suite=bench",
        reverse("leaderboard:analysis") + "?suite=bench", reverse("leaderboard:run", args=[run.pk]),
        reverse("leaderboard:run_progress", args=[run.pk]), reverse("leaderboard:download", args=["csv"]) + "?suite=bench",
        reverse("api:leaderboard") + "?suite=bench", reverse("api:runs"), reverse("api:run", args=[run.pk]),
    ]  # fmt: skip
    with CaptureQueriesContext(connection) as queries:
        for url in urls:
            assert client.get(url).status_code == 200, url
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []
    assert RunSummary.objects.get(run=run).computed_at == stored.computed_at
    shown = client.get(reverse("api:run", args=[run.pk])).json()
    assert shown["tasks"] != [] and shown != {}
    failed_task = pending.instance.task.code
    rows = {row["task"]: row for row in shown["tasks"]}
    assert rows[failed_task]["completeness"]["noncompleted"] >= 1  # re-scored in memory, not read stale
