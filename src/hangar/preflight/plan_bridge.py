"""The seam to ``hangar.planning``: a deployment -> the plan's rule findings.

Planning is a pure function of (model facts, hardware, request); this module only
maps deployment fields onto ``PlanRequest``. When planning cannot run (no GPU kind
in the deployment, model facts unavailable) that is one finding, not an exception.

``serve.extra_args`` are read with vLLM's own argument names: a flag that a structured
field owns is refused (vLLM's argparse keeps the last occurrence, and extra args come
last, so it would silently replace the value the plan checked), and the plan-relevant
flags no field owns (``--max-num-batched-tokens``, chunked prefill, prefix caching) go
into the plan request.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from hangar.deploy.params import PARAMS
from hangar.deploy.schema import Deployment
from hangar.errors import HangarError
from hangar.planning.plan import Plan
from hangar.preflight.findings import Finding

# vllm serve flag -> the deployment field that renders it (hangar.planning.serve), from the
# one parameter table: each row's serve flag and the switch a set value implies
# (--tool-call-parser turns on --enable-auto-tool-choice), each checked against vLLM 0.32.0's
# own options by tests/test_params_table.py.
OWNED_FLAGS: dict[str, str] = {
    flag: str(p.path)
    for p in PARAMS
    if p.path is not None
    for flag in (p.serve, p.implies)
    if flag is not None
}
SHORT_ALIASES: dict[str, str] = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-ep": "--enable-expert-parallel",
    "-q": "--quantization",
}


def vllm_flag(arg: str) -> str | None:
    """The long flag vLLM's parser reads ``arg`` as, or None for a value.

    FlexibleArgumentParser turns ``_`` into ``-`` before the first ``.`` (vllm/utils/
    argparse_utils.py), ``--x=v`` is ``--x``, and argparse accepts a unique prefix of a
    long flag (vLLM keeps allow_abbrev on).
    """
    if arg.startswith("--") and len(arg) > 2:
        name = "--" + arg[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        matches = [f for f in OWNED_FLAGS if f.startswith(name)]
        return name if name in OWNED_FLAGS or len(matches) != 1 else matches[0]
    if arg.startswith("-") and not arg[1:2].isdigit():
        return SHORT_ALIASES.get(arg.split("=", 1)[0], arg)
    return None


def _flags(args: Sequence[str]) -> Iterator[tuple[str, str, str | None]]:
    """(flag, as written, its value if one follows) for each flag in ``args``."""
    for i, arg in enumerate(args):
        flag = vllm_flag(arg)
        if flag is None:
            continue
        nxt = args[i + 1] if i + 1 < len(args) else None
        value = (
            arg.split("=", 1)[1] if "=" in arg else (nxt if nxt and not vllm_flag(nxt) else None)
        )
        yield flag, arg, value


def owned_flag_findings(d: Deployment) -> list[Finding]:
    """A structured field's flag repeated in serve.extra_args: one error per flag."""
    out = []
    for flag, written, value in _flags(d.serve.extra_args):
        field = OWNED_FLAGS.get(flag)
        if field is None:
            continue
        field = field.replace("<kind>", d.target.kind)
        shown = f"{written} {value}" if value is not None and "=" not in written else written
        out.append(
            Finding(
                id="serve.extra_args.owned_flag",
                severity="error",
                source="plan",
                evidence=f"serve.extra_args = {list(d.serve.extra_args)}",
                message=f"serve.extra_args sets {shown}, which {field} owns: vLLM keeps the last "
                "occurrence, so it would replace the value Hangar planned and checked",
                fix=f"remove {written} from serve.extra_args and set {field}"
                + (f" = {value}" if value is not None else ""),
            )
        )
    return out


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def extra_request_fields(args: Sequence[str]) -> dict[str, Any]:
    """PlanRequest fields that only extra_args can set (no structured field owns them)."""
    fields: dict[str, Any] = {}
    for flag, _written, value in _flags(args):
        if flag == "--max-num-batched-tokens" and (n := _int(value)) is not None and n >= 1:
            fields["max_num_batched_tokens"] = n
        elif flag in ("--enable-chunked-prefill", "--no-enable-chunked-prefill"):
            fields["enable_chunked_prefill"] = not flag.startswith("--no-")
        elif flag in ("--enable-prefix-caching", "--no-enable-prefix-caching"):
            fields["enable_prefix_caching"] = not flag.startswith("--no-")
    return fields


def _plan(d: Deployment, vllm_version: str | None) -> Plan:
    from hangar.hardware import hardware_from_args
    from hangar.models import load_model
    from hangar.planning.deployment import plan_request
    from hangar.planning.plan import plan

    request = plan_request(d, vllm_version)
    request = request.model_copy(update=extra_request_fields(d.serve.extra_args))
    hardware = hardware_from_args(d.resources.gpu, d.resources.gpus, d.resources.nodes)
    return plan(load_model(d.model.id), hardware, request)


def plan_findings(d: Deployment, vllm_version: str | None = None) -> list[Finding]:
    owned = owned_flag_findings(d)
    if d.resources.gpu is None:
        return [*owned, _skipped("resources.gpu is not set; the plan rules need the GPU kind")]
    try:
        result = _plan(d, vllm_version)
    except HangarError as exc:
        return [
            *owned,
            Finding(
                id="plan.unavailable",
                severity="warning",
                source="plan",
                message=f"plan rules not checked: {exc.message}",
                fix=exc.hint or "",
            ),
        ]
    return [*owned, *_layout_findings(result)]


def _layout_findings(result: Plan) -> list[Finding]:
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
    return list(layout.findings)  # already preflight's type: source "plan", evidence the file


def _skipped(why: str) -> Finding:
    return Finding(
        id="plan.skipped", severity="info", source="plan", message=f"plan rules not checked: {why}"
    )
