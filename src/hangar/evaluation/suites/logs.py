"""``logs``: the server's start-up log summarised (warnings, errors, kernels, KV cache).

Patterns are data (``evaluation/data/log_signals.yaml``), validated on load.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from hangar.errors import DataError
from hangar.evaluation.context import EvalContext, check
from hangar.evaluation.results import Check, SuiteResult, suite_status

_DATA = "data/log_signals.yaml"
_SAMPLES = 5
_STARTUP_DONE = "Application startup complete"
# vLLM prefixes: "(EngineCore pid=1) WARNING 11-29 16:28:00 [file.py:12] text"
_PREFIX = re.compile(r"^.*?\b(?:WARNING|ERROR|INFO|DEBUG)\b\s+\S+\s+\S+\s+\[[^\]]*\]\s*")


class Signal(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    pattern: str
    all: bool = False


class LogSignals(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    version: int
    signals: list[Signal]
    levels: dict[str, str]


@lru_cache(maxsize=1)
def log_signals() -> LogSignals:
    text = resources.files("hangar.evaluation").joinpath(_DATA).read_text(encoding="utf-8")
    try:
        data = LogSignals.model_validate(yaml.safe_load(text))
        for signal in data.signals:
            re.compile(signal.pattern)
    except (ValidationError, re.error) as exc:
        raise DataError(f"hangar/evaluation/{_DATA}: {exc}") from exc
    if data.version != 1:
        raise DataError(f"hangar/evaluation/{_DATA}: unsupported version {data.version}")
    return data


def split_startup(text: str) -> tuple[list[str], list[str]]:
    """Lines up to uvicorn's "Application startup complete." and the lines after it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _STARTUP_DONE in line:
            return lines[: i + 1], lines[i + 1 :]
    return lines, []


def summarize_log(text: str) -> dict[str, Any]:
    """Start-up warnings/errors (distinct, with samples), runtime error count, signals."""
    spec = log_signals()
    lines, runtime = split_startup(text)
    summary: dict[str, Any] = {}
    for level, pattern in spec.levels.items():
        hits = _distinct(
            _PREFIX.sub("", line).strip() for line in lines if re.search(pattern, line)
        )
        summary[f"{level}s"] = len(hits)
        summary[f"{level}_samples"] = hits[:_SAMPLES]
    summary["runtime_errors"] = sum(1 for line in runtime if re.search(spec.levels["error"], line))
    for signal in spec.signals:
        values = _distinct(
            " ".join(m.groups()) for line in lines if (m := re.search(signal.pattern, line))
        )
        if values:
            summary[signal.key] = values if signal.all else values[-1]
    return summary


def _distinct(items: Any) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


async def run(ctx: EvalContext) -> SuiteResult:
    return summarize_path(ctx.target.log_path)


def summarize_path(path: Path | None) -> SuiteResult:
    if path is None:
        detail = "no server log known (evaluate a run id, or pass --log FILE)"
        return SuiteResult(
            status="skipped", checks=[Check(name="server log", status="skipped", detail=detail)]
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return SuiteResult(
            status="fail",
            checks=[Check(name="server log", status="fail", detail=f"{path}: {exc.strerror}")],
        )
    summary = summarize_log(text)
    checks = [
        check(
            "no errors at start-up",
            summary["errors"] == 0,
            f"{summary['errors']} error line(s)"
            + (f": {summary['error_samples'][0]}" if summary["error_samples"] else ""),
        ),
        check(
            "KV cache size reported",
            "kv_cache_tokens" in summary,
            f"{summary.get('kv_cache_tokens', 'not found')} tokens",
            otherwise="skipped",
        ),
        Check(
            name="warnings",
            status="pass",
            detail=f"{summary['warnings']} distinct start-up warning(s); "
            f"{summary['runtime_errors']} error line(s) after start-up",
        ),
    ]
    return SuiteResult(status=suite_status(checks), checks=checks, summary=summary)
