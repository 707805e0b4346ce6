"""``vision``: an image request (a PNG generated locally, sent as a data URL).

A text-only model is answered by vLLM with a 4xx naming the missing multimodal
support; that makes the suite ``skipped`` (not applicable), not failed.
"""

from __future__ import annotations

from hangar.evaluation.context import EvalContext, attempt, check
from hangar.evaluation.image import png_data_url
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks

_TEXT_ONLY_HINTS = ("multimodal", "image", "not support", "vision")


async def run(ctx: EvalContext) -> SuiteResult:
    name = "image input"
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What colours are in this image?"},
                {"type": "image_url", "image_url": {"url": png_data_url()}},
            ],
        }
    ]
    reply, failed = await attempt(
        name,
        ctx.server.call(
            ctx.server.client.chat.completions.create(
                model=ctx.model, messages=messages, max_tokens=32
            )
        ),
    )
    if failed:
        if failed.detail.startswith("HTTP 4") and any(
            h in failed.detail.lower() for h in _TEXT_ONLY_HINTS
        ):
            skipped = Check(
                name=name, status="skipped", detail=f"model is not multimodal ({failed.detail})"
            )
            return SuiteResult(status="skipped", checks=[skipped])
        return suite_from_checks([failed])
    choice = reply.choices[0] if reply.choices else None
    ok = choice is not None and choice.finish_reason is not None
    usage = reply.usage
    detail = f"finish_reason={choice.finish_reason if choice else None}, prompt_tokens={usage.prompt_tokens if usage else None}"
    return suite_from_checks([check(name, ok, detail)])
