"""`hangar plan`: parse options, call planning.plan, render. Exit 0 ok / 1 rejected / 2 usage."""

from __future__ import annotations

import json
import os
import shlex
from typing import Any

import click

from hangar.cli.options import Capability, JsonObject, MemorySize, json_option, param_options
from hangar.deploy.params import BY_NAME
from hangar.errors import UsageError


def _overrides(
    hf_overrides: dict[str, object] | None, rope_scaling: dict[str, object] | None
) -> dict[str, object] | None:
    merged = dict(hf_overrides or {})
    if rope_scaling:
        merged["rope_scaling"] = rope_scaling
    return merged or None


def _refuse_deployment_file(model: str) -> None:
    """A deployment file given as MODEL would be read as a config.json ("not valid JSON"):
    name the command that plans a deployment instead."""
    if model.endswith(".toml") and os.path.isfile(model):
        raise UsageError(
            f"{model} is a deployment file, and `hangar plan` takes a model (catalog id, hub id, "
            "config.json or model directory)",
            hint=f"hangar preflight {shlex.quote(model)}   (plans the deployment and checks "
            "the host)",
        )


@click.command("plan")
@click.argument("model")
@param_options("plan")
@click.option("--vllm-version", default=None, help="vLLM version whose rules apply (default: newest known).")
@click.option("--hf-overrides", "hf_overrides", type=JsonObject(), help="vLLM's --hf-overrides: JSON merged into config.json.")
@click.option("--rope-scaling", "rope_scaling", type=JsonObject(), help='RoPE scaling JSON, e.g. \'{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}\' (passed as --hf-overrides).')
@click.option("--gpu-memory", type=MemorySize(), help="A GPU outside the catalog: total memory (80GiB); with --gpu, replaces its memory.")
@click.option("--compute-capability", type=Capability(), help="A GPU outside the catalog: compute capability (9.0).")
@click.option("--head-address", help="Head node address for multi-node commands (default: HEAD_IP placeholder).")
@click.option("--all", "show_all", is_flag=True, help="Show every layout, not only the best ones.")
@json_option
def plan(
    model: str, vllm_version: str | None, hf_overrides: dict[str, object] | None,
    rope_scaling: dict[str, object] | None, gpu_memory: int | None,
    compute_capability: tuple[int, int] | None, head_address: str | None, show_all: bool,
    as_json: bool, **flags: Any,
) -> int:
    """Check MODEL (catalog id, hub id or directory) against every vLLM startup rule.

    With no layout given, every TP x PP x DP (x EP) layout of the GPUs is checked and the
    best one recommended with its `vllm serve` flags.
    """
    from hangar.planning.api import make_plan
    from hangar.planning.report import plan_json
    from hangar.planning.request import request_fields

    _refuse_deployment_file(model)

    given = {k: v for k, v in flags.items() if v is not None}
    hardware = {k: v for k, v in given.items() if BY_NAME[k].section == "resources"}
    result = make_plan(
        model, **hardware, **request_fields(given), vllm_version=vllm_version,
        allow_long=os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").lower() in ("1", "true"),
        hf_overrides=_overrides(hf_overrides, rope_scaling),
        head_address=head_address, gpu_memory=gpu_memory, compute_capability=compute_capability,
    )
    if as_json:
        click.echo(json.dumps(plan_json(result), indent=2))
    else:
        from hangar.cli.render_plan import render_plan

        render_plan(result, show_all=show_all)
    return 0 if result.ok else 1
