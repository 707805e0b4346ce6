"""A real HTTP server with known timing, shaped like vLLM's OpenAI-compatible API.

Every streamed completion sends its first token ``ttft_s`` after the request arrived
and each next one ``itl_s`` after the previous, so TTFT, TPOT (= ITL), ITL, E2E
(= TTFT + (n - 1) x ITL) and the throughputs of a run are known in advance: a perf
client that measures something else is wrong, not noisy. Each token is sent at its
deadline counted from the request's arrival (not after the previous send), so a
late wake-up of one token does not shift the ones after it.

Endpoints, with vLLM 0.32.0's shapes (vllm/entrypoints/openai/protocol.py,
api_server.py): ``GET /v1/models``, ``GET /version``, ``GET /health``,
``POST /tokenize`` (``{"count", "max_model_len", "tokens"}``),
``POST /detokenize`` (``{"prompt"}``) and ``POST /v1/completions`` (stream or not;
``stream_options.include_usage`` adds vLLM's usage chunk; ``ignore_eos`` is implied:
every request generates exactly ``max_tokens`` tokens; the usage chunk and ``[DONE]``
follow ``tail_s`` after the last token). One token is one
whitespace-separated word; ids are given in order of first sight.

Standard library only. ``TimedServer(...).start()`` serves from a thread on
127.0.0.1 (``disable_nagle_algorithm``: each token leaves in its own segment, no
delayed-ACK stalls); ``python tests/support/timed_server.py TTFT_MS ITL_MS`` serves
in the foreground and prints its URL.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "timed-model"
MAX_MODEL_LEN = 4096
VERSION = "0.32.0+timed"


@dataclass(frozen=True)
class Timing:
    """The server's schedule, in seconds. ``tail_s``: from the last token to the usage
    chunk and the end of the stream (vLLM sends them at once; a delay here tells "E2E =
    last token" from "E2E = end of stream", which a client must not mix up)."""

    ttft_s: float
    itl_s: float
    tail_s: float = 0.0

    def e2e_s(self, output_tokens: int) -> float:
        return self.ttft_s + (output_tokens - 1) * self.itl_s

    def stream_s(self, output_tokens: int) -> float:
        """From arrival to the end of the stream: what a request occupies a slot for."""
        return self.e2e_s(output_tokens) + self.tail_s


@dataclass
class _Vocab:
    """Word-level tokenizer, ids in order of first sight (thread-safe)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: dict[str, int] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)

    def encode(self, text: str) -> list[int]:
        with self.lock:
            return [self._id(word) for word in text.split()]

    def _id(self, word: str) -> int:
        if word not in self.ids:
            self.ids[word] = len(self.words)
            self.words.append(word)
        return self.ids[word]

    def decode(self, ids: list[int]) -> str:
        with self.lock:
            return " ".join(self.words[i] for i in ids if 0 <= i < len(self.words))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            card = {"id": MODEL, "object": "model", "created": 0, "owned_by": "vllm"}
            card.update(root=MODEL, parent=None, max_model_len=MAX_MODEL_LEN)
            self._json(200, {"object": "list", "data": [card]})
        elif self.path == "/version":
            self._json(200, {"version": VERSION})
        elif self.path == "/health":
            self._json(200, {})
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        arrived = time.perf_counter()  # the schedule counts from here
        body = self._body()
        vocab = self.server.vocab
        if self.path == "/tokenize":
            tokens = vocab.encode(str(body.get("prompt", "")))
            self._json(
                200, {"count": len(tokens), "max_model_len": MAX_MODEL_LEN, "tokens": tokens}
            )
        elif self.path == "/detokenize":
            self._json(200, {"prompt": vocab.decode([int(t) for t in body.get("tokens", [])])})
        elif self.path == "/v1/completions":
            self._completion(body, arrived)
        else:
            self._json(404, {"detail": "Not Found"})

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length) or b"{}")
        return data if isinstance(data, dict) else {}

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _completion(self, body: dict[str, Any], arrived: float) -> None:
        prompt_tokens = len(self.server.vocab.encode(str(body.get("prompt", ""))))
        n = max(1, int(body.get("max_tokens") or 16))
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": n,
            "total_tokens": prompt_tokens + n,
        }
        if not body.get("stream"):
            self._wait_until(arrived + self.server.timing.e2e_s(n))
            text = "".join(f" t{i}" for i in range(n))
            choice = {"index": 0, "text": text, "finish_reason": "length", "logprobs": None}
            self._json(200, _completion_body([choice], usage))
            return
        self._stream(n, usage if _include_usage(body) else None, arrived)

    def _stream(self, n: int, usage: dict[str, int] | None, arrived: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        timing = self.server.timing
        for i in range(n):
            self._wait_until(arrived + timing.ttft_s + i * timing.itl_s)
            finish = "length" if i == n - 1 else None
            choice = {"index": 0, "text": f" t{i}", "finish_reason": finish, "logprobs": None}
            self._event(_completion_body([choice], None))
        self._wait_until(arrived + timing.stream_s(n))
        if usage is not None:
            self._event(_completion_body([], usage))
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _event(self, payload: dict[str, Any]) -> None:
        self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    @staticmethod
    def _wait_until(deadline: float) -> None:
        delay = deadline - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def _include_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


def _completion_body(choices: list[dict[str, Any]], usage: dict[str, int] | None) -> dict[str, Any]:
    return {
        "id": "cmpl-timed",
        "object": "text_completion",
        "created": 0,
        "model": MODEL,
        "choices": choices,
        "usage": usage,
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, timing: Timing) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.timing = timing
        self.vocab = _Vocab()
        self.nice: int | None = None

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        _renice(self.nice)  # each connection's thread sends that request's tokens
        super().process_request_thread(request, client_address)


def _renice(nice: int | None) -> None:
    if nice is None:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except OSError:  # not root: a negative nice is refused, timing is only noisier
        pass


class TimedServer:
    """The server on 127.0.0.1 in a daemon thread; ``stop()`` closes its socket.

    ``nice``: the serving threads' nice value (Linux nice is per thread; a negative one
    needs root and is skipped without it). On a loaded box it keeps each token's wake-up
    close to its deadline.
    """

    def __init__(self, timing: Timing, nice: int | None = None) -> None:
        self.timing = timing
        self._httpd = _Server(timing)
        self._httpd.nice = nice
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        _renice(self._httpd.nice)
        self._httpd.serve_forever()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> TimedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def main(argv: list[str]) -> int:
    timing = Timing(ttft_s=float(argv[0]) / 1000.0, itl_s=float(argv[1]) / 1000.0)
    server = TimedServer(timing)
    print(server.url, flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
