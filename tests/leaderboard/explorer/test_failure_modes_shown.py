"""Where an episode's failure modes show: its header (each mode linking to its steps), the run page's
filter and column, and the API; the modes that tell the reference only where references are shown."""
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from runs.episode import engine
from runs.models import Episode

MODES = [{"code": "repeated_call", "steps": [2, 120]}, {"code": "missed_all_seizures", "steps": [4]}]


def classified(episode: Episode, modes=MODES, coverage=0.25) -> Episode:
    Episode.objects.filter(pk=episode.pk).update(
        failure_modes=modes, failure_codes=engine.failure_codes(modes), evidence_coverage=coverage
    )
    episode.refresh_from_db()
    return episode


def test_the_episode_header_lists_its_modes_each_linking_to_its_steps(client, bench):
    episode = classified(bench.episode(bench.beta, "T5"))
    html = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    url = reverse("leaderboard:episode", args=[episode.pk])
    assert 'id="failure-modes"' in html and 'data-mode="repeated_call"' in html
    assert f'href="{url}#step-2"' in html and f'href="{url}?page=3#step-120"' in html  # 50 steps a page
    assert 'data-mode="missed_all_seizures"' in html
    assert 'id="evidence-coverage">25 %<' in html


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_a_mode_that_tells_the_reference_follows_the_references(client, admin_client, bench):
    episode = classified(bench.episode(bench.beta, "T5"))
    url = reverse("leaderboard:episode", args=[episode.pk])
    visitor = client.get(url).content.decode()
    assert 'data-mode="repeated_call"' in visitor and "missed_all_seizures" not in visitor
    assert "missed_all_seizures" in admin_client.get(url).content.decode()
    detail = client.get(reverse("api:episode", args=[episode.pk])).json()
    assert detail["failure_modes"] == [{"code": "repeated_call", "steps": [2, 120]}]
    assert detail["evidence_coverage"] == 0.25
    run_page = client.get(reverse("leaderboard:run", args=[bench.beta.pk]), {"failure_mode": "missed_all_seizures"})
    choices = [code for code, _ in run_page.context["form"].fields["failure_mode"].choices]
    assert "missed_all_seizures" not in choices and "repeated_call" in choices
    assert all("missed_all_seizures" not in row["modes"] for row in run_page.context["rows"])
    assert 'class="badge mode">missed_all_seizures' not in run_page.content.decode()


def test_the_api_gives_the_modes_of_an_episode_and_of_a_run_s_rows(client, bench):
    episode = classified(bench.episode(bench.beta, "T5"))
    detail = client.get(reverse("api:episode", args=[episode.pk])).json()
    assert detail["failure_modes"] == MODES and detail["evidence_coverage"] == 0.25
    rows = {row["id"]: row for row in client.get(reverse("api:run", args=[bench.beta.pk])).json()["episodes"]}
    assert rows[episode.pk]["failure_modes"] == MODES
    assert all(row["failure_modes"] is None for row_id, row in rows.items() if row_id != episode.pk)


def test_the_run_page_filters_its_episodes_by_failure_mode(client, bench):
    episode = classified(bench.episode(bench.beta, "T5"))
    classified(bench.episode(bench.beta, "T3"), modes=[{"code": "no_signal_read", "steps": [3]}], coverage=0.0)
    response = client.get(reverse("leaderboard:run", args=[bench.beta.pk]), {"failure_mode": "repeated_call"})
    assert [row["episode"].pk for row in response.context["rows"]] == [episode.pk]
    assert response.context["rows"][0]["modes"] == ["repeated_call", "missed_all_seizures"]
    everything = client.get(reverse("leaderboard:run", args=[bench.beta.pk])).context["rows"]
    assert len(everything) == bench.beta.episodes.count()


def test_a_classification_is_stored_and_a_defect_of_it_costs_the_episode_nothing(bench, monkeypatch, caplog):
    episode = bench.episode(bench.alpha, "T3")
    monkeypatch.setattr(engine, "classify_episode", lambda e: ([{"code": "no_tool_call", "steps": [1]}], None))
    engine.store_failure_modes(episode)
    episode.refresh_from_db()
    assert (episode.failure_modes, episode.failure_codes) == ([{"code": "no_tool_call", "steps": [1]}], " no_tool_call ")

    def broken(_):
        raise KeyError("oops")

    other = bench.episode(bench.alpha, "T4")
    monkeypatch.setattr(engine, "classify_episode", broken)
    engine.store_failure_modes(other)
    other.refresh_from_db()
    assert other.failure_modes is None and other.status == "completed"
    assert "could not be classified" in caplog.text


@pytest.mark.parametrize("modes, codes", [([], ""), ([{"code": "a", "steps": []}, {"code": "b", "steps": [1]}], " a b ")])
def test_failure_codes_put_each_code_between_spaces(modes, codes):
    assert engine.failure_codes(modes) == codes


def test_classify_episodes_classifies_the_ended_episodes_not_classified_yet(bench):
    Episode.objects.update(failure_modes=None, failure_codes="", evidence_coverage=None)
    ended = Episode.objects.filter(run=bench.beta, status__in=("completed", "failed")).count()
    out = StringIO()
    call_command("classify_episodes", "--run", str(bench.beta.pk), "--json", stdout=out, stderr=StringIO())
    report = json.loads(out.getvalue())
    assert report["classified"] == report["of"] == ended
    assert not Episode.objects.filter(run=bench.beta, status="completed", failure_modes__isnull=True).exists()
    assert Episode.objects.filter(run=bench.alpha, failure_modes__isnull=True).count() == bench.alpha.episodes.count()
    counts = {}
    for modes in Episode.objects.filter(run=bench.beta).values_list("failure_modes", flat=True):
        for mode in modes or []:
            counts[mode["code"]] = counts.get(mode["code"], 0) + 1
    assert report["modes"] == counts
    again = StringIO()
    call_command("classify_episodes", "--run", str(bench.beta.pk), "--json", stdout=again, stderr=StringIO())
    assert json.loads(again.getvalue())["of"] == 0  # nothing left to classify
    everything = StringIO()
    call_command("classify_episodes", "--run", str(bench.beta.pk), "--again", "--json", stdout=everything,
                 stderr=StringIO())
    assert json.loads(everything.getvalue()) == report  # classified again, alike


@override_settings(EEGAB_PUBLIC_REFERENCES=False)
def test_the_run_page_gives_each_mode_s_share_per_task(client, bench):
    classified(bench.episode(bench.beta, "T5"))
    classified(bench.episode(bench.beta, "T3"), modes=[{"code": "repeated_call", "steps": [3]}], coverage=1.0)
    Episode.objects.filter(run=bench.beta, failure_modes__isnull=True).update(failure_modes=[])
    ended = Episode.objects.filter(run=bench.beta, status__in=("completed", "failed")).count()
    response = client.get(reverse("leaderboard:run", args=[bench.beta.pk]))
    shares = response.context["failure_modes"]
    assert shares["T5"] == {"n": 1, "modes": {"repeated_call": 1.0}}  # missed_all_seizures: not public here
    assert shares["all"]["n"] == ended and shares["all"]["modes"]["repeated_call"] == pytest.approx(2 / ended)
    html = response.content.decode()
    assert 'id="failure-modes"' in html and '<a href="?failure_mode=repeated_call#episodes">' in html
    assert "missed_all_seizures" not in html
