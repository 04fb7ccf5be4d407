"""The site's charts as plotly figure dicts (``{"data": [...], "layout": {...}}``), built from plain data.

Pages embed a figure with ``json_script`` and ``static/js/charts.js`` draws it with the plotly.js
of the plotly package, so every chart works offline. Each builder takes what its selector gives
(lists and dicts of numbers and names) and nothing from the database, so it is testable alone.
Figures follow the paper's: box plots with random baselines (Fig. 5), cost against Overall with
the Pareto frontier (Fig. 6), parameters against Overall (Fig. 1), tool use (Fig. 4), miss against
over-alarm rate (Fig. 7a), macro-F1 by duration (Fig. 7d), the SNR dose-response (Fig. 8), and an
episode's outcome: seizure intervals (Fig. 9) and hypnograms (Fig. 10).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

PALETTE = (
    "#2456a6", "#d1495b", "#2f8f8a", "#edae49", "#6b3fa0", "#66a182",
    "#8d6a9f", "#c8553d", "#4f6d7a", "#a3a847",
)  # fmt: skip
PUBLISHED_COLOR = "#9a7b3c"
RUN_COLOR = "#2456a6"
MUTED = "#8a94a3"
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", "size": 12, "color": "#1d2430"}

#: AASM stages from the top of a hypnogram down, as sleep is usually drawn.
HYPNOGRAM_STAGES = ("W", "REM", "N1", "N2", "N3")
EPOCH_SEC = 30.0


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def base_layout(*, height: int = 360, **layout) -> dict:
    """The layout every chart shares (fonts, margins, white background), updated with ``layout``."""
    return {
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 36, "b": 50},
        "font": FONT,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        **layout,
    }


def axis(title: str = "", *, title_size: int | None = None, **options) -> dict:
    """An axis with light grid lines; ``title_size`` in px for a smaller title."""
    heading = {"text": title, **({"font": {"size": title_size}} if title_size else {})}
    return {"title": heading, "gridcolor": "#e6e9ee", "zerolinecolor": "#c9cfd8", **options}


def empty_figure(message: str, *, height: int = 220) -> dict:
    """A blank chart that says why there is nothing to draw."""
    return {
        "data": [],
        "layout": base_layout(
            height=height,
            xaxis={"visible": False},
            yaxis={"visible": False},
            annotations=[{"text": message, "showarrow": False, "font": {"size": 14, "color": MUTED}}],
        ),
    }


# ── leaderboard and analysis ─────────────────────────────────────────────────────────────────


def overall_figure(rows: Sequence[Mapping]) -> dict:
    """Overall with its 95 % interval per model, best at the top.

    ``rows``: ``{"label", "overall", "ci_low", "ci_high", "published"}`` in rank order.
    """
    rows = [row for row in rows if row.get("overall") is not None]
    if not rows:
        return empty_figure("No model has an Overall score on this board yet.")
    rows = list(reversed(rows))
    data = []
    for published, name in ((False, "runs on this site"), (True, "published in the paper")):
        chosen = [row for row in rows if bool(row.get("published")) == published]
        if not chosen:
            continue
        has_ci = [row.get("ci_low") is not None and row.get("ci_high") is not None for row in chosen]
        data.append({
            "type": "scatter",
            "mode": "markers",
            "name": name,
            "y": [row["label"] for row in chosen],
            "x": [row["overall"] for row in chosen],
            "marker": {"color": PUBLISHED_COLOR if published else RUN_COLOR, "size": 9,
                       "symbol": "diamond" if published else "circle"},
            "error_x": {
                "type": "data",
                "symmetric": False,
                "array": [row["ci_high"] - row["overall"] if ok else 0 for row, ok in zip(chosen, has_ci)],
                "arrayminus": [row["overall"] - row["ci_low"] if ok else 0 for row, ok in zip(chosen, has_ci)],
                "color": MUTED,
                "thickness": 1.5,
            },
            "hovertemplate": "%{y}: %{x:.3f}<extra></extra>",
        })
    return {
        "data": data,
        "layout": base_layout(
            height=max(240, 90 + 17 * len(rows)),
            margin={"l": 170, "r": 20, "t": 40, "b": 50},
            xaxis=axis("Overall (95 % bootstrap interval)", range=[0, 1]),
            yaxis=axis("", categoryorder="array", categoryarray=[row["label"] for row in rows], automargin=True),
        ),
    }


def box_plot_figure(
    scores: Mapping[str, Sequence[Mapping]],
    *,
    baselines: Mapping[str, float | None] | None = None,
    metric_names: Mapping[str, str] | None = None,
) -> dict:
    """Per-task score distributions across models, with uniform-random baselines (Fig. 5).

    ``scores``: task code → ``[{"label", "score"}]``; ``baselines``: task code → score or None.
    The best model of each task is labelled.
    """
    tasks = [task for task, rows in scores.items() if any(row.get("score") is not None for row in rows)]
    if not tasks:
        return empty_figure("No scores yet.")
    metric_names = metric_names or {}
    data, shapes, annotations = [], [], []
    for position, task in enumerate(tasks):
        rows = [row for row in scores[task] if row.get("score") is not None]
        name = f"{task}<br>{metric_names.get(task, '')}".rstrip("<br>")
        data.append({
            "type": "box",
            "name": name,
            "x": [name] * len(rows),
            "y": [row["score"] for row in rows],
            "text": [row["label"] for row in rows],
            "boxpoints": "all",
            "jitter": 0.45,
            "pointpos": 0,
            "marker": {"color": color(position), "size": 6, "opacity": 0.75},
            "line": {"color": color(position)},
            "fillcolor": "rgba(0,0,0,0.03)",
            "hovertemplate": "%{text}: %{y:.3f}<extra></extra>",
            "showlegend": False,
        })
        best = max(rows, key=lambda row: row["score"])
        annotations.append({
            "x": name, "y": best["score"], "text": best["label"], "showarrow": True, "arrowhead": 0,
            "ax": 30, "ay": -18, "font": {"size": 10},
        })
        baseline = (baselines or {}).get(task)
        if baseline is not None:
            shapes.append({
                "type": "line", "xref": "x", "yref": "y", "x0": position - 0.4, "x1": position + 0.4,
                "y0": baseline, "y1": baseline, "line": {"dash": "dash", "color": "#444", "width": 1.5},
            })
    return {
        "data": data,
        "layout": base_layout(
            height=420,
            xaxis=axis("", categoryorder="array", categoryarray=[trace["name"] for trace in data]),
            yaxis=axis("Primary score", range=[-0.02, 1.02]),
            shapes=shapes,
            annotations=annotations,
        ),
    }


def _points_by_source(points: Sequence[Mapping], *, x: str, hover: str) -> list[dict]:
    data = []
    for published, name in ((False, "runs on this site"), (True, "published in the paper")):
        chosen = [point for point in points if bool(point.get("published")) == published]
        if not chosen:
            continue
        data.append({
            "type": "scatter",
            "mode": "markers+text",
            "name": name,
            "x": [point[x] for point in chosen],
            "y": [point["overall"] for point in chosen],
            "text": [point["label"] for point in chosen],
            "textposition": "top center",
            "textfont": {"size": 9, "color": "#4a5563"},
            "marker": {"color": PUBLISHED_COLOR if published else RUN_COLOR, "size": 9,
                       "symbol": "diamond" if published else "circle"},
            "hovertemplate": hover,
        })
    return data


def cost_figure(points: Sequence[Mapping], *, cost_label: str = "Estimated cost (USD)") -> dict:
    """Cost against Overall with the Pareto frontier dashed (Fig. 6).

    ``points``: ``{"label", "cost", "overall", "frontier", "published"}``; unpriced points are left out.
    """
    points = [point for point in points if point.get("cost") is not None and point.get("overall") is not None]
    if not points:
        return empty_figure("No priced model with an Overall score yet.")
    frontier = sorted((point for point in points if point.get("frontier")), key=lambda point: point["cost"])
    data = _points_by_source(points, x="cost", hover="%{text}<br>$%{x:,.2f} · Overall %{y:.3f}<extra></extra>")
    if frontier:
        data.append({
            "type": "scatter",
            "mode": "lines",
            "name": "Pareto frontier",
            "x": [point["cost"] for point in frontier],
            "y": [point["overall"] for point in frontier],
            "line": {"dash": "dash", "color": "#444", "width": 1.5},
            "hoverinfo": "skip",
        })
    positive = all(point["cost"] > 0 for point in points)
    return {
        "data": data,
        "layout": base_layout(
            height=420,
            xaxis=axis(cost_label, type="log" if positive else "linear"),
            yaxis=axis("Overall"),
        ),
    }


def parameters_figure(points: Sequence[Mapping]) -> dict:
    """Parameters (billions, log scale) against Overall (Fig. 1); models of unknown size in their own band.

    ``points``: ``{"label", "parameters_b", "overall", "published"}``.
    """
    points = [point for point in points if point.get("overall") is not None]
    if not points:
        return empty_figure("No model with an Overall score yet.")
    known = [point for point in points if point.get("parameters_b")]
    unknown = [point for point in points if not point.get("parameters_b")]
    data = _points_by_source(known, x="parameters_b", hover="%{text}<br>%{x}B · Overall %{y:.3f}<extra></extra>")
    layout = base_layout(height=420, xaxis=axis("Parameters (billions, log scale)", type="log", domain=[0, 0.82]),
                         yaxis=axis("Overall"))
    if unknown:
        data.append({
            "type": "scatter",
            "mode": "markers+text",
            "name": "size not reported",
            "xaxis": "x2",
            "x": [0] * len(unknown),
            "y": [point["overall"] for point in unknown],
            "text": [point["label"] for point in unknown],
            "textposition": "middle right",
            "textfont": {"size": 9, "color": "#4a5563"},
            "marker": {"color": MUTED, "size": 9, "symbol": "square"},
            "hovertemplate": "%{text}: Overall %{y:.3f}<extra></extra>",
        })
        layout["xaxis2"] = axis("not reported", domain=[0.86, 1], showticklabels=False, showgrid=False, range=[-0.5, 6])
    return {"data": data, "layout": layout}


def tool_use_figure(rates: Mapping[str, Mapping[str, float]], *, categories: Sequence[str]) -> dict:
    """Mean tool-use rate by tool category and task, as a heatmap (Fig. 4a).

    ``rates``: task code → category → share of the task's tool calls, in [0, 1].
    """
    tasks = [task for task in rates if rates[task]]
    if not tasks:
        return empty_figure("No tool calls recorded yet.")
    z = [[rates[task].get(category, 0.0) for task in tasks] for category in categories]
    return {
        "data": [{
            "type": "heatmap",
            "x": tasks,
            "y": list(categories),
            "z": z,
            "zmin": 0,
            "zmax": max(0.01, max(max(row) for row in z)),
            "colorscale": [[0, "#f4f6f9"], [1, "#2456a6"]],
            "text": [[f"{value:.0%}" for value in row] for row in z],
            "texttemplate": "%{text}",
            "hovertemplate": "%{y} on %{x}: %{z:.1%}<extra></extra>",
            "colorbar": {"title": {"text": "share"}, "tickformat": ".0%"},
        }],
        "layout": base_layout(height=360, margin={"l": 200, "r": 20, "t": 20, "b": 40},
                              yaxis=axis("", autorange="reversed"), xaxis=axis("")),
    }


def grouped_bars_figure(
    groups: Mapping[str, Mapping[str, float | None]], *, y_title: str, height: int = 340
) -> dict:
    """Bars of a few series over the same categories, e.g. Top-5 vs Bottom-5 median tool calls (Fig. 4b).

    ``groups``: series name → category → value.
    """
    if not groups or not any(values for values in groups.values()):
        return empty_figure("Nothing to compare yet.")
    categories = list(dict.fromkeys(category for values in groups.values() for category in values))
    data = [
        {
            "type": "bar",
            "name": name,
            "x": categories,
            "y": [values.get(category) for category in categories],
            "marker": {"color": color(index)},
            "hovertemplate": f"{name}, %{{x}}: %{{y}}<extra></extra>",
        }
        for index, (name, values) in enumerate(groups.items())
    ]
    return {"data": data, "layout": base_layout(height=height, barmode="group", yaxis=axis(y_title), xaxis=axis(""))}


def tokens_figure(rows: Sequence[Mapping]) -> dict:
    """Prompt and completion tokens per model, most tokens first (Table 5).

    ``rows``: ``{"label", "prompt_tokens", "completion_tokens"}``.
    """
    rows = [row for row in rows if (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0) > 0]
    if not rows:
        return empty_figure("No token usage recorded yet.")
    rows = sorted(rows, key=lambda row: (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0))
    labels = [row["label"] for row in rows]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": labels,
            "x": [(row.get(key) or 0) / 1e6 for row in rows],
            "marker": {"color": color(index)},
            "hovertemplate": f"%{{y}}: %{{x:.2f}}M {name}<extra></extra>",
        }
        for index, (key, name) in enumerate((("prompt_tokens", "prompt"), ("completion_tokens", "completion")))
    ]
    return {
        "data": data,
        "layout": base_layout(
            height=max(260, 60 + 20 * len(rows)),
            barmode="stack",
            margin={"l": 170, "r": 20, "t": 20, "b": 60},
            xaxis=axis("Tokens (millions)"),
            yaxis=axis("", automargin=True),
        ),
    }


def task_scores_figure(rows: Sequence[Mapping], *, metric: str) -> dict:
    """One task's primary score per model, as sorted bars (the distribution across models).

    ``rows``: ``{"label", "score", "published"}``.
    """
    rows = sorted((row for row in rows if row.get("score") is not None), key=lambda row: row["score"])
    if not rows:
        return empty_figure("No scores yet.")
    return {
        "data": [{
            "type": "bar",
            "orientation": "h",
            "y": [row["label"] for row in rows],
            "x": [row["score"] for row in rows],
            "marker": {"color": [PUBLISHED_COLOR if row.get("published") else RUN_COLOR for row in rows]},
            "hovertemplate": "%{y}: %{x:.3f}<extra></extra>",
        }],
        "layout": base_layout(
            height=max(240, 60 + 20 * len(rows)),
            margin={"l": 170, "r": 20, "t": 20, "b": 50},
            xaxis=axis(metric, range=[0, 1]),
            yaxis=axis("", automargin=True),
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
        layout[f"xaxis{suffix}"] = axis("SNR (the artifact grows to the right)",
                                        domain=[left + 0.16 * width, left + 0.94 * width], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = axis("Per-class accuracy" if panel == 0 else "", range=[-0.02, 1.02],
                                        anchor=f"x{clean_axis}")
        band = snr["band"][label]
        data.extend(_band_traces(ticks, [band.get(level) for level in levels], axes=axes, show_legend=panel == 0))
        for index, model in enumerate(models[:highlight]):
            name = labels[model["key"]]
            data.append({"type": "scatter", "mode": "lines+markers", "x": ticks,
                         "y": [model["accuracy"][label].get(level) for level in levels],
                         "name": name, "legendgroup": name, "showlegend": panel == 0,
                         "line": {"color": color(index + 1)}, **axes})
            if model.get("clean_accuracy") is not None:
                data.append({"type": "scatter", "mode": "markers", "x": ["clean"], "y": [model["clean_accuracy"]],
                             "name": name, "legendgroup": name, "showlegend": False,
                             "marker": {"color": color(index + 1), "size": 9},
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

    ``points``: ``{"label", "miss_rate", "over_alarm_rate", "published"}``.
    """
    points = [point for point in points if point.get("miss_rate") is not None and point.get("over_alarm_rate") is not None]
    if not points:
        return empty_figure("No T5 results with both seizure and seizure-free records yet.")
    return {
        "data": [{
            "type": "scatter",
            "mode": "markers+text",
            "x": [point["over_alarm_rate"] for point in points],
            "y": [point["miss_rate"] for point in points],
            "text": [point["label"] for point in points],
            "textposition": "top center",
            "textfont": {"size": 9, "color": "#4a5563"},
            "marker": {"size": 9, "color": [PUBLISHED_COLOR if point.get("published") else RUN_COLOR
                                            for point in points]},
            "hovertemplate": "%{text}<br>over-alarm %{x:.1%} · miss %{y:.1%}<extra></extra>",
        }],
        "layout": base_layout(
            height=420,
            xaxis=axis("Over-alarm rate on seizure-free records", range=[-0.03, 1.03], tickformat=".0%"),
            yaxis=axis("Event-miss rate on seizure records", range=[-0.03, 1.03], tickformat=".0%"),
        ),
    }


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
         "line": {"width": 1, "color": color(index)}, "marker": {"size": 4}, "opacity": 0.6,
         "connectgaps": True, "hovertemplate": f"{labels[model['key']]}, %{{x}}: %{{y:.3f}}<extra></extra>"}
        for index, model in enumerate(models)
    ]
    data.extend(_band_traces(bins, duration_bins["band"], axes={}, show_legend=True))
    return {
        "data": data,
        "layout": base_layout(height=420, xaxis=axis("Recording duration"), yaxis=axis("Macro-F1", range=[0, 1])),
    }


# ── an episode ───────────────────────────────────────────────────────────────────────────────


def signal_figure(traces: Sequence[Mapping], *, title: str = "") -> dict:
    """The channels a tool call covered, one row per channel on a shared time axis.

    ``traces``: ``{"channel", "times" (s), "values" (µV)}``, already decimated.
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
        margin={"l": 70, "r": 15, "t": 34, "b": 40},
    )
    for row, trace in enumerate(traces):
        suffix = "" if row == 0 else str(row + 1)
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
            "hovertemplate": f"{trace['channel']}: %{{y:.1f}} µV at %{{x:.2f}} s<extra></extra>",
        })
        top = 1 - row * height
        layout[f"yaxis{suffix}"] = axis(
            f"{trace['channel']}<br>µV", title_size=10, domain=[max(top - height + gap, 0), top], anchor="x",
            zeroline=False, tickfont={"size": 9}, automargin=True,
        )
    layout["xaxis"] = axis("Time in the record (s)", anchor=f"y{n_rows if n_rows > 1 else ''}")
    return {"data": data, "layout": layout}


def windowed_features_figure(content: Mapping) -> dict | None:
    """The features ``compute_windowed_features`` returned, as time series: one row per feature.

    ``content``: the tool's result (``{"channels": [{"channel", "windows": [{feature…, "t_start",
    "t_end"}]}], "features_computed": [...]}``); None when it holds no windows.
    """
    channels = [channel for channel in content.get("channels") or [] if channel.get("windows")]
    if not channels:
        return None
    features = list(content.get("features_computed") or [])
    if not features:
        features = [key for key in channels[0]["windows"][0] if key not in ("t_start", "t_end")]
    n_rows = len(features)
    height = 1 / n_rows
    data, layout = [], base_layout(
        height=80 + 110 * n_rows,
        margin={"l": 70, "r": 15, "t": 30, "b": 40},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom"},
    )
    for row, feature in enumerate(features):
        suffix = "" if row == 0 else str(row + 1)
        top = 1 - row * height
        layout[f"yaxis{suffix}"] = axis(feature.replace("_", " "), title_size=10, anchor="x", automargin=True,
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
                "hovertemplate": f"{channel['channel']} {feature}: %{{y}} at %{{x:.1f}} s<extra></extra>",
            })
    layout["xaxis"] = axis("Window centre (s)", anchor=f"y{n_rows if n_rows > 1 else ''}")
    return {"data": data, "layout": layout}


def seizure_intervals_figure(
    predicted: Sequence[tuple[float, float]],
    *,
    duration_sec: float,
    reference: Sequence[tuple[float, float]] | None = None,
) -> dict:
    """Reference and predicted seizure intervals on the record's timeline (Fig. 9).

    Intervals in seconds; ``reference`` None when references are not shown.
    """
    rows = [("predicted", predicted, "#d1495b")]
    if reference is not None:
        rows.insert(0, ("reference", reference, "#1d2430"))
    data = []
    for name, intervals, fill in rows:
        data.append({
            "type": "bar",
            "orientation": "h",
            "name": name,
            "y": [name] * len(intervals),
            "base": [onset for onset, _ in intervals],
            "x": [offset - onset for onset, offset in intervals],
            "marker": {"color": fill},
            "width": 0.5,
            "customdata": [[onset, offset] for onset, offset in intervals],
            "hovertemplate": f"{name}: %{{customdata[0]:.1f}}–%{{customdata[1]:.1f}} s<extra></extra>",
        })
    names = [name for name, *_ in rows]
    return {
        "data": data,
        "layout": base_layout(
            height=90 + 55 * len(rows),
            showlegend=False,
            barmode="overlay",
            margin={"l": 80, "r": 20, "t": 20, "b": 45},
            xaxis=axis("Time in the record (s)", range=[0, max(duration_sec, 1.0)]),
            yaxis=axis("", categoryorder="array", categoryarray=list(reversed(names)),
                       range=[-0.6, len(names) - 0.4]),
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
