"""The --llm fallback against a real HTTP server in a thread (a behavioural fake of an
OpenAI-compatible endpoint): what leaves the machine is redacted and carries the taxonomy;
what comes back is accepted only as JSON naming a taxonomy cause with evidence from the log."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hangar.cli.main import main
from hangar.diagnose import CAUSES
from hangar.diagnose.llm import redact, validate

GOOD_ANSWER = json.dumps(
    {
        "cause": "other",
        "confidence": 0.4,
        "evidence": ["SomeWeirdError: the frobnicator is unhappy"],
        "fix": "Probably the frobnicator.",
    }
)

SECRET_LOG = """\
INFO 01-01 00:00:00 [api_server.py:1] args: Namespace(api_key='sk-abcdefghijklmnop1234', hf_token=hf_AbCdEfGhIjKlMnOpQrStUv)
gpu-node-17.cluster.example.org:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.12.34.56<0>
HTTP header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig
Loading /home/alice/models/llama/model-00001.safetensors from /Users/bob/cache
contact alice@example.com from fe80::a86b:69ff:fe67:e3fe
SomeWeirdError: the frobnicator is unhappy
"""


class _Recorder(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []
    content: ClassVar[str] = GOOD_ANSWER
    refuse_schema: ClassVar[bool] = False  # answer 400 to response_format, like older servers
    context_chars: ClassVar[int] = 0  # > 0: refuse longer prompts as vLLM does (400 + reason)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        _Recorder.received.append({"path": self.path, "body": body})
        status = 400 if self.refuse_schema and "response_format" in body else 200
        reply: dict[str, Any] = {
            "choices": [{"message": {"role": "assistant", "content": _Recorder.content}}]
        }
        prompt = sum(len(m["content"]) for m in body["messages"])
        if self.context_chars and prompt > self.context_chars:
            status = 400
            reply = {
                "error": {
                    "message": (
                        f"This model's maximum context length is {self.context_chars} tokens. However, "
                        f"your prompt contains at least {prompt} input tokens"
                    ),
                    "type": "BadRequestError",
                    "code": 400,
                }
            }
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.received.clear()
    _Recorder.content = GOOD_ANSWER
    _Recorder.refuse_schema = False
    _Recorder.context_chars = 0
    httpd = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def test_unmatched_log_goes_redacted_to_the_model(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "weird.log"
    log.write_text(SECRET_LOG)
    assert main(["doctor", "--json", "--llm", server, "--model", "m1", str(log)]) == 1  # `other` (an unnamed failure) at 0.34: --llm is still asked
    payload = json.loads(capsys.readouterr().out)
    guess = payload["llm_guess"]
    assert guess["text"] == "Probably the frobnicator." and guess["valid"] is True
    assert guess["cause"] == "other" and "guess" in guess["label"]
    request = _Recorder.received[0]
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "m1"
    schema = request["body"]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["cause"]["enum"] == [*CAUSES, "unknown"]
    assert "- ulimit_mmap: " in request["body"]["messages"][0]["content"]  # the taxonomy
    sent = request["body"]["messages"][1]["content"]
    assert "frobnicator" in sent
    for leaked in (
        "sk-abcdefghijklmnop1234",
        "hf_AbCdEf",
        "10.12.34.56",
        "gpu-node-17",
        "example.org",
        "alice",
        "bob",
        "eyJhbGci",
        "fe80::a86b",
    ):
        assert leaked not in sent, leaked


def test_confident_signature_does_not_call_the_model(server: str, tmp_path: Path) -> None:
    log = tmp_path / "heads.log"
    log.write_text(
        "ValueError: Total number of attention heads (40) must be divisible by tensor parallel size (3).\n"
    )
    assert main(["doctor", "--llm", server, str(log)]) == 1
    assert _Recorder.received == []


def test_redact_keeps_code_and_public_hosts() -> None:
    text = redact("see https://docs.vllm.ai/en/latest and vllm/worker/worker.py:12 at 09:06:25")
    assert "docs.vllm.ai" in text and "worker.py" in text and "09:06:25" in text


def test_free_text_answer_is_rejected_not_shown_as_a_guess(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _Recorder.content = "ulimit ulimit the the the <|endoftext|> 12 12"  # what a random model says
    log = tmp_path / "weird.log"
    log.write_text(SECRET_LOG)
    assert main(["doctor", "--json", "--llm", server, "--model", "tiny", str(log)]) == 1
    guess = json.loads(capsys.readouterr().out)["llm_guess"]
    assert guess["valid"] is False and guess["cause"] is None
    assert guess["label"].startswith("model's answer rejected: not a JSON answer")


def test_server_without_structured_output_is_asked_again_plainly(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _Recorder.refuse_schema = True
    log = tmp_path / "weird.log"
    log.write_text(SECRET_LOG)
    assert main(["doctor", "--json", "--llm", server, str(log)]) == 1
    assert json.loads(capsys.readouterr().out)["llm_guess"]["valid"] is True
    assert [("response_format" in r["body"]) for r in _Recorder.received] == [True, False]


def test_a_model_with_a_small_context_is_asked_again_smaller(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server's own reason (vLLM: 'maximum context length is N tokens') makes the doctor
    send the taxonomy as ids only, then the excerpt's last lines; a wrong schema is not blamed."""
    _Recorder.context_chars = 1500
    log = tmp_path / "weird.log"
    log.write_text(SECRET_LOG * 3)
    assert main(["doctor", "--json", "--llm", server, str(log)]) == 1
    assert json.loads(capsys.readouterr().out)["llm_guess"]["valid"] is True
    sizes = [sum(len(m["content"]) for m in r["body"]["messages"]) for r in _Recorder.received]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] <= 1500 < sizes[0], sizes
    assert all("response_format" in r["body"] for r in _Recorder.received)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"cause": "cosmic_rays", "confidence": 0.9, "evidence": ["x"], "fix": "f"}, "taxonomy"),
        (
            {"cause": "nccl_p2p", "confidence": 0.9, "evidence": ["not in it"], "fix": "f"},
            "does not quote the log",
        ),
        ({"cause": "nccl_p2p", "confidence": 7, "evidence": [], "fix": "f"}, "schema"),
        ({"cause": "nccl_p2p", "evidence": [], "fix": "f", "extra": 1}, "schema"),
    ],
)
def test_answers_outside_the_contract_are_rejected(answer: dict[str, Any], why: str) -> None:
    guess = validate(json.dumps(answer), "line one\nline two", "m")
    assert guess.valid is False and why in guess.label


def test_fenced_json_with_quoted_evidence_is_accepted() -> None:
    answer = {
        "cause": "nccl_p2p",
        "confidence": 0.5,
        "evidence": ["line two"],
        "fix": "NCCL_P2P_DISABLE=1",
    }
    guess = validate("```json\n" + json.dumps(answer) + "\n```", "line one\nline two", "m")
    assert guess.valid and guess.cause == "nccl_p2p" and guess.evidence == ("line two",)
