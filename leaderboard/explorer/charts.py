"""An episode's charts: the signal and windowed features a tool call looked at, and the outcome.

Plotly figure dicts built from plain data, as in ``leaderboard.analysis.charts`` (whose layout helpers they
share): a step's signal plot and feature plot, drawn one above the other with their time axes
aligned, and the episode's outcome against its reference, seizure intervals (Fig. 9) or a
hypnogram (Fig. 10); ``prediction_figure`` draws an answer from its instance (the explorer's
outcome, the play page's preview).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from benchmark.scoring.hypnogram import align, expand_rle
from benchmark.scoring.seizure import parse_raw_events
from leaderboard.explorer.signal import feature_title, plotted_features
from leaderboard.figures import MUTED, axis, base_layout, color, empty_figure

#: AASM stages from the top of a hypnogram down, as sleep is usually drawn.
HYPNOGRAM_STAGES = ("W", "REM", "N1", "N2", "N3")
EPOCH_SEC = 30.0

#: The margins (px) of a step's signal plot and feature plot: fixed, never grown by automargin, so that
#: the two plots' time axes line up one above the other (``episode.js`` gives both the call's time range).
STEP_PLOT_MARGIN = {"l": 84, "r": 16}


def signal_figure(traces: Sequence[Mapping], *, title: str = "") -> dict:
    """The channels a tool call covered, one row per channel on a shared time axis.

    ``traces``: ``{"channel", "unit", "times" (s), "values" (in ``unit``)}``, already decimated. Each row
    has its own axis, ranged on its own values and titled with its unit ("no unit" where the file gives
    none); a hover gives five significant digits, enough for a temperature's hundredths of a degree.
    """
    if not traces:
        return empty_figure("No channel of this call exists in the recording.")
    n_rows = len(traces)
    gap = 0.02
    height = 1 / n_rows
    data, layout = [], base_layout(
        height=90 + 85 * n_rows,
        title={"text": title, "font": {"size": 12}},
        showlegend=False,
        margin={**STEP_PLOT_MARGIN, "t": 34, "b": 40},
    )
    for row, trace in enumerate(traces):
        suffix = "" if row == 0 else str(row + 1)
        unit = f" {trace['unit']}" if trace["unit"] else ""
        data.append({
            # SVG, not WebGL: at most 2,000 points a trace, and it draws on machines without a GPU.
            "type": "scatter",
            "mode": "lines",
            "x": trace["times"],
            "y": trace["values"],
            "name": trace["channel"],
            "line": {"width": 1, "color": color(row)},
            "xaxis": "x",
            "yaxis": f"y{suffix}",
            "hovertemplate": f"{trace['channel']}: %{{y:.5~g}}{unit} at %{{x:.2f}} s<extra></extra>",
        })
        top = 1 - row * height
        layout[f"yaxis{suffix}"] = axis(
            f"{trace['channel']}<br>({trace['unit'] or 'no unit'})", title_size=10,
            domain=[max(top - height + gap, 0), top], anchor="x", zeroline=False, tickfont={"size": 9},
        )
    layout["xaxis"] = axis("Time in the record (s)", anchor=f"y{n_rows if n_rows > 1 else ''}")
    return {"data": data, "layout": layout}


def windowed_features_figure(content: Mapping) -> dict | None:
    """The features ``compute_windowed_features`` returned, as time series: one row per feature.

    ``content``: the tool's result (``{"channels": [{"channel", "windows": [{feature…, "t_start",
    "t_end"}]}], "features_computed": [...]}``); None when it holds no windows. Rows follow the
    tool's table order (bands from delta to gamma) and name each feature with its unit.
    """
    channels = [channel for channel in content.get("channels") or [] if channel.get("windows")]
    if not channels:
        return None
    features = list(content.get("features_computed") or [])
    if not features:
        features = [key for key in channels[0]["windows"][0] if key not in ("t_start", "t_end")]
    features = plotted_features(features)
    n_rows = len(features)
    height = 1 / n_rows
    # The channel legend sits above the rows, about eight names to a line: room for it on top.
    top = 10 + 24 * math.ceil(len(channels) / 8)
    data, layout = [], base_layout(
        height=40 + top + 130 * n_rows,
        margin={**STEP_PLOT_MARGIN, "t": top, "b": 40},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
    )
    for row, feature in enumerate(features):
        suffix = "" if row == 0 else str(row + 1)
        top = 1 - row * height
        title = feature_title(feature)
        layout[f"yaxis{suffix}"] = axis(title.replace(" (", "<br>("), title_size=10, anchor="x",
                                        domain=[max(top - height + 0.03, 0), top], tickfont={"size": 9})
        for index, channel in enumerate(channels):
            windows = channel["windows"]
            data.append({
                "type": "scatter",
                "mode": "lines+markers" if len(windows) < 60 else "lines",
                "x": [(window["t_start"] + window["t_end"]) / 2 for window in windows],
                "y": [window.get(feature) for window in windows],
                "name": channel["channel"],
                "legendgroup": channel["channel"],
                "showlegend": row == 0,
                "marker": {"size": 4},
                "line": {"width": 1.2, "color": color(index)},
                "xaxis": "x",
                "yaxis": f"y{suffix}",
                "hovertemplate": f"{channel['channel']} {title}: %{{y}} at %{{x:.1f}} s<extra></extra>",
            })
    layout["xaxis"] = axis("Window centre (s)", anchor=f"y{n_rows if n_rows > 1 else ''}")
    return {"data": data, "layout": layout}


def seizure_intervals_figure(
    predicted: Sequence[tuple[float, float]],
    *,
    duration_sec: float,
    reference: Sequence[tuple[float, float]] | None = None,
) -> dict:
    """Reference and predicted seizure intervals on the record's timeline, one lane each (Fig. 9).

    Intervals in seconds; ``reference`` None when references are not shown. Every lane is drawn,
    and one without an interval says so ("reference: no seizure", "predicted: none"), so that a
    seizure-free record answered with silence is a chart, not empty axes.
    """
    lanes = [("predicted", predicted, "#d1495b", "none")]
    if reference is not None:
        lanes.insert(0, ("reference", reference, "#1d2430", "no seizure"))
    end = max(duration_sec, 1.0)
    data, shapes, annotations = [], [], []
    for row, (name, intervals, fill, nothing) in enumerate(lanes):
        position = len(lanes) - 1 - row  # the first lane on top
        shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": 0, "x1": end,
                       "y0": position - 0.25, "y1": position + 0.25, "fillcolor": "#f1f3f6",
                       "line": {"width": 0}, "layer": "below"})
        if not intervals:
            annotations.append({"text": f"{name}: {nothing}", "x": end / 2, "y": position, "xref": "x", "yref": "y",
                                "showarrow": False, "font": {"size": 12, "color": MUTED}})
            continue
        data.append({
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": [position] * len(intervals),
            "base": [onset for onset, _ in intervals],
            "x": [offset - onset for onset, offset in intervals],
            "marker": {"color": fill},
            "width": 0.5,
            "customdata": [[onset, offset] for onset, offset in intervals],
            "hovertemplate": f"{name}: %{{customdata[0]:.1f}}–%{{customdata[1]:.1f}} s<extra></extra>",
        })
    return {
        "data": data,
        "layout": base_layout(
            height=90 + 55 * len(lanes),
            showlegend=False,
            barmode="overlay",
            margin={"l": 80, "r": 20, "t": 20, "b": 45},
            xaxis=axis("Time in the record (s)", range=[0, end]),
            yaxis=axis("", tickvals=list(range(len(lanes))), ticktext=[name for name, *_ in reversed(lanes)],
                       range=[-0.6, len(lanes) - 0.4], showgrid=False, zeroline=False, fixedrange=True),
            shapes=shapes,
            annotations=annotations,
        ),
    }


def _stage_steps(labels: Sequence[str], epoch_sec: float) -> tuple[list[float], list[str]]:
    """A step line through per-epoch labels, two points per run of equal stages, time in hours."""
    x, y = [], []
    start = 0
    for index in range(1, len(labels) + 1):
        if index == len(labels) or labels[index] != labels[start]:
            x.extend([start * epoch_sec / 3600, index * epoch_sec / 3600])
            y.extend([labels[start], labels[start]])
            start = index
    return x, y


def hypnogram_figure(
    predicted: Sequence[str], *, reference: Sequence[str] | None = None, epoch_sec: float = EPOCH_SEC
) -> dict:
    """Reference and predicted hypnograms over the night, one row each (Fig. 10).

    Labels are per 30-s epoch, AASM stages; ``reference`` None when references are not shown.
    """
    rows = [("predicted", predicted, "#d1495b")]
    if reference is not None:
        rows.insert(0, ("reference", reference, "#1d2430"))
    height = 1 / len(rows)
    data, layout = [], base_layout(height=120 + 170 * len(rows), showlegend=False,
                                   margin={"l": 90, "r": 20, "t": 20, "b": 45})
    annotations = []
    for row, (name, labels, line) in enumerate(rows):
        suffix = "" if row == 0 else str(row + 1)
        x, y = _stage_steps(list(labels), epoch_sec)
        data.append({"type": "scatter", "mode": "lines", "x": x, "y": y, "name": name,
                     "line": {"color": line, "width": 1.5}, "xaxis": "x", "yaxis": f"y{suffix}",
                     "hovertemplate": f"{name}: %{{y}} at %{{x:.2f}} h<extra></extra>"})
        top = 1 - row * height
        layout[f"yaxis{suffix}"] = axis("", domain=[top - height + 0.06, top], anchor="x",
                                        categoryorder="array", categoryarray=list(reversed(HYPNOGRAM_STAGES)),
                                        type="category", range=[-0.5, len(HYPNOGRAM_STAGES) - 0.5])
        annotations.append({"text": name, "xref": "paper", "yref": "paper", "x": -0.06, "y": top - height / 2,
                            "xanchor": "right", "showarrow": False, "textangle": -90, "font": {"size": 11}})
    layout["xaxis"] = axis("Time (hours)", anchor=f"y{len(rows) if len(rows) > 1 else ''}")
    layout["annotations"] = annotations
    return {"data": data, "layout": layout}


def prediction_figure(instance, prediction, *, references: bool) -> dict | None:
    """An answer's chart: T5 intervals on the record's timeline, T6 a hypnogram over the night; else None.

    With ``references`` the instance's reference is drawn beside it.
    """
    task = instance.task.code
    prediction = prediction if isinstance(prediction, dict) else {}
    if task == "T5":
        duration = instance.recording_sec or 0.0
        predicted = parse_raw_events(prediction.get("seizure_events"))
        reference = parse_raw_events(instance.reference.get("seizure_events")) if references else None
        return seizure_intervals_figure(predicted, duration_sec=float(duration), reference=reference)
    if task == "T6":
        reference = list(instance.reference.get("epoch_labels_aasm") or [])
        n_epochs = instance.epochs_total or len(reference)
        predicted = expand_rle(prediction.get("hypnogram_rle") or [], int(n_epochs)).labels
        if reference:
            predicted = align(predicted, len(reference))
        return hypnogram_figure(predicted, reference=reference if references else None)
    return None
