"""Suites, CLI and fidelity against ONE real CPU vLLM server (tiny random Llama).

The server (conftest.vllm_server) has ``--enable-auto-tool-choice
--tool-call-parser hermes --reasoning-parser deepseek_r1``. With that parser the
random model's whole output is reasoning, so tool calls and json_schema output come
back empty: those suites must run against the configured parser and fail with a
clear detail (their passing paths are covered by the fake server).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from conftest import SERVED_NAME, RealServer

from hangar.cli.eval import eval as eval_cmd
from hangar.cli.report import report
from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target
from hangar.evaluation.results import PerfPoint
from hangar.proc import run

pytestmark = pytest.mark.slow

# Fidelity: same prompts lengths, concurrency, count and seed for both clients.
FIDELITY = {"input_len": 64, "output_len": 32, "concurrency": 4, "num_requests": 32, "seed": 0}
# Tolerances (see docs/eval.md): on the 2-core CI box the server and the client share
# both cores and the two runs are sequential, so run-to-run noise dominates. Each metric
# must agree within REL of the larger value, or within an absolute floor for metrics that
# are tiny on this model (TPOT/TTFT of a few ms, where 1 ms of scheduling jitter is 50%).
REL = 0.5
ROUNDS = 3
ABS_FLOOR_MS = {"ttft": 50.0, "tpot": 2.0}


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


def _close(ours: float, theirs: float, floor: float = 0.0) -> bool:
    return abs(ours - theirs) <= max(REL * max(ours, theirs), floor)


def _hangar_point(server: RealServer) -> PerfPoint:
    perf = PerfOptions(
        concurrency=[FIDELITY["concurrency"]],
        num_requests=FIDELITY["num_requests"],
        input_len=FIDELITY["input_len"],
        output_len=FIDELITY["output_len"],
        seed=FIDELITY["seed"],
        warmup=1,
    )
    result = evaluate(
        resolve_target(server.url), EvalOptions(suites=["perf"], perf=perf, timeout=120.0)
    )
    return result.suites["perf"].points[0]  # type: ignore[index]


def test_fidelity_against_vllm_bench_serve(vllm_server: RealServer, tmp_path: Path) -> None:
    # Alternate the two clients ROUNDS times and compare each one's least-disturbed run
    # (highest throughput): on a shared 2-core box single runs of either tool vary 2-8x.
    runs = [
        (_vllm_bench(vllm_server, tmp_path / f"b{i}"), _hangar_point(vllm_server))
        for i in range(ROUNDS)
    ]
    theirs = max((b for b, _ in runs), key=lambda b: float(b["output_throughput"]))
    point = max((p for _, p in runs), key=lambda p: p.output_tokens_per_s)
    for b, p in runs:
        print(
            f"run: vllm bench ttft {b['mean_ttft_ms']:.1f} tpot {b['mean_tpot_ms']:.2f} out {b['output_throughput']:.0f}"
            f" | hangar ttft {p.ttft_ms.mean:.1f} tpot {p.tpot_ms.mean:.2f} out {p.output_tokens_per_s:.0f}"
        )
    figures = {
        "ttft_mean_ms": (point.ttft_ms.mean, theirs["mean_ttft_ms"], ABS_FLOOR_MS["ttft"]),
        "ttft_p50_ms": (point.ttft_ms.p50, theirs["median_ttft_ms"], ABS_FLOOR_MS["ttft"]),
        "tpot_mean_ms": (point.tpot_ms.mean, theirs["mean_tpot_ms"], ABS_FLOOR_MS["tpot"]),
        "output_tok_s": (point.output_tokens_per_s, theirs["output_throughput"], 0.0),
        "total_tok_s": (point.total_tokens_per_s, theirs["total_token_throughput"], 0.0),
        "req_s": (point.requests_per_s, theirs["request_throughput"], 0.0),
    }
    print(
        "fidelity (hangar, vllm bench):",
        {k: (round(a, 2), round(b, 2)) for k, (a, b, _) in figures.items()},
    )
    assert point.completed == theirs["completed"] == FIDELITY["num_requests"]
    assert point.output_tokens == theirs["total_output_tokens"]
    # vLLM's random dataset re-tokenizes decoded random ids, which can add a token.
    assert abs(point.input_tokens - theirs["total_input_tokens"]) <= FIDELITY["num_requests"]
    off = {k: (a, b) for k, (a, b, floor) in figures.items() if not _close(a, b, floor)}
    assert not off, f"outside tolerance: {off}"
