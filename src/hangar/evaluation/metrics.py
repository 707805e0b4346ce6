"""Performance metrics, defined exactly as vLLM's ``vllm bench serve``.

Sources: ``vllm/benchmarks/lib/endpoint_request_func.py`` (per request, streaming)
and ``vllm/benchmarks/serve.py:calculate_metrics`` (aggregation).

Per request (timestamps from ``time.perf_counter``, ``start`` taken just before
the request is sent):
* **TTFT** = time of the first streamed chunk that carries ``choices`` − start.
* **ITL** = the gaps between consecutive ``choices`` chunks (one list per request).
* **E2E latency** = time of the last ``choices`` chunk − start (the usage chunk
  and ``[DONE]`` do not count).
* **output tokens** = ``usage.completion_tokens`` from the final usage chunk
  (``stream_options.include_usage``); if the server sends none, the number of
  content chunks.
* **TPOT** = (E2E − TTFT) / (output tokens − 1), only for requests with more than
  one output token (vLLM leaves the others out of the TPOT statistics).

Per load level (only successful requests enter the statistics):
* **duration** = wall time from the first request sent to the last one finished.
* **request throughput** = completed / duration.
* **output token throughput** = Σ output tokens / duration.
* **total token throughput** = (Σ input tokens + Σ output tokens) / duration.
* **ITL statistics** pool every gap of every request.
* **mean / p50 / p90 / p99** are numpy's ``mean`` and ``percentile`` (linear
  interpolation), in milliseconds; an empty list gives 0 like ``np.mean(x or 0)``.
* **goodput** = requests meeting every SLO (``ttft``, ``tpot``, ``e2el`` in ms)
  / duration; for goodput a request with ≤ 1 output token has TPOT 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hangar.evaluation.results import PerfPoint, Stats

SLO_KEYS = ("ttft", "tpot", "e2el")


@dataclass
class RequestRecord:
    """What one streamed request measured (seconds)."""

    success: bool = False
    ttft: float = 0.0
    latency: float = 0.0
    itl: list[float] = field(default_factory=list)
    output_tokens: int = 0
    prompt_tokens: int = 0
    error: str = ""

    @property
    def tpot(self) -> float | None:
        if self.output_tokens > 1:
            return (self.latency - self.ttft) / (self.output_tokens - 1)
        return None


def percentile(values: Sequence[float], q: float) -> float:
    """numpy.percentile with the default 'linear' method."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def stats_ms(values_s: Sequence[float]) -> Stats:
    ms = [v * 1000.0 for v in values_s]
    mean = sum(ms) / len(ms) if ms else 0.0
    return Stats(mean=mean, p50=percentile(ms, 50), p90=percentile(ms, 90), p99=percentile(ms, 99))


def meets_slo(record: RequestRecord, slo_ms: Mapping[str, float]) -> bool:
    values = {"ttft": record.ttft, "tpot": record.tpot or 0.0, "e2el": record.latency}
    return all(values[key] * 1000.0 <= limit for key, limit in slo_ms.items())


def aggregate(
    records: Sequence[RequestRecord],
    duration_s: float,
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    burstiness: float | None = None,
    slo_ms: Mapping[str, float] | None = None,
) -> PerfPoint:
    """Turn per-request records into one :class:`PerfPoint` (vLLM's calculate_metrics)."""
    done = [r for r in records if r.success]
    input_tokens = sum(r.prompt_tokens for r in done)
    output_tokens = sum(r.output_tokens for r in done)
    tpots = [t for r in done if (t := r.tpot) is not None]
    duration = max(duration_s, 1e-9)
    good = sum(1 for r in done if meets_slo(r, slo_ms)) if slo_ms else None
    return PerfPoint(
        concurrency=concurrency,
        request_rate=request_rate,
        burstiness=burstiness,
        requests=len(records),
        completed=len(done),
        errors=len(records) - len(done),
        duration_s=duration_s,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        ttft_ms=stats_ms([r.ttft for r in done]),
        tpot_ms=stats_ms(tpots),
        itl_ms=stats_ms([gap for r in done for gap in r.itl]),
        e2e_ms=stats_ms([r.latency for r in done]),
        output_tokens_per_s=output_tokens / duration,
        total_tokens_per_s=(input_tokens + output_tokens) / duration,
        requests_per_s=len(done) / duration,
        goodput_requests_per_s=None if good is None else good / duration,
        error_samples=_error_samples(records),
        samples={
            "ttft_ms": [r.ttft * 1000.0 for r in done],
            "tpot_ms": [t * 1000.0 for t in tpots],
            "e2e_ms": [r.latency * 1000.0 for r in done],
        },
    )


def _error_samples(records: Sequence[RequestRecord], limit: int = 5) -> list[str]:
    seen: list[str] = []
    for record in records:
        if not record.success and record.error not in seen:
            seen.append(record.error)
    return seen[:limit]


def parse_slos(text: str | None) -> dict[str, float]:
    """``"ttft:500,tpot:50"`` -> {"ttft": 500.0, "tpot": 50.0} (ms; keys as vLLM's --goodput)."""
    if not text:
        return {}
    slos: dict[str, float] = {}
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        key, _, value = part.partition(":")
        if key not in SLO_KEYS or not value:
            raise ValueError(f"'{part}': expected KEY:MS with KEY one of {', '.join(SLO_KEYS)}")
        slos[key] = float(value)
    return slos
