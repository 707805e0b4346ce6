"""Servers that answer with the wrong JSON shape (issue 13): a failed check or a fallback,
never ``internal error`` (exit 3). The fake answers the overridden paths verbatim."""

from __future__ import annotations

import json

import pytest
from fake_server import MODEL, FakeServer

from hangar.cli.main import main
from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target

PERF = PerfOptions(concurrency=[1], num_requests=2, input_len=8, output_len=4, warmup=0)


def eval_json(url: str, suite: str, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    code = main(
        [
            "eval",
            url,
            "--suite",
            suite,
            "--json",
            "--num-requests",
            "2",
            "--concurrency",
            "1",
            "--input-len",
            "8",
            "--output-len",
            "4",
        ]
    )
    out, err = capsys.readouterr()
    assert code in (0, 1) and "internal error" not in err, (code, err)
    doc: dict = json.loads(out)  # type: ignore[type-arg]
    return doc


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
@pytest.mark.parametrize(
    "body",
    [
        {"choices": "nope"},
        {"id": "x", "object": "text_completion", "created": 1, "model": MODEL, "choices": [5]},
        {
            "id": "x",
            "object": "x",
            "created": 1,
            "model": MODEL,
            "choices": [],
            "usage": {"prompt_tokens": "a", "completion_tokens": 1, "total_tokens": 1},
        },
        [],
        "just a string",
    ],
)
def test_wrong_shapes_fail_the_check_with_a_malformed_line(
    fake: FakeServer, capsys: pytest.CaptureFixture[str], path: str, body: object
) -> None:
    fake.behaviour.replies[path] = body
    doc = eval_json(fake.url, "smoke", capsys)
    smoke = doc["suites"]["smoke"]
    assert smoke["status"] == "fail"
    failed = [c["detail"] for c in smoke["checks"] if c["status"] == "fail"]
    assert any("malformed response" in d for d in failed), failed


@pytest.mark.parametrize(
    "body", [{"text": "hello"}, {"prompt": 5}, ["hello"], {"detail": "Not Found"}]
)
def test_another_detokenize_shape_falls_back_to_another_tokenizer(
    fake: FakeServer, body: object
) -> None:
    """`hangar eval --suite perf` ended in `internal error: KeyError: 'prompt'`."""
    fake.behaviour.replies["/detokenize"] = body
    options = EvalOptions(suites=["perf"], perf=PERF, timeout=5.0)
    result = evaluate(resolve_target(fake.url), options).contract()
    assert result["suites"]["perf"]["status"] == "pass", result["suites"]["perf"]
    assert result["snapshot"]["prompt"]["tokenizer"] == "approximate"


def test_another_tokenize_shape_falls_back_too(fake: FakeServer) -> None:
    fake.behaviour.replies["/tokenize"] = {"tokens": ["a", True]}
    options = EvalOptions(suites=["perf"], perf=PERF, timeout=5.0)
    result = evaluate(resolve_target(fake.url), options).contract()
    assert result["snapshot"]["prompt"]["tokenizer"] == "approximate"


def test_goodput_is_shown_when_slos_are_given(
    fake: FakeServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """goodput was computed and stored but never printed."""
    monkeypatch.setenv("COLUMNS", "250")
    argv = [
        "eval",
        fake.url,
        "--suite",
        "perf",
        "--num-requests",
        "2",
        "--concurrency",
        "1",
        "--input-len",
        "8",
        "--output-len",
        "4",
    ]
    assert main([*argv, "--goodput", "e2el:60000"]) == 0
    assert "goodput req/s" in capsys.readouterr().out
    assert main(argv) == 0
    assert "goodput" not in capsys.readouterr().out
