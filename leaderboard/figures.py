"""The look every plotly figure of the site shares: palette, a model's colour, fonts, axes.

A model has one colour on every chart (:func:`model_color`). A chart with nothing to draw says so in
its ``"empty"`` sentence (:func:`empty_figure`); a figure may carry a ``"note"``, a sentence printed
under it.
"""
from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence

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


def point_color(point: Mapping) -> str:
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
    return with_note({"empty": message, "data": [], "layout": {}}, note)


def with_note(figure: dict, note: str) -> dict:
    """``figure`` with the sentence ``note`` to print under it, when there is one."""
    return {**figure, "note": note} if note else figure


def padded_range(values: Sequence[float], *, log: bool = False, minimum_span: float = 0.1) -> list[float]:
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
