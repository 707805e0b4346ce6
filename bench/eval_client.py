"""How much does Hangar's perf client (async OpenAI SDK, streaming) cost per token?

Serves the trivial streaming fake (tests/evaluation/fake_server.py, zero delay
between tokens) in a separate process, then streams the same completions two ways:
* raw: asyncio sockets and byte counting, the cheapest client possible;
* hangar: ``hangar.evaluation.perf.run_point`` (SDK parsing + vLLM-style timing).
The chunk rate of each, and the difference in per-chunk cost, tell whether the
client could ever be the bottleneck: a real server's per-request decode rate is
far below either figure. Usage: ``python bench/eval_client.py [--output-len 256]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from hangar.evaluation.client import Server
from hangar.evaluation.perf import PerfOptions, run_point
from hangar.evaluation.prompts import Prompt
from hangar.evaluation.target import resolve_target

REPO = Path(__file__).resolve().parents[1]
FAKE = REPO / "tests" / "evaluation" / "fake_server.py"


def start_fake() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(FAKE), "0"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    urllib.request.urlopen(f"{url}/v1/models", timeout=5).read()
    return proc, url


async def raw_request(port: int, body: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    data = await reader.read()
    writer.close()
    return data.count(b"data: {")


async def raw_point(url: str, n: int, concurrency: int, output_len: int) -> tuple[float, int]:
    port = int(url.rsplit(":", 1)[1])
    limit = asyncio.Semaphore(concurrency)

    async def one(i: int) -> int:
        body = json.dumps(
            {
                "model": "fake-model",
                "prompt": f"p{i} hello",
                "max_tokens": output_len,
                "stream": True,
                "ignore_eos": True,
            }
        ).encode()
        async with limit:
            return await raw_request(port, body)

    start = time.perf_counter()
    chunks = sum(await asyncio.gather(*(one(i) for i in range(n))))
    return time.perf_counter() - start, chunks


async def hangar_point(
    url: str, n: int, concurrency: int, output_len: int
) -> tuple[float, int, float]:
    server = Server(resolve_target(url), timeout=120)
    prompts = [Prompt(text=f"p{i} hello", tokens=2) for i in range(n)]
    options = PerfOptions(output_len=output_len, warmup=0)
    point = await run_point(server, "fake-model", prompts, options, concurrency=concurrency)
    await server.close()
    return point.duration_s, point.output_tokens, point.itl_ms.mean


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--requests", type=int, default=32)
    args = parser.parse_args()
    proc, url = start_fake()
    try:
        print(
            f"{'concurrency':>11} {'raw chunks/s':>13} {'hangar tok/s':>13} {'hangar ITL ms':>14} "
            f"{'client cost us/chunk':>21}"
        )
        for concurrency in (1, 8, 32):
            raw_s, raw_chunks = asyncio.run(
                raw_point(url, args.requests, concurrency, args.output_len)
            )
            h_s, h_tokens, itl = asyncio.run(
                hangar_point(url, args.requests, concurrency, args.output_len)
            )
            extra_us = (h_s / h_tokens - raw_s / raw_chunks) * 1e6
            print(
                f"{concurrency:>11} {raw_chunks / raw_s:>13.0f} {h_tokens / h_s:>13.0f} {itl:>14.3f} "
                f"{extra_us:>21.1f}"
            )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
