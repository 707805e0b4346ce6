"""Inline SVG line charts for the HTML report (no JavaScript, no network)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

Series = tuple[str, Sequence[tuple[float, float]]]
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_W, _H = 560, 320
_L, _R, _T, _B = 64, 150, 34, 46  # margins: room for the y labels and the legend


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1-2-5 steps)."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


class _Scale:
    def __init__(self, lo: float, hi: float, a: float, b: float, log: bool = False) -> None:
        self.log = log
        self.lo, self.hi = (math.log2(lo), math.log2(hi)) if log else (lo, hi)
        if self.hi == self.lo:
            self.hi = self.lo + 1.0
        self.a, self.b = a, b

    def __call__(self, value: float) -> float:
        v = math.log2(value) if self.log else value
        return self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a)


def line_chart(
    title: str, x_label: str, y_label: str, series: Sequence[Series], *, log_x: bool = False
) -> str:
    """One chart: a line and markers per series, axes with ticks, a legend on the right."""
    points = [(x, y) for _, pts in series for x, y in pts if not log_x or x > 0]
    if not points:
        return f'<p class="empty">{escape(title)}: no data</p>'
    xs = sorted({x for x, _ in points})
    y_ticks = nice_ticks(0.0, max(y for _, y in points) * 1.05 or 1.0)
    x_ticks = xs if log_x else nice_ticks(min(xs), max(xs))
    sx = _Scale(x_ticks[0], x_ticks[-1], _L, _W - _R, log=log_x)
    sy = _Scale(y_ticks[0], y_ticks[-1], _H - _B, _T)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{_W / 2 - _R / 2}" y="18" text-anchor="middle" class="t">{escape(title)}</text>',
    ]
    parts += _axes(sx, sy, x_ticks, y_ticks, x_label, y_label)
    for i, (name, pts) in enumerate(series):
        parts += _series(i, name, [(x, y) for x, y in pts if not log_x or x > 0], sx, sy)
    parts.append("</svg>")
    return "\n".join(parts)


def _axes(
    sx: _Scale, sy: _Scale, x_ticks: list[float], y_ticks: list[float], x_label: str, y_label: str
) -> list[str]:
    x0, x1, y0, y1 = _L, _W - _R, _H - _B, _T
    out = [
        f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" class="ax"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" class="ax"/>',
    ]
    for t in y_ticks:
        y = sy(t)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    for t in x_ticks:
        x = sx(t)
        out.append(f'<text x="{x:.1f}" y="{y0 + 16}" text-anchor="middle">{_fmt(t)}</text>')
    out.append(
        f'<text x="{(x0 + x1) / 2}" y="{_H - 8}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{(y0 + y1) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(y0 + y1) / 2})">{escape(y_label)}</text>'
    )
    return out


def _series(i: int, name: str, pts: list[tuple[float, float]], sx: _Scale, sy: _Scale) -> list[str]:
    color = PALETTE[i % len(PALETTE)]
    coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(pts))
    out = [f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>']
    if len(pts) <= 40:
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>' for x, y in pts]
    ly = _T + 14 + i * 18
    out.append(f'<rect x="{_W - _R + 12}" y="{ly - 9}" width="12" height="12" fill="{color}"/>')
    out.append(f'<text x="{_W - _R + 30}" y="{ly + 1}">{escape(name[:22])}</text>')
    return out


def cdf(values: Sequence[float]) -> list[tuple[float, float]]:
    """Empirical CDF points (value, fraction ≤ value)."""
    ordered = sorted(values)
    n = len(ordered)
    return [(v, (i + 1) / n) for i, v in enumerate(ordered)]
