"""``evaluate()``: run the chosen suites against one target and return an EvalResult."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from hangar.errors import UsageError
from hangar.evaluation.client import Server, ServerError
from hangar.evaluation.context import EvalContext
from hangar.evaluation.perf import PerfOptions, run_point, warm_up
from hangar.evaluation.progress import ProgressEvent, ProgressFn, no_progress
from hangar.evaluation.prompts import make_prompts, pick_tokenizer
from hangar.evaluation.results import (
    SUITES,
    Check,
    EvalResult,
    PerfPoint,
    PromptSettings,
    Snapshot,
    SuiteResult,
    suite_status,
)
from hangar.evaluation.suites import logs, reasoning, smoke, structured, tools, vision
from hangar.evaluation.target import Target

SuiteFn = Callable[[EvalContext], Awaitable[SuiteResult]]
_FUNCTIONAL: dict[str, SuiteFn] = {
    "smoke": smoke.run,
    "tools": tools.run,
    "reasoning": reasoning.run,
    "vision": vision.run,
    "structured": structured.run,
    "logs": logs.run,
}


@dataclass(frozen=True)
class EvalOptions:
    suites: Sequence[str] = ("smoke", "tools", "reasoning", "vision", "structured", "logs")
    perf: PerfOptions = field(default_factory=PerfOptions)
    timeout: float = 60.0
    model: str | None = None


@dataclass(frozen=True)
class ServerInfo:
    model_ids: list[str]
    model_root: str | None
    max_model_len: int | None
    version: str | None


def parse_suites(text: str) -> list[str]:
    """``"smoke,perf"`` or ``"all"`` -> validated suite names in canonical order."""
    names = (
        list(SUITES) if text.strip() == "all" else [s.strip() for s in text.split(",") if s.strip()]
    )
    unknown = [n for n in names if n not in SUITES]
    if unknown or not names:
        raise UsageError(
            f"unknown suite(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(SUITES)} or all"
        )
    return [s for s in SUITES if s in names]


def evaluate(
    target: Target, options: EvalOptions, progress: ProgressFn = no_progress
) -> EvalResult:
    """Run the suites (blocking; the event loop is private to this call)."""
    return asyncio.run(evaluate_async(target, options, progress))


async def evaluate_async(
    target: Target, options: EvalOptions, progress: ProgressFn = no_progress
) -> EvalResult:
    server = Server(target, timeout=options.timeout)
    try:
        return await _evaluate(server, target, options, progress)
    finally:
        await server.close()


async def _evaluate(
    server: Server, target: Target, options: EvalOptions, progress: ProgressFn
) -> EvalResult:
    suites: dict[str, SuiteResult] = {}
    try:
        info = await probe(server)
    except ServerError as exc:
        return _unreachable(target, options, exc.detail)
    model = _choose_model(options.model or target.model, info)
    ctx = EvalContext(server=server, target=target, model=model, model_root=info.model_root)
    prompt: PromptSettings | None = None
    for index, name in enumerate(options.suites):
        progress(ProgressEvent(f"suite {name}", index, len(options.suites)))
        if name == "perf":
            suites[name], prompt = await run_perf(ctx, options.perf, progress)
        else:
            suites[name] = await _FUNCTIONAL[name](ctx)
        if name == "smoke":
            suites[name] = _with_models_check(suites[name], info, model)
    progress(ProgressEvent("suites", len(options.suites), len(options.suites)))
    return _result(target, suites, _snapshot(target, info, model, prompt))


async def probe(server: Server) -> ServerInfo:
    """/v1/models (required) and /version (optional: not every server has it)."""
    models = await server.get_json("/v1/models")
    data = models.get("data", []) if isinstance(models, dict) else []
    ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
    first: dict[str, Any] = data[0] if data and isinstance(data[0], dict) else {}
    try:
        version_reply = await server.get_json("/version")
        version = str(version_reply.get("version")) if isinstance(version_reply, dict) else None
    except ServerError:
        version = None
    max_len = first.get("max_model_len")
    return ServerInfo(
        ids, first.get("root"), int(max_len) if isinstance(max_len, int) else None, version
    )


def _choose_model(wanted: str | None, info: ServerInfo) -> str:
    if wanted and wanted in info.model_ids:
        return wanted
    return info.model_ids[0] if info.model_ids else (wanted or "")


def _with_models_check(suite: SuiteResult, info: ServerInfo, model: str) -> SuiteResult:
    checks = [smoke.models_check(info.model_ids, model), *suite.checks]
    return SuiteResult(status=suite_status(checks), checks=checks)


def _unreachable(target: Target, options: EvalOptions, detail: str) -> EvalResult:
    failed = SuiteResult(status="fail", checks=[Check(name="models", status="fail", detail=detail)])
    skipped = SuiteResult(
        status="skipped",
        checks=[Check(name="server", status="skipped", detail=f"server unreachable: {detail}")],
    )
    suites = {name: failed if name == "smoke" else skipped for name in options.suites}
    if "smoke" not in suites:
        suites = {"smoke": failed, **suites}
    return _result(
        target,
        suites,
        _snapshot(target, ServerInfo([], None, None, None), target.model or "", None),
    )


async def run_perf(
    ctx: EvalContext, options: PerfOptions, progress: ProgressFn
) -> tuple[SuiteResult, PromptSettings]:
    """Warm up, then one point per concurrency (or per request rate)."""
    tokenizer = await pick_tokenizer(ctx.server, ctx.model, ctx.model_root)
    levels: list[tuple[int | None, float | None]] = (
        [(None, r) for r in options.request_rate]
        if options.request_rate
        else [(c, None) for c in options.concurrency]
    )
    count = max(options.requests_for(c) for c, _ in levels)
    progress(ProgressEvent("perf prompts", 0, count + options.warmup))
    prompts = await make_prompts(tokenizer, count + options.warmup, options.input_len, options.seed)
    warm, measured = prompts[: options.warmup], prompts[options.warmup :]
    warm_errors = await warm_up(ctx.server, ctx.model, warm, options)
    checks = [
        Check(
            name="warm-up",
            status="fail" if warm_errors else "pass",
            detail=warm_errors[0] if warm_errors else f"{len(warm)} request(s)",
        )
    ]
    points: list[PerfPoint] = []
    for concurrency, rate in levels:
        n = options.requests_for(concurrency)
        point = await run_point(
            ctx.server,
            ctx.model,
            measured[:n],
            options,
            concurrency=concurrency,
            request_rate=rate,
            progress=progress,
        )
        points.append(point)
        checks.append(_point_check(point))
    settings = _prompt_settings(options, tokenizer.kind)
    return SuiteResult(status=suite_status(checks), checks=checks, points=points), settings


def _point_check(point: PerfPoint) -> Check:
    ok = point.errors == 0 and point.completed > 0
    detail = f"{point.completed}/{point.requests} ok, {point.output_tokens_per_s:.1f} output tok/s"
    if point.error_samples:
        detail += f"; first error: {point.error_samples[0]}"
    return Check(name=point.label, status="pass" if ok else "fail", detail=detail)


def _prompt_settings(options: PerfOptions, tokenizer_kind: str) -> PromptSettings:
    return PromptSettings(
        input_len=options.input_len,
        output_len=options.output_len,
        seed=options.seed,
        num_requests=options.num_requests,
        concurrency=[] if options.request_rate else list(options.concurrency),
        request_rate=list(options.request_rate),
        burstiness=options.burstiness,
        warmup=options.warmup,
        tokenizer=tokenizer_kind,
        slo_ms=dict(options.slo_ms),
    )


def _snapshot(
    target: Target, info: ServerInfo, model: str, prompt: PromptSettings | None
) -> Snapshot:
    return Snapshot(
        model=model or None,
        max_model_len=info.max_model_len,
        engine_version=info.version,
        base_url=target.root_url,
        run_id=target.run_id,
        deployment_file=target.deployment_file,
        flags=target.flags,
        env=target.env,
        workarounds=target.workarounds,
        gpus=target.gpus,
        tool_call_parser=target.tool_call_parser,
        reasoning_parser=target.reasoning_parser,
        prompt=prompt,
    )


def _result(target: Target, suites: dict[str, SuiteResult], snapshot: Snapshot) -> EvalResult:
    now = datetime.now(timezone.utc)
    eval_id = f"ev-{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
    return EvalResult(
        id=eval_id,
        created_at=now.isoformat(timespec="seconds"),
        target=target.spec,
        snapshot=snapshot,
        suites=suites,
    )
