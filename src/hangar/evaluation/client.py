"""The one place where the OpenAI SDK and HTTP failures are translated.

Every request Hangar sends during an evaluation goes through :class:`Server`.
Foreign exceptions (openai, httpx under it, JSON decoding of a malformed SSE
stream, timeouts) become :class:`ServerError` with a one-line ``detail`` that
names the HTTP status and body when there is one, so a broken server shows up
as a failed check, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import openai
import pydantic

from hangar.evaluation.target import Target

T = TypeVar("T")
_BODY_LIMIT = 300
# A perf point keeps up to `concurrency` streams open; the SDK's default pool keeps only
# 100 idle connections, so above that every request would open a new TCP connection
# (vllm bench sizes its aiohttp pool to --max-concurrency). The limit that matters is
# perf's semaphore, hence a pool larger than any sweep.
_POOL_SIZE = 4096
_POOL_LIMITS = type(openai.DEFAULT_CONNECTION_LIMITS)(
    max_connections=_POOL_SIZE, max_keepalive_connections=_POOL_SIZE, keepalive_expiry=30.0
)


# Set by the perf client around one request. The SDK builds each request (parameter
# transforms, headers: ~1 ms of CPU) before handing it to the transport; vLLM's request
# function takes its start time `st` right before aiohttp sends (endpoint_request_func.py),
# so TTFT starts when the request leaves the SDK, not when the SDK is called.
_on_send: ContextVar[Callable[[], None] | None] = ContextVar("hangar_on_send", default=None)


@contextmanager
def on_request_sent(callback: Callable[[], None]) -> Iterator[None]:
    """Call ``callback`` when a request made in this context is handed to the transport."""
    token = _on_send.set(callback)
    try:
        yield
    finally:
        _on_send.reset(token)


async def _request_hook(request: Any) -> None:  # an httpx "request" event hook
    callback = _on_send.get()
    if callback is not None:
        callback()


class ServerError(Exception):
    """A request to the server failed; ``detail`` is one line for the report."""

    def __init__(self, detail: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.body = body


def describe(exc: BaseException, timeout: float) -> ServerError:
    """Translate a foreign failure into a :class:`ServerError` (the single mapping)."""
    if isinstance(exc, ServerError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        body = _body_text(exc)
        return ServerError(f"HTTP {exc.status_code}: {body}", status=exc.status_code, body=body)
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError)) or _is_httpx(
        exc, "TimeoutException"
    ):
        return ServerError(f"timed out after {timeout:g} s")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ServerError(f"connection failed: {type(cause).__name__}: {_one_line(str(cause))}")
    if isinstance(exc, json.JSONDecodeError):
        return ServerError(f"malformed response (invalid JSON in the stream: {exc.msg})")
    if _is_httpx(exc, "TransportError"):
        return ServerError(f"connection lost: {type(exc).__name__}: {_one_line(str(exc))}")
    return ServerError(f"{type(exc).__name__}: {_one_line(str(exc))}")


def validated(reply: T) -> T:
    """``reply`` checked against the SDK's own schema.

    The SDK builds its response objects without validation (``construct``), so a server
    answering ``{"choices": "nope"}`` would surface later as an AttributeError deep in a
    suite; checking here turns every wrong shape into one "malformed response" line.
    """
    if not isinstance(reply, pydantic.BaseModel):  # the SDK passes a non-object body through
        raise ServerError(
            f"malformed response: expected a JSON object, got {type(reply).__name__}"
            f" {_one_line(repr(reply))[:80]}"
        )
    try:
        type(reply).model_validate(reply.model_dump(warnings=False))
    except pydantic.ValidationError as exc:
        wrong = [e for e in exc.errors() if not _tolerated(e)]
        if wrong:
            where = ".".join(str(part) for part in wrong[0]["loc"]) or "body"
            got = _one_line(repr(wrong[0].get("input")))[:80]
            raise ServerError(f"malformed response: {where}: {wrong[0]['msg']} (got {got})") from exc
    return reply


# Top-level bookkeeping no check reads; proxies and small servers often omit or null them.
_METADATA = frozenset({"id", "created", "object", "model", "system_fingerprint"})


def _tolerated(error: Any) -> bool:
    """Bookkeeping fields, and a null finish_reason: the SDK parses streamed completion
    chunks with the non-streamed ``Completion`` type, whose finish_reason is required,
    while every chunk before the last carries ``null`` (vLLM, the OpenAI API)."""
    loc = error["loc"]
    if len(loc) == 1 and loc[0] in _METADATA:
        return True
    return bool(loc) and loc[-1] == "finish_reason" and error.get("input") is None


def _is_httpx(exc: BaseException, base: str) -> bool:
    """An httpx (openai<3) or httpx2 (openai 3) ``base`` error raised reading a raw stream.

    The perf client reads ``with_streaming_response`` bytes itself, so a connection
    dropped mid-stream arrives untranslated by the SDK; matched by the class both
    libraries share, by name, because the SDK picks which of them it uses.
    """
    return any(
        cls.__name__ == base and cls.__module__.startswith("httpx") for cls in type(exc).__mro__
    )


def _body_text(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except Exception:  # noqa: BLE001 - a streamed body not read yet: use the SDK message
        text = exc.message
    return _one_line(text)[:_BODY_LIMIT]


def _one_line(text: str) -> str:
    return " ".join(text.split())


class Server:
    """An OpenAI-compatible server reached with the async OpenAI SDK (no retries)."""

    def __init__(self, target: Target, *, timeout: float = 60.0) -> None:
        self.target = target
        self.timeout = timeout
        key = target.api_key.get_secret_value() if target.api_key else "EMPTY"
        # Typed as Any on purpose: suites send plain-dict messages and vLLM extensions
        # (ignore_eos, reasoning_content) that the SDK's TypedDicts do not describe.
        self.client: Any = openai.AsyncOpenAI(
            base_url=target.openai_base_url,
            api_key=key,
            timeout=timeout,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(
                timeout=timeout, limits=_POOL_LIMITS, event_hooks={"request": [_request_hook]}
            ),
        )

    async def close(self) -> None:
        await self.client.close()

    async def call(self, awaitable: Any, *, raw: bool = False) -> Any:
        """Await an SDK call; any failure, a malformed reply included, is a :class:`ServerError`.

        ``raw``: the reply is plain JSON (``cast_to=object``) that the caller checks itself.
        """
        try:
            reply = await asyncio.wait_for(awaitable, self.timeout)
            return reply if raw else validated(reply)
        except Exception as exc:
            raise describe(exc, self.timeout) from exc

    async def get_json(self, path: str) -> Any:
        """GET a path relative to the server root (``/version``, ``/v1/models``)."""
        url = f"{self.target.root_url}{path}"
        return await self.call(self.client.get(url, cast_to=object), raw=True)

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        url = f"{self.target.root_url}{path}"
        return await self.call(self.client.post(url, cast_to=object, body=body), raw=True)

    async def collect_stream(self, stream_call: Any) -> list[Any]:
        """Open a stream and read all chunks, under one overall timeout."""

        async def read() -> list[Any]:
            stream = await stream_call
            return [validated(chunk) async for chunk in stream]

        return list(await self.call(read(), raw=True))  # each chunk validated as read
