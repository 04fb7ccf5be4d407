"""The built-in agents: baseline/random's valid answers, and baseline/heuristic's expert rules, task by task."""
import json
from decimal import Decimal

import pytest

from runs.baselines.heuristic import T1_FIXED_LETTER, HeuristicAgent, windows_per_call
from runs.baselines.random import RandomAgent
from runs.protocol import TOOL_RESULT_PREFIX, final_answer_errors, parse_text_action
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
    ("relative", "peak_to_peak", "label"),
    [
        ({"delta": 0.2, "theta": 0.1, "alpha": 0.2, "beta": 0.3, "gamma": 0.2}, 100, "muscle_contaminated"),
        ({"delta": 0.7, "theta": 0.1, "alpha": 0.1, "beta": 0.05, "gamma": 0.05}, 300, "ocular_contaminated"),
        ({"delta": 0.7, "theta": 0.1, "alpha": 0.1, "beta": 0.05, "gamma": 0.05}, 60, "clean"),
        ({"delta": 0.3, "theta": 0.2, "alpha": 0.4, "beta": 0.07, "gamma": 0.03}, 100, "clean"),
    ],
)
def test_heuristic_t2_rules(relative, peak_to_peak, label):
    results = {
        "compute_band_power": band_power_result(relative),
        "compute_temporal_features": {
            "channels": [{"channel": "EEG", "rms_uv": 20.0, "peak_to_peak_uv": peak_to_peak}]
        },
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


def official_budget_tokens(features, n_channels, n_windows):
    """compute_windowed_features' output estimate (REFERENCE §1.1), which must stay within 8,000 tokens."""
    row = len(json.dumps({**{f: -12.3456 for f in sorted(features)}, "t_start": 0.0, "t_end": 0.0})) + 2
    return (n_windows * n_channels * row + 60 * n_channels) // 4


class FakeWindowedRecording:
    """Just enough of the tools for the heuristic: recording info and windowed features from a value function."""

    def __init__(self, duration, channels, value):
        self.duration, self.channels, self.value = duration, channels, value
        self.budgets = []

    def __call__(self, name, arguments):
        if name == "get_recording_info":
            return {"duration_sec": self.duration, "channel_names": self.channels}
        assert name == "compute_windowed_features"
        window, tmin, tmax = arguments["window_sec"], arguments["tmin"], arguments["tmax"]
        channels = arguments.get("channels", self.channels)
        starts = [tmin + i * window for i in range(int(round((tmax - tmin) / window)))]
        self.budgets.append(official_budget_tokens(arguments["features"], len(channels), len(starts)))
        return {
            "channels": [
                {
                    "channel": channel,
                    "windows": [
                        {**self.value(t, arguments["features"]), "t_start": t, "t_end": t + window} for t in starts
                    ],
                }
                for channel in channels
            ]
        }


def test_heuristic_t5_screens_then_refines_a_seizure_within_the_output_budget():
    def line_length(t, features):
        return {"line_length_uv_s": 600.0 if 1000 <= t < 1085 else 100.0}

    recording = FakeWindowedRecording(3600.0, [f"CH{i}" for i in range(23)], line_length)
    answer, calls = drive(HeuristicAgent(INSTANCES["T5"]), recording)
    assert answer == {"action": "final_answer", "seizure_events": [{"onset_sec": 1000.0, "offset_sec": 1085.0}]}
    assert calls[0].name == "get_recording_info"
    assert max(recording.budgets) <= 8000
    assert windows_per_call(["line_length_uv_s"], 23) * 30 < 3600  # the screen needed several calls
    assert len(calls) < 20


def test_heuristic_t5_finds_a_focal_seizure_on_one_channel():
    def line_length(t, features):
        return {"line_length_uv_s": 100.0}

    class Focal(FakeWindowedRecording):
        def __call__(self, name, arguments):
            result = super().__call__(name, arguments)
            for window in result.get("channels", [{}])[0].get("windows", []):
                if 300 <= window["t_start"] < 360:
                    window["line_length_uv_s"] = 300.0
            return result

    answer, _ = drive(HeuristicAgent(INSTANCES["T5"]), Focal(600.0, ["CH0", "CH1", "CH2"], line_length))
    assert answer["seizure_events"] == [{"onset_sec": 300.0, "offset_sec": 360.0}]


def test_heuristic_t5_finds_nothing_in_a_flat_record():
    recording = FakeWindowedRecording(3600.0, ["CH0", "CH1"], lambda t, f: {"line_length_uv_s": 100.0})
    answer, _ = drive(HeuristicAgent(INSTANCES["T5"]), recording)
    assert answer["seizure_events"] == []


def test_heuristic_t6_stages_every_epoch_from_band_powers():
    def relative(t, features):
        epoch = int(t // 30)
        pattern = {  # wake, N2 with spindles, N3, REM
            0: {"delta": 0.3, "theta": 0.1, "alpha": 0.35, "sigma": 0.05, "beta": 0.15, "gamma": 0.05},
            1: {"delta": 0.6, "theta": 0.15, "alpha": 0.05, "sigma": 0.12, "beta": 0.06, "gamma": 0.02},
            2: {"delta": 0.85, "theta": 0.08, "alpha": 0.02, "sigma": 0.02, "beta": 0.02, "gamma": 0.01},
            3: {"delta": 0.5, "theta": 0.3, "alpha": 0.08, "sigma": 0.05, "beta": 0.05, "gamma": 0.02},
        }[min(epoch // 200, 3)]
        return {f"{band}_relative": value for band, value in pattern.items()}

    channels = ["EEG Fpz-Cz", "EEG Pz-Oz", "EOG horizontal", "Resp oro-nasal", "EMG submental"]
    recording = FakeWindowedRecording(27090.0, channels, relative)
    answer, calls = drive(HeuristicAgent(INSTANCES["T6"]), recording)
    assert final_answer_errors(answer, OUTPUT_SCHEMAS["T6"], task="T6", n_epochs=903) == []
    assert [(s["start_epoch"], s["end_epoch"], s["stage"]) for s in answer["hypnogram_rle"]] == [
        (0, 199, "W"), (200, 399, "N2"), (400, 599, "N3"), (600, 902, "REM"),
    ]  # fmt: skip
    assert answer["architecture"] == {"REM_pct": round(303 / 903, 4), "N3_pct": round(200 / 903, 4),
                                      "sleep_efficiency": round(703 / 903, 4)}  # fmt: skip
    assert all(call.arguments.get("channels") == ["EEG Fpz-Cz"] for call in calls[1:])
    assert max(recording.budgets) <= 8000
