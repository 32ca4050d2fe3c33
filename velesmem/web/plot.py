"""A time series drawn as an SVG bar chart on the server (the Savings page: tokens saved per day).

No JavaScript needed: each bar carries its date and value as a tooltip (``<title>``), and the page
prints the same figures as a table. Axis ticks are round numbers; every text is escaped.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 760, 280
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 16, 40  # margins: the y axis' labels left, dates below
Y_TICKS = 5
X_LABELS = 6  # at most this many dates under the axis
BAR_MAX_W = 48  # a bar is never wider than this (a single day is not a wall)


@dataclass(frozen=True)
class Point:
    """One bar: the start of its bucket (epoch seconds) and its value."""

    start: float
    value: int


def nice_step(top: float, ticks: int = Y_TICKS) -> float:
    """A round tick step (1, 2 or 5 × 10^n) so that ``ticks`` steps cover ``top``."""
    if top <= 0:
        return 1.0
    raw = top / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * magnitude >= raw:
            return float(m * magnitude)
    return float(10 * magnitude)


def _day(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d")


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _count(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def bars(points: Sequence[Point], label: str, unit: str = "tokens") -> Markup:
    """The bar chart of ``points`` (oldest first) titled ``label``; an empty chart says so."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'aria-label="{escape(label)}">', f"<title>{escape(label)}</title>"]
    top = max((p.value for p in points), default=0)
    step = nice_step(top)
    ceiling = step * max(1, math.ceil(top / step))
    for i in range(round(ceiling / step) + 1):
        y = TOP + plot_h - plot_h * (i * step) / ceiling
        parts.append(f'<line class="plot-grid" x1="{LEFT}" x2="{LEFT + plot_w}" '
                     f'y1="{_num(y)}" y2="{_num(y)}"/>')
        parts.append(f'<text class="plot-tick" x="{LEFT - 6}" y="{_num(y + 4)}" '
                     f'text-anchor="end">{escape(_count(i * step))}</text>')
    parts.append(f'<line class="plot-axis" x1="{LEFT}" x2="{LEFT + plot_w}" '
                 f'y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>')
    if not points:
        parts.append(f'<text class="plot-empty" x="{LEFT + plot_w / 2}" y="{TOP + plot_h / 2}" '
                     'text-anchor="middle">nothing recorded yet</text></svg>')
        return Markup("".join(parts))
    slot = plot_w / len(points)
    width = min(max(1.0, slot * 0.8), BAR_MAX_W)
    for i, p in enumerate(points):
        h = plot_h * p.value / ceiling if ceiling else 0.0
        x = LEFT + i * slot + (slot - width) / 2
        parts.append(f'<rect class="plot-bar" x="{_num(x)}" y="{_num(TOP + plot_h - h)}" '
                     f'width="{_num(width)}" height="{_num(h)}">'
                     f"<title>{escape(_day(p.start))}: {p.value:,} {escape(unit)}</title></rect>")
    every = max(1, math.ceil(len(points) / X_LABELS))
    for i in range(0, len(points), every):
        x = LEFT + i * slot + slot / 2
        parts.append(f'<text class="plot-tick" x="{_num(x)}" y="{TOP + plot_h + 18}" '
                     f'text-anchor="middle">{escape(_day(points[i].start))}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
