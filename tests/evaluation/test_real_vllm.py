"""Suites, CLI and fidelity against ONE real CPU vLLM server (tiny random Llama).

The server (conftest.vllm_server) has ``--enable-auto-tool-choice
--tool-call-parser hermes --reasoning-parser deepseek_r1``. With that parser the
random model's whole output is reasoning, so tool calls and json_schema output come
back empty: those suites must run against the configured parser and fail with a
clear detail (their passing paths are covered by the fake server).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import SERVED_NAME, RealServer

from hangar.cli.eval import eval as eval_cmd
from hangar.cli.report import report
from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target
from hangar.evaluation.results import PerfPoint
from hangar.proc import run

pytestmark = pytest.mark.slow

# Fidelity: same prompt lengths, concurrency, count, seed and warm-up for both clients.
FIDELITY = {"input_len": 64, "output_len": 32, "concurrency": 4, "num_requests": 32, "seed": 0}
WARMUP = 4
# One pass (one `vllm bench serve` run, then one Hangar run, no retries) must agree within
# these shares of vLLM's figure. Why these values, and the self-spread measurement still
# owed on an idle box (the loaded box gave 3x): docs/testing.md, "Fidelity tolerance".
TOLERANCE = {"p50": 0.10, "p90": 0.15, "throughput": 0.10}
# vllm bench's result keys for each Hangar metric.
BENCH_KEYS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2el"}
SERVER_NICE = 10


def invoke(command: click.Command, args: list[str]) -> int:
    return int(command.main(args=args, prog_name="hangar", standalone_mode=False) or 0)


def suites_of(server: RealServer, suites: list[str], **target: object) -> dict:  # type: ignore[type-arg]
    resolved = resolve_target(server.url, **target)  # type: ignore[arg-type]
    return evaluate(resolved, EvalOptions(suites=suites, timeout=120.0)).contract()


def by_name(suite: dict) -> dict[str, dict]:  # type: ignore[type-arg]
    return {c["name"]: c for c in suite["checks"]}


def test_functional_suites_with_parsers(vllm_server: RealServer) -> None:
    result = suites_of(
        vllm_server,
        ["smoke", "tools", "reasoning", "vision", "structured", "logs"],
        tool_call_parser="hermes",
        reasoning_parser="deepseek_r1",
        log_path=vllm_server.log_path,
    )
    suites = result["suites"]
    assert suites["smoke"]["status"] == "pass", suites["smoke"]
    assert result["snapshot"]["engine_version"].startswith("0.32.0")
    assert suites["tools"]["status"] in {"pass", "fail"}  # configured: requests were sent
    assert by_name(suites["tools"])["tool_choice=auto"]["status"] == "pass"
    assert suites["reasoning"]["status"] == "pass", suites["reasoning"]
    assert suites["vision"]["status"] == "skipped"
    assert "not multimodal" in suites["vision"]["checks"][0]["detail"]
    assert suites["structured"]["status"] in {"pass", "fail"}
    assert suites["structured"]["checks"][0]["detail"]  # names what came back
    assert suites["logs"]["summary"]["kv_cache_tokens"] == "2,097,152"
    assert suites["logs"]["summary"]["errors"] == 0


def test_without_parsers_nothing_tool_related_is_sent(vllm_server: RealServer) -> None:
    suites = suites_of(vllm_server, ["tools", "reasoning"])["suites"]
    assert suites["tools"]["status"] == "not configured"
    assert suites["reasoning"]["status"] == "not configured"


def test_cli_perf_store_and_report(
    vllm_server: RealServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        vllm_server.url,
        "--suite",
        "smoke,perf",
        "--json",
        "--concurrency",
        "1,4",
        "--num-requests",
        "8",
        "--input-len",
        "32",
        "--output-len",
        "16",
        "--goodput",
        "ttft:60000",
    ]
    assert invoke(eval_cmd, args) == 0
    data = json.loads(capsys.readouterr().out)
    points = data["suites"]["perf"]["points"]
    assert [p["concurrency"] for p in points] == [1, 4]
    assert all(p["errors"] == 0 and p["output_tokens"] == 8 * 16 for p in points)
    assert all(p["input_tokens"] == 8 * 32 for p in points)  # exact lengths via /tokenize
    assert data["snapshot"]["prompt"]["tokenizer"] == "server"
    assert points[0]["goodput_requests_per_s"] == pytest.approx(points[0]["requests_per_s"])
    out = tmp_path / "report.html"
    assert invoke(report, [data["id"], "-o", str(out)]) == 0
    assert "TTFT" in out.read_text()


def _vllm_bench(server: RealServer, result_dir: Path) -> dict:  # type: ignore[type-arg]
    argv = [
        str(server.python.with_name("vllm")),
        "bench",
        "serve",
        "--backend",
        "vllm",
        "--base-url",
        server.url,
        "--model",
        SERVED_NAME,
        "--tokenizer",
        str(server.model_dir),
        "--dataset-name",
        "random",
        "--random-input-len",
        str(FIDELITY["input_len"]),
        "--random-output-len",
        str(FIDELITY["output_len"]),
        "--num-prompts",
        str(FIDELITY["num_requests"]),
        "--max-concurrency",
        str(FIDELITY["concurrency"]),
        "--seed",
        str(FIDELITY["seed"]),
        "--num-warmups",
        str(WARMUP),
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--result-dir",
        str(result_dir),
        "--result-filename",
        "bench.json",
    ]
    run(argv, env=server.env, timeout=400)
    return dict(json.loads((result_dir / "bench.json").read_text()))


def _hangar_point(server: RealServer) -> PerfPoint:
    perf = PerfOptions(
        concurrency=[FIDELITY["concurrency"]],
        num_requests=FIDELITY["num_requests"],
        input_len=FIDELITY["input_len"],
        output_len=FIDELITY["output_len"],
        seed=FIDELITY["seed"],
        warmup=WARMUP,
    )
    result = evaluate(
        resolve_target(server.url), EvalOptions(suites=["perf"], perf=perf, timeout=120.0)
    )
    return result.suites["perf"].points[0]  # type: ignore[index]


def _listening_pid(port: int) -> int:
    """The process that listens on 127.0.0.1:``port`` (from /proc, Linux only)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in inodes for fd in fd_dir.iterdir()):
                return int(fd_dir.parent.name)
        except OSError:  # a process that exited or is not ours
            continue
    raise LookupError(f"nothing listens on port {port}")


def _deprioritize_server(server: RealServer) -> None:
    """Lower the CPU priority of the server's processes below the benchmark clients'.

    Raising niceness needs no privilege. The server runs in its own session (its own
    autogroup when the kernel groups by session), so both the tasks' nice value and the
    autogroup's are raised; a kernel without autogroups has no /proc/PID/autogroup.
    """
    pid = _listening_pid(int(server.url.rsplit(":", 1)[1]))
    os.setpriority(os.PRIO_PGRP, os.getpgid(pid), SERVER_NICE)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(SERVER_NICE))


def fidelity_figures(
    bench: dict[str, Any], point: PerfPoint
) -> dict[str, tuple[float, float, float]]:
    """figure -> (Hangar's, vllm bench's, tolerance): p50 and p90 of the four latencies
    and the three throughputs, as both tools define them (hangar.evaluation.metrics)."""
    figures: dict[str, tuple[float, float, float]] = {}
    for ours, theirs in BENCH_KEYS.items():
        stats = getattr(point, f"{ours}_ms")
        figures[f"{ours} p50"] = (stats.p50, float(bench[f"median_{theirs}_ms"]), TOLERANCE["p50"])
        figures[f"{ours} p90"] = (stats.p90, float(bench[f"p90_{theirs}_ms"]), TOLERANCE["p90"])
    for ours, theirs in (
        ("output_tokens_per_s", "output_throughput"),
        ("total_tokens_per_s", "total_token_throughput"),
        ("requests_per_s", "request_throughput"),
    ):
        figures[ours] = (getattr(point, ours), float(bench[theirs]), TOLERANCE["throughput"])
    return figures


@pytest.mark.skipif(
    os.environ.get("HANGAR_TEST_FIDELITY") != "1",
    reason="timing fidelity vs `vllm bench serve` (~100 s): HANGAR_TEST_FIDELITY=1 runs it; "
    "kept out of CI's 30-minute budget",
)
def test_fidelity_against_vllm_bench_serve(vllm_server: RealServer, tmp_path: Path) -> None:
    """Hangar's perf suite and ``vllm bench serve`` agree on one server, in one pass.

    Why the server is deprioritized: on a 2-core box the server's three busy processes
    (the API server, the engine core and the CPU worker, the last two spin-waiting on
    their shared-memory queue for 1 s after each message) keep both cores busy. A client
    in another session then waits 60-300 ms for a core after each wake-up, its socket
    fills, and every chunk of a stream is read at once: TTFT x10, ITL p50 ~0, in any
    asyncio client, vllm bench included. With the server at nice 10 the clients run when
    they need to, as a benchmark client does on its own machine.

    The tolerances (TOLERANCE): docs/testing.md, "Fidelity tolerance" (alternated
    medians of the two tools agreed within 1-8 % on the idle box); a wrong definition or
    a starved client is off by 2-10x (TTFT 109 vs 17 ms, TPOT 1.3 vs 2.3 ms before the server was
    deprioritized), far outside them.
    """
    _deprioritize_server(vllm_server)
    bench = _vllm_bench(vllm_server, tmp_path / "bench")
    point = _hangar_point(vllm_server)
    assert point.completed == bench["completed"] == FIDELITY["num_requests"]
    assert point.output_tokens == bench["total_output_tokens"]
    # vLLM's random dataset re-tokenizes decoded random ids, which can add a token.
    assert abs(point.input_tokens - bench["total_input_tokens"]) <= FIDELITY["num_requests"]
    figures = fidelity_figures(bench, point)
    print(
        "fidelity (hangar, vllm bench):",
        {k: (round(a, 2), round(b, 2)) for k, (a, b, _) in figures.items()},
    )
    off = {
        name: f"{ours:.2f} vs {theirs:.2f} ({ours / theirs - 1:+.1%}, tolerance {tol:.0%})"
        for name, (ours, theirs, tol) in figures.items()
        if abs(ours - theirs) > tol * theirs
    }
    assert not off, f"hangar perf vs vllm bench serve, one pass: {off}"


def test_doctor_llm_against_the_real_tiny_model(
    vllm_server: RealServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 11 item 4: the tiny model's random output reaches the doctor's validation and
    is rejected cleanly (never shown as a diagnosis); a log no signature knows stays
    without a cause."""
    from hangar.cli.main import main
    from hangar.diagnose import CAUSES

    log = tmp_path / "odd.log"
    log.write_text("frobnicator: widget 7 misaligned\nsomething odd happened\n")
    code = main(["doctor", "--json", "--llm", f"{vllm_server.url}/v1", "--model", SERVED_NAME,
                 "--llm-timeout", "120", str(log)])
    captured = capsys.readouterr()
    assert captured.out.strip(), (code, captured.err)
    out = json.loads(captured.out)
    assert code == 0 and out["causes"] == []
    guess = out["llm_guess"]
    assert guess["valid"] is False or guess["cause"] in (*CAUSES, "unknown")
    if not guess["valid"]:
        assert guess["label"].startswith("model's answer rejected: "), guess
