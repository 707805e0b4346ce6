"""A deployment seen by the planner: its PlanRequest, its plan, and the layout the plan
would choose for it (``hangar init``). Pure: no host is probed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import Deployment, Parallel
from hangar.errors import HangarError
from hangar.planning.plan import Plan, plan
from hangar.planning.request import PlanRequest, deployment_request_fields
from hangar.planning.versions import VllmVersion


def _version(text: str | None) -> str | None:
    """The engine's version as the request carries it; an unreadable one plans as the default."""
    return text.strip() if text and VllmVersion.parse_or_none(text) else None


def plan_request(
    d: Deployment, vllm_version: str | None = None, *, with_layout: bool = True
) -> PlanRequest:
    """The request for ``d``; ``with_layout=False`` lets the planner choose tp/pp/dp."""
    fields = deployment_request_fields(d, with_layout=with_layout)
    version = _version(vllm_version)
    if version is not None:
        fields["vllm_version"] = version
    return PlanRequest.model_validate(fields)


def plan_for(d: Deployment, vllm_version: str | None = None, *, with_layout: bool = True) -> Plan:
    """The plan for the deployment's model, GPU kind and layout (raises HangarError)."""
    from hangar.hardware import hardware_from_args
    from hangar.models import load_model

    hardware = hardware_from_args(d.resources.gpu, d.resources.gpus, d.resources.nodes)
    request = plan_request(d, vllm_version, with_layout=with_layout)
    return plan(load_model(d.model.id), hardware, request)


class Proposal(BaseModel):
    model_config = ConfigDict(frozen=True)

    deployment: Deployment
    note: str


def propose(d: Deployment, *, keep_layout: bool) -> Proposal:
    """The deployment with `hangar plan`'s recommended layout, unless the user chose one."""
    if d.resources.gpu is None:
        return Proposal(deployment=d, note="no GPU kind given: layout not planned")
    try:
        result = plan_for(d, with_layout=keep_layout)
    except HangarError as exc:
        return Proposal(deployment=d, note=f"plan unavailable: {exc.message}")
    best = result.recommended
    if best is None:
        return Proposal(
            deployment=d, note="the plan found no layout that fits; check with hangar preflight"
        )
    if keep_layout:
        return Proposal(
            deployment=d, note=f"your layout tp={d.parallel.tensor} pp={d.parallel.pipeline} kept"
        )
    layout = Parallel(tensor=best.tp, pipeline=best.pp, data=best.dp, expert=best.ep)
    return Proposal(
        deployment=d.model_copy(update={"parallel": layout}),
        note=f"plan recommends tp={best.tp} pp={best.pp} dp={best.dp}{' ep' if best.ep else ''}",
    )


