"""The seam to ``hangar.planning``: a deployment -> the plan's rule findings.

Planning is a pure function of (model facts, hardware, request); this module only
maps deployment fields onto ``PlanRequest``. When planning cannot run (no GPU kind
in the deployment, model facts unavailable) that is one finding, not an exception.
"""

from __future__ import annotations

from hangar.deploy.schema import Deployment
from hangar.errors import HangarError
from hangar.planning.deployment import plan_for
from hangar.preflight.findings import Finding


def plan_findings(d: Deployment, vllm_version: str | None = None) -> list[Finding]:
    if d.resources.gpu is None:
        return [_skipped("resources.gpu is not set; the plan rules need the GPU kind")]
    try:
        result = plan_for(d, vllm_version)
    except HangarError as exc:
        return [
            Finding(
                id="plan.unavailable",
                severity="warning",
                source="plan",
                message=f"plan rules not checked: {exc.message}",
                fix=exc.hint or "",
            )
        ]
    layout = result.verdict_layout
    if layout is None:
        return [
            Finding(
                id="plan.no_layout",
                severity="error",
                source="plan",
                message="no parallel layout of this model fits the given GPUs",
                fix="hangar plan MODEL --gpu G --gpus N   (see the candidates)",
            )
        ]
    return [
        Finding(
            id=f.id,
            severity=f.severity,
            message=f.message,
            fix=f.fix,
            evidence=f.source,
            source="plan",
        )
        for f in layout.findings
    ]


def _skipped(why: str) -> Finding:
    return Finding(
        id="plan.skipped", severity="info", source="plan", message=f"plan rules not checked: {why}"
    )
