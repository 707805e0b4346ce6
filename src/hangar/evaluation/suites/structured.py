"""``structured``: JSON-schema constrained output parses and validates.

Uses ``response_format={"type": "json_schema"}`` (vLLM structured outputs,
``vllm/entrypoints/openai/protocol.py``). The schema is bounded (enums, an
integer range, a boolean) so a small model cannot run past ``max_tokens``.
"""

from __future__ import annotations

import json
from typing import Any

from hangar.evaluation.context import EvalContext, attempt, check
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks
from hangar.evaluation.schema_check import schema_errors

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
        "sunny": {"type": "boolean"},
        "level": {"type": "string", "enum": ["low", "mid", "high"]},
    },
    "required": ["city", "sunny", "level"],
    "additionalProperties": False,
}


async def run(ctx: EvalContext) -> SuiteResult:
    return suite_from_checks([await _json_schema(ctx)])


def validate_output(text: str, finish_reason: str | None) -> tuple[bool, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, f"not JSON ({exc.msg}, finish_reason={finish_reason}): {text[:80]!r}"
    errors = schema_errors(value, SCHEMA)
    return not errors, "; ".join(errors) or f"valid: {text[:80]}"


async def _json_schema(ctx: EvalContext) -> Check:
    name = "json_schema output"
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.chat.completions.create(
                model=ctx.model,
                messages=[{"role": "user", "content": "Describe the weather in one city as JSON."}],
                max_tokens=96,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True},
                },
            )
        ),
    )
    if failed:
        return failed
    choice = reply.choices[0] if reply.choices else None
    text = (choice.message.content if choice and choice.message else None) or ""
    ok, detail = validate_output(text, choice.finish_reason if choice else None)
    return check(name, ok, detail)
