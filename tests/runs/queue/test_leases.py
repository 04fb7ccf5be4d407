"""Leases: which running episodes are stale, the heartbeat, and writes refused once an attempt is lost."""
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from runs.models import Episode, Status, Step
from runs.queue import leases
from runs.services import append_step
from tests.runs.queue.helpers import episodes_of

Kind = Step.Kind


@pytest.mark.django_db
def test_stale_means_silent_for_longer_than_the_lease_by_heartbeat_else_start(random_run):
    now = timezone.now()
    fresh, silent, never_beat = episodes_of(random_run)
    Episode.objects.filter(pk=fresh.pk).update(status=Status.RUNNING, started_at=now - timedelta(hours=2),
                                               heartbeat_at=now - timedelta(seconds=5))  # fmt: skip
    Episode.objects.filter(pk=silent.pk).update(status=Status.RUNNING, started_at=now - timedelta(hours=2),
                                                heartbeat_at=now - timedelta(seconds=90))  # fmt: skip
    Episode.objects.filter(pk=never_beat.pk).update(status=Status.RUNNING, started_at=now - timedelta(seconds=61))

    assert set(leases.stale_episodes().values_list("id", flat=True)) == {silent.pk, never_beat.pk}


@pytest.mark.django_db
def test_the_heartbeat_renews_the_running_episodes_it_holds_only(random_run):
    held, other, pending = episodes_of(random_run)
    old = timezone.now() - timedelta(minutes=5)
    Episode.objects.filter(pk__in=[held.pk, other.pk]).update(status=Status.RUNNING, heartbeat_at=old)
    heartbeat = leases.Heartbeat()

    with heartbeat.hold(held.pk), heartbeat.hold(pending.pk):
        assert heartbeat.beat() == 1
    assert heartbeat.beat() == 0

    beats = dict(Episode.objects.values_list("id", "heartbeat_at"))
    assert beats[held.pk] > old and beats[other.pk] == old and beats[pending.pk] is None


@pytest.mark.django_db
def test_a_step_numbered_by_its_writer_is_refused_at_a_taken_index(random_run):
    episode = episodes_of(random_run)[0]
    append_step(episode=episode, kind=Kind.PROMPT, index=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        append_step(episode=episode, kind=Kind.AGENT_MESSAGE, index=0)
    assert append_step(episode=episode, kind=Kind.AGENT_MESSAGE).index == 1  # counted, as before
