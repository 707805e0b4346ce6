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
from typing import Any, TypeVar

import openai

from hangar.evaluation.target import Target

T = TypeVar("T")
_BODY_LIMIT = 300


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
    if isinstance(exc, (openai.APITimeoutError, asyncio.TimeoutError, TimeoutError)):
        return ServerError(f"timed out after {timeout:g} s")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ServerError(f"connection failed: {type(cause).__name__}: {_one_line(str(cause))}")
    if isinstance(exc, json.JSONDecodeError):
        return ServerError(f"malformed response (invalid JSON in the stream: {exc.msg})")
    return ServerError(f"{type(exc).__name__}: {_one_line(str(exc))}")


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
            base_url=target.openai_base_url, api_key=key, timeout=timeout, max_retries=0
        )

    async def close(self) -> None:
        await self.client.close()

    async def call(self, awaitable: Any) -> Any:
        """Await an SDK call; any failure becomes a :class:`ServerError`."""
        try:
            return await asyncio.wait_for(awaitable, self.timeout)
        except Exception as exc:
            raise describe(exc, self.timeout) from exc

    async def get_json(self, path: str) -> Any:
        """GET a path relative to the server root (``/version``, ``/v1/models``)."""
        url = f"{self.target.root_url}{path}"
        return await self.call(self.client.get(url, cast_to=object))

    async def post_json(self, path: str, body: dict[str, Any]) -> Any:
        url = f"{self.target.root_url}{path}"
        return await self.call(self.client.post(url, cast_to=object, body=body))

    async def collect_stream(self, stream_call: Any) -> list[Any]:
        """Open a stream and read all chunks, under one overall timeout."""

        async def read() -> list[Any]:
            stream = await stream_call
            return [chunk async for chunk in stream]

        return list(await self.call(read()))
