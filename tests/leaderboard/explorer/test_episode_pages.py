"""The episode and compare pages, the API index, the favicon and the new-run form's choices.

A seizure-free T5 record is added to the ``bench`` suite (``quiet_record``); Alpha-1 answers it
with silence (correct, Event-F1 undefined) and Beta-2 with a false alarm (wrong).
"""
import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from benchmark.models import Instance, ModelSpec
from leaderboard.run_pages.forms import NewRunForm
from runs.environment.service import agent_spec
from runs.models import Episode, Step
from runs.services import append_step
from tests.leaderboard.conftest import play
from tools_app import call_tool
from tools_app.views import result_text

QUIET_REFERENCE = {"label": "no_seizure", "has_seizure": False, "n_seizures": 0, "seizure_events": []}


@pytest.fixture
def quiet_record(bench) -> Instance:
    """A seizure-free T5 record of the bench suite, on the same recording as its seizure record."""
    seizure = bench.suite.instances.get(task__code="T5")
    return Instance.objects.create(
        suite=bench.suite, task=seizure.task, scenario_id="c5_bench_chb17b_01", record_id="bench-t5-0a7f",
        reference=QUIET_REFERENCE, recording_path=seizure.recording_path, sfreq=seizure.sfreq,
        n_channels=seizure.n_channels, duration_sec=seizure.duration_sec, metadata=seizure.metadata,
        subject=seizure.subject,
    )


def answered(run, instance: Instance, answer: dict) -> Episode:
    episode = Episode.objects.create(run=run, instance=instance, record_id=f"{instance.record_id}-{run.pk}")
    play(episode, answer)
    return episode


@pytest.fixture
def silent(bench, quiet_record) -> Episode:
    """Alpha-1's episode on the seizure-free record: no events predicted."""
    return answered(bench.alpha, quiet_record, {"seizure_events": []})


@pytest.fixture
def false_alarm(bench, quiet_record) -> Episode:
    """Beta-2's episode on the seizure-free record: one event predicted."""
    return answered(bench.beta, quiet_record, {"seizure_events": [{"onset_sec": 5.0, "offset_sec": 12.0}]})


def score_cell(html: str) -> str:
    """The text of the episode header's score, whitespace collapsed."""
    cell = re.search(r'<dd id="episode-score">(.*?)</dd>', html, re.DOTALL).group(1)
    return " ".join(re.sub(r"<[^>]+>", " ", cell).split())


def badge(html: str) -> str:
    return re.search(r'id="episode-outcome">([^<]*)<', html).group(1)


# ── a seizure-free T5 episode ────────────────────────────────────────────────────────────────


def test_seizure_free_episode_draws_both_lanes_saying_they_are_empty(client, silent):
    figure = client.get(reverse("leaderboard:episode", args=[silent.pk])).context["summary"]["figure"]
    layout = figure["layout"]
    assert figure["data"] == []  # nothing to draw as a bar
    assert dict(zip(layout["yaxis"]["tickvals"], layout["yaxis"]["ticktext"])) == {0: "predicted", 1: "reference"}
    assert {(note["text"], note["y"]) for note in layout["annotations"]} == {
        ("reference: no seizure", 1), ("predicted: none", 0),
    }
    assert len(layout["shapes"]) == 2  # one lane each


def test_seizure_free_episode_scores_what_the_scorer_gives_beside_its_badge(client, silent):
    html = client.get(reverse("leaderboard:episode", args=[silent.pk])).content.decode()
    assert badge(html) == "correct"
    assert score_cell(html) == "no events, no false alarms Event-F1 undefined"


def test_false_alarm_on_a_seizure_free_record_is_wrong_and_scores_zero(client, false_alarm):
    response = client.get(reverse("leaderboard:episode", args=[false_alarm.pk]))
    html = response.content.decode()
    assert badge(html) == "wrong"
    assert score_cell(html) == "0.000 Event-F1 no seizure, 1 false alarm"
    layout = response.context["summary"]["figure"]["layout"]
    assert [note["text"] for note in layout["annotations"]] == ["reference: no seizure"]
    assert [trace["name"] for trace in response.context["summary"]["figure"]["data"]] == ["predicted"]


def test_seizure_episode_draws_bars_in_both_lanes_and_counts_what_it_found(client, bench):
    episode = bench.episode(bench.alpha, "T5")
    response = client.get(reverse("leaderboard:episode", args=[episode.pk]))
    figure = response.context["summary"]["figure"]
    assert [(trace["name"], trace["y"]) for trace in figure["data"]] == [("reference", [1]), ("predicted", [0])]
    assert figure["layout"]["annotations"] == []
    assert score_cell(response.content.decode()) == "1.000 Event-F1 1 of 1 seizure found, 0 false alarms"


def test_hidden_references_leave_one_lane_and_no_score(client, silent, settings, staff_user):
    settings.EEGAB_PUBLIC_REFERENCES = False
    url = reverse("leaderboard:episode", args=[silent.pk])
    response = client.get(url)
    html = response.content.decode()
    assert badge(html) == "answered" and score_cell(html) == "not public"
    assert [note["text"] for note in response.context["summary"]["figure"]["layout"]["annotations"]] == [
        "predicted: none"
    ]
    assert "no seizure" not in html and "no events, no false alarms" not in html
    client.force_login(staff_user)
    assert score_cell(client.get(url).content.decode()).startswith("no events, no false alarms")


def test_a_windowed_refusal_shows_the_records_true_length_beside_the_range_asked_for(client, bench, staff_user):
    episode = bench.episode(bench.alpha, "T5")  # its record is 60 s long
    instance = episode.instance
    arguments = {"record_id": instance.record_id, "window_sec": 0.05, "tmin": 0, "tmax": 30}
    content = call_tool(Path(bench.suite.release.source) / instance.recording_path, "compute_windowed_features",
                        arguments, record_id=instance.record_id, metadata=instance.metadata)
    assert "(record is 30.0s long)" in content["error"]  # the official words, kept in the stored result
    # What a model read under the official prompt set: the official object, its words as they are.
    append_step(episode=episode, kind=Step.Kind.TOOL_CALL, tool_name="compute_windowed_features",
                arguments=arguments, result={"status": "ok", "content": content, "tool_call_id": "c"},
                text=result_text("compute_windowed_features", content))
    for visitor in (None, staff_user):
        if visitor:
            client.force_login(visitor)
        html = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
        error_line = re.search(r'<div class="error-text">(Output too large.*?)</div>', html, re.S).group(1)
        assert "(the range asked for is 30.0s long, of a 60.0s record)" in error_line
        assert "record is 30.0s long" not in error_line and error_line.endswith("Then call again on the chunk.")


def test_compare_view_shows_the_same_score_in_each_header(client, silent, false_alarm):
    html = client.get(reverse("leaderboard:compare"), {"a": silent.pk, "b": false_alarm.pk}).content.decode()
    assert "no events, no false alarms" in html and "no seizure, 1 false alarm" in html


# ── no server path on a public page ──────────────────────────────────────────────────────────


@pytest.fixture
def described(bench):
    """The bench suite described as ``import_release`` describes one: with the directory it came from."""
    release = bench.suite.release
    bench.suite.description = f"{release.name} {release.version} from {release.source}: T1 1, T2 1, T3 1"
    bench.suite.save(update_fields=["description"])
    return bench


def public_urls(bench) -> list[str]:
    """Every page and API answer a visitor can reach about the bench suite, its runs and episodes."""
    suite = bench.suite.name
    urls = [reverse("leaderboard:analysis") + f"?suite={suite}", reverse("leaderboard:compare")]
    urls += [reverse("leaderboard:task", args=[code]) + f"?suite={suite}" for code in ("T1", "T3", "T5", "T6")]
    urls += ["/api/", f"/api/leaderboard/?suite={suite}", "/api/runs/", f"/api/instances/?suite={suite}"]
    for run in (bench.alpha, bench.beta):
        urls += [reverse("leaderboard:run", args=[run.pk]), f"/api/runs/{run.pk}/"]
        for episode in run.episodes.all():
            urls += [reverse("leaderboard:episode", args=[episode.pk]), f"/api/episodes/{episode.pk}/"]
            urls += [reverse("leaderboard:episode_step", args=[episode.pk, step.index])
                     for step in episode.steps.exclude(kind=Step.Kind.PROMPT)]
    first, second = bench.episode(bench.alpha, "T5"), bench.episode(bench.beta, "T5")
    urls.append(reverse("leaderboard:compare") + f"?a={first.pk}&b={second.pk}")
    return urls


def test_no_page_about_a_suite_shows_a_visitor_a_server_path(client, described):
    source = described.suite.release.source
    for url in public_urls(described):
        response = client.get(url)
        assert response.status_code == 200, url
        assert source not in response.content.decode(), url


def test_the_leaderboard_shows_a_visitor_the_release_not_its_directory(client, described):
    release = described.suite.release
    html = client.get(reverse("leaderboard:index")).content.decode()
    assert release.source not in html
    assert f"{release.name} {release.version}" in html


def test_staff_see_where_a_suite_came_from(client, described, staff_user):
    client.force_login(staff_user)
    assert described.suite.release.source in client.get(reverse("leaderboard:index")).content.decode()


# ── the compare view ─────────────────────────────────────────────────────────────────────────


def test_compare_without_episodes_is_a_form_to_choose_them(client, db):
    response = client.get(reverse("leaderboard:compare"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="compare-form"' in html and 'name="a"' in html and 'name="b"' in html
    assert 'class="site-header"' in html and 'id="compare-error"' not in html


@pytest.mark.parametrize("query, message", [
    ({"a": "twelve"}, "“twelve” is not an episode id."),
    ({"a": "1", "b": "-3"}, "“-3” is not an episode id."),
    ({"a": "٣"}, "“٣” is not an episode id."),  # a digit, but not one of an address
    ({"b": "7"}, "Give the first episode too."),
])  # fmt: skip
def test_compare_with_a_bad_value_says_what_is_wrong_on_the_site_page(client, db, query, message):
    response = client.get(reverse("leaderboard:compare"), query)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="site-header"' in html and 'id="compare-form"' in html
    assert message in html and "/episodes/&lt;id&gt;/" in html


def test_compare_of_two_instances_is_refused_on_the_site_page(client, bench):
    first, second = bench.episode(bench.alpha, "T5"), bench.episode(bench.beta, "T6")
    response = client.get(reverse("leaderboard:compare"), {"a": first.pk, "b": second.pk})
    assert response.status_code == 400
    html = response.content.decode()
    assert f"Episodes {first.pk} ({first.record_id}) and {second.pk} ({second.record_id}) are of different" in html
    assert 'class="site-header"' in html and f'value="{first.pk}"' in html


def test_compare_of_an_unknown_episode_is_404(client, bench):
    assert client.get(reverse("leaderboard:compare"), {"a": 999999}).status_code == 404


def test_compare_with_only_the_first_opens_beside_the_other_models_episode(client, bench):
    first, other = bench.episode(bench.alpha, "T3"), bench.episode(bench.beta, "T3")
    response = client.get(reverse("leaderboard:compare"), {"a": first.pk}, follow=True)
    assert response.redirect_chain == [(f"{reverse('leaderboard:compare')}?a={first.pk}&b={other.pk}", 302)]
    assert [side["summary"]["episode"].pk for side in response.context["sides"]] == [first.pk, other.pk]
    assert [choice["episode"].pk for choice in response.context["candidates"]] == [other.pk]
    assert f'<option value="{other.pk}" selected>Beta-2 · run {bench.beta.pk} · ' in response.content.decode()


def test_compare_of_an_episode_alone_on_its_instance_shows_it_and_says_so(client, bench):
    bench.episode(bench.beta, "T3").delete()
    first = bench.episode(bench.alpha, "T3")
    response = client.get(reverse("leaderboard:compare"), {"a": first.pk})
    assert response.status_code == 200
    assert [side["summary"]["episode"].pk for side in response.context["sides"]] == [first.pk]
    assert "This instance has no other ended episode yet" in response.content.decode()


# ── the API index and its descriptions ───────────────────────────────────────────────────────


def test_api_index_lists_every_endpoint_with_its_address(client, db):
    response = client.get("/api/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    endpoints = response.json()
    assert endpoints["leaderboard"]["url"] == "http://testserver/api/leaderboard/"
    assert endpoints["run"]["url"] == "http://testserver/api/runs/{run_id}/"
    assert endpoints["episode"]["url"] == "http://testserver/api/episodes/{episode_id}/"
    assert set(endpoints) == {"leaderboard", "runs", "compare_runs", "run", "episodes", "episode", "tasks", "instances",
                              "items", "environment"}
    assert endpoints["compare_runs"]["url"] == "http://testserver/api/runs/compare/"
    assert endpoints["environment"]["url"] == "http://testserver" + reverse("env:runs")
    assert endpoints["runs"]["methods"] == ["GET"]
    assert endpoints["instances"]["description"].startswith("GET /api/instances/?suite=S[&task=Tn]")
    for name, endpoint in endpoints.items():
        assert endpoint["description"] and "``" not in endpoint["description"], name
        if "{" not in endpoint["url"] and name != "environment":
            # what /api/instances/, items/, runs/compare/ and episodes/ take (an unknown suite: 404 on each)
            query = {"suite": "paper", "task": "T1", "a": 1, "b": 2}
            assert client.get(endpoint["url"], query, HTTP_ACCEPT="application/json").status_code in (
                200, 404), name  # a real address (the paper's board need not be imported)


@pytest.mark.parametrize("url", ["/api/", "/api/tasks/", "/api/runs/", "/api/leaderboard/"])
def test_browsable_api_shows_descriptions_without_restructuredtext_backticks(client, db, url):
    response = client.get(url, HTTP_ACCEPT="text/html")
    html = response.content.decode()
    description = re.search(r'<div class="pull-left">(.*?)</div>', html, re.DOTALL).group(1)
    assert description.strip().startswith("<p>") and "``" not in html
    if url != "/api/tasks/":
        assert "<code>GET /api/" in description or "<code>/api/env/runs/</code>" in description


def test_options_gives_the_description_as_plain_text(client, db):
    description = client.options("/api/runs/").json()["description"]
    assert description.startswith("GET /api/runs/[?suite=S]") and "``" not in description


# ── favicon ──────────────────────────────────────────────────────────────────────────────────


def test_favicon_is_linked_and_served_for_the_browsers_default_request(client, db):
    html = client.get(reverse("leaderboard:compare")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in html
    response = client.get("/favicon.ico", follow=True)
    assert response.redirect_chain == [("/static/favicon.svg", 302)]
    path = finders.find("favicon.svg")
    assert path and open(path, encoding="utf-8").read().lstrip().startswith("<svg")


# ── the new-run form ─────────────────────────────────────────────────────────────────────────


def test_new_run_form_names_what_each_model_calls_and_what_each_task_is(bench):
    ModelSpec.objects.create(name="GPT-5.5", provider_model="", family="OpenAI")  # as the paper's are imported
    ModelSpec.objects.create(name="baseline/random", provider_model="baseline/random", family="baseline")
    agent_spec("pat", human=True)
    agent_spec("my-framework")
    form = NewRunForm()
    assert form.fields["model"].choices == [
        ("", "— a new model string below —"),
        ("Runnable here", [(bench.alpha.model.pk, "Alpha-1 — openai/alpha-1"),
                           (bench.beta.model.pk, "Beta-2 — openai/beta-2"),
                           (ModelSpec.objects.get(name="baseline/random").pk, "baseline/random")]),
        ("Give a model string below (the paper's models)",
         [(ModelSpec.objects.get(name="GPT-5.5").pk, "GPT-5.5 — no model string")]),
    ]  # a person's and an external agent's specs are not offered: the platform cannot play them
    tasks = dict(form.fields["tasks"].choices)
    assert tasks["T1"] == "T1 · EEG knowledge QA" and tasks["T6"] == "T6 · Sleep staging"
    assert list(tasks) == ["T1", "T2", "T3", "T4", "T5", "T6"]


def test_new_run_page_shows_the_labels(client, bench, staff_user):
    client.force_login(staff_user)
    html = client.get(reverse("leaderboard:new_run")).content.decode()
    assert "Alpha-1 — openai/alpha-1" in html and "T5 · Seizure event detection" in html


# ── the run page's episode table and the ways into the compare view ─────────────────────────


def test_the_run_page_gives_a_seizure_free_episode_its_counts_and_links_every_ended_episode_to_compare(client, silent):
    html = client.get(reverse("leaderboard:run", args=[silent.run_id]), {"task": "T5"}).content.decode()
    row = re.search(rf'<tr>\s*<td class="num" data-sort="{silent.pk}">.*?</tr>', html, re.DOTALL).group(0)
    assert "no events, no false alarms" in row and ">–<" not in row
    assert f'{reverse("leaderboard:compare")}?a={silent.pk}' in row


def test_the_task_page_links_to_the_compare_view(client, bench):
    html = client.get(reverse("leaderboard:task", args=["T5"]), {"suite": bench.suite.name}).content.decode()
    assert f'href="{reverse("leaderboard:compare")}"' in html


def test_a_built_in_baselines_costs_read_free_on_the_board_and_its_episodes(client, db):
    from io import StringIO

    from django.core.management import call_command

    from benchmark.models import Task
    from tests.runs.demo_suite import import_demo

    Task.objects.ensure_official()
    suite = import_demo()
    call_command("run_benchmark", model="baseline/heuristic", suite=suite.name, tasks="T3", sync=True, stdout=StringIO())
    board = client.get(reverse("leaderboard:index"), {"suite": suite.name}).content.decode()
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*baseline/heuristic(?:(?!</tr>).)*</tr>", board, re.S).group(0)
    assert ">free<" in row and "$0" not in row
    episode = Episode.objects.filter(run__model__provider_model="baseline/heuristic").first()
    header = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    assert re.search(r"<dt>Cost</dt><dd>free", header) and "$0" not in header
