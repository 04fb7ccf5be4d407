"""The record browser of an episode: its page (channels, montages, the tool calls' bands, the answer's lanes)
and its window endpoint (each pixel's true minimum and maximum, at each channel's rate; montages and filters
on the server; samples for staff only), seen as a visitor and as staff, with hostile queries."""
import json
import re

import numpy as np
import pytest
from django.urls import reverse

from benchmark.models import Suite
from leaderboard.explorer import record
from leaderboard.explorer.overlays import OFFSET_TOLERANCE_SEC
from runs.models import Episode, Status
from tests.tools_app.test_recording import pyedflib_edf
from tools_app.recording import Recording, open_recording

pytestmark = pytest.mark.django_db
SFREQ = 256.0


def episode_of(run, task: str) -> Episode:
    return run.episodes.get(instance__task__code=task)


def page_data(client, episode: Episode, query: str = "") -> dict:
    response = client.get(reverse("leaderboard:episode_record", args=[episode.pk]) + query)
    assert response.status_code == 200
    found = re.search(r'<script id="record-browser-data" type="application/json">(.*?)</script>', response.content.decode(), re.S)
    return json.loads(found.group(1))


def window(client, episode: Episode, **query):
    return client.get(reverse("leaderboard:episode_record_window", args=[episode.pk]), query)


def samples(bench, task: str = "T5") -> np.ndarray:
    """The recording as the test wrote it, in µV (tests.leaderboard.conftest.write_recording)."""
    instance = bench.suite.instances.get(task__code=task)
    return np.load(f"{bench.suite.release.source}/{instance.recording_path}")


def check_envelope(channel: dict, values: np.ndarray, rate: float) -> None:
    """Each pixel's minimum and maximum are those of the samples from its start to the next one's."""
    starts = [round(t * rate) for t in channel["t"]] + [round(channel["end"] * rate)]
    for index, (begin, end) in enumerate(zip(starts, starts[1:])):
        assert end > begin
        assert channel["min"][index] == pytest.approx(values[begin:end].min(), abs=1e-3)
        assert channel["max"][index] == pytest.approx(values[begin:end].max(), abs=1e-3)


def test_the_episode_and_its_signal_steps_link_to_the_browser(client, bench):
    episode = episode_of(bench.alpha, "T5")
    html = client.get(reverse("leaderboard:episode", args=[episode.pk])).content.decode()
    url = reverse("leaderboard:episode_record", args=[episode.pk])
    assert f'href="{url}"' in html
    step = episode.steps.get(tool_name="compute_windowed_features")
    assert f'href="{url}?step={step.index}"' in html
    no_recording = episode_of(bench.alpha, "T1")
    assert "Browse the recording" not in client.get(reverse("leaderboard:episode", args=[no_recording.pk])).content.decode()
    assert client.get(reverse("leaderboard:episode_record", args=[no_recording.pk])).status_code == 404


def test_the_page_gives_channels_tool_bands_and_the_answer_with_its_reference(client, bench):
    episode = episode_of(bench.alpha, "T5")
    data = page_data(client, episode)
    assert [channel["name"] for channel in data["channels"]] == [f"EEG{index}" for index in range(1, 13)]
    assert data["duration"] == 60.0 and data["groups"] == ["EEG"]
    assert list(data["montages"]) == ["recorded", "average"]  # no 10-20 names: no bipolar chain
    step = episode.steps.get(tool_name="compute_windowed_features")
    assert data["bands"] == [{
        "step": step.index, "tool": "compute_windowed_features", "start": 0.0, "stop": 20.0,
        "channels": ["EEG1", "EEG2", "EEG3"],
        "url": reverse("leaderboard:episode", args=[episode.pk]) + f"#step-{step.index}",
    }]
    reference, predicted = data["lanes"]
    assert reference == {"name": "reference", "kind": "intervals",
                         "intervals": [{"start": 20.0, "stop": 35.0, "tolerance": [0.0, 35.0 + OFFSET_TOLERANCE_SEC]}]}
    assert predicted["intervals"] == [{"start": 21.0, "stop": 33.0, "tolerance": [0.0, 93.0]}]
    assert data["opening"] == {"start": 0.0, "stop": 30.0, "channels": None, "step": None}
    opened = page_data(client, episode, f"?step={step.index}")["opening"]
    assert opened == {"start": 0.0, "stop": 20.0, "channels": ["EEG1", "EEG2", "EEG3"], "step": step.index}


def test_references_and_clock_time_stay_hidden_where_references_are(client, bench, settings):
    settings.EEGAB_PUBLIC_REFERENCES = False
    data = page_data(client, episode_of(bench.alpha, "T5"))
    assert [lane["name"] for lane in data["lanes"]] == ["predicted"]
    assert data["clock"] is None
    stages = page_data(client, episode_of(bench.alpha, "T6"))["lanes"]
    assert [(lane["name"], "disagree" in lane) for lane in stages] == [("predicted", False)]


def test_a_hypnogram_lane_marks_the_epochs_that_disagree(client, bench):
    reference, predicted = page_data(client, episode_of(bench.alpha, "T6"))["lanes"]
    assert reference["stages"] == ["W", "N1", "N2", "N2"]
    assert predicted["stages"] == ["W", "N2", "N2", "N2"] and predicted["disagree"] == [1]


def test_a_visitor_gets_each_pixels_true_minimum_and_maximum_never_the_samples(client, bench):
    episode = episode_of(bench.alpha, "T5")
    values = samples(bench)
    whole = window(client, episode, width=200).json()
    assert whole["start"] == 0 and whole["stop"] == 60.0 and len(whole["channels"]) == 12
    for row, channel in enumerate(whole["channels"]):
        assert channel["kind"] == "envelope" and channel["unit"] == "µV" and channel["rate"] == SFREQ
        assert len(channel["t"]) == 200
        check_envelope(channel, values[row], SFREQ)
    assert max(whole["channels"][0]["max"]) == pytest.approx(values[0].max(), abs=1e-3)  # the spike survives
    short = window(client, episode, start=10, stop=11, width=400, channels="EEG2").json()
    (channel,) = short["channels"]
    assert channel["kind"] == "envelope" and len(channel["t"]) == 256 // record.VISITOR_SAMPLES_PER_PIXEL
    check_envelope(channel, values[1], SFREQ)


def test_staff_get_the_samples_where_a_page_holds_fewer_than_its_pixels(client, bench, staff_user):
    client.force_login(staff_user)
    episode = episode_of(bench.alpha, "T5")
    (channel,) = window(client, episode, start=10, stop=11, width=400, channels="EEG2").json()["channels"]
    assert channel["kind"] == "samples"
    np.testing.assert_allclose(channel["v"], samples(bench)[1][2560:2816], atol=1e-3)
    assert channel["t"][0] == 10.0 and channel["t"][-1] == pytest.approx(10 + 255 / SFREQ)


def test_the_average_reference_subtracts_the_mean_of_the_eeg_channels(client, bench):
    episode = episode_of(bench.alpha, "T5")
    values = samples(bench)
    referenced = values - values.mean(axis=0)
    data = window(client, episode, start=5, stop=25, width=100, montage="average").json()
    assert data["montage"] == "average"
    assert [channel["name"] for channel in data["channels"]] == [f"EEG{index}-avg" for index in range(1, 13)]
    for row, channel in enumerate(data["channels"]):
        check_envelope(channel, referenced[row], SFREQ)


@pytest.mark.parametrize("query, field", [
    ({"start": "-1"}, "start"),
    ({"start": "60"}, "start"),
    ({"start": "abc"}, "start"),
    ({"start": "nan"}, "start"),
    ({"start": "20", "stop": "10"}, "stop"),
    ({"width": "10"}, "width"),
    ({"width": "100000"}, "width"),
    ({"width": "12.5"}, "width"),
    ({"montage": "bipolar"}, "montage"),
    ({"montage": "<script>"}, "montage"),
    ({"highpass": "0"}, "highpass"),
    ({"lowpass": "500"}, "lowpass"),
    ({"highpass": "30", "lowpass": "10"}, "lowpass"),
    ({"notch": "55"}, "notch"),
    ({"channels": "EEG1,Cz"}, "channels"),
])
def test_a_query_that_cannot_be_read_is_a_400_naming_the_field(client, bench, query, field):
    response = window(client, episode_of(bench.alpha, "T5"), **query)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert field in errors and "/" not in errors[field].replace("Hz)", "")  # no path in what it says
    assert "<script>" not in response.content.decode()


def test_nothing_of_a_running_episode_or_a_held_out_suite_for_a_visitor(client, bench, staff_user):
    episode = episode_of(bench.alpha, "T5")
    Episode.objects.filter(pk=episode.pk).update(status=Status.RUNNING)
    assert client.get(reverse("leaderboard:episode_record", args=[episode.pk])).status_code == 404
    assert window(client, episode).status_code == 404
    client.force_login(staff_user)
    assert window(client, episode, width=100).status_code == 200
    client.logout()
    Episode.objects.filter(pk=episode.pk).update(status=Status.COMPLETED)
    Suite.objects.filter(pk=bench.suite.pk).update(references=Suite.References.HELD_OUT)
    assert client.get(reverse("leaderboard:episode_record", args=[episode.pk])).status_code == 404
    assert window(client, episode).status_code == 404


@pytest.fixture
def night(bench):
    """T6 played on an EDF night of referential 10-20 channels, an EOG and a 1 Hz respiration channel."""
    instance = bench.suite.instances.get(task__code="T6")
    labels = ["Fp1", "F7", "T3", "T5", "O1", "Cz", "EOG left", "Resp"]
    pyedflib_edf(f"{bench.suite.release.source}/data/night.edf", labels, [256] * 7 + [1], 600)
    instance.recording_path = "data/night.edf"
    instance.save(update_fields=["recording_path"])
    return episode_of(bench.alpha, "T6")


def test_each_channel_keeps_its_own_rate_group_and_the_10_20_chains_are_offered(client, night):
    data = page_data(client, night)
    assert [(channel["name"], channel["group"], channel["rate"]) for channel in data["channels"]][-2:] == [
        ("EOG left", "EOG", 256.0), ("Resp", "other", 1.0)]
    assert list(data["montages"]) == ["recorded", "average", "bipolar"]
    assert re.fullmatch(r"\d\d:\d\d:\d\d", data["clock"])
    recording = open_recording(f"{night.instance.suite.release.source}/data/night.edf")
    page = window(client, night, start=100, stop=400, width=100).json()
    resp = page["channels"][-1]
    assert resp["rate"] == 1.0 and len(resp["t"]) == 300 // record.VISITOR_SAMPLES_PER_PIXEL
    check_envelope(resp, recording.read_stored(7, 0, 600) * 1e6, 1.0)  # the 1 Hz samples, not upsampled
    chains = window(client, night, start=100, stop=130, width=100, montage="bipolar").json()
    names = [channel["name"] for channel in chains["channels"]]
    assert names[:4] == ["Fp1-F7", "F7-T3", "T3-T5", "T5-O1"] and names[4:] == ["EOG left", "Resp"]
    derived = (recording.get_data(["Fp1"]) - recording.get_data(["F7"]))[0] * 1e6
    check_envelope(chains["channels"][0], derived, 256.0)


def test_filters_run_on_the_server_and_a_long_page_says_they_were_not_applied(client, night, monkeypatch):
    filtered = window(client, night, start=100, stop=130, width=100, highpass=1, lowpass=30, notch=50).json()
    assert filtered["filters"] == {"highpass": 1.0, "lowpass": 30.0, "notch": 50}
    plain = window(client, night, start=100, stop=130, width=100).json()
    eeg = lambda data: np.array(data["channels"][0]["max"])  # noqa: E731
    assert eeg(filtered).mean() < 0.6 * eeg(plain).mean()  # uniform noise loses most of its power above 30 Hz
    assert any("Resp" in note and "band-pass" in note for note in filtered["notes"])  # 1 Hz: not filtered
    monkeypatch.setattr(record, "MAX_PROCESSED_SAMPLES", 10_000)
    long = window(client, night, width=100, montage="average", highpass=1).json()
    assert long["montage"] == "recorded" and long["filters"]["highpass"] is None
    assert "as recorded, unfiltered" in long["notes"][0]


def test_a_notch_removes_the_mains_and_keeps_the_rhythm():
    times = np.arange(int(60 * SFREQ)) / SFREQ
    data = np.stack([1e-5 * np.sin(2 * np.pi * 10 * times) + 1e-5 * np.sin(2 * np.pi * 50 * times)])
    recording = Recording(sfreq=SFREQ, ch_names=["Cz"], ch_types=["eeg"], n_times=data.shape[1],
                          read=lambda picks, start, stop: data[picks, start:stop])
    query = {"start": "20", "stop": "21", "width": "400"}
    plain = record.read_window(recording, record.parse_window(query, recording), staff=True)["channels"][0]
    notched = record.read_window(recording, record.parse_window({**query, "notch": "50"}, recording),
                                 staff=True)["channels"][0]
    assert plain["kind"] == notched["kind"] == "samples"
    assert max(plain["v"]) == pytest.approx(20, abs=0.5)  # 10 + 10 µV at their peaks
    assert max(notched["v"]) == pytest.approx(10, abs=0.5)  # the 10 Hz rhythm alone
