"""Metric arithmetic matches vLLM's calculate_metrics (numpy percentiles, TPOT, goodput),
and the perf client times chunks as vLLM's request function does."""

from __future__ import annotations

import asyncio

import pytest
from fake_server import MODEL, FakeServer

from hangar.evaluation.client import Server, ServerError, on_request_sent
from hangar.evaluation.metrics import RequestRecord, aggregate, parse_slos, percentile
from hangar.evaluation.perf import SseEvents, _Timing, measure_request, prepare
from hangar.evaluation.prompts import Prompt
from hangar.evaluation.target import resolve_target


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


# -- the perf client's stream reading (hangar.evaluation.perf) ----------------------------


def test_sse_events_survive_any_split_of_the_stream() -> None:
    stream = (
        b'data: {"choices": [{"text": "a"}]}\n\n'
        b": ping\n\n"
        b'data: {"choices": [{"text": "b"}]}\r\n\r\n'
        b"data: first line\ndata: second line\n\n"
        b"data: [DONE]\n\n"
    )
    expected = [
        b'{"choices": [{"text": "a"}]}',
        b'{"choices": [{"text": "b"}]}',
        b"first line\nsecond line",
        b"[DONE]",
    ]
    for cut in range(1, len(stream)):
        events = SseEvents()
        assert events.feed(stream[:cut]) + events.feed(stream[cut:]) == expected, cut


def _timed(reads: list[tuple[float, bytes]], start: float = 10.0) -> RequestRecord:
    record = RequestRecord(prompt_tokens=7)
    timing, events = _Timing(record, start), SseEvents()
    for now, chunk in reads:
        for payload in events.feed(chunk):
            timing.event(payload, now)
    timing.finish()
    return record


def _token(text: str) -> bytes:
    return b'data: {"choices": [{"index": 0, "text": "' + text.encode() + b'"}]}\n\n'


def test_chunks_are_timed_by_the_read_that_brought_them() -> None:
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 3}}\n\n'
    record = _timed(
        [
            (10.5, _token("a")),
            (10.75, _token("b") + _token("c")),
            (11.0, usage + b"data: [DONE]\n\n"),
        ]
    )
    assert record.success
    assert record.ttft == pytest.approx(0.5)
    assert record.itl == pytest.approx([0.25, 0.0])  # b and c arrived together
    assert record.latency == pytest.approx(0.75)  # the usage chunk and [DONE] do not count
    assert (record.output_tokens, record.prompt_tokens) == (3, 8)
    assert record.tpot == pytest.approx(0.125)


def test_a_stream_without_usage_counts_chunks_and_one_without_choices_fails() -> None:
    assert _timed([(10.5, _token("a")), (10.6, _token("b"))]).output_tokens == 2
    empty = _timed([(10.5, b"data: [DONE]\n\n")])
    assert not empty.success and "no TTFT" in empty.error


def test_an_error_event_in_the_stream_fails_the_request() -> None:
    event = b'data: {"error": {"message": "EngineCore died", "code": 500}}\n\n'
    with pytest.raises(ServerError, match="error event in the stream: EngineCore died"):
        _timed([(10.5, _token("a") + event)])


def test_the_send_hook_fires_once_per_request_in_its_own_context(fake: FakeServer) -> None:
    """perf's clock starts where vLLM's does: when the SDK hands the request to httpx."""
    sent: list[str] = []

    async def one(server: Server, name: str) -> None:
        with on_request_sent(lambda: sent.append(name)):
            await server.client.completions.create(model=MODEL, prompt="hi", max_tokens=2)

    async def main() -> list[RequestRecord]:
        server = Server(resolve_target(fake.url), timeout=10)
        try:
            await asyncio.gather(one(server, "a"), one(server, "b"))
            await server.client.models.list()  # outside any on_request_sent: no call
            requests = prepare(MODEL, [Prompt(text="p hello", tokens=2)], output_len=4)
            return [await measure_request(server, r) for r in requests]
        finally:
            await server.close()

    records = asyncio.run(main())
    assert sorted(sent) == ["a", "b"]
    assert records[0].success and records[0].output_tokens == 4 and len(records[0].itl) == 3
