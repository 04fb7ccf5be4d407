"""The analysis page's charts as plotly figure dicts (``{"data": [...], "layout": {...}}``), built from plain data.

Pages embed a figure with ``json_script`` and ``static/js/charts.js`` draws it with the plotly.js
of the plotly package, so every chart works offline. Each builder takes what its selector gives
(lists and dicts of numbers and names) and nothing from the database, so it is testable alone.
Figures follow the paper's: box plots with random baselines (Fig. 5), cost against Overall with
the Pareto frontier (Fig. 6), parameters against Overall (Fig. 1), tool use (Fig. 4); beyond the
paper, how stable the runs' ranks are across bootstrap resamples. The task pages' charts are in
``leaderboard.analysis.task_charts``, the board's in ``leaderboard.board.charts``, an episode's in
``leaderboard.explorer.charts``, and the look they share in ``leaderboard.figures``. Scatter labels
that would collide are left to the hover.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from leaderboard.figures import (
    MUTED,
    axis,
    base_layout,
    color,
    empty_figure,
    padded_range,
    point_color,
    with_note,
)

#: The plot area scatter labels are laid out for (px), and the size of a 9-px label and of a marker.
LABEL_AREA_PX = (500, 320)
_CHAR_PX, _LINE_PX, _MARKER_PX = 5.4, 12.0, 6.0


def _overlap(first: tuple, second: tuple) -> bool:
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] and second[1] < first[3]


def _label_layout(
    points: Sequence[tuple[float, float]], labels: Sequence[str], *, x_range: Sequence[float],
    y_range: Sequence[float],
) -> list[str | None]:
    """Where each point's label goes (a plotly ``textposition``), or None where it would not fit.

    ``points`` are in axis units (log10 for a log axis), most important first: each label takes the
    first of above, below, right and left of its marker where it stays inside the plot and clear of
    every marker and of the labels placed before it. The others are read from the hover text.
    """
    width, height = LABEL_AREA_PX

    def pixels(x: float, y: float) -> tuple[float, float]:
        return ((x - x_range[0]) / (x_range[1] - x_range[0]) * width,
                (y_range[1] - y) / (y_range[1] - y_range[0]) * height)

    centres = [pixels(x, y) for x, y in points]
    taken = [(x - _MARKER_PX, y - _MARKER_PX, x + _MARKER_PX, y + _MARKER_PX) for x, y in centres]

    def fits(box: tuple) -> bool:
        inside = box[0] >= 0 and box[1] >= 0 and box[2] <= width and box[3] <= height
        return inside and not any(_overlap(box, other) for other in taken)

    positions = []
    for (x, y), label in zip(centres, labels):
        half, gap = len(label) * _CHAR_PX / 2, _MARKER_PX
        boxes = {  # in the order they are tried
            "top center": (x - half, y - gap - _LINE_PX, x + half, y - gap),
            "bottom center": (x - half, y + gap, x + half, y + gap + _LINE_PX),
            "middle right": (x + gap, y - _LINE_PX / 2, x + gap + 2 * half, y + _LINE_PX / 2),
            "middle left": (x - gap - 2 * half, y - _LINE_PX / 2, x - gap, y + _LINE_PX / 2),
        }
        chosen = next((position for position, box in boxes.items() if fits(box)), None)
        if chosen:
            taken.append(boxes[chosen])
        positions.append(chosen)
    return positions


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


def labelled_scatter(
    points: Sequence[Mapping], *, x: str, y: str, hover: str, log_x: bool = False,
    x_range: Sequence[float], y_range: Sequence[float], best_first: Callable[[Mapping], float],
) -> list[dict]:
    """Points as one scatter trace per source (runs: circles, the paper's rows: diamonds), each marker in
    its model's colour and labelled where the label fits (see :func:`_label_layout`).

    ``points``: ``{"label", "key", "published", x, y}``; sorted by ``best_first``, the best models
    claim label room first. ``hover`` uses ``%{customdata}`` for the label.
    """
    by_importance = sorted(range(len(points)), key=lambda index: best_first(points[index]))
    placed = _label_layout(
        [(math.log10(points[index][x]) if log_x else points[index][x], points[index][y]) for index in by_importance],
        [points[index]["label"] for index in by_importance], x_range=x_range, y_range=y_range,
    )
    position = dict(zip(by_importance, placed))
    data = []
    for published, name in ((False, "runs on this site"), (True, "published in the paper")):
        chosen = [index for index, point in enumerate(points) if bool(point.get("published")) == published]
        if not chosen:
            continue
        symbol = "diamond" if published else "circle"
        data.append(_legend_key(name, symbol))
        data.append({
            "type": "scatter",
            "mode": "markers+text",
            "name": name,
            "legendgroup": name,
            "showlegend": False,
            "x": [points[index][x] for index in chosen],
            "y": [points[index][y] for index in chosen],
            "text": [points[index]["label"] if position[index] else "" for index in chosen],
            "customdata": [points[index]["label"] for index in chosen],
            "textposition": [position[index] or "top center" for index in chosen],
            "textfont": {"size": 9, "color": "#4a5563"},
            "cliponaxis": False,
            "marker": {"color": [point_color(points[index]) for index in chosen], "size": 9, "symbol": symbol,
                       "line": {"color": "#ffffff", "width": 1}},
            "hovertemplate": hover,
        })
    return data


def _legend_key(name: str, symbol: str) -> dict:
    """A legend entry for the marker ``symbol`` in a neutral colour, standing for points of many colours
    (one per model); it draws nothing, and toggles the traces of its ``legendgroup``."""
    return {"type": "scatter", "mode": "markers", "name": name, "legendgroup": name, "x": [None], "y": [None],
            "marker": {"color": MUTED, "size": 9, "symbol": symbol}, "hoverinfo": "skip"}


def scatter_layout(*, x_title: str, y_title: str, x_range: Sequence[float], y_range: Sequence[float],
                    log_x: bool = False, **layout) -> dict:
    """The layout of a labelled scatter: fixed ranges (the label layout depends on them), room for titles."""
    return base_layout(
        height=420,
        margin={"l": 60, "r": 24, "t": 40, "b": 56},
        xaxis=axis(x_title, type="log" if log_x else "linear", range=list(x_range), automargin=True),
        yaxis=axis(y_title, range=list(y_range), automargin=True),
        **layout,
    )


def _best_overall_first(point: Mapping) -> float:
    return -point["overall"]


def cost_figure(points: Sequence[Mapping], *, cost_label: str = "Estimated cost (USD, log scale)") -> dict:
    """Cost against Overall with the Pareto frontier dashed (Fig. 6), on a log axis over positive costs.

    ``points``: ``{"label", "key", "cost", "overall", "frontier", "published"}``, ``cost`` None for an
    unpriced row. A log axis has no $0, so rows costing nothing and unpriced rows are named in the
    figure's note, never drawn at $0.
    """
    scored = [point for point in points if point.get("overall") is not None]
    priced = [point for point in scored if point.get("cost") is not None and point["cost"] > 0]
    left_out = [f"{point['label']} (unpriced)" for point in scored if point.get("cost") is None]
    left_out += [f"{point['label']} ($0)" for point in scored if point.get("cost") is not None and point["cost"] <= 0]
    note = f"Not on the log axis: {', '.join(left_out)}." if left_out else ""
    if not priced:
        return empty_figure("No model on this board has a positive cost and an Overall score.", note=note)
    x_range = padded_range([point["cost"] for point in priced], log=True, minimum_span=1.0)
    y_range = padded_range([point["overall"] for point in priced])
    data = labelled_scatter(priced, x="cost", y="overall", log_x=True, x_range=x_range, y_range=y_range,
                             best_first=_best_overall_first,
                             hover="%{customdata}<br>$%{x:,.2f} · Overall %{y:.3f}<extra></extra>")
    frontier = sorted((point for point in priced if point.get("frontier")), key=lambda point: point["cost"])
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
    layout = scatter_layout(x_title=cost_label, y_title="Overall", x_range=x_range, y_range=y_range, log_x=True)
    return with_note({"data": data, "layout": layout}, note)


def parameters_figure(points: Sequence[Mapping]) -> dict:
    """Parameters (billions, log scale) against Overall (Fig. 1); models of unknown size in their own band.

    ``points``: ``{"label", "key", "parameters_b", "overall", "published"}``. The models of unknown
    size are drawn in a narrow band on the right, unlabelled (hover names them), and named in the note.
    """
    points = [point for point in points if point.get("overall") is not None]
    known = [point for point in points if point.get("parameters_b")]
    unknown = [point for point in points if not point.get("parameters_b")]
    note = f"Size not reported: {', '.join(point['label'] for point in unknown)}." if unknown else ""
    if not known:
        return empty_figure("No model on this board has a reported parameter count.", note=note)
    x_range = padded_range([point["parameters_b"] for point in known], log=True, minimum_span=1.0)
    y_range = padded_range([point["overall"] for point in points])
    data = labelled_scatter(known, x="parameters_b", y="overall", log_x=True, x_range=x_range, y_range=y_range,
                             best_first=_best_overall_first,
                             hover="%{customdata}<br>%{x}B · Overall %{y:.3f}<extra></extra>")
    layout = scatter_layout(x_title="Parameters (billions, log scale)", y_title="Overall", x_range=x_range,
                             y_range=y_range, log_x=True)
    if unknown:
        layout["xaxis"]["domain"] = [0, 0.9]
        name = "size not reported"
        data.append({**_legend_key(name, "square"), "xaxis": "x2"})
        data.append({
            "type": "scatter",
            "mode": "markers",
            "name": name,
            "legendgroup": name,
            "showlegend": False,
            "xaxis": "x2",
            "x": [0] * len(unknown),
            "y": [point["overall"] for point in unknown],
            "customdata": [point["label"] for point in unknown],
            "marker": {"color": [point_color(point) for point in unknown], "size": 9, "symbol": "square",
                       "line": {"color": "#ffffff", "width": 1}},
            "hovertemplate": "%{customdata}: size not reported · Overall %{y:.3f}<extra></extra>",
        })
        layout["xaxis2"] = axis("not<br>reported", title_size=10, domain=[0.93, 1], showticklabels=False,
                                showgrid=False, zeroline=False, range=[-1, 1])
    return with_note({"data": data, "layout": layout}, note)


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
            "y": [_wrapped(category) for category in categories],
            "z": z,
            "zmin": 0,
            "zmax": max(0.01, max(max(row) for row in z)),
            "colorscale": [[0, "#f4f6f9"], [1, "#2456a6"]],
            "text": [[f"{value:.0%}" for value in row] for row in z],
            "texttemplate": "%{text}",
            "hovertemplate": "%{y} on %{x}: %{z:.1%}<extra></extra>",
            "colorbar": {"title": {"text": "share"}, "tickformat": ".0%"},
        }],
        "layout": base_layout(height=380, margin={"l": 20, "r": 20, "t": 20, "b": 40},
                              yaxis=axis("", autorange="reversed", automargin=True), xaxis=axis("", automargin=True)),
    }


def _wrapped(text: str, *, width: int = 18) -> str:
    """``text`` broken into lines of at most ``width`` characters at spaces (``<br>``), for a tick label."""
    lines = [""]
    for word in text.split():
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return "<br>".join(lines)


def grouped_bars_figure(
    groups: Mapping[str, Mapping[str, float | None]], *, y_title: str, height: int = 340,
    value_format: str = ".1f", empty: str = "Nothing to compare yet.",
) -> dict:
    """Bars of a few series over the same categories, e.g. Top-5 vs Bottom-5 median tool calls (Fig. 4b).

    ``groups``: series name → category → value (None: no value). Every bar is labelled with its
    value (``value_format``), so a bar of 0 still reads "0.0"; ``empty`` is said when no value is known.
    """
    values = [value for series in groups.values() for value in series.values() if value is not None]
    if not values:
        return empty_figure(empty)
    categories = list(dict.fromkeys(category for series in groups.values() for category in series))
    data = [
        {
            "type": "bar",
            "name": name,
            "x": categories,
            "y": [series.get(category) for category in categories],
            "marker": {"color": color(index)},
            "texttemplate": f"%{{y:{value_format}}}",
            "textposition": "outside",
            "cliponaxis": False,
            "hovertemplate": f"{name}, %{{x}}: %{{y:{value_format}}}<extra></extra>",
        }
        for index, (name, series) in enumerate(groups.items())
    ]
    top = max(values) * 1.15 or 1.0
    return {"data": data, "layout": base_layout(height=height, barmode="group", yaxis=axis(y_title, range=[0, top]),
                                                xaxis=axis(""))}


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


def rank_stability_figure(labels: Sequence[str], above: Sequence[Sequence[float]]) -> dict:
    """How often each run ranks above each other one across the bootstrap resamples of Overall.

    Parameters
    ----------
    labels : sequence of str
        The runs, best Overall first.
    above : sequence of sequence of float, shape (n_runs, n_runs)
        ``above[i][j]``: the share of resamples in which run i scores above run j, a tie counting
        half (``stats.rank_stability``), in [0, 1].

    Returns
    -------
    dict
        A heatmap, the row's run above the column's; its diagonal is left blank. Empty, with a
        sentence, when there are fewer than two runs to compare.
    """
    if len(labels) < 2:
        return empty_figure(
            "Rank stability needs at least two runs with an Overall (all six tasks scored) on this board."
        )
    names = [_wrapped(label) for label in labels]
    z = [[None if i == j else float(above[i][j]) for j in range(len(labels))] for i in range(len(labels))]
    return {
        "data": [{
            "type": "heatmap",
            "x": names,
            "y": names,
            "z": z,
            "zmin": 0,
            "zmax": 1,
            "colorscale": [[0, "#d1495b"], [0.5, "#f4f6f9"], [1, "#2456a6"]],
            "texttemplate": "%{z:.0%}",
            "hovertemplate": "%{y} above %{x} in %{z:.1%} of the resamples<extra></extra>",
            "colorbar": {"title": {"text": "share above"}, "tickformat": ".0%"},
        }],
        "layout": base_layout(
            height=max(280, 60 + 44 * len(labels)),
            margin={"l": 140, "r": 20, "t": 20, "b": 110},
            xaxis=axis("ranked below", automargin=True, tickangle=-30),
            yaxis=axis("ranked above", autorange="reversed", automargin=True),
        ),
    }
