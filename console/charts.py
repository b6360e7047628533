"""The tool-call log's chart: characters returned per call over time, as inline SVG.

A pure function from points to coordinates; the template draws them. No
chart library: a scatter plot with one reference line is a few shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

WIDTH = 880
HEIGHT = 250
PAD_LEFT = 56
PAD_RIGHT = 16
PAD_TOP = 16
PAD_BOTTOM = 28
# Keeps the first and last dots off the axis and the edge.
X_INSET = 10


@dataclass
class Chart:
    width: int = WIDTH
    height: int = HEIGHT
    dots: list[dict] = field(default_factory=list)
    cap_y: float | None = None
    cap: int = 0
    y_ticks: list[dict] = field(default_factory=list)
    x_labels: list[dict] = field(default_factory=list)
    plot_left: int = PAD_LEFT
    plot_right: int = WIDTH - PAD_RIGHT
    plot_top: int = PAD_TOP
    plot_bottom: int = HEIGHT - PAD_BOTTOM

    @property
    def empty(self) -> bool:
        return not self.dots


def _nice_step(top: int) -> int:
    """A round tick step giving about four ticks up to ``top``."""
    raw = max(1, top // 4)
    magnitude = 10 ** (len(str(raw)) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if raw <= step * magnitude:
            return int(step * magnitude)
    return raw


def chars_chart(points: list[tuple[datetime, int, bool]], *, cap: int) -> Chart:
    """Place each (time, chars, truncated) point; the y axis always shows the cap with headroom."""
    chart = Chart(cap=cap)
    if not points:
        return chart
    top = max(int(cap * 1.15), max(chars for _, chars, _ in points))
    first, last = points[0][0], points[-1][0]
    span = (last - first).total_seconds()
    plot_w = chart.plot_right - chart.plot_left - 2 * X_INSET
    plot_h = chart.plot_bottom - chart.plot_top

    def y_of(chars: int) -> float:
        return round(chart.plot_bottom - plot_h * chars / top, 1)

    for index, (when, chars, truncated) in enumerate(points):
        # Evenly spaced when all calls share one instant (or there is one).
        share = (when - first).total_seconds() / span if span > 0 else (index + 0.5) / len(points)
        chart.dots.append(
            {
                "x": round(chart.plot_left + X_INSET + plot_w * share, 1),
                "y": y_of(chars),
                "chars": chars,
                "truncated": truncated,
                "when": when,
            }
        )
    chart.cap_y = y_of(cap)
    step = _nice_step(top)
    chart.y_ticks = [{"y": y_of(v), "label": f"{v:,}"} for v in range(0, top + 1, step)]
    chart.x_labels = [
        {"x": chart.plot_left, "label": f"{first:%Y-%m-%d %H:%M}", "anchor": "start"},
        {"x": chart.plot_right, "label": f"{last:%Y-%m-%d %H:%M}", "anchor": "end"},
    ]
    return chart
