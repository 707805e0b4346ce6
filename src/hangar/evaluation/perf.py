"""The ``perf`` suite: a concurrency sweep or Poisson request rates, vLLM-bench style.

Requests go to ``/v1/completions`` with ``stream=True``,
``stream_options.include_usage`` and ``ignore_eos`` (vLLM's extension, so every
request generates exactly ``output_len`` tokens), as ``vllm bench serve
--backend vllm`` does. Metric definitions: :mod:`hangar.evaluation.metrics`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from hangar.evaluation.client import Server, describe
from hangar.evaluation.metrics import RequestRecord, aggregate
from hangar.evaluation.progress import ProgressEvent, ProgressFn, no_progress
from hangar.evaluation.prompts import Prompt
from hangar.evaluation.results import PerfPoint


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


async def measure_request(
    server: Server, model: str, prompt: Prompt, output_len: int
) -> RequestRecord:
    """Send one streamed completion and time it as vLLM's request function does."""
    record = RequestRecord(prompt_tokens=prompt.tokens)
    start = time.perf_counter()
    try:
        await asyncio.wait_for(
            _stream(server, model, prompt, output_len, record, start), server.timeout
        )
    except Exception as exc:  # noqa: BLE001 - translated once by describe()
        record.success, record.error = False, describe(exc, server.timeout).detail
    return record


async def _stream(
    server: Server, model: str, prompt: Prompt, output_len: int, record: RequestRecord, start: float
) -> None:
    stream = await server.client.completions.create(
        model=model,
        prompt=prompt.text,
        max_tokens=output_len,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    last = start
    chunks = 0
    usage_tokens: int | None = None
    async for chunk in stream:
        if chunk.choices:
            now = time.perf_counter()
            if chunks == 0:
                record.ttft = now - start
            else:
                record.itl.append(now - last)
            last, chunks = now, chunks + 1
        elif chunk.usage is not None:
            usage_tokens = chunk.usage.completion_tokens
            record.prompt_tokens = chunk.usage.prompt_tokens or record.prompt_tokens
    if chunks == 0:
        record.error = "never received a chunk with choices (no TTFT)"
        return
    record.latency = last - start
    record.output_tokens = usage_tokens if usage_tokens is not None else chunks
    record.success = True


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
    limit = asyncio.Semaphore(concurrency) if concurrency else None
    done = 0
    progress(ProgressEvent(task, 0, len(prompts)))

    async def one(prompt: Prompt) -> RequestRecord:
        nonlocal done
        if limit is None:
            record = await measure_request(server, model, prompt, options.output_len)
        else:
            async with limit:
                record = await measure_request(server, model, prompt, options.output_len)
        done += 1
        progress(ProgressEvent(task, done, len(prompts)))
        return record

    start = time.perf_counter()
    tasks = []
    async for prompt in _arrivals(prompts, request_rate, options.burstiness, options.seed):
        tasks.append(asyncio.create_task(one(prompt)))
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


async def _arrivals(
    prompts: Sequence[Prompt], rate: float | None, burstiness: float, seed: int
) -> AsyncIterator[Prompt]:
    """Yield prompts at once (rate None) or with gamma-distributed gaps.

    As in vLLM's ``get_request``: shape = burstiness, scale = 1 / (rate x burstiness);
    burstiness 1 is a Poisson process, lower is burstier.
    """
    rng = random.Random(seed)
    for prompt in prompts:
        yield prompt
        if rate:
            await asyncio.sleep(rng.gammavariate(burstiness, 1.0 / (rate * burstiness)))


async def warm_up(
    server: Server, model: str, prompts: Sequence[Prompt], options: PerfOptions
) -> list[str]:
    """Send ``warmup`` requests (not measured); return their errors."""
    records = await asyncio.gather(
        *(measure_request(server, model, p, options.output_len) for p in prompts[: options.warmup])
    )
    return [r.error for r in records if not r.success]
