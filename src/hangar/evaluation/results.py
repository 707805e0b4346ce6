"""Values produced by ``hangar eval``: checks, suites, perf points, the snapshot.

The ``--json`` contract (docs/eval.md) is ``EvalResult.contract()``::

    {"id", "created_at", "target", "snapshot",
     "suites": {"<suite>": {"status": "pass" | "fail" | "not configured" | "skipped",
                            "checks": [{"name", "status", "detail"}],
                            "points": [...]          # perf only
                            "summary": {...}}}}      # logs only
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CheckStatus = Literal["pass", "fail", "skipped"]
SuiteStatus = Literal["pass", "fail", "not configured", "skipped"]

SUITES: tuple[str, ...] = ("smoke", "tools", "reasoning", "vision", "structured", "logs", "perf")
DEFAULT_SUITES: tuple[str, ...] = ("smoke", "tools", "reasoning", "vision", "structured", "logs")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Check(_Frozen):
    name: str
    status: CheckStatus
    detail: str = ""


class Stats(_Frozen):
    """Summary of one metric in milliseconds (numpy-style linear percentiles)."""

    mean: float
    p50: float
    p90: float
    p99: float


class PerfPoint(_Frozen):
    """One load level: a fixed concurrency or a Poisson request rate."""

    concurrency: int | None = None
    request_rate: float | None = None
    burstiness: float | None = None
    requests: int
    completed: int
    errors: int
    duration_s: float
    input_tokens: int
    output_tokens: int
    ttft_ms: Stats
    tpot_ms: Stats
    itl_ms: Stats
    e2e_ms: Stats
    output_tokens_per_s: float
    total_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float | None = None
    error_samples: list[str] = Field(default_factory=list)
    # Per-request samples (ms) for the report's distributions; not part of --json.
    samples: dict[str, list[float]] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.concurrency is not None:
            return f"concurrency {self.concurrency}"
        return f"rate {self.request_rate:g}/s"


class SuiteResult(_Frozen):
    status: SuiteStatus
    checks: list[Check] = Field(default_factory=list)
    points: list[PerfPoint] | None = None
    summary: dict[str, Any] | None = None


class PromptSettings(_Frozen):
    endpoint: str = "/v1/completions"
    input_len: int
    output_len: int
    seed: int
    num_requests: int | None
    concurrency: list[int] = Field(default_factory=list)
    request_rate: list[float] = Field(default_factory=list)
    burstiness: float = 1.0
    warmup: int
    ignore_eos: bool = True
    tokenizer: str  # "local", "server" or "approximate"
    slo_ms: dict[str, float] = Field(default_factory=dict)


class Snapshot(_Frozen):
    """What was measured, so two results can be compared fairly."""

    model: str | None = None
    max_model_len: int | None = None
    engine: str = "vllm"
    engine_version: str | None = None
    base_url: str
    run_id: str | None = None
    deployment_file: str | None = None
    flags: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    workarounds: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    prompt: PromptSettings | None = None


class EvalResult(_Frozen):
    id: str
    created_at: str
    target: str
    snapshot: Snapshot
    suites: dict[str, SuiteResult]

    @property
    def failed(self) -> bool:
        return any(suite.status == "fail" for suite in self.suites.values())

    def contract(self) -> dict[str, Any]:
        """The documented ``--json`` object (per-request samples left out)."""
        data = self.model_dump(mode="json", exclude_none=True)
        for suite in data["suites"].values():
            for point in suite.get("points", []):
                point.pop("samples", None)
        return data


def suite_status(checks: list[Check]) -> SuiteStatus:
    """fail if any check failed, pass if one passed, else skipped."""
    if any(check.status == "fail" for check in checks):
        return "fail"
    if any(check.status == "pass" for check in checks):
        return "pass"
    return "skipped"


def suite_from_checks(checks: list[Check]) -> SuiteResult:
    return SuiteResult(status=suite_status(checks), checks=checks)
