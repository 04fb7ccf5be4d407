"""The analysis page's figures of how runs fail: failure modes per model, and evidence coverage against score.

Plotly figure dicts built from plain data, like ``leaderboard.analysis.charts`` (whose labelled
scatter they share), in the site's look (``leaderboard.figures``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from leaderboard.analysis.charts import labelled_scatter, scatter_layout
from leaderboard.analysis.failure_modes import ALL_TASKS
from leaderboard.figures import axis, base_layout, empty_figure


def _share(value: float) -> str:
    return f"{value:.0%}" if value else ""


def _hover(shares: Mapping[str, Mapping], code: str) -> str:
    """A cell's hover after its share: the model's episodes, then the share in each task where the mode occurs."""
    lines = [f"{shares[ALL_TASKS]['n']} episodes"]
    lines += [f"{task}: {entry['modes'][code]:.0%} of {entry['n']}"
              for task, entry in shares.items() if task != ALL_TASKS and code in entry["modes"]]
    return "<br>".join(lines)


def failure_modes_figure(models: Sequence[Mapping], *, codes: Sequence[str]) -> dict:
    """Each model's share of episodes with each failure mode, over all tasks, as a heatmap.

    ``models``: ``{"label", "shares"}`` in board order, ``shares`` a run's entry of
    ``failure_modes.mode_shares`` (per task and ``"all"``: ``{"n", "modes": {code: share}}``);
    ``codes``: the codes that may be shown, in display order. A column per code some model has; the
    hover gives the share in each task where the mode occurs.
    """
    models = [model for model in models if model["shares"].get(ALL_TASKS, {}).get("n")]
    if not models:
        return empty_figure("No episode of this board's runs has been classified yet.")
    present = [code for code in codes if any(code in model["shares"][ALL_TASKS]["modes"] for model in models)]
    if not present:
        return empty_figure("None of the classified episodes of this board's runs has a failure mode shown here.")
    z = [[model["shares"][ALL_TASKS]["modes"].get(code, 0.0) for code in present] for model in models]
    return {
        "data": [{
            "type": "heatmap",
            "x": present,
            "y": [model["label"] for model in models],
            "z": z,
            "zmin": 0,
            "zmax": max(0.01, max(max(row) for row in z)),
            "colorscale": [[0, "#f4f6f9"], [1, "#d1495b"]],
            "text": [[_share(value) for value in row] for row in z],
            "texttemplate": "%{text}",
            "customdata": [[_hover(model["shares"], code) for code in present] for model in models],
            "hovertemplate": "<b>%{y}</b> · %{x}<br>%{z:.1%} of %{customdata}<extra></extra>",
            "showscale": False,  # each cell is labelled with its share
        }],
        "layout": base_layout(
            height=max(260, 130 + 30 * len(models)),
            margin={"l": 20, "r": 20, "t": 20, "b": 110},
            xaxis=axis("", automargin=True, tickangle=-35),
            yaxis=axis("", autorange="reversed", automargin=True),
        ),
    }


def _best_score_first(point: Mapping) -> float:
    return -point["score"]


def coverage_figure(points: Sequence[Mapping], *, task: str, metric: str) -> dict:
    """A task's mean evidence coverage (x, %) against its primary score (y), one labelled point per model.

    ``points``: ``{"label", "key", "published", "coverage" (in [0, 1]), "score"}``; ``metric``: the
    primary metric's display name. Points without both are left out.
    """
    points = [{**point, "coverage": 100 * point["coverage"]} for point in points
              if point.get("coverage") is not None and point.get("score") is not None]
    if not points:
        return empty_figure(f"No {task} episode of this board's runs has an evidence coverage yet.")
    x_range, y_range = (-4.0, 104.0), (-0.04, 1.04)
    data = labelled_scatter(points, x="coverage", y="score", x_range=x_range, y_range=y_range,
                            best_first=_best_score_first,
                            hover=f"%{{customdata}}<br>coverage %{{x:.0f}} % · {metric} %{{y:.3f}}<extra></extra>")
    layout = scatter_layout(x_title="Mean evidence coverage (% of the record read)", y_title=f"{task} {metric}",
                            x_range=x_range, y_range=y_range)
    return {"data": data, "layout": layout}
