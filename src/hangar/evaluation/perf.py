"""The ``perf`` suite: a concurrency sweep or Poisson request rates, vLLM-bench style.

Requests go to ``/v1/completions`` with ``stream=True``,
``stream_options.include_usage`` and ``ignore_eos`` (vLLM's extension, so every
request generates exactly ``output_len`` tokens), as ``vllm bench serve
--backend vllm`` does. Metric definitions: :mod:`hangar.evaluation.metrics`.

How the client stays out of the measurement (docs/eval.md, "Fidelity and client overhead"):
* request bodies are built before the timed phase, and a request's clock starts when
  the SDK hands it to the transport (``client.on_request_sent``), where vLLM's starts;
* the stream is opened with the OpenAI SDK's ``with_streaming_response`` and its raw
  bytes are read here: each network read is timestamped with ``perf_counter`` the
  moment it returns, before any parsing, and the SSE events in it are decoded with
  ``json.loads`` only. The SDK's typed stream builds a pydantic model per chunk, which
  made the client cost 1.3-1.7x more CPU per chunk (bench/eval_client.py), CPU that a
  client sharing the server's machine takes from the server it measures;
* progress is reported at most ~20 times per point, between requests.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hangar.evaluation.client import Server, ServerError, describe, on_request_sent
from hangar.evaluation.metrics import RequestRecord, aggregate
from hangar.evaluation.progress import ProgressEvent, ProgressFn, no_progress
from hangar.evaluation.prompts import Prompt
from hangar.evaluation.results import PerfPoint

_PROGRESS_STEPS = 20


@dataclass(frozen=True)
class PerfOptions:
    concurrency: Sequence[int] = (1, 4, 16, 64)
    request_rate: Sequence[float] = ()  # when set, rate mode replaces the sweep
    burstiness: float = 1.0
    num_requests: int | None = None  # per point; None: max(16, 4 x concurrency)
    input_len: int = 128
    output_len: int = 64
    seed: int = 0
    warmup: int = 2
    slo_ms: dict[str, float] = field(default_factory=dict)

    def requests_for(self, concurrency: int | None) -> int:
        if self.num_requests is not None:
            return self.num_requests
        return max(16, 4 * (concurrency or 4))


@dataclass(frozen=True)
class PerfRequest:
    """One request, ready to send: the SDK keyword arguments and the prompt's length."""

    kwargs: dict[str, Any]
    prompt_tokens: int


def prepare(model: str, prompts: Sequence[Prompt], output_len: int) -> list[PerfRequest]:
    """Build every request before the timed phase (the body of ``vllm bench --backend vllm``)."""
    return [
        PerfRequest(
            kwargs={
                "model": model,
                "prompt": p.text,
                "max_tokens": output_len,
                "stream": True,
                "stream_options": {"include_usage": True},
                "extra_body": {"ignore_eos": True},
            },
            prompt_tokens=p.tokens,
        )
        for p in prompts
    ]


class SseEvents:
    """Incremental SSE decoder: bytes in, the ``data`` payload of each complete event out.

    Events end with a blank line; ``data:`` lines of one event are joined with a
    newline and comments (``:ping``) are skipped, as the SSE specification says.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        lines = (self._buffer + chunk).split(b"\n")
        self._buffer = lines.pop()  # an unterminated line waits for the next read
        events: list[bytes] = []
        for raw in lines:
            line = raw.rstrip(b"\r")
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                self._data.append(line[5:].lstrip(b" "))
        return events


class _Timing:
    """vLLM's per-request bookkeeping (endpoint_request_func.py), one call per event."""

    def __init__(self, record: RequestRecord, start: float) -> None:
        self.record = record
        self.start = self.last = start
        self.chunks = 0
        self.usage_tokens: int | None = None

    def sent(self) -> None:
        """The request leaves the SDK for the transport: vLLM's ``st``."""
        self.start = self.last = time.perf_counter()

    def event(self, payload: bytes, now: float) -> None:
        if payload == b"[DONE]":
            return
        data = json.loads(payload)
        if not isinstance(data, dict):
            raise ServerError(f"malformed response (SSE event is not an object: {payload[:80]!r})")
        if data.get("choices"):
            self._token(now)
        elif isinstance(usage := data.get("usage"), dict):
            self.usage_tokens = usage.get("completion_tokens")
            self.record.prompt_tokens = usage.get("prompt_tokens") or self.record.prompt_tokens
        elif "error" in data:
            raise ServerError(f"error event in the stream: {_error_text(data['error'])}")

    def _token(self, now: float) -> None:
        if self.chunks == 0:
            self.record.ttft = now - self.start
        else:
            self.record.itl.append(now - self.last)
        self.last, self.chunks = now, self.chunks + 1

    def finish(self) -> None:
        if self.chunks == 0:
            self.record.error = "never received a chunk with choices (no TTFT)"
            return
        self.record.latency = self.last - self.start
        self.record.output_tokens = self.chunks if self.usage_tokens is None else self.usage_tokens
        self.record.success = True


def _error_text(error: object) -> str:
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(str(message).split())[:300]


async def measure_request(server: Server, request: PerfRequest) -> RequestRecord:
    """Send one streamed completion and time it as vLLM's request function does."""
    record = RequestRecord(prompt_tokens=request.prompt_tokens)
    timing = _Timing(record, time.perf_counter())
    try:
        with on_request_sent(timing.sent):  # set before wait_for copies the context
            await asyncio.wait_for(_stream(server, request, timing), server.timeout)
    except Exception as exc:  # noqa: BLE001 - translated once by describe()
        record.success, record.error = False, describe(exc, server.timeout).detail
    return record


async def _stream(server: Server, request: PerfRequest, timing: _Timing) -> None:
    events = SseEvents()
    create = server.client.completions.with_streaming_response.create
    async with create(**request.kwargs) as response:
        async for chunk in response.iter_bytes():
            now = time.perf_counter()  # arrival time: taken before any parsing
            for payload in events.feed(chunk):
                timing.event(payload, now)
    timing.finish()


async def run_point(
    server: Server,
    model: str,
    prompts: Sequence[Prompt],
    options: PerfOptions,
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    progress: ProgressFn = no_progress,
) -> PerfPoint:
    """Measure one load level: ``concurrency`` in flight, or arrivals at ``request_rate``."""
    task = f"perf {'c=' + str(concurrency) if concurrency else f'rate={request_rate:g}/s'}"
    requests = prepare(model, prompts, options.output_len)
    limit = asyncio.Semaphore(concurrency) if concurrency else None
    report = _Progress(task, len(requests), progress)

    async def one(request: PerfRequest) -> RequestRecord:
        if limit is None:
            record = await measure_request(server, request)
        else:
            async with limit:
                record = await measure_request(server, request)
        report.one_done()
        return record

    start = time.perf_counter()
    tasks = []
    async for request in _arrivals(requests, request_rate, options.burstiness, options.seed):
        tasks.append(asyncio.create_task(one(request)))
    records = await asyncio.gather(*tasks)
    duration = time.perf_counter() - start
    return aggregate(
        records,
        duration,
        concurrency=concurrency,
        request_rate=request_rate,
        burstiness=options.burstiness if request_rate else None,
        slo_ms=options.slo_ms or None,
    )


class _Progress:
    """Forward progress at most ``_PROGRESS_STEPS`` times per point: the callback (a
    terminal renderer in the CLI) runs on the event loop that reads the streams."""

    def __init__(self, task: str, total: int, progress: ProgressFn) -> None:
        self.task, self.total, self.progress = task, total, progress
        self.done = 0
        self.step = max(1, total // _PROGRESS_STEPS)
        progress(ProgressEvent(task, 0, total))

    def one_done(self) -> None:
        self.done += 1
        if self.done % self.step == 0 or self.done == self.total:
            self.progress(ProgressEvent(self.task, self.done, self.total))


async def _arrivals(
    requests: Sequence[PerfRequest], rate: float | None, burstiness: float, seed: int
) -> AsyncIterator[PerfRequest]:
    """Yield requests at once (rate None) or with gamma-distributed gaps.

    As in vLLM's ``get_request``: shape = burstiness, scale = 1 / (rate x burstiness);
    burstiness 1 is a Poisson process, lower is burstier.
    """
    rng = random.Random(seed)
    for request in requests:
        yield request
        if rate:
            await asyncio.sleep(rng.gammavariate(burstiness, 1.0 / (rate * burstiness)))


async def warm_up(
    server: Server, model: str, prompts: Sequence[Prompt], options: PerfOptions
) -> list[str]:
    """Send ``warmup`` requests (not measured) at once; return their errors."""
    requests = prepare(model, prompts[: options.warmup], options.output_len)
    records = await asyncio.gather(*(measure_request(server, r) for r in requests))
    return [r.error for r in records if not r.success]
