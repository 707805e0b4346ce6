"""What every suite gets: the server, the target facts, the served model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hangar.evaluation.client import Server, ServerError
from hangar.evaluation.results import Check, CheckStatus
from hangar.evaluation.target import Target


@dataclass(frozen=True)
class EvalContext:
    server: Server
    target: Target
    model: str
    model_root: str | None = None


async def attempt(name: str, awaitable: Any) -> tuple[Any, Check | None]:
    """Await a request; on failure return a failed check naming status and body."""
    try:
        return await awaitable, None
    except ServerError as exc:
        return None, Check(name=name, status="fail", detail=exc.detail)


def check(name: str, ok: bool, detail: str, *, otherwise: CheckStatus = "fail") -> Check:
    return Check(name=name, status="pass" if ok else otherwise, detail=detail)


def extra(obj: Any, *names: str) -> Any:
    """A field the OpenAI SDK does not model (vLLM's ``reasoning_content``), or None."""
    fields = getattr(obj, "model_extra", None) or {}
    for name in names:
        value = fields.get(name) or getattr(obj, name, None)
        if value:
            return value
    return None
