"""The built-in agents: baseline/random's valid answers, and baseline/heuristic's expert rules, task by task."""
import json
from decimal import Decimal

import pytest

from runs.baselines.heuristic import T1_FIXED_LETTER, HeuristicAgent, ToolRefused, rescoped_span, sleep_channels
from runs.baselines.random import RandomAgent
from runs.protocol import TOOL_RESULT_PREFIX, final_answer_errors, parse_text_action
from tools_app.budget import check_windowed
from tools_app.errors import ToolError
from tools_app.views import result_text
from tests.runs.test_protocol import OUTPUT_SCHEMAS

MESSAGES = [{"role": "system", "content": "You analyse EEG."}, {"role": "user", "content": "Record rec-1."}]


def visible_instance(task, **extra):
    return {"record_id": "rec-9c1e", "task": task, "duration_sec": None, "n_epochs": None, "metadata": {}, **extra}


INSTANCES = {
    "T1": visible_instance("T1"),
    "T2": visible_instance("T2", duration_sec=2.0),
    "T3": visible_instance("T3", duration_sec=23.6),
    "T4": visible_instance("T4", duration_sec=600.0),
    "T5": visible_instance("T5", duration_sec=3600.0),
    "T6": visible_instance("T6", duration_sec=27090.0, n_epochs=903),
}


def drive(agent, tool, *, max_turns=60):
    """Play an agent against ``tool(name, arguments)`` the way the text protocol does; return (answer, calls)."""
    messages = list(MESSAGES)
    calls = []
    for _ in range(max_turns):
        reply = agent.respond(messages)
        action = parse_text_action(reply.content)
        messages.append({"role": "assistant", "content": reply.content})
        if action.kind == "final_answer":
            return action.final_answer, calls
        assert action.kind == "tool_call", reply.content
        call = action.tool_calls[0]
        calls.append(call)
        result = result_text(call.name, tool(call.name, call.arguments))
        messages.append({"role": "user", "content": TOOL_RESULT_PREFIX + result})
    raise AssertionError("no final answer")


@pytest.mark.parametrize("task", sorted(INSTANCES))
def test_random_baseline_gives_a_valid_answer_in_one_turn(task):
    answer, calls = drive(RandomAgent(INSTANCES[task], seed=1), tool=None)
    assert calls == []
    assert final_answer_errors(answer, OUTPUT_SCHEMAS[task], task=task, n_epochs=903) == []


def test_random_baseline_is_seeded():
    def answer(seed, record_id="rec-9c1e"):
        return drive(RandomAgent({**INSTANCES["T6"], "record_id": record_id}, seed=seed), tool=None)[0]

    assert answer(1) == answer(1)
    assert answer(1) != answer(2)
    assert answer(1) != answer(1, record_id="rec-other")


def test_baselines_are_free():
    reply = HeuristicAgent(INSTANCES["T1"]).respond(MESSAGES)
    assert reply.cost_usd == Decimal(0)
    assert reply.usage is None


def test_heuristic_t1_answers_its_fixed_letter_without_tools():
    assert T1_FIXED_LETTER == "C"
    assert drive(HeuristicAgent(INSTANCES["T1"]), tool=None) == ({"action": "final_answer", "answer": "C"}, [])


def test_heuristic_t1_letter_does_not_follow_the_official_answers():
    """The letter is not the official set's most frequent answer (A, 15 of 38), which the old rule answered."""
    from collections import Counter

    from tests.datafiles import OFFICIAL

    answers = Counter(json.loads(line)["gold"]["answer"]
                      for line in (OFFICIAL / "answer_keys" / "T1.jsonl").read_text().splitlines())
    assert answers.most_common(1)[0][0] != T1_FIXED_LETTER
    assert "reads no answer key" in HeuristicAgent.__doc__


def band_power_result(relative, ratios=None):
    return {"channels": [{"channel": "EEG", "relative_power": relative, "ratios": ratios or {}}]}


@pytest.mark.parametrize(
    ("relative", "crossings", "label"),
    [
        ({"delta": 0.2, "theta": 0.1, "alpha": 0.2, "beta": 0.3, "gamma": 0.2}, 100, "muscle_contaminated"),
        ({"delta": 0.05, "theta": 0.05, "alpha": 0.8, "beta": 0.05, "gamma": 0.05}, 70, "muscle_contaminated"),
        ({"delta": 0.7, "theta": 0.1, "alpha": 0.1, "beta": 0.05, "gamma": 0.05}, 8, "ocular_contaminated"),
        ({"delta": 0.25, "theta": 0.05, "alpha": 0.65, "beta": 0.04, "gamma": 0.01}, 28, "ocular_contaminated"),
        ({"delta": 0.05, "theta": 0.05, "alpha": 0.85, "beta": 0.04, "gamma": 0.01}, 30, "clean"),
    ],
)
def test_heuristic_t2_rules(relative, crossings, label):
    results = {
        "compute_band_power": band_power_result(relative),
        "compute_temporal_features": {"channels": [{"channel": "EEG", "zero_crossing_rate_hz": crossings}]},
    }
    answer, calls = drive(HeuristicAgent(INSTANCES["T2"]), lambda name, arguments: results[name])
    assert [call.name for call in calls] == ["compute_band_power", "compute_temporal_features"]
    assert all(call.arguments["record_id"] == "rec-9c1e" for call in calls)
    assert answer["classification"] == label
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T2"]) == []


@pytest.mark.parametrize(
    ("rms", "line_length", "label"), [(40, 3000, "normal"), (300, 3000, "epileptic"), (60, 15000, "epileptic")]
)
def test_heuristic_t3_rules(rms, line_length, label):
    result = {"channels": [{"channel": "EEG", "rms_uv": rms, "line_length_uv_s": line_length}]}
    answer, _ = drive(HeuristicAgent(INSTANCES["T3"]), lambda name, arguments: result)
    assert answer["classification"] == label


@pytest.mark.parametrize(
    ("peak", "ratio", "label"), [(10.0, 0.5, "HC"), (8.0, 0.5, "FTD"), (10.0, 1.4, "FTD"), (8.0, 1.4, "AD")]
)
def test_heuristic_t4_rules(peak, ratio, label):
    results = {
        "compute_psd": {"global_alpha_peak_hz": peak},
        "compute_band_power": band_power_result({}, {"theta_alpha_ratio": ratio}),
    }
    answer, _ = drive(HeuristicAgent(INSTANCES["T4"]), lambda name, arguments: results[name])
    assert answer["classification"] == label


def test_heuristic_fails_loudly_when_a_tool_refuses_what_it_cannot_rescope():
    """A refusal other than the output budget is a defect of the heuristic: the episode fails, it answers nothing."""
    with pytest.raises(ToolRefused, match="None of the requested channels exist"):
        drive(HeuristicAgent(INSTANCES["T3"]), lambda name, arguments: {
            "record_id": "rec-9c1e", "error": "None of the requested channels exist: ['EEG']"})


class FakeWindowedRecording:
    """Recording info and windowed features from ``value(channel, t)``, refused over the budget as the tool does."""

    def __init__(self, duration, channels, value):
        self.duration, self.channels, self.value = duration, channels, value
        self.refused, self.served = [], []

    def __call__(self, name, arguments):
        if name == "get_recording_info":
            return {"record_id": "rec-9c1e", "duration_sec": self.duration, "channel_names": self.channels,
                    "reference": 0}  # fmt: skip
        assert name == "compute_windowed_features"
        window, tmin, tmax = arguments["window_sec"], arguments["tmin"], arguments["tmax"]
        channels, features = arguments["channels"], arguments["features"]
        starts = [tmin + i * window for i in range(int(round((tmax - tmin) / window)))]
        try:
            check_windowed(n_channels=len(channels), n_windows=len(starts), features=features, step_sec=window,
                           span_sec=tmax - tmin, record_sec=self.duration)  # fmt: skip
        except ToolError as refusal:
            self.refused.append((tmin, tmax))
            return refusal.to_result("rec-9c1e")
        self.served.append((tmin, tmax))
        return {
            "channels": [
                {"channel": channel,
                 "windows": [{**self.value(channel, t), "t_start": t, "t_end": t + window} for t in starts]}
                for channel in channels
            ]
        }  # fmt: skip


CHB_CHANNELS = ["FP1-F7", "F7-T7", "T7-P7", "P7-O1", "--0", "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "--1", "FZ-CZ",
                "CZ-PZ", "FP2-F4", "F4-C4", "C4-P4", "P4-O2", "FP2-F8", "F8-T8", "T8-P8-0", "P8-O2", "P7-T7",
                "T7-FT9", "FT9-FT10", "FT10-T8", "T8-P8-1"]  # fmt: skip


def seizure_value(involved, seizures, *, rise=4.0):
    """RMS of ``rms_uv`` windows: 20 µV background, ``rise`` times it on the ``involved`` channels in ``seizures``."""

    def value(channel, t):
        if channel.startswith("--"):
            return {"rms_uv": 0.0}  # CHB-MIT's placeholder channels are flat
        ictal = channel in involved and any(onset <= t < offset for onset, offset in seizures)
        return {"rms_uv": 20.0 * (rise if ictal else 1.0) + (hash(channel) % 5)}

    return value


def test_heuristic_t5_screens_the_record_in_budget_sized_calls_and_finds_a_widespread_seizure():
    recording = FakeWindowedRecording(3600.0, CHB_CHANNELS, seizure_value(CHB_CHANNELS[:12], [(2380, 2450)]))
    answer, calls = drive(HeuristicAgent(INSTANCES["T5"]), recording)
    assert answer == {"action": "final_answer", "seizure_events": [{"onset_sec": 2380.0, "offset_sec": 2450.0}]}
    assert calls[0].name == "get_recording_info"
    # As a model would: the whole record first, refused for its size, then chunks the refusal's numbers allow.
    assert recording.refused == [(0.0, 3600.0)]
    assert recording.served[0][0] == 0.0 and recording.served[-1][1] == 3600.0
    assert all(stop == start for (_, stop), (start, _) in zip(recording.served, recording.served[1:]))
    assert len(calls) < 30


def test_heuristic_t5_finds_a_focal_seizure_on_a_few_neighbouring_channels_but_not_a_one_channel_artifact():
    focal = ["F7-T7", "T7-P7", "FP1-F7", "P7-T7", "T7-FT9"]
    recording = FakeWindowedRecording(600.0, CHB_CHANNELS, seizure_value(focal, [(300, 360)]))
    assert drive(HeuristicAgent(INSTANCES["T5"]), recording)[0]["seizure_events"] == [
        {"onset_sec": 300.0, "offset_sec": 360.0}]
    artifact = FakeWindowedRecording(600.0, CHB_CHANNELS, seizure_value(["FP1-F7"], [(300, 360)], rise=10))
    assert drive(HeuristicAgent(INSTANCES["T5"]), artifact)[0]["seizure_events"] == []


def test_heuristic_t5_bridges_one_quiet_window_and_ignores_a_single_raised_window():
    seizures = [(100, 130), (140, 170), (400, 410)]  # one seizure with a 10-s lull; a 10-s burst
    recording = FakeWindowedRecording(600.0, CHB_CHANNELS, seizure_value(CHB_CHANNELS, seizures))
    assert drive(HeuristicAgent(INSTANCES["T5"]), recording)[0]["seizure_events"] == [
        {"onset_sec": 100.0, "offset_sec": 170.0}]


def test_heuristic_t5_finds_nothing_in_a_steady_record():
    recording = FakeWindowedRecording(3600.0, CHB_CHANNELS, seizure_value([], []))
    assert drive(HeuristicAgent(INSTANCES["T5"]), recording)[0]["seizure_events"] == []


def test_rescoped_span_asks_for_what_the_refusal_allows_and_always_for_less():
    refusal = {"budget_tokens": 8000, "estimated_tokens": 16000, "n_windows": 100, "n_channels": 2, "error": "x"}
    assert rescoped_span(refusal, window=30.0) == 45 * 30.0
    assert rescoped_span({**refusal, "estimated_tokens": 8001}, window=30.0) == 89 * 30.0
    assert rescoped_span({**refusal, "estimated_tokens": 8001, "n_windows": 2}, window=5.0) == 5.0
    with pytest.raises(ToolRefused, match="refused one window"):
        rescoped_span({**refusal, "n_windows": 1}, window=30.0)


SLEEP_CHANNELS = ["EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal", "Resp oro-nasal", "EMG submental", "Temp rectal",
                  "Event marker"]  # fmt: skip


def test_sleep_channels_are_told_apart_by_their_electrodes():
    assert sleep_channels(SLEEP_CHANNELS) == ("EEG Fpz-Cz", "EEG Pz-Oz", "EMG submental")
    assert sleep_channels(["EEG Pz-Oz", "EEG Fpz-Cz"]) == ("EEG Fpz-Cz", "EEG Pz-Oz", None)
    assert sleep_channels(["EEG Fpz-Cz"]) == ("EEG Fpz-Cz", "EEG Fpz-Cz", None)


# Relative powers (front, back) and chin EMG RMS of each stage, as a night's scoring would see them.
STAGE_PATTERNS = {
    "W": ({"delta": 0.3, "theta": 0.1, "alpha": 0.2, "sigma": 0.06, "beta": 0.2, "gamma": 0.14},
          {"delta": 0.05, "theta": 0.05, "alpha": 0.75, "sigma": 0.08, "beta": 0.05, "gamma": 0.02}, 3.5),
    "N1": ({"delta": 0.22, "theta": 0.57, "alpha": 0.07, "sigma": 0.03, "beta": 0.08, "gamma": 0.03},
           {"delta": 0.2, "theta": 0.48, "alpha": 0.15, "sigma": 0.04, "beta": 0.1, "gamma": 0.03}, 2.0),
    "N2": ({"delta": 0.5, "theta": 0.26, "alpha": 0.06, "sigma": 0.07, "beta": 0.07, "gamma": 0.04},
           {"delta": 0.36, "theta": 0.24, "alpha": 0.1, "sigma": 0.14, "beta": 0.12, "gamma": 0.04}, 1.4),
    "N3": ({"delta": 0.92, "theta": 0.05, "alpha": 0.01, "sigma": 0.01, "beta": 0.01, "gamma": 0.0},
           {"delta": 0.9, "theta": 0.05, "alpha": 0.01, "sigma": 0.01, "beta": 0.02, "gamma": 0.01}, 1.2),
    "REM": ({"delta": 0.25, "theta": 0.5, "alpha": 0.08, "sigma": 0.04, "beta": 0.1, "gamma": 0.03},
            {"delta": 0.21, "theta": 0.45, "alpha": 0.16, "sigma": 0.05, "beta": 0.1, "gamma": 0.03}, 0.3),
}


def night(stages, *, chin=True):
    """A recording whose 30-s windows follow ``stages``, one a epoch."""

    def value(channel, t):
        front, back, tone = STAGE_PATTERNS[stages[min(int(t // 30), len(stages) - 1)]]
        if channel == "EMG submental":
            return {"rms_uv": tone}
        return {f"{band}_relative": share for band, share in (front if "Fpz" in channel else back).items()}

    channels = SLEEP_CHANNELS if chin else [name for name in SLEEP_CHANNELS if "EMG" not in name]
    return FakeWindowedRecording(len(stages) * 30.0, channels, value)


def staged(answer):
    """The stage of every epoch of a T6 answer."""
    return [segment["stage"] for segment in answer["hypnogram_rle"]
            for _ in range(segment["start_epoch"], segment["end_epoch"] + 1)]  # fmt: skip


def test_heuristic_t6_stages_every_epoch_from_its_eeg_bands_and_chin_tone():
    stages = ["W"] * 120 + ["N1"] * 10 + ["N2"] * 300 + ["N3"] * 150 + ["N2"] * 100 + ["REM"] * 120 + ["W"] * 103
    recording = night(stages)
    instance = {**INSTANCES["T6"], "n_epochs": len(stages)}
    answer, calls = drive(HeuristicAgent(instance), recording)
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T6"], task="T6", n_epochs=len(stages)) == []
    assert staged(answer) == stages
    assert answer["architecture"] == {"REM_pct": round(120 / 903, 4), "N3_pct": round(150 / 903, 4),
                                      "sleep_efficiency": round(680 / 903, 4)}  # fmt: skip
    assert {tuple(call.arguments["channels"]) for call in calls[1:]} == {("EEG Fpz-Cz", "EEG Pz-Oz"),
                                                                         ("EMG submental",)}  # fmt: skip
    assert len(recording.refused) == 2  # once for the EEG, once for the chin, then chunks that fit


def test_heuristic_t6_without_a_chin_emg_calls_theta_after_sleep_rem():
    stages = ["W"] * 20 + ["N1"] * 5 + ["N2"] * 30 + ["REM"] * 20
    answer, _ = drive(HeuristicAgent({**INSTANCES["T6"], "n_epochs": len(stages)}), night(stages, chin=False))
    assert staged(answer) == ["W"] * 20 + ["N1"] * 5 + ["N2"] * 30 + ["REM"] * 20
