"""``hangar report``: one self-contained HTML file (inline CSS and SVG, no scripts).

The charts are matplotlib's (``evaluation/charts.py``, shared with ``hangar ui``), so the
axes always cover the data.

Sections: what was measured (snapshot) per run, functional suite results,
perf charts (throughput, TTFT and TPOT vs load, latency distributions) and,
with several runs, the comparison of each run against the first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from hangar.deploy.schema import MASK, is_secret_name
from hangar.evaluation.charts import Series, cdf, line_chart
from hangar.evaluation.compare import Comparison, compare
from hangar.evaluation.results import EvalResult, PerfPoint

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.pass{color:#176f2c;font-weight:600}.fail{color:#b3261e;font-weight:600}
.skipped,.not{color:#777}.warn{background:#fff3cd;border:1px solid #e0c36a;padding:8px;margin:8px 0}
figure.chart{margin:6px 12px 6px 0}figure.chart svg{max-width:100%;height:auto}
.charts{display:flex;flex-wrap:wrap}.better{color:#176f2c}.worse{color:#b3261e}
code{font-size:12px}
"""


def render_html(results: Sequence[EvalResult]) -> str:
    """The whole report as one HTML string."""
    body = [
        f"<h1>Hangar evaluation report: {len(results)} run(s)</h1>",
        _snapshots(results),
        _functional(results),
        _perf(results),
    ]
    if len(results) > 1:
        body.append(_comparisons(results))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Hangar report</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _status(status: str) -> str:
    return f'<span class="{escape(status.split()[0])}">{escape(status)}</span>'


def _snapshots(results: Sequence[EvalResult]) -> str:
    fields: list[tuple[str, Callable[[EvalResult], Any]]] = [
        ("created", lambda r: r.created_at),
        ("target", lambda r: r.target),
        ("model", lambda r: r.snapshot.model),
        ("engine", lambda r: f"{r.snapshot.engine} {r.snapshot.engine_version or '?'}"),
        (
            "tool / reasoning parser",
            lambda r: (
                f"{r.snapshot.tool_call_parser or '-'} / {r.snapshot.reasoning_parser or '-'}"
            ),
        ),
        ("flags", lambda r: " ".join(r.snapshot.flags) or "-"),
        ("env", lambda r: env_text(r.snapshot.env)),
        ("GPUs", lambda r: ", ".join(r.snapshot.gpus) or "-"),
        ("workarounds", lambda r: ", ".join(r.snapshot.workarounds) or "-"),
        ("prompts", _prompt_text),
    ]
    rows = [
        [escape(name)] + [f"<code>{escape(shown(get(r)))}</code>" for r in results]
        for name, get in fields
    ]
    return "<h2>What was measured</h2>" + _table(["", *(escape(r.id) for r in results)], rows)


def shown(value: Any) -> str:
    """A snapshot value as text: unknown (None) or empty is '-', never 'None'."""
    return "-" if value is None or value == "" else str(value)


def env_text(env: dict[str, str]) -> str:
    """``K=V`` pairs with the values of secret-looking names masked."""
    return " ".join(f"{k}={MASK if is_secret_name(k) else v}" for k, v in env.items()) or "-"


def _prompt_text(result: EvalResult) -> str:
    p = result.snapshot.prompt
    if p is None:
        return "-"
    return (
        f"{p.endpoint} in={p.input_len} out={p.output_len} seed={p.seed} n={p.num_requests or 'auto'} "
        f"warmup={p.warmup} tokenizer={p.tokenizer}"
    )


def _functional(results: Sequence[EvalResult]) -> str:
    names = [n for n in dict.fromkeys(n for r in results for n in r.suites)]
    rows = [
        [escape(n)] + [_status(r.suites[n].status) if n in r.suites else "-" for r in results]
        for n in names
    ]
    parts = ["<h2>Suites</h2>", _table(["suite", *(escape(r.id) for r in results)], rows)]
    for r in results:
        check_rows = [
            [escape(n), escape(c.name), _status(c.status), escape(c.detail)]
            for n, s in r.suites.items()
            for c in s.checks
        ]
        parts.append(
            f"<details><summary>Checks of {escape(r.id)}</summary>"
            + _table(["suite", "check", "status", "detail"], check_rows)
            + "</details>"
        )
    return "\n".join(parts)


def _points(result: EvalResult) -> list[PerfPoint]:
    perf = result.suites.get("perf")
    return list(perf.points or []) if perf else []


def _x(point: PerfPoint) -> float:
    return float(point.concurrency if point.concurrency is not None else point.request_rate or 0.0)


def _perf(results: Sequence[EvalResult]) -> str:
    measured = [r for r in results if _points(r)]
    if not measured:
        return "<h2>Performance</h2><p>No perf suite in these runs.</p>"
    return (
        '<h2>Performance</h2><div class="charts">'
        + "\n".join(perf_charts(measured))
        + "</div>"
        + "\n".join(perf_table(r) for r in measured)
    )


def perf_charts(results: Sequence[EvalResult]) -> list[str]:
    """Throughput, TTFT, TPOT and ITL vs load, then one latency CDF per run (inline SVG)."""
    measured = [r for r in results if _points(r)]
    if not measured:
        return []
    rate_mode = _points(measured[0])[0].concurrency is None
    x_label = "request rate (req/s)" if rate_mode else "concurrency"

    def series(get: Callable[[PerfPoint], float], suffix: str = "") -> list[Series]:
        return [(r.id[-9:] + suffix, [(_x(p), get(p)) for p in _points(r)]) for r in measured]

    def vs_load(title: str, unit: str, get: Callable[[PerfPoint], Any]) -> str:
        if unit == "ms":
            lines = series(lambda p: get(p).mean, " mean") + series(lambda p: get(p).p99, " p99")
        else:
            lines = series(get)
        return line_chart(title, x_label, unit, lines, log_x=not rate_mode)

    charts = [
        vs_load("Output throughput", "tokens/s", lambda p: p.output_tokens_per_s),
        vs_load("Request throughput", "requests/s", lambda p: p.requests_per_s),
        vs_load("TTFT", "ms", lambda p: p.ttft_ms),
        vs_load("TPOT", "ms", lambda p: p.tpot_ms),
        vs_load("ITL", "ms", lambda p: p.itl_ms),
    ]
    return charts + [_latency_cdf(r) for r in measured]


def _latency_cdf(result: EvalResult) -> str:
    dist = [
        (p.label, cdf(p.samples.get("e2e_ms", [])))
        for p in _points(result)
        if p.samples.get("e2e_ms")
    ]
    return line_chart(
        f"E2E latency CDF, {result.id[-9:]}", "ms", "fraction of requests", dist,
        y_from_zero=False,
    )


def perf_table(result: EvalResult) -> str:
    rows = [
        [
            escape(p.label),
            f"{p.completed}/{p.requests}",
            str(p.errors),
            f"{p.ttft_ms.mean:.1f} / {p.ttft_ms.p99:.1f}",
            f"{p.tpot_ms.mean:.2f} / {p.tpot_ms.p99:.2f}",
            f"{p.itl_ms.mean:.2f} / {p.itl_ms.p99:.2f}",
            f"{p.e2e_ms.mean:.1f} / {p.e2e_ms.p99:.1f}",
            f"{p.output_tokens_per_s:.1f}",
            f"{p.total_tokens_per_s:.1f}",
            f"{p.requests_per_s:.2f}",
        ]
        for p in _points(result)
    ]
    headers = [
        "load",
        "ok",
        "errors",
        "TTFT ms mean/p99",
        "TPOT ms mean/p99",
        "ITL ms mean/p99",
        "E2E ms mean/p99",
        "out tok/s",
        "total tok/s",
        "req/s",
    ]
    return f"<h3>{escape(result.id)}</h3>" + _table(headers, rows)


def _comparisons(results: Sequence[EvalResult]) -> str:
    base = results[0]
    return "<h2>Comparison</h2>" + "\n".join(
        comparison_html(compare(base, other, force=True)) for other in results[1:]
    )


def comparison_html(comp: Comparison) -> str:
    parts = [f"<h3>{escape(comp.b)} vs {escape(comp.a)}</h3>"]
    if comp.conditions_differ:
        listed = "".join(
            f"<li>{escape(d.field)}: {escape(_condition(d.a))} vs {escape(_condition(d.b))}</li>"
            for d in comp.conditions_differ
        )
        parts.append(
            f'<div class="warn"><b>Conditions differ; deltas are not like for like.</b><ul>{listed}</ul></div>'
        )
    changed = [[escape(s.suite), _status(s.a), _status(s.b)] for s in comp.suites if s.a != s.b]
    if changed:
        parts.append(_table(["suite", comp.a, comp.b], changed))
    for point in comp.points:
        rows = [
            [escape(d.metric), f"{d.a:.2f}", f"{d.b:.2f}", _delta_cell(d.delta, d.pct, d.better)]
            for d in point.deltas
        ]
        parts.append(
            f"<details open><summary>{escape(point.label)}</summary>"
            + _table(["metric", "A", "B", "B − A"], rows)
            + "</details>"
        )
    return "\n".join(parts)


def _condition(value: Any) -> str:
    return "unknown" if value is None else repr(value)


def _delta_cell(delta: float, pct: float | None, better: bool | None) -> str:
    cls = "" if better is None else ("better" if better else "worse")
    text = f"{delta:+.2f}" + (f" ({pct:+.1f}%)" if pct is not None else "")
    return f'<span class="{cls}">{text}</span>'
