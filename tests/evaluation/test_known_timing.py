"""`hangar eval --suite perf` against a server whose timing is known (tests/support/timed_server).

The server sends the first token 2 s after a request arrives, one token every 500 ms
after it, and the usage chunk and [DONE] 500 ms after the last token, so every figure
of the point is known before the run: TTFT = 2000 ms, TPOT = ITL = 500 ms,
E2E = 2000 + (4 - 1) x 500 = 3500 ms (to the last token, not the end of the stream), and
4 requests at concurrency 2 take 2 x (3500 + 500) = 8 s. One pass, no retries: the real
CLI (a subprocess) must land within 5 % of each value, median, p90 and mean alike. A
wrong definition (TTFT from the response headers, TPOT over n instead of n - 1, ITL or
E2E counting the usage chunk, the duration from the first token or of one wave) is off
by 12-100 %.

Why delays this long, and nice -10: on this shared 2-core box at load 12-20 (other
engineers' vLLM servers), a sleeping process wakes 5-75 ms late, on the server (each
token's sleep) and on the client (from the SDK's request hook to the socket write:
0.5-17 ms, traced with httpcore's write). At 200 ms / 50 ms that was TTFT +10-16 % and
ITL p90 +15 % in a raw-socket client as well as in Hangar's; at 1 s / 250 ms up to +5 %
(TTFT p90), +7 % (ITL p90) and -5 % (throughput) at load 18, and +1.6 % / +1.5 % / -0.8 %
with the server threads and the CLI at nice -10 (root only; without it the 2 s / 500 ms
schedule keeps the same delays at half the share). About 10 s.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.timed_server import TimedServer, Timing

from hangar.proc import run

TIMING = Timing(ttft_s=2.0, itl_s=0.5, tail_s=0.5)
INPUT_LEN, OUTPUT_LEN = 16, 4
CONCURRENCY = (2,)  # two waves of two: the duration spans both
REQUESTS = 4
TOLERANCE = 0.05
NICE = -10  # server threads and the CLI, when run as root (see the module docstring)


@pytest.fixture(scope="module")
def timed() -> Iterator[TimedServer]:
    server = TimedServer(TIMING, nice=NICE).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def points(timed: TimedServer, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """One `hangar eval --suite perf` run, both points; concurrency -> the point's JSON."""
    env = dict(os.environ, HANGAR_HOME=str(tmp_path_factory.mktemp("timed-home")))
    nice = ["nice", "-n", str(NICE)] if shutil.which("nice") and os.geteuid() == 0 else []
    argv = [*nice, sys.executable, "-m", "hangar", "eval", timed.url, "--suite", "perf", "--json"]
    argv += ["--concurrency", ",".join(map(str, CONCURRENCY)), "--num-requests", str(REQUESTS)]
    argv += ["--input-len", str(INPUT_LEN), "--output-len", str(OUTPUT_LEN), "--no-store"]
    done = run(argv, env=env, timeout=120.0, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["suites"]["perf"]["status"] == "pass", result["suites"]["perf"]
    assert result["snapshot"]["prompt"]["tokenizer"] == "server"  # /tokenize + /detokenize
    return {p["concurrency"]: p for p in result["suites"]["perf"]["points"]}


def _within(measured: float, known: float) -> bool:
    return abs(measured - known) <= TOLERANCE * known


def test_request_counts_and_tokens_are_exact(points: dict[int, Any]) -> None:
    assert sorted(points) == list(CONCURRENCY)
    for point in points.values():
        assert (point["requests"], point["completed"], point["errors"]) == (REQUESTS, REQUESTS, 0)
        assert point["output_tokens"] == REQUESTS * OUTPUT_LEN  # from the usage chunk
        assert point["input_tokens"] == REQUESTS * INPUT_LEN  # exact lengths via /tokenize


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_latencies_are_the_servers_schedule(points: dict[int, Any], concurrency: int) -> None:
    point = points[concurrency]
    known = {
        "ttft_ms": TIMING.ttft_s * 1000,
        "tpot_ms": TIMING.itl_s * 1000,
        "itl_ms": TIMING.itl_s * 1000,
        "e2e_ms": TIMING.e2e_s(OUTPUT_LEN) * 1000,
    }
    off = {
        f"{metric} {stat}": (round(point[metric][stat], 2), value)
        for metric, value in known.items()
        for stat in ("p50", "p90", "mean")
        if not _within(point[metric][stat], value)
    }
    assert not off, f"concurrency {concurrency}: (measured, known) outside 5 %: {off}"


@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_throughput_is_tokens_over_the_known_duration(
    points: dict[int, Any], concurrency: int
) -> None:
    point = points[concurrency]
    # a slot frees when a stream ends: the usage chunk comes tail_s after the last token
    duration = math.ceil(REQUESTS / concurrency) * TIMING.stream_s(OUTPUT_LEN)
    known = {
        "requests_per_s": REQUESTS / duration,
        "output_tokens_per_s": REQUESTS * OUTPUT_LEN / duration,
        "total_tokens_per_s": REQUESTS * (INPUT_LEN + OUTPUT_LEN) / duration,
    }
    off = {
        k: (round(point[k], 2), round(v, 2)) for k, v in known.items() if not _within(point[k], v)
    }
    assert not off, f"concurrency {concurrency}: (measured, known) outside 5 %: {off}"
