"""The compare view opened from a run page's "compare" link, on the demo: the second episode it chooses, and its chooser.

The runs play the demo suite's first T2 instance: the heuristic over three epochs (as in the issue,
whose chooser read "baseline/heuristic · run 5 · completed" once per epoch), and, as each test
needs, the random baseline and the heuristic again at another temperature.
"""
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from benchmark.models import Task
from benchmark.releases import set_references
from runs.models import Episode, Run, Status
from tests.runs.demo_suite import import_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    Task.objects.ensure_official()
    return import_demo()


def play(model: str, *extra: str) -> Run:
    call_command("run_benchmark", "--model", model, "--suite", "demo", "--sync", "--tasks", "T2", "--limit", "1",
                 *extra, stdout=StringIO(), stderr=StringIO())
    return Run.objects.latest("id")


@pytest.fixture
def three_epochs(demo) -> Run:
    return play("baseline/heuristic", "--epochs", "3")


def epoch(run: Run, number: int) -> Episode:
    return run.episodes.get(epoch=number)


def opened(client, episode: Episode):
    """The compare view as the run page's link opens it (?a= only), after its redirect."""
    response = client.get(reverse("leaderboard:compare"), {"a": episode.pk}, follow=True)
    assert response.status_code == 200
    return response


def options(html: str) -> list[tuple[str, bool, str]]:
    """The chooser's options: (episode id, selected, label)."""
    select = re.search(r'<select name="b">(.*?)</select>', html, re.S).group(1)
    return [(value, bool(selected), label)
            for value, selected, label in re.findall(r'<option value="(\d+)"( selected)?>([^<]*)</option>', select)]


def shown(response) -> list[int]:
    return [side["summary"]["episode"].pk for side in response.context["sides"]]


def test_the_link_opens_beside_another_models_episode_of_the_instance(client, three_epochs):
    random = play("baseline/random")
    first, other = epoch(three_epochs, 1), random.episodes.get()
    response = opened(client, first)
    assert response.redirect_chain == [(f"{reverse('leaderboard:compare')}?a={first.pk}&b={other.pk}", 302)]
    assert shown(response) == [first.pk, other.pk]
    html = response.content.decode()
    listed = options(html)
    assert listed[0][:2] == (str(other.pk), True)  # the one shown, first and selected
    assert [selected for _, selected, _ in listed[1:]] == [False, False]
    labels = [label for _, _, label in listed]
    assert len(set(labels)) == len(labels) == 3  # the chooser: one label three times
    assert labels[0].startswith(f"baseline/random · run {random.pk} · ")
    assert labels[1].startswith(f"baseline/heuristic · run {three_epochs.pk} · epoch 1 of 3 · ")
    assert labels[2].startswith(f"baseline/heuristic · run {three_epochs.pk} · epoch 3 of 3 · ")
    assert all(re.search(r" · (correct|wrong) · score \d\.\d{3} · episode \d+$", label) for label in labels)
    assert f"Compare baseline/heuristic · run {three_epochs.pk} · epoch 2 of 3 · " in html
    assert '<dd id="episode-epoch">2 of 3</dd>' in html


def test_without_another_model_it_opens_beside_another_run_then_another_epoch(client, three_epochs):
    first = epoch(three_epochs, 1)
    response = opened(client, first)
    assert shown(response) == [first.pk, epoch(three_epochs, 0).pk]  # the same run's other epoch
    warmer = play("baseline/heuristic", "--temperature", "0.7")
    response = opened(client, first)
    assert shown(response) == [first.pk, warmer.episodes.get().pk]  # the same model's other run before it
    labels = [label for _, _, label in options(response.content.decode())]
    # The runs differ in their temperature: each option says its own.
    assert labels[0].startswith(f"baseline/heuristic · run {warmer.pk} · temperature 0.7 · correct")
    assert labels[1].startswith(f"baseline/heuristic · run {three_epochs.pk} · temperature 0 · epoch 1 of 3 · ")


def test_a_visitor_is_never_sent_to_an_episode_still_playing(client, staff_user, three_epochs):
    random = play("baseline/random")
    playing = random.episodes.get()
    Episode.objects.filter(pk=playing.pk).update(status=Status.RUNNING)
    first = epoch(three_epochs, 1)
    response = opened(client, first)
    assert shown(response) == [first.pk, epoch(three_epochs, 0).pk]
    assert f'value="{playing.pk}"' not in response.content.decode()
    client.force_login(staff_user)
    assert shown(opened(client, first)) == [first.pk, playing.pk]  # staff see every episode


def test_without_public_references_the_chooser_shows_no_score_or_correctness(client, three_epochs, settings):
    settings.EEGAB_PUBLIC_REFERENCES = False
    labels = [label for _, _, label in options(opened(client, epoch(three_epochs, 1)).content.decode())]
    assert labels and all(" · answered · episode " in label for label in labels)
    assert not any(word in label for label in labels for word in ("score", "correct", "wrong"))


def test_a_held_out_suite_opens_no_comparison_for_a_visitor(client, staff_user, three_epochs):
    set_references(three_epochs.suite, "held-out")
    first = epoch(three_epochs, 1)
    response = client.get(reverse("leaderboard:compare"), {"a": first.pk})
    assert response.status_code == 404  # not a redirect naming another episode
    client.force_login(staff_user)
    assert shown(opened(client, first)) == [first.pk, epoch(three_epochs, 0).pk]
