"""``tools``: tool calling works with the parser the deployment configured.

Without a parser (deployment or ``--tool-call-parser``) nothing is sent and the
suite is ``not configured``: apps must get an explicit "tool calling is not
configured for this model" rather than text that looks like an answer. vLLM
itself rejects ``tool_choice="auto"`` without ``--enable-auto-tool-choice
--tool-call-parser`` (``vllm/entrypoints/openai/serving_chat.py``).
"""

from __future__ import annotations

import json
from typing import Any

from hangar.evaluation.context import EvalContext, attempt, check
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks
from hangar.evaluation.schema_check import schema_errors

NOT_CONFIGURED = "tool calling is not configured for this model"
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": WEATHER_SCHEMA,
        },
    }
]
_ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
_ASK_TWO = [
    {
        "role": "user",
        "content": "What is the weather in Paris and in Tokyo? Call the tool once per city.",
    }
]


def not_configured(reason: str = "") -> SuiteResult:
    detail = NOT_CONFIGURED + (
        f" ({reason})"
        if reason
        else " (no tool_call_parser in the deployment; pass --tool-call-parser NAME)"
    )
    return SuiteResult(
        status="not configured", checks=[Check(name="tool parser", status="skipped", detail=detail)]
    )


async def run(ctx: EvalContext) -> SuiteResult:
    if not ctx.target.tool_call_parser:
        return not_configured()
    auto = await _auto(ctx)
    if auto.status == "fail" and NOT_CONFIGURED in auto.detail:
        return suite_from_checks([auto])
    required, calls = await _required(ctx)
    checks = [
        auto,
        required,
        await _parallel(ctx),
        await _follow_up(ctx, calls),
        await _streamed(ctx),
    ]
    return suite_from_checks(checks)


async def _create(
    ctx: EvalContext, name: str, messages: list[dict[str, Any]], **kwargs: Any
) -> tuple[Any, Check | None]:
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.chat.completions.create(
                model=ctx.model, messages=messages, tools=TOOLS, max_tokens=128, **kwargs
            )
        ),
    )
    if failed and failed.detail.startswith("HTTP 400") and "tool" in failed.detail.lower():
        failed = Check(
            name=name, status="fail", detail=f"{NOT_CONFIGURED} (server said: {failed.detail})"
        )
    return reply, failed


def call_errors(calls: list[tuple[str, str]]) -> list[str]:
    """Each (name, arguments) must name get_weather with JSON args matching its schema."""
    errors = []
    for name, arguments in calls:
        if name != "get_weather":
            errors.append(f"unknown function {name!r}")
            continue
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError:
            errors.append(f"arguments are not JSON: {arguments[:60]!r}")
            continue
        errors += schema_errors(args, WEATHER_SCHEMA)
    return errors


def _calls(reply: Any) -> list[tuple[str, str]]:
    message = reply.choices[0].message if reply.choices else None
    return (
        [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
        if message
        else []
    )


async def _auto(ctx: EvalContext) -> Check:
    name = "tool_choice=auto"
    reply, failed = await _create(ctx, name, _ASK, tool_choice="auto")
    if failed:
        return failed
    calls = _calls(reply)
    errors = call_errors(calls)
    detail = f"{len(calls)} tool call(s)" if calls else "answered in text (no tool call)"
    return check(name, not errors, "; ".join(errors) or detail)


async def _required(ctx: EvalContext) -> tuple[Check, list[Any]]:
    name = "tool_choice=required"
    reply, failed = await _create(ctx, name, _ASK, tool_choice="required")
    if failed:
        return failed, []
    calls = _calls(reply)
    errors = call_errors(calls) if calls else ["no tool_calls in the reply"]
    detail = "; ".join(errors) or f"{len(calls)} valid call(s): {calls[0][1][:60]}"
    raw = list(reply.choices[0].message.tool_calls or [])
    return check(name, not errors, detail), raw


async def _parallel(ctx: EvalContext) -> Check:
    name = "parallel tool calls"
    reply, failed = await _create(
        ctx, name, _ASK_TWO, tool_choice="required", parallel_tool_calls=True
    )
    if failed:
        return failed
    calls = _calls(reply)
    errors = call_errors(calls)
    ok = len(calls) >= 2 and not errors
    return check(name, ok, "; ".join(errors) or f"{len(calls)} call(s) for two cities")


async def _follow_up(ctx: EvalContext, calls: list[Any]) -> Check:
    name = "tool result follow-up"
    if not calls:
        return Check(name=name, status="skipped", detail="no tool call to answer")
    first = calls[0]
    messages = _ASK + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": first.id or "call_0",
                    "type": "function",
                    "function": {
                        "name": first.function.name,
                        "arguments": first.function.arguments,
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": first.id or "call_0", "content": '{"temperature_c": 21}'},
    ]
    reply, failed = await _create(ctx, name, messages)
    if failed:
        return failed
    choice = reply.choices[0] if reply.choices else None
    ok = choice is not None and choice.finish_reason is not None
    return check(name, ok, f"finish_reason={choice.finish_reason if choice else None}")


async def _streamed(ctx: EvalContext) -> Check:
    name = "streamed tool calls"
    chunks, failed = await attempt(
        name,
        ctx.server.collect_stream(
            ctx.server.client.chat.completions.create(
                model=ctx.model,
                messages=_ASK,
                tools=TOOLS,
                tool_choice="required",
                max_tokens=128,
                stream=True,
            )
        ),
    )
    if failed:
        return failed
    calls = assemble_streamed_calls(chunks)
    errors = call_errors(calls) if calls else ["no tool_calls deltas in the stream"]
    return check(
        name,
        not errors,
        "; ".join(errors) or f"{len(calls)} call(s) assembled from {len(chunks)} chunks",
    )


def assemble_streamed_calls(chunks: list[Any]) -> list[tuple[str, str]]:
    """Join ``delta.tool_calls`` fragments by index, as a client must."""
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices or []:
            for delta in (choice.delta.tool_calls or []) if choice.delta else []:
                if delta.function and delta.function.name:
                    names[delta.index] = names.get(delta.index, "") + delta.function.name
                if delta.function and delta.function.arguments:
                    args[delta.index] = args.get(delta.index, "") + delta.function.arguments
    return [(names.get(i, ""), args.get(i, "")) for i in sorted(set(names) | set(args))]
