"""The charts' figure dicts and the board the task and analysis pages open on.

Empty states instead of empty axes, a log cost axis over positive costs only, labelled zero bars,
one colour per model on every chart, windowed features in band order with their units, step plots
whose time axes line up, and the default board.
"""
import math
import subprocess
import sys

import pytest
from django.conf import settings
from django.urls import reverse

from benchmark.models import ModelSpec
from leaderboard import figures
from leaderboard.analysis import charts, task_charts
from leaderboard.board.published import PAPER_BOARD, import_published
from leaderboard.explorer import charts as episode_charts
from leaderboard.explorer.signal import feature_title, plotted_features
from runs.models import Run

BANDS = ["delta", "theta", "alpha", "sigma", "beta", "gamma"]


def point(label, **fields):
    return {"label": label, "key": f"run-{label}", "published": False, **fields}


def traces_with_points(figure):
    """The traces that draw something (legend keys draw a lone None)."""
    return [trace for trace in figure["data"] if any(value is not None for value in trace.get("x", []))]


# ── empty states ─────────────────────────────────────────────────────────────────────────────


def test_tool_calls_without_runs_is_an_empty_state_not_empty_axes():
    # What the analysis view passes on a board without runs: two groups of nothing.
    figure = charts.grouped_bars_figure(
        {"Top-0": {"T2": None, "T3": None}, "Bottom-0": {"T2": None, "T3": None}},
        y_title="Median tool calls per trajectory", empty="No run yet.",
    )
    assert figure["empty"] == "No run yet."
    assert figure["data"] == []


def test_cost_without_a_positive_cost_is_an_empty_state_naming_what_it_leaves_out():
    figure = charts.cost_figure([
        point("random", cost=0.0, overall=0.2), point("heuristic", cost=0.0, overall=0.5),
        point("local", cost=None, overall=0.3),
    ])
    assert figure["empty"] and figure["data"] == []
    assert figure["note"] == "Not on the log axis: local (unpriced), random ($0), heuristic ($0)."


def test_parameters_without_a_known_size_is_an_empty_state():
    figure = charts.parameters_figure([point("random", parameters_b=None, overall=0.2)])
    assert figure["empty"] and figure["data"] == []
    assert figure["note"] == "Size not reported: random."


@pytest.mark.parametrize("builder", [
    lambda: task_charts.task_scores_figure([], metric="Macro-F1"),
    lambda: task_charts.miss_over_alarm_figure([]),
    lambda: charts.tool_use_figure({}, categories=["Data overview"]),
    lambda: charts.tokens_figure([]),
    lambda: charts.box_plot_figure({}),
])
def test_every_chart_without_data_says_so(builder):
    figure = builder()
    assert figure["empty"] and figure["data"] == []


# ── the cost axis ────────────────────────────────────────────────────────────────────────────


def test_cost_axis_is_log_over_the_positive_costs_only():
    figure = charts.cost_figure([
        point("cheap", cost=0.5, overall=0.4, frontier=True),
        point("dear", cost=20.0, overall=0.6, frontier=True),
        point("free", cost=0.0, overall=0.1),
        point("unpriced", cost=None, overall=0.3),
    ])
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["type"] == "log"
    low, high = xaxis["range"]  # log10 units
    assert math.log10(0.5) - 0.5 < low < math.log10(0.5)
    assert math.log10(20.0) < high < math.log10(20.0) + 0.5
    drawn = [x for trace in traces_with_points(figure) for x in trace["x"]]
    assert sorted(drawn) == [0.5, 0.5, 20.0, 20.0]  # the points and the frontier through them
    labels = [label for trace in figure["data"] for label in trace.get("customdata", [])]
    assert sorted(labels) == ["cheap", "dear"]
    assert figure["note"] == "Not on the log axis: unpriced (unpriced), free ($0)."
    assert "log" in xaxis["title"]["text"]


def test_labels_that_would_collide_are_left_to_the_hover():
    # Five models on one spot in the middle: their labels go above, below, right and left of it, in
    # turn; the fifth would cover one of them and is named by its hover text only.
    crowd = [point(f"m{rank}", cost=10.0, overall=0.5) for rank in range(5)]
    figure = charts.cost_figure([*crowd, point("apart", cost=1000.0, overall=0.8), point("low", cost=0.1, overall=0.2)])
    trace = traces_with_points(figure)[0]
    shown = dict(zip(trace["customdata"], zip(trace["text"], trace["textposition"])))
    assert [shown[f"m{rank}"] for rank in range(4)] == [
        ("m0", "top center"), ("m1", "bottom center"), ("m2", "middle right"), ("m3", "middle left"),
    ]
    assert shown["m4"][0] == "" and shown["apart"][0] == "apart"
    assert trace["hovertemplate"].startswith("%{customdata}")
    assert trace["cliponaxis"] is False


# ── bars of zero ─────────────────────────────────────────────────────────────────────────────


def test_a_zero_bar_is_labelled_with_its_value():
    figure = charts.grouped_bars_figure({"Top-1": {"T2": 3.0}, "Bottom-1": {"T2": 0.0}}, y_title="calls")
    bottom = figure["data"][1]
    assert bottom["y"] == [0.0]
    assert bottom["texttemplate"] == "%{y:.1f}" and bottom["textposition"] == "outside"
    assert figure["layout"]["yaxis"]["range"][1] > 3.0  # room for the label above the highest bar


def test_a_zero_score_is_labelled_on_the_task_chart():
    figure = task_charts.task_scores_figure([point("random", score=0.0), point("heuristic", score=0.5)], metric="F1")
    bars = figure["data"][0]
    assert bars["x"] == [0.0, 0.5]
    assert bars["texttemplate"] == "%{x:.3f}" and bars["textposition"] == "outside"


# ── one colour per model ─────────────────────────────────────────────────────────────────────


def test_a_model_has_one_colour_on_every_chart_of_a_page():
    keys = ["run-1", "run-2", "run-3", "published-gpt"]
    labels = {key: key.upper() for key in keys}
    scores = task_charts.task_scores_figure(
        [{"label": labels[key], "key": key, "score": 0.1 * index, "published": key.startswith("published")}
         for index, key in enumerate(keys)], metric="F1",
    )
    bar_colors = dict(zip(scores["data"][0]["y"], scores["data"][0]["marker"]["color"]))
    # The duration chart lists the models in another order.
    durations = task_charts.duration_bins_figure(
        {"bins": ["< 8 h"], "models": [{"key": key, "macro_f1": [0.5]} for key in reversed(keys)],
         "band": [{"median": 0.5, "q1": 0.4, "q3": 0.6}]},
        labels=labels,
    )
    line_colors = {trace["name"]: trace["line"]["color"] for trace in durations["data"] if trace.get("name") in bar_colors}
    cost = charts.cost_figure([{"label": labels[key], "key": key, "cost": 1.0 + index, "overall": 0.3,
                                "published": False} for index, key in enumerate(keys)])
    cost_trace = traces_with_points(cost)[0]
    marker_colors = dict(zip(cost_trace["customdata"], cost_trace["marker"]["color"]))
    assert bar_colors == line_colors == marker_colors
    assert all(color == figures.model_color(key) for key, color in zip(keys, bar_colors.values()))


def test_a_models_colour_does_not_depend_on_the_process():
    script = "from leaderboard.figures import model_color; print(model_color('run-42'), model_color('published-x'))"
    outputs = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                       cwd=settings.BASE_DIR, env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}).stdout
        for seed in ("1", "2")
    }
    assert outputs == {f"{figures.model_color('run-42')} {figures.model_color('published-x')}\n"}


def test_model_colours_come_from_the_palette_and_differ_between_models():
    colors = {figures.model_color(f"run-{index}") for index in range(200)}
    assert colors == set(figures.PALETTE)


# ── windowed features and the step plots ─────────────────────────────────────────────────────


def windowed_content(features):
    windows = [{"t_start": start, "t_end": start + 2.0, **{feature: 0.1 for feature in features}}
               for start in (0.0, 2.0, 4.0)]
    return {"channels": [{"channel": "EEG1", "windows": windows}], "features_computed": sorted(features)}


def y_titles(figure):
    axes = sorted((key for key in figure["layout"] if key.startswith("yaxis")), key=lambda key: int(key[5:] or 1))
    return [figure["layout"][key]["title"]["text"] for key in axes]


def test_feature_plot_rows_go_from_delta_to_gamma():
    figure = episode_charts.windowed_features_figure(windowed_content([f"{band}_relative" for band in BANDS] + ["rms_uv"]))
    titles = y_titles(figure)
    assert titles[0] == "RMS<br>(µV)"
    assert [title.split()[0] for title in titles[1:]] == BANDS


def test_plotted_features_keep_unknown_names_last():
    assert plotted_features(["gamma_power", "new_feature", "delta_power"]) == ["delta_power", "gamma_power",
                                                                               "new_feature"]


@pytest.mark.parametrize(("feature", "title"), [
    ("line_length_uv_s", "line length (µV/s)"),
    ("rms_uv", "RMS (µV)"),
    ("peak_to_peak_uv", "peak-to-peak (µV)"),
    ("theta_power", "theta power (µV²)"),
    ("sigma_relative", "sigma relative power (unitless)"),
    ("zero_crossing_rate_hz", "zero-crossing rate (Hz)"),
    ("kurtosis", "kurtosis (unitless)"),
    ("theta_alpha_ratio", "theta/alpha ratio (unitless)"),
])
def test_feature_axes_name_their_unit(feature, title):
    assert feature_title(feature) == title
    figure = episode_charts.windowed_features_figure(windowed_content([feature]))
    assert y_titles(figure) == [title.replace(" (", "<br>(")]


def test_each_signal_row_is_titled_and_hovered_in_its_channels_unit():
    figure = episode_charts.signal_figure([
        {"channel": "EEG Fpz-Cz", "unit": "µV", "times": [0.0, 1.0], "values": [12.5, -3.0]},
        {"channel": "Temp rectal", "unit": "DegC", "times": [0.0, 1.0], "values": [37.02, 37.04]},
        {"channel": "Event marker", "unit": "", "times": [0.0, 1.0], "values": [886.0, 886.0]},
    ])
    assert y_titles(figure) == ["EEG Fpz-Cz<br>(µV)", "Temp rectal<br>(DegC)", "Event marker<br>(no unit)"]
    hovers = [trace["hovertemplate"] for trace in figure["data"]]
    assert hovers == [
        "EEG Fpz-Cz: %{y:.5~g} µV at %{x:.2f} s<extra></extra>",
        "Temp rectal: %{y:.5~g} DegC at %{x:.2f} s<extra></extra>",
        "Event marker: %{y:.5~g} at %{x:.2f} s<extra></extra>",
    ]
    # Each row on an axis of its own, which plotly ranges on that row's values alone.
    assert [trace["yaxis"] for trace in figure["data"]] == ["y", "y2", "y3"]
    assert not any("range" in figure["layout"][key] for key in ("yaxis", "yaxis2", "yaxis3"))


def test_signal_and_feature_plots_of_a_step_keep_the_same_side_margins():
    signal = episode_charts.signal_figure([
        {"channel": "EEG1", "unit": "µV", "times": [0.0, 6.0], "values": [1.0, -1.0]},
        {"channel": "EEG2", "unit": "µV", "times": [0.0, 6.0], "values": [2.0, -2.0]},
    ])
    features = episode_charts.windowed_features_figure(windowed_content(["rms_uv", "delta_power"]))
    for side in ("l", "r"):
        assert signal["layout"]["margin"][side] == features["layout"]["margin"][side] == episode_charts.STEP_PLOT_MARGIN[side]
    # automargin would move the plot area of one figure and not the other
    for figure in (signal, features):
        assert not any(value.get("automargin") for key, value in figure["layout"].items()
                       if key.startswith(("xaxis", "yaxis")))


# ── the board a page opens on ────────────────────────────────────────────────────────────────


@pytest.fixture
def paper_board(bench):
    """The paper's board, with its 29 published rows and no run, beside the bench board with two runs."""
    import_published()
    return bench


@pytest.mark.parametrize("url", [reverse("leaderboard:analysis"), reverse("leaderboard:task", args=["T2"])])
def test_pages_open_on_the_board_with_runs_when_the_papers_has_none(client, paper_board, url):
    response = client.get(url)
    assert response.context["suite"] == paper_board.suite.name
    assert response.context["boards"][0].name == PAPER_BOARD  # still listed first in the picker


@pytest.mark.parametrize("url", [reverse("leaderboard:analysis"), reverse("leaderboard:task", args=["T2"])])
def test_a_chosen_board_is_kept(client, paper_board, url):
    assert client.get(url, {"suite": PAPER_BOARD}).context["suite"] == PAPER_BOARD


def test_pages_open_on_the_papers_board_when_no_board_has_runs(client, paper_board):
    Run.objects.all().delete()
    assert client.get(reverse("leaderboard:analysis")).context["suite"] == PAPER_BOARD


# ── the analysis page ────────────────────────────────────────────────────────────────────────


def test_analysis_names_unpriced_runs_under_the_cost_chart(client, bench):
    ModelSpec.objects.filter(name="Beta-2").update(input_price_per_mtok=None, output_price_per_mtok=None)
    response = client.get(reverse("leaderboard:analysis"), {"suite": bench.suite.name})
    cost = response.context["figures"]["cost"]
    assert [label for trace in cost["data"] for label in trace.get("customdata", [])] == ["Alpha-1"]
    assert cost["note"] == "Not on the log axis: Beta-2 (unpriced)."
    assert 'data-figure-note="analysis-cost"' in response.content.decode()


def test_analysis_prints_an_empty_state_instead_of_a_chart(client, bench):
    ModelSpec.objects.update(parameters_b=None)
    html = client.get(reverse("leaderboard:analysis"), {"suite": bench.suite.name}).content.decode()
    assert '<p class="chart-empty" data-figure="analysis-scale" data-empty>' in html
    assert 'id="analysis-scale"' not in html  # no figure JSON: nothing for plotly to draw empty axes from
