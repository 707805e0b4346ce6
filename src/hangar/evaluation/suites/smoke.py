"""``smoke``: the server answers chat, streaming and completions correctly.

Checks: /v1/models lists the model; chat (plain and streamed, the stream must
end with a finish_reason); completions; ``max_tokens`` and ``stop`` honoured;
usage arithmetic consistent; an unknown model answered with a 4xx and a body.
"""

from __future__ import annotations

import string
from typing import Any

from hangar.evaluation.context import EvalContext, attempt, check
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks

_PRINTABLE = set(string.ascii_letters + string.digits)


async def run(ctx: EvalContext) -> SuiteResult:
    checks = [
        await _chat(ctx),
        await _chat_stream(ctx),
        await _completion(ctx),
        await _max_tokens(ctx),
        await _stop(ctx),
        await _usage_stream(ctx),
        await _error_reporting(ctx),
    ]
    return suite_from_checks(checks)


def models_check(model_ids: list[str], model: str) -> Check:
    return check(
        "models", model in model_ids, f"/v1/models lists {', '.join(model_ids) or 'nothing'}"
    )


async def _chat(ctx: EvalContext) -> Check:
    name = "chat"
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.chat.completions.create(
                model=ctx.model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=16
            )
        ),
    )
    if failed:
        return failed
    choice = reply.choices[0] if reply.choices else None
    ok = choice is not None and choice.finish_reason is not None and choice.message is not None
    usage = reply.usage
    consistent = (
        usage is not None and usage.prompt_tokens + usage.completion_tokens == usage.total_tokens
    )
    detail = f"finish_reason={choice.finish_reason if choice else None}, usage={_usage(usage)}"
    return check(name, ok and consistent and usage.completion_tokens <= 16, detail)


async def _chat_stream(ctx: EvalContext) -> Check:
    name = "chat streaming"
    chunks, failed = await attempt(
        name,
        ctx.server.collect_stream(
            ctx.server.client.chat.completions.create(
                model=ctx.model,
                messages=[{"role": "user", "content": "Count to five."}],
                max_tokens=16,
                stream=True,
                stream_options={"include_usage": True},
            )
        ),
    )
    if failed:
        return failed
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    usage = next((c.usage for c in chunks if c.usage is not None), None)
    detail = f"{len(chunks)} chunks, finish_reason={finish[-1] if finish else None}, usage={_usage(usage)}"
    if not finish:
        return check(name, False, f"stream ended without a finish_reason (truncated?): {detail}")
    return check(name, usage is not None, detail)


async def _completion(ctx: EvalContext) -> Check:
    name = "completions"
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.completions.create(
                model=ctx.model, prompt="Once upon a time", max_tokens=8
            )
        ),
    )
    if failed:
        return failed
    ok = bool(reply.choices) and reply.choices[0].finish_reason is not None
    return check(name, ok, f"text={reply.choices[0].text[:40]!r}" if ok else "no choices returned")


async def _max_tokens(ctx: EvalContext) -> Check:
    name = "max_tokens honoured"
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.completions.create(
                model=ctx.model,
                prompt="The weather today",
                max_tokens=5,
                extra_body={"ignore_eos": True},
            )
        ),
    )
    if failed:
        return failed
    tokens = reply.usage.completion_tokens if reply.usage else None
    finish = reply.choices[0].finish_reason if reply.choices else None
    return check(
        name,
        tokens == 5 and finish == "length",
        f"completion_tokens={tokens}, finish_reason={finish}",
    )


async def _stop(ctx: EvalContext) -> Check:
    """Greedy text, then the same request with a stop string taken from that text."""
    name = "stop honoured"
    base: dict[str, Any] = {
        "model": ctx.model,
        "prompt": "A list of colors:",
        "max_tokens": 24,
        "temperature": 0.0,
        "extra_body": {"ignore_eos": True},
    }
    first, failed = await attempt(
        name, ctx.server.call(ctx.server.client.completions.create(**base))
    )
    if failed:
        return failed
    text = first.choices[0].text if first.choices else ""
    stop = _stop_string(text)
    if stop is None:
        return Check(
            name=name, status="skipped", detail=f"no alphanumeric run in {text[:40]!r} to stop on"
        )
    second, failed = await attempt(
        name, ctx.server.call(ctx.server.client.completions.create(**base, stop=[stop]))
    )
    if failed:
        return failed
    expected = text[: text.find(stop)]
    got = second.choices[0].text if second.choices else None
    finish = second.choices[0].finish_reason if second.choices else None
    ok = got == expected and finish == "stop"
    return check(
        name, ok, f"stop={stop!r}: text={got!r} (expected {expected!r}), finish_reason={finish}"
    )


def _stop_string(text: str) -> str | None:
    """Two alphanumeric characters from the second half of ``text`` whose first occurrence
    is there: a string seen earlier would cut at its first occurrence, possibly position 0,
    and an empty reply would then pass as "stopped"."""
    for i in range(max(1, len(text) // 2), len(text) - 1):
        piece = text[i : i + 2]
        if all(c in _PRINTABLE for c in piece) and text.find(piece) == i:
            return piece
    return None


async def _usage_stream(ctx: EvalContext) -> Check:
    name = "usage consistent"
    chunks, failed = await attempt(
        name,
        ctx.server.collect_stream(
            ctx.server.client.completions.create(
                model=ctx.model,
                prompt="Numbers:",
                max_tokens=7,
                stream=True,
                stream_options={"include_usage": True},
                extra_body={"ignore_eos": True},
            )
        ),
    )
    if failed:
        return failed
    usage = next((c.usage for c in chunks if c.usage is not None), None)
    ok = (
        usage is not None
        and usage.completion_tokens == 7
        and usage.prompt_tokens + usage.completion_tokens == usage.total_tokens
    )
    return check(name, ok, f"streamed usage={_usage(usage)} for max_tokens=7 with ignore_eos")


async def _error_reporting(ctx: EvalContext) -> Check:
    name = "errors reported"
    _reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.completions.create(
                model="hangar-no-such-model", prompt="x", max_tokens=1
            )
        ),
    )
    if failed is None:
        return check(name, False, "a request for an unknown model succeeded")
    status = getattr(failed, "detail", "")
    ok = status.startswith("HTTP 4") and len(status) > len("HTTP 404: ")
    return check(name, ok, f"unknown model -> {status}")


def _usage(usage: Any) -> str:
    if usage is None:
        return "none"
    return f"{usage.prompt_tokens}+{usage.completion_tokens}={usage.total_tokens}"
