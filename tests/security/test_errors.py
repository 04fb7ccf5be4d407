"""A traceback, with the server's paths in it, is for staff; anyone else reads one line without paths."""
import pytest
from django.urls import reverse

from runs.models import Episode, Status, Step
from runs.redaction import public_error

pytestmark = pytest.mark.django_db

TRACEBACK = """Traceback (most recent call last):
  File "/srv/eegab/runs/loop.py", line 700, in run_episode
    stored = _finish(loop, episode, loop.play())
  File "/srv/eegab/tools_app/edf.py", line 88, in read
    raise OSError(f"cannot read {path}")
OSError: cannot read /srv/eegab/var/releases/official/data/bonn/S/S001.txt"""


@pytest.mark.parametrize("text, shown", [
    (TRACEBACK, "OSError: cannot read <path>"),
    ("FileNotFoundError: [Errno 2] No such file: '/data/chbmit/chb01/chb01_03.edf'", "FileNotFoundError: [Errno 2] No such file: '<path>'"),
    (r"PermissionError: C:\eeg\bonn\S\S001.txt", "PermissionError: <path>"),
    ("the run was cancelled", "the run was cancelled"),
    ("", ""),
])
def test_public_error_keeps_the_type_and_message_and_drops_paths(text, shown):
    assert public_error(text) == shown


@pytest.fixture
def failed(run):
    episode = run.episodes.first()
    Episode.objects.filter(pk=episode.pk).update(status=Status.FAILED, error_message=TRACEBACK.splitlines()[-1])
    Step.objects.create(episode=episode, index=0, kind=Step.Kind.ERROR, error=TRACEBACK)
    return episode


def test_pages_and_the_api_show_a_visitor_no_traceback_or_path(client, failed):
    for url in (reverse("leaderboard:episode", args=[failed.pk]), f"/api/episodes/{failed.pk}/"):
        body = client.get(url).content.decode()
        assert "/srv/eegab" not in body and "Traceback" not in body and "bonn/S" not in body, url
        assert "OSError: cannot read &lt;path&gt;" in body or "OSError: cannot read <path>" in body, url


def test_staff_read_the_whole_traceback(client, staff_user, failed):
    client.force_login(staff_user)
    data = client.get(f"/api/episodes/{failed.pk}/").json()
    assert data["steps"][0]["error"] == TRACEBACK and "bonn/S/S001.txt" in data["error_message"]
