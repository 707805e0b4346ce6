"""The seam to ``hangar.planning``: a deployment -> the plan's rule findings.

Planning is a pure function of (model facts, hardware, request); this module only
maps deployment fields onto ``PlanRequest``. When planning cannot run (no GPU kind
in the deployment, model facts unavailable) that is one finding, not an exception.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hangar.deploy.schema import Deployment
from hangar.errors import HangarError
from hangar.preflight.findings import Finding
from hangar.workarounds.registry import parse_version

if TYPE_CHECKING:
    from hangar.planning import Plan, PlanRequest


def plan_request(
    d: Deployment, vllm_version: str | None = None, *, with_layout: bool = True
) -> PlanRequest:
    """The request for ``d``; ``with_layout=False`` lets the planner choose tp/pp/dp."""
    from hangar.planning import PlanRequest

    s, p = d.serve, d.parallel
    version = parse_version(vllm_version)
    optional = {
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "max_model_len": s.max_model_len,
        "max_num_seqs": s.max_num_seqs,
        "quantization": s.quantization,
        "kv_cache_dtype": s.kv_cache_dtype,
        "dtype": s.dtype,
        "vllm_version": str(version) if version else None,
    }
    layout = {"tp": p.tensor, "pp": p.pipeline, "dp": p.data, "ep": p.expert} if with_layout else {}
    given = {k: v for k, v in optional.items() if v is not None}
    return PlanRequest.model_validate({"enforce_eager": s.enforce_eager, **layout, **given})


def plan_for(d: Deployment, vllm_version: str | None = None, *, with_layout: bool = True) -> Plan:
    """The plan for the deployment's model, GPU kind and layout (raises HangarError)."""
    from hangar.hardware import hardware_from_args
    from hangar.models import load_model
    from hangar.planning import plan

    hardware = hardware_from_args(d.resources.gpu, d.resources.gpus, d.resources.nodes)
    request = plan_request(d, vllm_version, with_layout=with_layout)
    return plan(load_model(d.model.id), hardware, request)


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
