"""How much CPU does Hangar's perf client spend per streamed chunk, against a raw client?

Serves the streaming fake (tests/evaluation/fake_server.py) in a separate process, one
token every ``--token-delay-ms``, and streams the same completions (``ignore_eos``,
``--output-len`` chunks each) with:
* ``raw``: asyncio sockets, one read per arrival and a byte count, the cheapest client;
* ``sdk-typed``: the OpenAI SDK's typed stream (``async for chunk in stream``, one
  pydantic model per chunk), the perf client before it read the SSE bytes itself;
* ``hangar``: ``hangar.evaluation.perf.run_point`` as ``hangar eval`` runs it.

The figure that matters is the client's own CPU time per chunk (``time.process_time``),
not the wall time: on a shared box every CPU-µs the client spends is taken from the
server it measures (docs/eval.md, "Client overhead"). Each row also gives the ratio to
``raw`` measured in the same run. Usage: ``python bench/eval_client.py [--output-len 64] [--token-delay-ms 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from hangar.evaluation.client import Server
from hangar.evaluation.perf import PerfOptions, run_point
from hangar.evaluation.prompts import Prompt
from hangar.evaluation.target import resolve_target

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "evaluation" / "fake_server.py"
MODEL = "fake-model"

Client = Callable[[str, int, int, int], Coroutine[Any, Any, int]]


# socketserver's listen backlog of 5 resets connections when 32 clients connect at once.
SERVE = f"""
import sys; sys.path.insert(0, {str(FAKE.parent)!r})
from fake_server import Behaviour, FakeServer
FakeServer.request_queue_size = 256
server = FakeServer(0, Behaviour(token_delay_s=float(sys.argv[1])))
print(server.url, flush=True)
server.serve_forever()
"""


def start_fake(token_delay_s: float) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-c", SERVE, str(token_delay_s)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    urllib.request.urlopen(f"{url}/v1/models", timeout=5).read()
    return proc, url


def body(i: int, output_len: int) -> dict[str, object]:
    return {
        "model": MODEL,
        "prompt": f"p{i} hello",
        "max_tokens": output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
    }


async def _limited(n: int, concurrency: int, one: Callable[[int], Awaitable[int]]) -> int:
    limit = asyncio.Semaphore(concurrency)

    async def run(i: int) -> int:
        async with limit:
            return await one(i)

    return sum(await asyncio.gather(*(run(i) for i in range(n))))


async def raw_client(url: str, n: int, concurrency: int, output_len: int) -> int:
    port = int(url.rsplit(":", 1)[1])

    async def one(i: int) -> int:
        data = json.dumps(body(i, output_len)).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        chunks = 0
        while block := await reader.read(65536):
            time.perf_counter()  # the one timestamp per read that any client takes
            chunks += block.count(b'"text"')
        writer.close()
        return chunks

    return await _limited(n, concurrency, one)


async def sdk_typed_client(url: str, n: int, concurrency: int, output_len: int) -> int:
    server = Server(resolve_target(url), timeout=120)

    async def one(i: int) -> int:
        kwargs = body(i, output_len)
        extra = {"ignore_eos": kwargs.pop("ignore_eos")}
        stream = await server.client.completions.create(**kwargs, extra_body=extra)
        chunks = 0
        async for chunk in stream:
            time.perf_counter()
            chunks += 1 if chunk.choices else 0
        return chunks

    try:
        return await _limited(n, concurrency, one)
    finally:
        await server.close()


async def hangar_client(url: str, n: int, concurrency: int, output_len: int) -> int:
    server = Server(resolve_target(url), timeout=120)
    prompts = [Prompt(text=f"p{i} hello", tokens=2) for i in range(n)]
    options = PerfOptions(output_len=output_len, warmup=0)
    try:
        point = await run_point(server, MODEL, prompts, options, concurrency=concurrency)
    finally:
        await server.close()
    return point.output_tokens


def cpu_per_chunk_us(client: Client, url: str, n: int, concurrency: int, output_len: int) -> float:
    start = time.process_time()
    chunks = asyncio.run(client(url, n, concurrency, output_len))
    if chunks != n * output_len:
        raise RuntimeError(f"{client.__name__}: {chunks} chunks, expected {n * output_len}")
    return (time.process_time() - start) / chunks * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument(
        "--token-delay-ms",
        type=float,
        default=2.0,
        help="gap between streamed tokens; 2 ms paces chunks like a small model's decode "
        "(one chunk per read), 0 streams as fast as possible (several chunks per read)",
    )
    args = parser.parse_args()
    clients: dict[str, Client] = {
        "raw": raw_client,
        "sdk-typed": sdk_typed_client,
        "hangar": hangar_client,
    }
    proc, url = start_fake(args.token_delay_ms / 1000.0)
    try:
        asyncio.run(hangar_client(url, 2, 2, 4))  # imports and first-call costs out of the way
        print(f"{'concurrency':>11} " + " ".join(f"{name + ' us/chunk':>20}" for name in clients))
        for concurrency in (1, 8, 32):
            cost = {
                name: cpu_per_chunk_us(client, url, args.requests, concurrency, args.output_len)
                for name, client in clients.items()
            }
            cells = [
                f"{cost[name]:>9.1f} ({cost[name] / cost['raw']:4.1f}x raw)" for name in clients
            ]
            print(f"{concurrency:>11} " + " ".join(f"{c:>20}" for c in cells))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
