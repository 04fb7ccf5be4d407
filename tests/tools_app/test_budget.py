"""The output budget: the official windowed rule at its boundary, and the same rule elsewhere."""
import json

import numpy as np
import pytest

from tests.tools_app.recordings import make_recording, noise, run
from tools_app import budget
from tools_app.errors import ErrorCode, ToolError
from tools_app.signal import ranges, windowed


@pytest.mark.parametrize(
    ("n_windows", "features", "tokens"),
    [
        # The paper's T6 trace: 300 rows "about 8490 tokens", then 377 rows "about 8214 tokens".
        (300, ["delta_relative", "alpha_relative", "sigma_power"], 8490),
        (377, ["rms_uv", "zero_crossing_rate_hz"], 8214),
        # The paper's T5 trace: "1 channels x 360 windows = 360 rows (~9645 tokens)".
        (360, ["beta_relative", "rms_uv", "theta_relative"], 9645),
    ],
)
def test_the_estimate_reproduces_the_papers_traces(n_windows, features, tokens):
    assert budget.windowed_estimate_tokens(1, n_windows, features) == tokens


def test_the_row_estimate_is_the_official_json_length():
    row = {"kurtosis": -12.3456, "rms_uv": -12.3456, "t_start": 0.0, "t_end": 0.0}
    assert budget.windowed_row_bytes(["rms_uv", "kurtosis"]) == len(json.dumps(row)) + 2


@pytest.fixture
def hour(episode):
    """One channel, one hour at 100 Hz."""
    return episode(make_recording(noise(3600, 100.0, seed=1)[np.newaxis], 100.0, ["Cz"]))


def _largest_window_count_within_budget(features, n_channels=1):
    count = 1
    while budget.windowed_estimate_tokens(n_channels, count + 1, features) <= budget.BUDGET_TOKENS:
        count += 1
    return count


def test_a_call_one_row_under_the_limit_passes_and_one_over_fails_with_the_official_numbers(hour):
    features = list(windowed.DEFAULT_FEATURES)
    fitting = _largest_window_count_within_budget(features)
    assert budget.windowed_estimate_tokens(1, fitting, features) <= 8000 < budget.windowed_estimate_tokens(1, fitting + 1, features)

    passed = run("compute_windowed_features", channels=["Cz"], window_sec=1, tmin=0, tmax=fitting)
    assert passed["n_windows"] == fitting and "error" not in passed

    failed = run("compute_windowed_features", channels=["Cz"], window_sec=1, tmin=0, tmax=fitting + 1)
    row_bytes = budget.windowed_row_bytes(features)
    estimated = ((fitting + 1) * row_bytes + 60) // 4
    max_rows = 32000 // row_bytes
    assert failed == {
        "record_id": "rec-test",
        "error": (
            f"Output too large: this call would return 1 channels x {fitting + 1} windows = {fitting + 1} rows "
            f"(~{estimated} tokens), exceeding the 8000-token budget. Nothing was computed. Rescope to fit, e.g.: "
            f"(a) use <= {max(1, max_rows // (fitting + 1))} channel(s) at the current time span; or (b) keep "
            f"<= {max_rows} windows by limiting the time range to a <= {round(max_rows * 1, 1)}s chunk via "
            f"tmin/tmax (record is {round(fitting + 1.0, 1)}s long); or (c) use a coarser window_sec / step_sec. "
            f"Then call again on the chunk."
        ),
        "error_code": "output_too_large",
        "budget_tokens": 8000,
        "estimated_tokens": estimated,
        "n_channels": 1,
        "n_windows": fitting + 1,
        "range_sec": fitting + 1.0,
        "record_sec": 3600.0,
    }


def test_the_budget_counts_channels_and_suggests_a_span_from_the_step(hour):
    result = run("compute_windowed_features", window_sec=10, step_sec=2.5)
    assert result["error_code"] == ErrorCode.OUTPUT_TOO_LARGE
    assert result["n_windows"] == len(range(0, 360_000 - 1000 + 1, 250))
    max_windows = 32000 // budget.windowed_row_bytes(windowed.DEFAULT_FEATURES)
    assert f"<= {round(max_windows * 2.5, 1)}s chunk via tmin/tmax (record is 3600.0s long)" in result["error"]


@pytest.fixture
def night(episode):
    """One channel of a 30,900-s night, at 10 Hz (the budget counts windows, not samples)."""
    return episode(make_recording(noise(30_900, 10.0, seed=3)[np.newaxis], 10.0, ["Fpz-Cz"]))


def test_the_refusal_keeps_the_official_words_and_stores_the_records_true_length(night):
    result = run("compute_windowed_features", window_sec=1, tmin=0, tmax=4080)
    # The official text gives the requested range's length as the record's (upstream's total_sec).
    assert "via tmin/tmax (record is 4080.0s long); or (c)" in result["error"]
    assert (result["range_sec"], result["record_sec"]) == (4080.0, 30900.0)
    assert list(result)[-2:] == ["range_sec", "record_sec"]  # after the official keys, as error_code is


def test_with_true_lengths_gives_both_lengths_and_changes_nothing_else(night):
    result = run("compute_windowed_features", window_sec=1, tmin=0, tmax=4080)
    told = budget.with_true_lengths(result)
    assert told["error"] == result["error"].replace(
        "(record is 4080.0s long)", "(the range asked for is 4080.0s long, of a 30900.0s record)")
    assert {key: value for key, value in told.items() if key != "error"} == {
        key: value for key, value in result.items() if key != "error"}
    stored = json.loads(json.dumps(result))  # as a step keeps it
    assert budget.with_true_lengths(stored) == told
    assert budget.with_true_lengths({**stored, "range_sec": 4080}) == told  # a database may give 4080 back


@pytest.mark.parametrize("content", [
    None,
    {"record_id": "rec-test", "n_windows": 3, "channels": []},
    {"record_id": "rec-test", "error": "Too few samples (1) in the requested time window. Ensure tmin/tmax fall "
                                       "within the recording duration.", "error_code": "invalid_argument"},
    {"record_id": "rec-test", "error": "Output too large: ... (record is 4080.0s long); ...", "budget_tokens": 8000},
])
def test_with_true_lengths_leaves_anything_else_as_it_is(content):
    assert budget.with_true_lengths(content) is content


def test_nothing_is_computed_when_the_budget_refuses(hour, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("computed despite the budget")

    run("get_recording_info")  # the record's first call fills its segment cache

    monkeypatch.setattr(ranges.SignalSource, "windowed_features", forbidden)
    monkeypatch.setattr(ranges.SignalSource, "read", forbidden)
    assert run("compute_windowed_features", window_sec=1)["error_code"] == ErrorCode.OUTPUT_TOO_LARGE


def test_the_result_reports_its_own_size_under_the_budget(hour):
    result = run("compute_windowed_features", window_sec=30, features=["rms_uv"])
    assert result["_meta"]["approx_response_tokens"] <= 8000 and result["_meta"]["n_rows"] == 120


# ---------------------------------------------------------------------- the rule elsewhere

@pytest.fixture
def many_channels(episode):
    names = [f"EEG-CHANNEL-{index:02d}" for index in range(64)]
    data = np.stack([noise(20, 128.0, seed=seed) for seed in range(64)])
    return episode(make_recording(data, 128.0, names)), names


def test_correlation_over_many_channels_is_refused_at_the_budget(many_channels):
    _, names = many_channels
    sizes = budget._correlation_sizes(names)
    fitting = max(count for count, size in enumerate(sizes) if size // 4 <= 8000)
    assert fitting < len(names)

    passed = run("compute_channel_correlation", channels=names[:fitting])
    assert passed["n_pairs"] == fitting * (fitting - 1) // 2
    assert budget.correlation_estimate_bytes(names[:fitting]) >= passed["_meta"]["approx_response_bytes"]

    failed = run("compute_channel_correlation", channels=names[: fitting + 1])
    assert failed["error_code"] == ErrorCode.OUTPUT_TOO_LARGE
    assert failed["n_channels"] == fitting + 1 and failed["n_pairs"] == fitting * (fitting + 1) // 2
    assert failed["budget_tokens"] == 8000 and failed["estimated_tokens"] > 8000
    assert f"a focused subset of <= {fitting} channels" in failed["error"]
    assert run("compute_channel_correlation")["error_code"] == ErrorCode.OUTPUT_TOO_LARGE


def test_the_correlation_estimate_counts_every_pair():
    names = ["Fp1", "Fp2", "EEG Fpz-Cz", "T8-P8-0"]
    body = {"record_id": "", "time_window": [-12.3456, -12.3456], "n_channels": 0, "channel_names": names,
            "n_pairs": 0, "channel_summary": [{"channel": name, "mean_abs_correlation": 0.1234} for name in names],
            "pairs": [{"channel_a": a, "channel_b": b, "correlation": -0.1234}
                      for index, a in enumerate(names) for b in names[index + 1 :]]}
    assert abs(budget.correlation_estimate_bytes(names) - budget.response_bytes(body)) <= 4 * len(names) + 8


@pytest.mark.parametrize("tool_name", ["compute_psd", "compute_band_power", "compute_temporal_features",
                                       "compute_noise_metrics", "detect_transients"])
def test_repeated_channels_cannot_blow_the_budget(many_channels, tool_name):
    _, names = many_channels
    refused = run(tool_name, channels=[names[0]] * 400)
    assert refused["error_code"] == ErrorCode.OUTPUT_TOO_LARGE
    assert refused["n_channels"] == 400 and refused["estimated_tokens"] > 8000
    assert "error" not in run(tool_name, channels=names[:10])


def test_a_per_channel_estimate_sizes_each_row_as_its_json():
    names = ["Fp1", "EEG Fpz-Cz", "Fp1", "ÄÖ-Ü", "T8-P8-0"] * 150
    header = {"record_id": "r", "time_window": [None, None], "n_channels": 0, "channels": []}
    fields = {"rms_uv": -12.3456, "kurtosis": -12.3456}
    rows = [budget.response_bytes({"channel": name, **fields}) + 2 for name in names]
    with pytest.raises(ToolError) as refused:
        budget.check_channel_rows(header, names, fields)
    assert refused.value.extra["estimated_tokens"] == (budget.response_bytes(header) + sum(rows)) // 4
    fitting = next(count for count in range(len(rows)) if budget.response_bytes(header) + sum(rows[: count + 1]) > 32000)
    assert f"use <= {fitting} channel(s) per call" in refused.value.message
    budget.check_channel_rows(header, names[:fitting], fields)
