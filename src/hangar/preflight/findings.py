"""One finding from preflight: plan rules, host checks and applied workarounds alike."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning", "info"]
_ORDER = {"error": 0, "warning": 1, "info": 2}


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    severity: Severity
    message: str
    fix: str = ""
    evidence: str = ""
    source: str = "host"  # host | plan | workaround


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_ORDER[f.severity], f.source, f.id))


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"
