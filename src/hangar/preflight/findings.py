"""Preflight's findings: the one Finding type (hangar.planning.findings), re-exported for the
check modules, and a formatting helper they share."""

from __future__ import annotations

from hangar.planning.findings import Finding, Severity, has_errors, sort_findings

__all__ = ["Finding", "Severity", "gib", "has_errors", "sort_findings"]


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"
