"""Every suite against the behavioural fake of vLLM (real HTTP on 127.0.0.1)."""

from __future__ import annotations

from fake_server import FakeServer

from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target
from hangar.evaluation.results import SUITES

FUNCTIONAL = ["smoke", "tools", "reasoning", "vision", "structured"]
SMALL_PERF = PerfOptions(concurrency=[1, 4], num_requests=6, input_len=12, output_len=5, warmup=1)


def run(url: str, suites: list[str], **target: str) -> dict:  # type: ignore[type-arg]
    options = EvalOptions(suites=suites, perf=SMALL_PERF, timeout=5.0)
    return evaluate(resolve_target(url, **target), options).contract()


def statuses(result: dict) -> dict[str, str]:  # type: ignore[type-arg]
    return {name: suite["status"] for name, suite in result["suites"].items()}


def checks(result: dict, suite: str) -> dict[str, dict]:  # type: ignore[type-arg]
    return {c["name"]: c for c in result["suites"][suite]["checks"]}


def test_all_suites_pass_on_a_healthy_server_with_parsers(fake: FakeServer) -> None:
    fake.behaviour.reasoning = True
    fake.behaviour.multimodal = True
    result = run(
        fake.url, FUNCTIONAL + ["perf"], tool_call_parser="hermes", reasoning_parser="deepseek_r1"
    )
    assert statuses(result) == {s: "pass" for s in FUNCTIONAL + ["perf"]}
    assert set(checks(result, "smoke")) == {
        "models",
        "chat",
        "chat streaming",
        "completions",
        "max_tokens honoured",
        "stop honoured",
        "usage consistent",
        "errors reported",
    }
    assert result["snapshot"]["engine_version"] == "0.0.0+fake"


def test_json_contract_shape(fake: FakeServer) -> None:
    result = run(fake.url, ["smoke", "perf"])
    assert set(result) >= {"target", "suites", "id", "snapshot"}
    for suite in result["suites"].values():
        # a healthy server: every suite and every check passes (not merely "a status")
        assert suite["status"] == "pass", suite
        assert all(c["status"] == "pass" for c in suite["checks"]), suite["checks"]
        assert all(set(c) == {"name", "status", "detail"} for c in suite["checks"])
    point = result["suites"]["perf"]["points"][0]
    assert point["concurrency"] == 1 and "request_rate" not in point and "samples" not in point
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        assert set(point[key]) == {"mean", "p50", "p90", "p99"}
    for key in (
        "requests",
        "errors",
        "output_tokens_per_s",
        "total_tokens_per_s",
        "requests_per_s",
    ):
        assert key in point
    assert point["requests"] == 6 and point["errors"] == 0 and point["output_tokens"] == 30
    assert result["snapshot"]["prompt"]["tokenizer"] == "server"


def test_tools_without_parser_are_not_configured_and_send_nothing(fake: FakeServer) -> None:
    result = run(fake.url, ["tools", "reasoning"])
    assert statuses(result) == {"tools": "not configured", "reasoning": "not configured"}
    assert (
        "tool calling is not configured for this model"
        in result["suites"]["tools"]["checks"][0]["detail"]
    )
    assert not [r for r in fake.behaviour.requests if r.endswith(" tools")]


def test_server_without_parser_is_an_explicit_error(fake: FakeServer) -> None:
    fake.behaviour.tool_parser = False
    result = run(fake.url, ["tools"], tool_call_parser="hermes")
    assert statuses(result) == {"tools": "fail"}
    detail = checks(result, "tools")["tool_choice=auto"]["detail"]
    assert detail.startswith("tool calling is not configured for this model (server said: HTTP 400")
    assert "--tool-call-parser" in detail


def test_vision_on_text_only_model_is_skipped(fake: FakeServer) -> None:
    result = run(fake.url, ["vision"])
    assert statuses(result) == {"vision": "skipped"}
    assert "not multimodal" in checks(result, "vision")["image input"]["detail"]


def test_request_rate_mode(fake: FakeServer) -> None:
    options = EvalOptions(
        suites=["perf"],
        timeout=5.0,
        perf=PerfOptions(
            request_rate=[50.0],
            burstiness=0.5,
            num_requests=5,
            input_len=8,
            output_len=3,
            warmup=0,
            slo_ms={"ttft": 10_000.0},
        ),
    )
    point = evaluate(resolve_target(fake.url), options).contract()["suites"]["perf"]["points"][0]
    assert (
        point["request_rate"] == 50.0 and point["burstiness"] == 0.5 and "concurrency" not in point
    )
    assert point["completed"] == 5 and point["goodput_requests_per_s"] == point["requests_per_s"]


def test_every_suite_name_is_runnable(fake: FakeServer) -> None:
    """Each suite on the plain fake (no parsers, text only, no log): the one right status."""
    result = run(fake.url, list(SUITES))
    assert list(result["suites"]) == list(SUITES)
    assert statuses(result) == {
        "smoke": "pass",
        "tools": "not configured",
        "reasoning": "not configured",
        "vision": "skipped",
        "structured": "pass",
        "logs": "skipped",
        "perf": "pass",
    }
    assert {name: set(checks(result, name)) for name in ("tools", "reasoning", "logs")} == {
        "tools": {"tool parser"},
        "reasoning": {"reasoning parser"},
        "logs": {"server log"},
    }
    assert "no server log known" in checks(result, "logs")["server log"]["detail"]
    perf = checks(result, "perf")
    assert set(perf) == {"warm-up", "concurrency 1", "concurrency 4"}
    assert perf["concurrency 4"]["detail"].startswith("6/6 ok")


def test_vision_fails_when_the_server_ignores_the_image(fake: FakeServer) -> None:
    """A text-only server that drops image parts answered, and the vision check passed."""
    fake.behaviour.ignores_images = True
    result = run(fake.url, ["vision"])
    assert statuses(result) == {"vision": "fail"}
    read = checks(result, "vision")["image read"]
    assert read["status"] == "fail" and "ignored the image" in read["detail"]
    fake.behaviour.ignores_images, fake.behaviour.multimodal = False, True
    assert checks(run(fake.url, ["vision"]), "vision")["image read"]["status"] == "pass"


def test_stop_string_is_cut_where_it_first_occurs() -> None:
    """A stop string also seen earlier cut at position 0: an empty reply passed."""
    from hangar.evaluation.suites.smoke import _stop_string

    assert _stop_string("ababab") is None
    text = "red green blue"
    stop = _stop_string(text)
    assert stop is not None and text.find(stop) >= len(text) // 2
