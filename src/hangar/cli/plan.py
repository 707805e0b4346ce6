"""`hangar plan`: parse options, call planning.plan, render. Exit 0 ok / 1 rejected / 2 usage."""

from __future__ import annotations

import json
import math
import os
import re

import click

from hangar.cli.options import hardware_options, json_option

_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG]?)$")
_UNITS = {"": 1, "k": 1000, "K": 1024, "m": 10**6, "M": 2**20, "g": 10**9, "G": 2**30}


class HumanInt(click.ParamType):  # type: ignore[type-arg]
    """vLLM's human_readable_int: 1k = 1000, 1K = 1024, 25.6k; -1 / auto mean auto-fit."""

    name = "int"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value).strip()
        if text in ("-1", "auto"):
            return -1
        match = _HUMAN_INT.match(text)
        if not match:
            self.fail(f"{text!r} is not a length like 32768, 32k or 128K", param, ctx)
        number, unit = match.groups()
        result = int(float(number) * _UNITS[unit])
        if result <= 0:
            self.fail("must be a positive integer", param, ctx)
        return result


class FiniteFloat(click.ParamType):  # type: ignore[type-arg]
    """A float that is a number: nan/inf are usage errors, out-of-range values are for the
    plan's rules to explain (vLLM's CacheConfig message)."""

    name = "float"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*(GiB|GB|MiB|MB|G|M)?$", re.IGNORECASE)
_SIZE_UNITS = {"gib": 2**30, "g": 2**30, "gb": 10**9, "mib": 2**20, "m": 2**20, "mb": 10**6}


class MemorySize(click.ParamType):  # type: ignore[type-arg]
    """80GiB, 81559MiB, 80G (GiB), 85.5GB (10^9); a bare number is GiB."""

    name = "size"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        match = _SIZE.match(str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a size like 80GiB or 81559MiB", param, ctx)
        number, unit = match.groups()
        result = int(float(number) * _SIZE_UNITS[(unit or "gib").lower()])
        if result <= 0:
            self.fail("must be more than 0", param, ctx)
        return result


class Capability(click.ParamType):  # type: ignore[type-arg]
    """A CUDA compute capability such as 9.0 or 12.1."""

    name = "major.minor"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, int]:
        match = re.match(r"^(\d{1,2})\.(\d)$", str(value).strip())
        if not match:
            self.fail(f"{value!r} is not a capability like 9.0 or 8.6", param, ctx)
        return int(match.group(1)), int(match.group(2))


class JsonObject(click.ParamType):  # type: ignore[type-arg]
    """A JSON object on the command line (vLLM's --hf-overrides / --rope-scaling)."""

    name = "json"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> dict[str, object]:
        if isinstance(value, dict):
            return value
        try:
            parsed = json.loads(str(value))
        except json.JSONDecodeError as exc:
            self.fail(f"not valid JSON ({exc.msg} at column {exc.colno})", param, ctx)
        if not isinstance(parsed, dict):
            self.fail("must be a JSON object, e.g. '{\"max_position_embeddings\": 131072}'", param, ctx)
        return parsed


def _overrides(
    hf_overrides: dict[str, object] | None, rope_scaling: dict[str, object] | None
) -> dict[str, object] | None:
    merged = dict(hf_overrides or {})
    if rope_scaling:
        merged["rope_scaling"] = rope_scaling
    return merged or None


@click.command("plan")
@click.argument("model")
@hardware_options
@click.option("--tp", "--tensor-parallel-size", "tp", type=click.IntRange(min=1), help="Tensor parallel size to check.")
@click.option("--pp", "--pipeline-parallel-size", "pp", type=click.IntRange(min=1), help="Pipeline parallel size.")
@click.option("--dp", "--data-parallel-size", "dp", type=click.IntRange(min=1), help="Data parallel size.")
@click.option("--ep/--no-ep", "--enable-expert-parallel/--no-enable-expert-parallel", "ep", default=None, help="Expert parallel.")
@click.option("--max-model-len", type=HumanInt(), help="Context length (32768, 32k, 128K; -1 = auto-fit).")
@click.option("--gpu-memory-utilization", type=FiniteFloat(), help="Fraction of GPU memory for vLLM (default 0.92 from 0.20).")
@click.option("--kv-cache-dtype", default="auto", show_default=True)
@click.option("--quantization", "-q", help="Quantization method, as for vllm serve.")
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "half", "float16", "bfloat16", "float", "float32"]),
    help="Model dtype, as for vllm serve.",
)
@click.option("--max-num-batched-tokens", type=click.IntRange(min=1))
@click.option("--max-num-seqs", type=click.IntRange(min=1))
@click.option("--enforce-eager", is_flag=True, help="No CUDA graphs (no graph memory reserved).")
@click.option("--vllm-version", default=None, help="vLLM version whose rules apply (default: newest known).")
@click.option("--hf-overrides", "hf_overrides", type=JsonObject(), help="vLLM's --hf-overrides: JSON merged into config.json.")
@click.option("--rope-scaling", "rope_scaling", type=JsonObject(), help='RoPE scaling JSON, e.g. \'{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}\' (passed as --hf-overrides).')
@click.option("--gpu-memory", type=MemorySize(), help="A GPU outside the catalog: total memory (80GiB); with --gpu, replaces its memory.")
@click.option("--compute-capability", type=Capability(), help="A GPU outside the catalog: compute capability (9.0).")
@click.option("--head-address", help="Head node address for multi-node commands (default: HEAD_IP placeholder).")
@click.option("--all", "show_all", is_flag=True, help="Show every layout, not only the best ones.")
@json_option
def plan(
    model: str, gpu: str | None, gpus: int | None, nodes: int, tp: int | None, pp: int | None,
    dp: int | None, ep: bool | None, max_model_len: int | None, gpu_memory_utilization: float | None,
    kv_cache_dtype: str, quantization: str | None, dtype: str, max_num_batched_tokens: int | None,
    max_num_seqs: int | None, enforce_eager: bool, vllm_version: str | None,
    hf_overrides: dict[str, object] | None, rope_scaling: dict[str, object] | None,
    gpu_memory: int | None, compute_capability: tuple[int, int] | None,
    head_address: str | None, show_all: bool, as_json: bool,
) -> int:
    """Check MODEL (catalog id, hub id or directory) against every vLLM startup rule.

    With no layout given, every TP x PP x DP (x EP) layout of the GPUs is checked and the
    best one recommended with its `vllm serve` flags.
    """
    from hangar.planning.api import make_plan
    from hangar.planning.report import plan_json

    result = make_plan(
        model, gpu=gpu, gpus=gpus, nodes=nodes, tp=tp, pp=pp, dp=dp, ep=ep,
        max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtype=kv_cache_dtype, quantization=quantization, dtype=dtype,
        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs,
        enforce_eager=enforce_eager, vllm_version=vllm_version,
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
