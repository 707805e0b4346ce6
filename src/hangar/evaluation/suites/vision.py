"""``vision``: an image request (a PNG generated locally, sent as a data URL).

A text-only model is answered by vLLM with a 4xx naming the missing multimodal
support; that makes the suite ``skipped`` (not applicable), not failed. An answer is
not proof that the image was read (a text-only server may drop image parts): the same
question without the image must count fewer prompt tokens, since vLLM counts the
image's placeholder tokens in ``usage.prompt_tokens``.
"""

from __future__ import annotations

from typing import Any

from hangar.evaluation.context import EvalContext, attempt, check
from hangar.evaluation.image import png_data_url
from hangar.evaluation.results import Check, SuiteResult, suite_from_checks

_TEXT_ONLY_HINTS = ("multimodal", "image", "not support", "vision")


QUESTION = "What colours are in this image?"


def _request(ctx: EvalContext, content: object) -> object:
    return ctx.server.call(
        ctx.server.client.chat.completions.create(
            model=ctx.model, messages=[{"role": "user", "content": content}], max_tokens=32
        )
    )


async def run(ctx: EvalContext) -> SuiteResult:
    name = "image input"
    image = [
        {"type": "text", "text": QUESTION},
        {"type": "image_url", "image_url": {"url": png_data_url()}},
    ]
    reply, failed = await attempt(name, _request(ctx, image))
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
    answered = check(
        name,
        choice is not None and choice.finish_reason is not None,
        f"finish_reason={choice.finish_reason if choice else None}",
    )
    return suite_from_checks([answered, await _image_counted(ctx, reply)])


async def _image_counted(ctx: EvalContext, with_image: Any) -> Check:
    name = "image read"
    text_only, failed = await attempt(name, _request(ctx, [{"type": "text", "text": QUESTION}]))
    if failed:
        return failed
    seen = with_image.usage.prompt_tokens if with_image.usage else None
    base = text_only.usage.prompt_tokens if text_only.usage else None
    if seen is None or base is None:
        return check(name, False, "no usage in the reply: cannot tell whether the image was read")
    return check(
        name,
        seen > base,
        f"prompt_tokens {seen} with the image, {base} without"
        + ("" if seen > base else ": the server ignored the image"),
    )
