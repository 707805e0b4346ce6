"""A behavioural fake of vLLM's OpenAI-compatible server, on 127.0.0.1 in a thread.

It answers like vLLM for what the eval suites use (models, version, tokenize,
completions, chat with tools / reasoning / images / json_schema, streaming with
chunked SSE and a usage chunk) and can misbehave on demand (``mode``):
``http500``, ``truncated`` (connection dropped mid-stream), ``malformed``
(invalid JSON in an SSE event), ``slow`` (answers after ``slow_s``).
Also used by bench/eval_client.py as the trivial streaming baseline.
Run standalone: ``python tests/evaluation/fake_server.py PORT``.
"""

from __future__ import annotations

import base64
import json
import socket
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model"
NO_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


@dataclass
class Behaviour:
    mode: str = "ok"
    tool_parser: bool = True
    reasoning: bool = False
    multimodal: bool = False
    ignores_images: bool = False  # a text-only server that drops image parts silently
    token_delay_s: float = 0.0
    slow_s: float = 5.0
    requests: list[str] = field(default_factory=list)
    authorization: set[str] = field(default_factory=set)
    # path -> a JSON body answered with 200 instead of the normal reply (hostile shapes)
    replies: dict[str, Any] = field(default_factory=dict)


class Vocab:
    """Whitespace tokenizer with ids assigned on first sight (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, text: str) -> list[int]:
        with self.lock:
            out = []
            for word in text.split():
                if word not in self.ids:
                    self.ids[word] = len(self.words)
                    self.words.append(word)
                out.append(self.ids[word])
            return out

    def decode(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids)


def generate(
    prompt: str, max_tokens: int, ignore_eos: bool, stop: list[str]
) -> tuple[list[str], str]:
    """Deterministic pieces ' w<n>'; natural end after 12 tokens unless ignore_eos."""
    seed = zlib.crc32(prompt.encode()) % 97
    limit = max_tokens if ignore_eos else min(max_tokens, 12)
    pieces = [f" w{(seed + i * 7) % 100}" for i in range(limit)]
    finish = "length" if limit == max_tokens else "stop"
    text = "".join(pieces)
    for s in stop:
        cut = text.find(s)
        if cut >= 0:
            return _cut(pieces, cut), "stop"
    return pieces, finish


def _cut(pieces: list[str], cut: int) -> list[str]:
    out, used = [], 0
    for piece in pieces:
        if used + len(piece) > cut:
            out.append(piece[: cut - used])
            break
        out.append(piece)
        used += len(piece)
    return [p for p in out if p]


def instance(schema: dict[str, Any]) -> Any:
    """A value that satisfies the simple schemas the suites send."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: instance(v) for k, v in schema.get("properties", {}).items()}
    return {"string": "Paris", "integer": 1, "number": 1.5, "boolean": True, "array": []}.get(
        kind, None
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs
    server: FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    # -- plumbing -------------------------------------------------------------
    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._json(
            status, {"error": {"message": message, "type": "BadRequestError", "code": status}}
        )

    def _sse(self, events: list[Any]) -> None:
        b = self.server.behaviour
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, event in enumerate([*events, "[DONE]"]):
            if b.mode == "truncated" and i == 2:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(1)
                return
            payload = event if isinstance(event, str) else json.dumps(event)
            if b.mode == "malformed" and i == 1:
                payload = '{"id": "x", "choices": [{"text": "oops"'
            self._chunk(f"data: {payload}\n\n".encode())
            if b.token_delay_s and i < len(events):
                time.sleep(b.token_delay_s)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length", "0"))
        return json.loads(self.rfile.read(length) or b"{}")

    # -- routes ---------------------------------------------------------------
    def do_GET(self) -> None:
        self.server.behaviour.requests.append(f"GET {self.path}")
        self.server.behaviour.authorization.add(self.headers.get("Authorization", ""))
        if self.path in self.server.behaviour.replies:
            self._json(200, self.server.behaviour.replies[self.path])
        elif self.path == "/v1/models":
            self._json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": MODEL, "object": "model", "root": MODEL, "max_model_len": 2048}
                    ],
                },
            )
        elif self.path == "/version":
            self._json(200, {"version": "0.0.0+fake"})
        else:
            self._error(404, f"Not Found: {self.path}")

    def do_POST(self) -> None:
        b = self.server.behaviour
        body = self._body()
        b.requests.append(f"POST {self.path}" + (" tools" if body.get("tools") else ""))
        if b.mode == "slow":
            time.sleep(b.slow_s)
        if b.mode == "http500" and self.path.startswith("/v1/"):
            return self._json(
                500,
                {
                    "error": {
                        "message": "EngineCore encountered an issue.",
                        "type": "InternalServerError",
                        "code": 500,
                    }
                },
            )
        if self.path in b.replies:
            return self._json(200, b.replies[self.path])
        route = {
            "/tokenize": self._tokenize,
            "/detokenize": self._detokenize,
            "/v1/completions": self._completions,
            "/v1/chat/completions": self._chat,
        }.get(self.path)
        if route is None:
            return self._error(404, f"Not Found: {self.path}")
        if self.path.startswith("/v1/") and body.get("model") != MODEL:
            return self._error(404, f"The model `{body.get('model')}` does not exist.")
        return route(body)

    def _tokenize(self, body: dict[str, Any]) -> None:
        tokens = self.server.vocab.encode(body["prompt"])
        self._json(200, {"count": len(tokens), "tokens": tokens, "max_model_len": 2048})

    def _detokenize(self, body: dict[str, Any]) -> None:
        self._json(200, {"prompt": self.server.vocab.decode(body["tokens"])})

    def _completions(self, body: dict[str, Any]) -> None:
        prompt_tokens = len(body["prompt"].split())
        pieces, finish = generate(
            body["prompt"], body.get("max_tokens", 16), bool(body.get("ignore_eos")), _stops(body)
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(pieces),
            "total_tokens": prompt_tokens + len(pieces),
        }
        if not body.get("stream"):
            return self._json(
                200,
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": MODEL,
                    "choices": [{"index": 0, "text": "".join(pieces), "finish_reason": finish}],
                    "usage": usage,
                },
            )
        events: list[Any] = [
            {
                "id": "cmpl-1",
                "object": "text_completion",
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "text": p,
                        "finish_reason": finish if i == len(pieces) - 1 else None,
                    }
                ],
            }
            for i, p in enumerate(pieces)
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append(
                {
                    "id": "cmpl-1",
                    "object": "text_completion",
                    "model": MODEL,
                    "choices": [],
                    "usage": usage,
                }
            )
        self._sse(events)

    def _chat(self, body: dict[str, Any]) -> None:
        b = self.server.behaviour
        messages = body["messages"]
        image = _has_image(messages)
        if image and not b.multimodal and not b.ignores_images:
            return self._error(400, f"{MODEL} is not a multimodal model")
        choice = body.get("tool_choice")
        if body.get("tools") and choice == "auto" and not b.tool_parser:
            return self._error(400, NO_PARSER)
        prompt = " ".join(_text(m.get("content")) for m in messages)
        message = self._message(body, messages, prompt)
        finish = "tool_calls" if message.get("tool_calls") else "length"
        # a vision encoder turns the image into placeholder tokens (vLLM counts them)
        prompt_tokens = len(prompt.split()) + (IMAGE_TOKENS if image and b.multimodal else 0)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 8,
            "total_tokens": prompt_tokens + 8,
        }
        if not body.get("stream"):
            return self._json(
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": MODEL,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
        self._sse(
            _chat_events(
                message,
                finish,
                usage if (body.get("stream_options") or {}).get("include_usage") else None,
            )
        )

    def _message(
        self, body: dict[str, Any], messages: list[dict[str, Any]], prompt: str
    ) -> dict[str, Any]:
        b = self.server.behaviour
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if (
            body.get("tools")
            and body.get("tool_choice") in ("required", "auto")
            and messages[-1]["role"] == "user"
        ):
            cities = (
                ["Paris", "Tokyo"]
                if "Tokyo" in prompt and body.get("parallel_tool_calls", True)
                else ["Paris"]
            )
            message["tool_calls"] = [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": json.dumps({"city": c, "unit": "celsius"}),
                    },
                }
                for i, c in enumerate(cities)
            ]
            return message
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            message["content"] = json.dumps(instance(fmt["json_schema"]["schema"]))
            return message
        message["content"] = "".join(
            generate(prompt, body.get("max_tokens") or 8, False, _stops(body))[0]
        )
        if b.reasoning:
            message["reasoning_content"] = "Let me think about it."
        return message


def _stops(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop") or []
    return [stop] if isinstance(stop, str) else list(stop)


IMAGE_TOKENS = 64


def _text(content: Any) -> str:
    """The text of a message: a string, or the text parts of a content list."""
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return str(content)


def _has_image(messages: list[dict[str, Any]]) -> bool:
    for m in messages:
        for part in m.get("content") if isinstance(m.get("content"), list) else []:
            if part.get("type") == "image_url":
                url = part["image_url"]["url"]
                assert base64.b64decode(url.split(",", 1)[1])[:4] == b"\x89PNG"
                return True
    return False


def _chat_events(message: dict[str, Any], finish: str, usage: dict[str, int] | None) -> list[Any]:
    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("reasoning_content"):
        events.append(chunk({"reasoning_content": message["reasoning_content"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            )
        )
        events += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
            for part in (args[: len(args) // 2], args[len(args) // 2 :])
        ]
    for word in (message.get("content") or "").split(" "):
        if word:
            events.append(chunk({"content": " " + word}))
    events.append(chunk({}, finish))
    if usage:
        events.append(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": MODEL,
                "choices": [],
                "usage": usage,
            }
        )
    return events


def free_port() -> int:
    """A port nothing listens on (for the wrong-URL case and real servers)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0, behaviour: Behaviour | None = None) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.behaviour = behaviour or Behaviour()
        self.vocab = Vocab()
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> FakeServer:
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


if __name__ == "__main__":
    server = FakeServer(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(server.url, flush=True)
    server.serve_forever()
