"""The board's Overall chart, its legend read from the figure, and the chart labels of a board's rows.

The analysis and task figures label their points with the same ``labels_for``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderboard.board import ranking
from leaderboard.figures import MUTED, PUBLISHED_COLOR, RUN_COLOR, axis, base_layout, empty_figure


def row_point(row: ranking.LeaderboardRow) -> dict:
    return {"key": row.key, "model": row.model, "source": row.source, "run_id": row.run_id}


def labels_for(points: list[dict]) -> dict[str, str]:
    """Chart labels of a board's points (``key``, ``model``, ``run_id``): the model, with the run when it repeats."""
    names = [point["model"] for point in points]
    return {
        point["key"]: f"{point['model']} · run {point['run_id']}"
        if names.count(point["model"]) > 1 and point["run_id"] else point["model"]
        for point in points
    }


def chart_points(points, labels: dict[str, str], **fields) -> list[dict]:
    """Selector points as chart input: ``label``, ``key`` (the model's colour), ``published`` and the
    ``fields`` renamed (chart name → key)."""
    return [
        {"label": labels[point["key"]], "key": point["key"], "published": point["source"] == "published",
         **{name: point.get(key) for name, key in fields.items()}}
        for point in points
    ]


def board_section(board: ranking.Leaderboard) -> dict:
    """A board's section of the leaderboard page; its chart shows the rows the table shows by default."""
    shown = [row for row in board.rows if row.shown_by_default]
    labels = labels_for([row_point(row) for row in shown])
    chart_rows = [
        {"label": labels[row.key], "overall": row.overall, "published": row.is_published,
         "ci_low": row.overall_ci[0] if row.overall_ci else None,
         "ci_high": row.overall_ci[1] if row.overall_ci else None}
        for row in shown
    ]
    figure = overall_figure(chart_rows)
    return {
        "board": board,
        "figure": figure,
        "markers": chart_markers(figure),
        "has_runs": any(not row.is_published for row in board.rows),
    }


# The glyph that stands for a plotly marker symbol in the legend written under a chart.
MARKER_GLYPHS = {"circle": "●", "diamond": "◆", "square": "■", "triangle-up": "▲", "cross": "✚", "x": "✖"}


def chart_markers(figure: dict) -> list[dict]:
    """The legend of a figure's marker traces, read from the figure so it always matches what is drawn.

    Each legend trace's ``name``, ``glyph`` (its marker symbol as a character) and ``color`` (blank
    when its markers have one colour per point).
    """
    markers = []
    for trace in figure["data"]:
        marker = trace.get("marker")
        if not marker or not trace.get("name") or trace.get("showlegend") is False:
            continue
        color = marker.get("color")
        markers.append({"name": trace["name"], "glyph": MARKER_GLYPHS.get(marker.get("symbol", "circle"), "●"),
                        "color": color if isinstance(color, str) else ""})
    return markers


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
