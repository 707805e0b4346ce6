"""The --llm fallback against a real HTTP server in a thread: what leaves the machine is redacted."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from hangar.cli.main import main
from hangar.diagnose.llm import redact

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

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        _Recorder.received.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
        reply = {
            "choices": [{"message": {"role": "assistant", "content": "Probably the frobnicator."}}]
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.received.clear()
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
    assert main(["doctor", "--json", "--llm", server, "--model", "m1", str(log)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["llm_guess"]["text"] == "Probably the frobnicator."
    assert "guess" in payload["llm_guess"]["label"]
    request = _Recorder.received[0]
    assert request["path"] == "/v1/chat/completions" and request["body"]["model"] == "m1"
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
