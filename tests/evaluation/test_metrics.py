"""Metric arithmetic matches vLLM's calculate_metrics (numpy percentiles, TPOT, goodput)."""

from __future__ import annotations

import pytest

from hangar.evaluation.metrics import RequestRecord, aggregate, parse_slos, percentile


def test_percentile_is_numpys_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    # numpy.percentile(values, [50, 90, 99]) == [3.0, 7.6, 9.76]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 90) == pytest.approx(7.6)
    assert percentile(values, 99) == pytest.approx(9.76)
    assert percentile([], 99) == 0.0


def test_tpot_excludes_the_first_token_and_single_token_requests() -> None:
    records = [
        RequestRecord(
            success=True, ttft=0.1, latency=0.5, itl=[0.1] * 4, output_tokens=5, prompt_tokens=10
        ),
        RequestRecord(
            success=True, ttft=0.2, latency=0.2, itl=[], output_tokens=1, prompt_tokens=10
        ),
        RequestRecord(success=False, error="HTTP 500: boom"),
    ]
    point = aggregate(records, 2.0, concurrency=2, slo_ms={"ttft": 150.0})
    assert point.tpot_ms.mean == pytest.approx(
        100.0
    )  # (0.5 - 0.1) / (5 - 1) s, only the first request
    assert point.ttft_ms.mean == pytest.approx(150.0)
    assert point.itl_ms.mean == pytest.approx(100.0)
    assert (point.requests, point.completed, point.errors) == (3, 2, 1)
    assert point.output_tokens_per_s == pytest.approx(3.0)  # 6 tokens / 2 s
    assert point.total_tokens_per_s == pytest.approx(13.0)  # (20 + 6) / 2 s
    assert point.requests_per_s == pytest.approx(1.0)
    assert point.goodput_requests_per_s == pytest.approx(
        0.5
    )  # only the 100 ms TTFT request meets 150 ms
    assert point.error_samples == ["HTTP 500: boom"]


def test_slo_parsing() -> None:
    assert parse_slos("ttft:500,tpot:50 e2el:2000") == {"ttft": 500.0, "tpot": 50.0, "e2el": 2000.0}
    with pytest.raises(ValueError, match="KEY:MS"):
        parse_slos("latency:5")
