"""Charts of eval results, drawn by matplotlib as inline SVG (no scripts, works offline).

Shared by ``hangar report`` and ``hangar ui``: matplotlib picks the axis limits from the
data (with its default 5% margin), so every point lies inside the axes by construction.
Each chart is a ``<figure class="chart">`` whose SVG marks its plotting area
(``id="<slug>-plot-area"``) and each series (``id="<slug>-series-N"``) so a browser test
can check the geometry.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Series = tuple[str, Sequence[tuple[float, float]]]
Bar = tuple[str, Sequence[tuple[str, float]]]  # row label, (segment name, value) in order

_WIDTH_IN, _HEIGHT_IN = 4.8, 3.2
_XML_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def cdf(values: Sequence[float]) -> list[tuple[float, float]]:
    """The empirical CDF as (value, fraction of requests at or below it)."""
    ordered = sorted(values)
    n = len(ordered)
    return [(v, (i + 1) / n) for i, v in enumerate(ordered)]


def line_chart(
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    *,
    log_x: bool = False,
    y_from_zero: bool = True,
) -> str:
    """One line chart as an ``<svg>`` element; empty series are left out."""
    from matplotlib.ticker import FixedLocator, FuncFormatter

    fig, ax = _figure(title)
    slug = _slug(title)
    drawn = [(name, pts) for name, pts in series if pts]
    for i, (name, pts) in enumerate(drawn):
        xs, ys = zip(*sorted(pts))
        (line,) = ax.plot(xs, ys, marker="o", markersize=3.5, label=name, color=_colour(i))
        line.set_gid(f"{slug}-series-{i}")
    if log_x and drawn:
        # concurrency levels 1, 2, 4, 64...: ticks at the measured levels, printed as given
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(sorted({x for _, pts in drawn for x, _ in pts})))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(FixedLocator([]))
    if y_from_zero and drawn and min(y for _, pts in drawn for _, y in pts) >= 0:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    if drawn:
        ax.legend(fontsize=7, loc="best")
    return _svg(fig, title)


def stacked_bars(title: str, x_label: str, bars: Sequence[Bar]) -> str:
    """Horizontal stacked bars (e.g. one GPU's memory: weights, activations, KV, free)."""
    fig, ax = _figure(title, height=max(1.6, 0.45 * len(bars) + 1.1))
    slug = _slug(title)
    names = list(dict.fromkeys(name for _, segments in bars for name, _ in segments))
    labels = [label for label, _ in bars]
    left = [0.0] * len(bars)
    for i, name in enumerate(names):
        widths = [dict(segments).get(name, 0.0) for _, segments in bars]
        group = ax.barh(labels, widths, left=left, label=name, color=_colour(i))
        for j, patch in enumerate(group.patches):
            patch.set_gid(f"{slug}-series-{i}-{j}")
        left = [a + b for a, b in zip(left, widths)]
    ax.invert_yaxis()  # the first bar on top, as in the table
    ax.set_xlabel(x_label)
    ax.legend(fontsize=7, loc="lower right", ncols=len(names) or 1)
    return _svg(fig, title)


def _figure(title: str, height: float = _HEIGHT_IN) -> tuple[Figure, Axes]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(_WIDTH_IN, height), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=10)
    ax.grid(True, color="#eeeeee", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.patch.set_gid(f"{_slug(title)}-plot-area")
    ax.tick_params(labelsize=8)
    return fig, ax


def _colour(i: int) -> str:
    return _COLOURS[i % len(_COLOURS)]


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "chart"


def _svg(fig: Figure, title: str) -> str:
    """The figure as an inline ``<svg>`` in a ``<figure>`` (prologue dropped; ids salted per
    chart so several charts on one page never share a clip-path id)."""
    import matplotlib

    buf = io.StringIO()
    # fonttype none: text stays text (searchable, smaller); no Date: reproducible output.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": title}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = _XML_PROLOGUE.sub("", buf.getvalue(), count=1)
    return f'<figure class="chart" data-chart="{_slug(title)}">{svg}</figure>'

