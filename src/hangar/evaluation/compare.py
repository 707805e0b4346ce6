"""Compare two eval results: per-metric deltas, refused when conditions differ.

Two perf results are comparable only when the model, engine version, flags,
environment, workarounds, GPUs and prompt settings match; otherwise
:func:`compare` raises :class:`ConditionsDiffer` unless ``force`` is set, in
which case the differences travel with the comparison so the CLI can warn.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.errors import HangarError
from hangar.evaluation.results import EvalResult, PerfPoint, Snapshot

# Snapshot fields that must match, and prompt settings that must match.
_CONDITIONS = (
    "model",
    "engine",
    "engine_version",
    "flags",
    "env",
    "workarounds",
    "gpus",
    "tool_call_parser",
    "reasoning_parser",
)
_PROMPT_CONDITIONS = (
    "endpoint",
    "input_len",
    "output_len",
    "seed",
    "num_requests",
    "ignore_eos",
    "tokenizer",
    "burstiness",
)
_LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
_RATES = ("output_tokens_per_s", "total_tokens_per_s", "requests_per_s")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ConditionDiff(_Frozen):
    field: str
    a: Any
    b: Any


class MetricDelta(_Frozen):
    metric: str
    a: float
    b: float
    delta: float
    pct: float | None
    better: bool | None  # True when B improves on A


class PointDelta(_Frozen):
    label: str
    deltas: list[MetricDelta]


class SuiteChange(_Frozen):
    suite: str
    a: str
    b: str


class Comparison(_Frozen):
    a: str
    b: str
    conditions_differ: list[ConditionDiff]
    points: list[PointDelta]
    suites: list[SuiteChange]
    unmatched_points: list[str]


class ConditionsDiffer(HangarError):
    def __init__(self, a: str, b: str, diffs: list[ConditionDiff]) -> None:
        listed = "; ".join(f"{d.field}: {d.a!r} vs {d.b!r}" for d in diffs[:4])
        more = f" (+{len(diffs) - 4} more)" if len(diffs) > 4 else ""
        super().__init__(
            f"{a} and {b} were measured under different conditions: {listed}{more}",
            hint="re-measure under the same conditions, or pass --force to compare anyway",
        )
        self.diffs = diffs


def condition_diffs(a: Snapshot, b: Snapshot) -> list[ConditionDiff]:
    diffs = [
        ConditionDiff(field=f, a=getattr(a, f), b=getattr(b, f))
        for f in _CONDITIONS
        if getattr(a, f) != getattr(b, f)
    ]
    pa = a.prompt.model_dump() if a.prompt else {}
    pb = b.prompt.model_dump() if b.prompt else {}
    if pa and pb:
        diffs += [
            ConditionDiff(field=f"prompt.{f}", a=pa.get(f), b=pb.get(f))
            for f in _PROMPT_CONDITIONS
            if pa.get(f) != pb.get(f)
        ]
    return diffs


def compare(a: EvalResult, b: EvalResult, *, force: bool = False) -> Comparison:
    """Deltas B − A per perf point and metric; status changes per suite."""
    diffs = condition_diffs(a.snapshot, b.snapshot)
    if diffs and not force:
        raise ConditionsDiffer(a.id, b.id, diffs)
    points_a, points_b = _points(a), _points(b)
    matched = [label for label in points_a if label in points_b]
    unmatched = sorted(set(points_a) ^ set(points_b))
    return Comparison(
        a=a.id,
        b=b.id,
        conditions_differ=diffs,
        points=[
            PointDelta(label=lbl, deltas=point_deltas(points_a[lbl], points_b[lbl]))
            for lbl in matched
        ],
        suites=[
            SuiteChange(suite=name, a=a.suites[name].status, b=b.suites[name].status)
            for name in a.suites
            if name in b.suites
        ],
        unmatched_points=unmatched,
    )


def _points(result: EvalResult) -> dict[str, PerfPoint]:
    perf = result.suites.get("perf")
    return {p.label: p for p in (perf.points or [])} if perf else {}


def point_deltas(a: PerfPoint, b: PerfPoint) -> list[MetricDelta]:
    deltas = []
    for metric in _LATENCIES:
        sa, sb = getattr(a, metric), getattr(b, metric)
        for stat in ("mean", "p50", "p90", "p99"):
            deltas.append(
                _delta(
                    f"{metric}.{stat}", getattr(sa, stat), getattr(sb, stat), lower_is_better=True
                )
            )
    deltas += [_delta(m, getattr(a, m), getattr(b, m), lower_is_better=False) for m in _RATES]
    deltas.append(_delta("errors", float(a.errors), float(b.errors), lower_is_better=True))
    return deltas


def _delta(metric: str, a: float, b: float, *, lower_is_better: bool) -> MetricDelta:
    delta = b - a
    pct = (delta / a * 100.0) if a else None
    better = None if delta == 0 else (delta < 0) == lower_is_better
    return MetricDelta(metric=metric, a=a, b=b, delta=delta, pct=pct, better=better)
