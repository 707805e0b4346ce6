"""A broken server yields failed checks with status and body, never a traceback."""

from __future__ import annotations

import pytest
from fake_server import FakeServer, free_port

from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target

PERF = PerfOptions(concurrency=[2], num_requests=3, input_len=8, output_len=4, warmup=0)


def run(url: str, suites: list[str], timeout: float = 5.0) -> dict:  # type: ignore[type-arg]
    options = EvalOptions(suites=suites, perf=PERF, timeout=timeout)
    return evaluate(resolve_target(url, tool_call_parser="hermes"), options).contract()


def details(result: dict, suite: str) -> dict[str, str]:  # type: ignore[type-arg]
    return {c["name"]: f"{c['status']}: {c['detail']}" for c in result["suites"][suite]["checks"]}


def test_wrong_url_fails_smoke_and_skips_the_rest() -> None:
    result = run(f"http://127.0.0.1:{free_port()}", ["smoke", "tools", "perf"])
    assert {n: s["status"] for n, s in result["suites"].items()} == {
        "smoke": "fail",
        "tools": "skipped",
        "perf": "skipped",
    }
    assert details(result, "smoke")["models"].startswith("fail: connection failed")


def test_wrong_path_is_reported_with_status(fake: FakeServer) -> None:
    result = run(fake.url + "/nothing-here", ["smoke"])
    assert details(result, "smoke")["models"].startswith("fail: HTTP 404: ")


def test_http_500_names_status_and_body(fake: FakeServer) -> None:
    fake.behaviour.mode = "http500"
    result = run(fake.url, ["smoke", "tools", "perf"])
    assert result["suites"]["smoke"]["status"] == "fail"
    assert details(result, "smoke")["chat"] == (
        'fail: HTTP 500: {"error": {"message": "EngineCore encountered an issue.", '
        '"type": "InternalServerError", "code": 500}}'
    )
    point = result["suites"]["perf"]["points"][0]
    assert point["errors"] == 3 and point["completed"] == 0
    assert point["error_samples"][0].startswith("HTTP 500")


@pytest.mark.parametrize("mode", ["truncated", "malformed"])
def test_broken_streams_fail_the_streaming_checks(fake: FakeServer, mode: str) -> None:
    fake.behaviour.mode = mode
    result = run(fake.url, ["smoke", "perf"])
    streamed = details(result, "smoke")["chat streaming"]
    assert streamed.startswith("fail: ")
    assert details(result, "smoke")["chat"].startswith("pass")  # non-streamed requests still work
    assert result["suites"]["perf"]["points"][0]["errors"] == 3
    if mode == "malformed":
        assert "malformed" in streamed or "JSON" in streamed


def test_timeouts_are_reported(fake: FakeServer) -> None:
    fake.behaviour.mode = "slow"
    fake.behaviour.slow_s = 1.5
    result = run(fake.url, ["structured"], timeout=0.5)
    assert details(result, "structured")["json_schema output"] == "fail: timed out after 0.5 s"
