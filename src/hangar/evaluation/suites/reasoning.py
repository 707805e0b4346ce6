"""``reasoning``: with a reasoning parser, the reasoning is separated from the answer.

vLLM puts the parsed reasoning in ``reasoning_content`` (renamed ``reasoning`` in
later versions; both are accepted) and strips the think tags from ``content``
(``vllm/reasoning/``). Without a parser the suite is ``not configured``.
"""

from __future__ import annotations

from typing import Any

from hangar.evaluation.context import EvalContext, attempt, check, extra
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks

_FIELDS = ("reasoning_content", "reasoning")
_TAGS = ("<think>", "</think>")
_ASK = [{"role": "user", "content": "Is 17 a prime number? Think first."}]
# Ask for thinking explicitly: Qwen3 templates read `enable_thinking`, DeepSeek V3.1
# templates and vLLM's deepseek_v3 parser read `thinking`
# (vllm/reasoning/deepseek_v3_reasoning_parser.py); unknown keys are ignored.
_THINKING = {"chat_template_kwargs": {"thinking": True, "enable_thinking": True}}


async def run(ctx: EvalContext) -> SuiteResult:
    if not ctx.target.reasoning_parser:
        detail = (
            "no reasoning parser configured (deployment reasoning_parser or --reasoning-parser)"
        )
        return SuiteResult(
            status="not configured",
            checks=[Check(name="reasoning parser", status="skipped", detail=detail)],
        )
    return suite_from_checks([await _plain(ctx), await _streamed(ctx)])


def separation(reasoning: str, content: str) -> tuple[bool, str]:
    leaked = [tag for tag in _TAGS if tag in content]
    ok = bool(reasoning) and not leaked
    detail = f"reasoning {len(reasoning)} chars, content {len(content)} chars"
    if leaked:
        detail += f"; think tags left in content: {', '.join(leaked)}"
    elif not reasoning:
        detail += "; no reasoning field in the reply"
    return ok, detail


async def _plain(ctx: EvalContext) -> Check:
    name = "reasoning separated"
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.chat.completions.create(model=ctx.model, messages=_ASK, max_tokens=64)
        ),
    )
    if failed:
        return failed
    message = reply.choices[0].message if reply.choices else None
    ok, detail = separation(
        str(extra(message, *_FIELDS) or ""), (message.content if message else None) or ""
    )
    return check(name, ok, detail)


async def _streamed(ctx: EvalContext) -> Check:
    name = "reasoning separated (streaming)"
    chunks, failed = await attempt(
        name,
        ctx.server.collect_stream(
            ctx.server.client.chat.completions.create(
                model=ctx.model, messages=_ASK, max_tokens=64, stream=True
            )
        ),
    )
    if failed:
        return failed
    reasoning, content = _join(chunks)
    ok, detail = separation(reasoning, content)
    return check(name, ok, detail)


def _join(chunks: list[Any]) -> tuple[str, str]:
    reasoning, content = [], []
    for chunk in chunks:
        for choice in chunk.choices or []:
            if choice.delta is None:
                continue
            reasoning.append(str(extra(choice.delta, *_FIELDS) or ""))
            content.append(choice.delta.content or "")
    return "".join(reasoning), "".join(content)
