"""Inline SVG line charts for the status page: no library, no script, no external asset. Pure.

A chart is a string of SVG markup sized in CSS pixels: axes with "nice" ticks
(1, 2 or 5 times a power of ten), light grid lines, the series as a polyline
over a lightly filled area, and a marker per point when there are few. The y
axis starts at zero (rates and variances are never negative), so a flat line
at the top of the chart is not mistaken for a large value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

__all__ = ["line_chart", "nice_ticks"]

MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 16, 14, 40
MAX_MARKERS = 40
"""Points drawn as dots too when the series has at most this many."""


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round values covering [low, high] (low <= high; a zero span widens to 1)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high < low:
        raise ValueError(f"bad tick range {low}..{high}")
    if high == low:
        high = low + 1.0
    raw = (high - low) / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= raw * (1 - 1e-9))
    first = math.floor(low / step + 1e-9) * step
    ticks, k = [], 0
    while True:
        value = first + k * step
        ticks.append(round(value, 12))
        if value >= high - step * 1e-9:
            return ticks
        k += 1


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000 or abs(value) < 0.01:
        return f"{value:.3g}"
    return f"{value:.4g}"


def line_chart(points: Sequence[tuple[float, float]], *, title: str, x_label: str, y_label: str,
               colour: str = "#1f6feb", width: int = 760, height: int = 220, empty_text: str = "no data yet") -> str:
    """An SVG chart of ``(x, y)`` points in x order (module docstring); ``empty_text`` when there are none."""
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>')
    if not points:
        return (head + f'<text x="{width / 2:.0f}" y="{height / 2:.0f}" text-anchor="middle" fill="#6a737d" '
                f'font-size="14">{escape(empty_text)}</text></svg>')
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x_ticks = nice_ticks(min(xs), max(xs))
    y_ticks = nice_ticks(0.0, max(0.0, max(ys)), 4)
    plot = _Plot(width, height, x_ticks[0], x_ticks[-1], y_ticks[-1])
    parts = [head, _grid(plot, x_ticks, y_ticks), _labels(plot, x_label, y_label)]
    coords = " ".join(f"{plot.x(x):.1f},{plot.y(y):.1f}" for x, y in points)
    base = f"{plot.x(xs[-1]):.1f},{plot.y(0):.1f} {plot.x(xs[0]):.1f},{plot.y(0):.1f}"
    parts.append(f'<polygon points="{coords} {base}" fill="{colour}" fill-opacity="0.15" stroke="none"/>')
    parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2" '
                 'stroke-linejoin="round"/>')
    if len(points) <= MAX_MARKERS:
        parts += [f'<circle cx="{plot.x(x):.1f}" cy="{plot.y(y):.1f}" r="2.5" fill="{colour}"/>' for x, y in points]
    return "".join(parts) + "</svg>"


class _Plot:
    """Data coordinates to SVG pixels inside the margins."""

    def __init__(self, width: int, height: int, x_low: float, x_high: float, y_high: float) -> None:
        self.left, self.right = MARGIN_LEFT, width - MARGIN_RIGHT
        self.top, self.bottom = MARGIN_TOP, height - MARGIN_BOTTOM
        self.x_low, self.x_span = x_low, (x_high - x_low) or 1.0
        self.y_span = y_high or 1.0

    def x(self, value: float) -> float:
        return self.left + (value - self.x_low) / self.x_span * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - value / self.y_span * (self.bottom - self.top)


def _grid(plot: _Plot, x_ticks: Sequence[float], y_ticks: Sequence[float]) -> str:
    out = []
    for value in y_ticks:
        y = plot.y(value)
        out.append(f'<line x1="{plot.left}" y1="{y:.1f}" x2="{plot.right}" y2="{y:.1f}" stroke="#e1e4e8"/>'
                   f'<text x="{plot.left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" '
                   f'fill="#444d56">{_fmt(value)}</text>')
    for value in x_ticks:
        x = plot.x(value)
        out.append(f'<line x1="{x:.1f}" y1="{plot.bottom}" x2="{x:.1f}" y2="{plot.bottom + 4}" stroke="#444d56"/>'
                   f'<text x="{x:.1f}" y="{plot.bottom + 16}" text-anchor="middle" font-size="11" '
                   f'fill="#444d56">{_fmt(value)}</text>')
    out.append(f'<line x1="{plot.left}" y1="{plot.bottom}" x2="{plot.right}" y2="{plot.bottom}" stroke="#444d56"/>'
               f'<line x1="{plot.left}" y1="{plot.top}" x2="{plot.left}" y2="{plot.bottom}" stroke="#444d56"/>')
    return "".join(out)


def _labels(plot: _Plot, x_label: str, y_label: str) -> str:
    middle_y = (plot.top + plot.bottom) / 2
    return (f'<text x="{(plot.left + plot.right) / 2:.0f}" y="{plot.bottom + 34}" text-anchor="middle" '
            f'font-size="12" fill="#24292e">{escape(x_label)}</text>'
            f'<text x="14" y="{middle_y:.0f}" text-anchor="middle" font-size="12" fill="#24292e" '
            f'transform="rotate(-90 14 {middle_y:.0f})">{escape(y_label)}</text>')
