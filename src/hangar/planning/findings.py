"""The one Finding type: a verdict with its fix, from a plan rule, a preflight check or a
workaround alike (planning is the lowest stage that makes findings; preflight, launch and
diagnose sit above it and import it from here).

JSON contracts built on it: the plan's ``layouts[].findings[]`` (docs/plan-json.md, written
key by key in planning/report.py) and preflight's ``findings[]`` (docs/launch.md: exactly
``id, severity, message, fix, evidence, source`` = ``model_dump()``, so ``phase`` and
``origin`` are excluded from the dump).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]
# When vLLM itself would fail: argument parsing / engine config (frontend), worker start-up,
# weight loading, or the memory profile (vllm/v1/worker/gpu_worker.py determine_available_memory).
Phase = Literal["frontend", "worker", "load", "profile"]
# Whose words ``message`` is: "vllm" = byte-exact vLLM text for the chosen version; "hangar" =
# Hangar's explanation where vLLM says nothing useful, or nothing.
Origin = Literal["vllm", "hangar"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


class Finding(BaseModel):
    """One verdict and its fix.

    ``source`` is the stage that found it (``plan``, ``host``, ``workaround``, ``slurm`` ...);
    ``evidence`` what shows it: the observed value, or for a plan rule the vLLM source file the
    rule and its text were read from. ``phase`` is set for plan rules only.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    severity: Severity
    message: str
    fix: str = ""
    evidence: str = ""
    source: str = "host"
    phase: Phase | None = Field(default=None, exclude=True)
    origin: Origin = Field(default="hangar", exclude=True)

    @property
    def is_error(self) -> bool:
        return self.severity == "error"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info; by stage and id within a severity."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.source, f.id))


def has_errors(findings: list[Finding]) -> bool:
    return any(f.is_error for f in findings)
