"""The task pages' figures, built from plain data as ``leaderboard.analysis.charts``'s are.

Scores with the shortcut audit's line, confusion matrices, the SNR dose-response (Fig. 8), miss
against over-alarm rate (Fig. 7a) and macro-F1 by recording length (Fig. 7d).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderboard.analysis.charts import labelled_scatter, scatter_layout
from leaderboard.figures import (
    axis,
    base_layout,
    empty_figure,
    model_color,
    point_color,
)

# The reference line of the one-feature shortcut audit on a task's scores chart.
AUDIT_LINE_LABEL = "one feature, cross-validated on the answer key"


def task_scores_figure(rows: Sequence[Mapping], *, metric: str, audit_score: float | None = None) -> dict:
    """One task's primary score per model, as sorted bars in the models' colours (the paper's rows hatched).

    ``rows``: ``{"label", "key", "score", "published"}``. ``audit_score``: the one-feature shortcut
    audit's cross-validated score, drawn as a dashed, labelled reference line (not a bar: it is
    no model).
    """
    rows = sorted((row for row in rows if row.get("score") is not None), key=lambda row: row["score"])
    if not rows:
        return empty_figure("No scores yet.")
    reference = {} if audit_score is None else {
        "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": audit_score, "x1": audit_score,
                    "y0": 0, "y1": 1, "line": {"color": "#555", "width": 2, "dash": "dash"}}],
        "annotations": [{"xref": "x", "yref": "paper", "x": audit_score, "y": 1, "yanchor": "bottom",
                         "xanchor": "right" if audit_score > 0.5 else "left", "showarrow": False,
                         "text": f"{AUDIT_LINE_LABEL}: {audit_score:.3f}", "font": {"size": 11, "color": "#555"}}],
    }
    return {
        "data": [{
            "type": "bar",
            "orientation": "h",
            "y": [row["label"] for row in rows],
            "x": [row["score"] for row in rows],
            "customdata": ["published in the paper" if row.get("published") else "run on this site" for row in rows],
            "marker": {"color": [point_color(row) for row in rows],
                       "pattern": {"shape": ["/" if row.get("published") else "" for row in rows]}},
            # A score of 0 draws no bar: its label says 0.000 where the bar would be.
            "texttemplate": "%{x:.3f}",
            "textposition": "outside",
            "cliponaxis": False,
            "hovertemplate": "%{y}: %{x:.3f} (%{customdata})<extra></extra>",
        }],
        "layout": base_layout(
            height=max(240, 60 + 20 * len(rows)),
            margin={"l": 20, "r": 48, "t": 40 if reference else 20, "b": 50},
            xaxis=axis(metric, range=[0, 1]),
            yaxis=axis("", automargin=True),
            **reference,
        ),
    }


def _class_name(label: str) -> str:
    """A class label short enough for an axis: ``ocular_contaminated`` → ``ocular``."""
    return {"__invalid__": "invalid"}.get(label, label.removesuffix("_contaminated"))


def confusion_figure(matrix: Sequence[Sequence[float]], *, classes: Sequence[str], columns: Sequence[str],
                     title: str = "") -> dict:
    """A confusion matrix: references (``classes``) down, answers (``columns``, with ``__invalid__``) across."""
    return {
        "data": [{
            "type": "heatmap",
            "x": [_class_name(label) for label in columns],
            "y": [_class_name(label) for label in classes],
            "z": [list(row) for row in matrix],
            "colorscale": [[0, "#f4f6f9"], [1, "#2456a6"]],
            "texttemplate": "%{z}",
            "hovertemplate": "reference %{y}, answered %{x}: %{z}<extra></extra>",
            "showscale": False,
        }],
        "layout": base_layout(
            height=280,
            title={"text": title, "font": {"size": 13}},
            margin={"l": 70, "r": 10, "t": 40, "b": 50},
            xaxis=axis("answered", automargin=True),
            yaxis=axis("reference", autorange="reversed", automargin=True),
        ),
    }


def _band_traces(x: Sequence, band: Sequence[Mapping | None], *, axes: dict, show_legend: bool) -> list:
    """The interquartile band and the median line across models; ``band`` has ``{"median", "q1", "q3"}``
    or None per x."""
    def values(key):
        return [entry[key] if entry else None for entry in band]

    return [
        {"type": "scatter", "mode": "lines", "x": list(x), "y": values("q3"), "line": {"width": 0},
         "hoverinfo": "skip", "showlegend": False, **axes},
        {"type": "scatter", "mode": "lines", "x": list(x), "y": values("q1"), "line": {"width": 0}, "fill": "tonexty",
         "fillcolor": "rgba(36,86,166,0.12)", "name": "interquartile range across models",
         "showlegend": show_legend, "hoverinfo": "skip", **axes},
        {"type": "scatter", "mode": "lines", "x": list(x), "y": values("median"), "name": "median across models",
         "line": {"color": "#1d2430", "width": 3}, "showlegend": show_legend, **axes},
    ]


ARTIFACT_NAMES = {"ocular_contaminated": "Ocular (EOG) artifacts", "muscle_contaminated": "Muscle (EMG) artifacts"}


def snr_figure(snr: Mapping, *, labels: Mapping[str, str], highlight: int = 4) -> dict:
    """T2 per-class accuracy by SNR level, one panel per artifact, with a clean column (Fig. 8).

    ``snr``: ``selectors._t2_snr``'s result: ``{"levels" (dB, +2 down to -7), "classes", "models":
    [{"key", "clean_accuracy", "accuracy": {class: {level: accuracy}}}], "band": {class: {level:
    {"median", "q1", "q3"}}, "clean": …}}``, models best first. The first ``highlight`` models get
    their own line and clean-class marker; the band summarises every model. Dashed: 1/3.
    """
    levels, models = list(snr.get("levels") or []), list(snr.get("models") or [])
    if not levels or not models:
        return empty_figure("No T2 results with SNR levels yet.")
    classes = list(snr["classes"])
    ticks = [f"{level:+g} dB" for level in levels]
    width = 1 / len(classes)
    data, annotations = [], []
    layout = base_layout(height=440, margin={"l": 60, "r": 20, "t": 40, "b": 60},
                         legend={"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"})
    for panel, label in enumerate(classes):
        suffix = "" if panel == 0 else str(panel + 1)
        clean_axis = str(len(classes) + panel + 1)
        axes = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
        left = panel * width
        layout[f"xaxis{clean_axis}"] = axis("", domain=[left + 0.02 * width, left + 0.12 * width],
                                            anchor=f"y{suffix}")
        layout[f"xaxis{suffix}"] = axis("SNR (dB)",
                                        domain=[left + 0.16 * width, left + 0.94 * width], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = axis("Per-class accuracy" if panel == 0 else "", range=[-0.02, 1.02],
                                        anchor=f"x{clean_axis}")
        band = snr["band"][label]
        data.extend(_band_traces(ticks, [band.get(level) for level in levels], axes=axes, show_legend=panel == 0))
        for model in models[:highlight]:
            name = labels[model["key"]]
            data.append({"type": "scatter", "mode": "lines+markers", "x": ticks,
                         "y": [model["accuracy"][label].get(level) for level in levels],
                         "name": name, "legendgroup": name, "showlegend": panel == 0,
                         "line": {"color": model_color(model["key"])}, **axes})
            if model.get("clean_accuracy") is not None:
                data.append({"type": "scatter", "mode": "markers", "x": ["clean"], "y": [model["clean_accuracy"]],
                             "name": name, "legendgroup": name, "showlegend": False,
                             "marker": {"color": model_color(model["key"]), "size": 9},
                             "hovertemplate": f"{name}: clean-class accuracy %{{y:.2f}}<extra></extra>",
                             "xaxis": f"x{clean_axis}", "yaxis": f"y{suffix}"})
        data.append({"type": "scatter", "mode": "lines", "x": [ticks[0], ticks[-1]], "y": [1 / 3, 1 / 3],
                     "line": {"dash": "dash", "color": "#444", "width": 1}, "name": "uniform random (1/3)",
                     "showlegend": panel == 0, "hoverinfo": "skip", **axes})
        annotations.append({"text": ARTIFACT_NAMES.get(label, label), "x": left + 0.55 * width, "y": 1.07,
                            "xref": "paper", "yref": "paper", "showarrow": False, "font": {"size": 13}})
    layout["annotations"] = annotations
    return {"data": data, "layout": layout}


def miss_over_alarm_figure(points: Sequence[Mapping]) -> dict:
    """T5 event-miss rate on seizure records against over-alarm rate on seizure-free ones (Fig. 7a).

    ``points``: ``{"label", "key", "miss_rate", "over_alarm_rate", "published"}``.
    """
    points = [point for point in points if point.get("miss_rate") is not None and point.get("over_alarm_rate") is not None]
    if not points:
        return empty_figure("No T5 results with both seizure and seizure-free records yet.")
    full = [-0.03, 1.03]
    data = labelled_scatter(points, x="over_alarm_rate", y="miss_rate", x_range=full, y_range=full,
                             best_first=lambda point: point["miss_rate"] + point["over_alarm_rate"],
                             hover="%{customdata}<br>over-alarm %{x:.1%} · miss %{y:.1%}<extra></extra>")
    layout = scatter_layout(x_title="Over-alarm rate on seizure-free records",
                             y_title="Event-miss rate on seizure records", x_range=full, y_range=full)
    layout["xaxis"]["tickformat"] = layout["yaxis"]["tickformat"] = ".0%"
    return {"data": data, "layout": layout}


def duration_bins_figure(duration_bins: Mapping, *, labels: Mapping[str, str]) -> dict:
    """T6 macro-F1 per recording-duration bin: a thin line per model, the median and IQR band (Fig. 7d).

    ``duration_bins``: ``selectors._t6_duration_bins``'s result: ``{"bins", "models": [{"key",
    "macro_f1": [mean per bin or None]}], "band": [{"median", "q1", "q3"} or None per bin]}``.
    """
    bins, models = list(duration_bins.get("bins") or []), list(duration_bins.get("models") or [])
    if not bins or not models:
        return empty_figure("No T6 results on Sleep Cassette records yet.")
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": bins, "y": model["macro_f1"], "name": labels[model["key"]],
         "line": {"width": 1, "color": model_color(model["key"])}, "marker": {"size": 4}, "opacity": 0.6,
         "connectgaps": True, "hovertemplate": f"{labels[model['key']]}, %{{x}}: %{{y:.3f}}<extra></extra>"}
        for model in models
    ]
    data.extend(_band_traces(bins, duration_bins["band"], axes={}, show_legend=True))
    return {
        "data": data,
        "layout": base_layout(height=420, xaxis=axis("Recording duration"), yaxis=axis("Macro-F1", range=[0, 1])),
    }
