"""Results stored in SQLite, compared under equal conditions, rendered to HTML."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_server import FakeServer

from hangar.errors import InputError
from hangar.evaluation import (
    EvalOptions,
    PerfOptions,
    compare,
    evaluate,
    render_html,
    resolve_target,
)
from hangar.evaluation.compare import ConditionsDiffer
from hangar.evaluation.history import load_eval, save_eval
from hangar.evaluation.results import EvalResult
from hangar.store.evals import list_evals


def measure(url: str, output_len: int = 4) -> EvalResult:
    perf = PerfOptions(
        concurrency=[1, 2], num_requests=4, input_len=8, output_len=output_len, warmup=0
    )
    return evaluate(
        resolve_target(url), EvalOptions(suites=["smoke", "perf"], perf=perf, timeout=5.0)
    )


def test_store_round_trip_and_lookup(fake: FakeServer) -> None:
    first, second = measure(fake.url), measure(fake.url)
    save_eval(first)
    save_eval(second)
    assert load_eval(first.id) == first
    with pytest.raises(InputError, match="matches several"):
        load_eval("ev-")
    assert load_eval("latest").id == second.id
    assert [row["id"] for row in list_evals()] == [second.id, first.id]
    with pytest.raises(InputError, match="no stored eval"):
        load_eval("ev-missing")


def test_compare_same_conditions_gives_deltas(fake: FakeServer) -> None:
    a, b = measure(fake.url), measure(fake.url)
    comparison = compare(a, b)
    assert not comparison.conditions_differ
    assert [p.label for p in comparison.points] == ["concurrency 1", "concurrency 2"]
    metrics = {d.metric for d in comparison.points[0].deltas}
    assert {"ttft_ms.p99", "tpot_ms.mean", "output_tokens_per_s", "errors"} <= metrics


def test_compare_refuses_different_conditions_unless_forced(fake: FakeServer) -> None:
    a, b = measure(fake.url, output_len=4), measure(fake.url, output_len=6)
    with pytest.raises(ConditionsDiffer, match=r"prompt.output_len: 4 vs 6") as refused:
        compare(a, b)
    assert refused.value.one_line().endswith("or pass --force to compare anyway")
    forced = compare(a, b, force=True)
    assert [d.field for d in forced.conditions_differ] == ["prompt.output_len"]


def test_report_is_self_contained(fake: FakeServer, tmp_path: Path) -> None:
    html = render_html([measure(fake.url), measure(fake.url, output_len=6)])
    assert html.count("<svg") >= 7  # throughput x2, TTFT, TPOT, ITL, one latency CDF per run
    assert (
        "<script" not in html
        and "<link" not in html
        and not re.search(r"""(src|href)=["']?http""", html)
    )
    assert "Conditions differ" in html and "prompt.output_len" in html
    assert "concurrency 2" in html


def _inside_plot_area(chart: str) -> bool:
    """Every data point (marker) of a matplotlib SVG chart lies inside its plotting area."""
    area = re.search(r'id="[\w-]+-plot-area">\s*<path d="([^"]+)"', chart)
    assert area is not None
    xs = [float(v) for v in re.findall(r"([\d.]+) [\d.]+", area.group(1))]
    ys = [float(v) for v in re.findall(r"[\d.]+ ([\d.]+)", area.group(1))]
    marks = re.findall(r'<use xlink:href="#m\w+" x="([\d.-]+)" y="([\d.-]+)"', chart)
    assert marks, "no data point drawn"
    return all(
        min(xs) <= float(x) <= max(xs) and min(ys) <= float(y) <= max(ys) for x, y in marks
    )


def test_report_axes_cover_the_data_and_print_no_none(fake: FakeServer) -> None:
    """The old hand-drawn charts stopped the y-axis below the data and printed 'model None'."""
    from hangar.evaluation.report import perf_charts

    results = [measure(fake.url), measure(fake.url, output_len=6)]
    html = render_html(results)
    assert ">None<" not in html and "model None" not in html
    charts = perf_charts(results)
    assert len(charts) == 7
    assert all(_inside_plot_area(chart) for chart in charts)
