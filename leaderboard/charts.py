"""The site's charts as plotly figure dicts (``{"data": [...], "layout": {...}}``), built from plain data.

Pages embed a figure with ``json_script`` and ``static/js/charts.js`` draws it with the plotly.js
of the plotly package, so every chart works offline. Each builder takes what its selector gives
(lists and dicts of numbers and names) and nothing from the database, so it is testable alone.
Figures follow the paper's: box plots with random baselines (Fig. 5), cost against Overall with
the Pareto frontier (Fig. 6), parameters against Overall (Fig. 1), tool use (Fig. 4), miss against
over-alarm rate (Fig. 7a), macro-F1 by duration (Fig. 7d) and the SNR dose-response (Fig. 8); beyond
the paper, how stable the runs' ranks are across bootstrap resamples. An episode's charts are in
``leaderboard.episode_charts``.

A chart with nothing to draw says so in its ``"empty"`` sentence (see :func:`empty_figure`); a figure may
carry a ``"note"``, a sentence printed under it (what the chart leaves out). A model has one colour
on every chart (:func:`model_color`), and scatter labels that would collide are left to the hover.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping, Sequence


PALETTE = (
    "#2456a6", "#d1495b", "#2f8f8a", "#edae49", "#6b3fa0", "#66a182",
    "#8d6a9f", "#c8553d", "#4f6d7a", "#a3a847",
)  # fmt: skip
PUBLISHED_COLOR = "#9a7b3c"
RUN_COLOR = "#2456a6"
MUTED = "#8a94a3"
FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", "size": 12, "color": "#1d2430"}


def color(index: int) -> str:
    """The ``index``-th colour of the palette, for series that are not models (channels, tasks)."""
    return PALETTE[index % len(PALETTE)]


def model_color(key: str) -> str:
    """A model's colour on every chart: its key (``run-12``, or a published row's key) hashed into the palette.

    CRC-32 rather than ``hash``, which changes between processes, so the colour is the same on
    every chart, page and server.
    """
    return PALETTE[zlib.crc32(key.encode("utf-8")) % len(PALETTE)]


def _point_color(point: Mapping) -> str:
    """The colour of a chart point: its model's, by ``key`` (the label where a caller gives no key)."""
    return model_color(point.get("key") or point["label"])


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


def empty_figure(message: str, *, note: str = "") -> dict:
    """No chart, only a sentence saying why there is nothing to draw; pages print it instead of empty axes.

    It has no traces (``data`` is empty), like any figure, for code that reads a figure's traces.
    """
    return _with_note({"empty": message, "data": [], "layout": {}}, note)


def _with_note(figure: dict, note: str) -> dict:
    """``figure`` with the sentence ``note`` to print under it, when there is one."""
    return {**figure, "note": note} if note else figure


def _padded_range(values: Sequence[float], *, log: bool = False, minimum_span: float = 0.1) -> list[float]:
    """An axis range around ``values`` with 8 % room on either side; in log10 units for a log axis.

    A range narrower than ``minimum_span`` (axis units) is widened around its middle.
    """
    values = [math.log10(value) for value in values] if log else list(values)
    low, high = min(values), max(values)
    if high - low < minimum_span:
        middle = (low + high) / 2
        low, high = middle - minimum_span / 2, middle + minimum_span / 2
    room = 0.08 * (high - low)
    return [low - room, high + room]


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
            xaxis=axis("Overall (95 % CI)", range=[0, 1]),  # short enough for a phone; the legend explains the whiskers
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


def _labelled_scatter(
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
            "marker": {"color": [_point_color(points[index]) for index in chosen], "size": 9, "symbol": symbol,
                       "line": {"color": "#ffffff", "width": 1}},
            "hovertemplate": hover,
        })
    return data


def _legend_key(name: str, symbol: str) -> dict:
    """A legend entry for the marker ``symbol`` in a neutral colour, standing for points of many colours
    (one per model); it draws nothing, and toggles the traces of its ``legendgroup``."""
    return {"type": "scatter", "mode": "markers", "name": name, "legendgroup": name, "x": [None], "y": [None],
            "marker": {"color": MUTED, "size": 9, "symbol": symbol}, "hoverinfo": "skip"}


def _scatter_layout(*, x_title: str, y_title: str, x_range: Sequence[float], y_range: Sequence[float],
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
    x_range = _padded_range([point["cost"] for point in priced], log=True, minimum_span=1.0)
    y_range = _padded_range([point["overall"] for point in priced])
    data = _labelled_scatter(priced, x="cost", y="overall", log_x=True, x_range=x_range, y_range=y_range,
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
    layout = _scatter_layout(x_title=cost_label, y_title="Overall", x_range=x_range, y_range=y_range, log_x=True)
    return _with_note({"data": data, "layout": layout}, note)


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
    x_range = _padded_range([point["parameters_b"] for point in known], log=True, minimum_span=1.0)
    y_range = _padded_range([point["overall"] for point in points])
    data = _labelled_scatter(known, x="parameters_b", y="overall", log_x=True, x_range=x_range, y_range=y_range,
                             best_first=_best_overall_first,
                             hover="%{customdata}<br>%{x}B · Overall %{y:.3f}<extra></extra>")
    layout = _scatter_layout(x_title="Parameters (billions, log scale)", y_title="Overall", x_range=x_range,
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
            "marker": {"color": [_point_color(point) for point in unknown], "size": 9, "symbol": "square",
                       "line": {"color": "#ffffff", "width": 1}},
            "hovertemplate": "%{customdata}: size not reported · Overall %{y:.3f}<extra></extra>",
        })
        layout["xaxis2"] = axis("not<br>reported", title_size=10, domain=[0.93, 1], showticklabels=False,
                                showgrid=False, zeroline=False, range=[-1, 1])
    return _with_note({"data": data, "layout": layout}, note)


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
            "marker": {"color": [_point_color(row) for row in rows],
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
    data = _labelled_scatter(points, x="over_alarm_rate", y="miss_rate", x_range=full, y_range=full,
                             best_first=lambda point: point["miss_rate"] + point["over_alarm_rate"],
                             hover="%{customdata}<br>over-alarm %{x:.1%} · miss %{y:.1%}<extra></extra>")
    layout = _scatter_layout(x_title="Over-alarm rate on seizure-free records",
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
