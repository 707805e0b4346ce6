"""The library entry behind `hangar plan`: resolve the model and hardware, then plan."""

from __future__ import annotations

import json

from hangar.errors import UsageError
from hangar.planning.accounting import check_supported_version
from hangar.planning.plan import Plan, plan
from hangar.planning.request import PlanRequest
from hangar.planning.versions import DEFAULT_VLLM_VERSION, VllmVersion


def make_plan(
    model_ref: str,
    *,
    gpu: str | None = None,
    gpus: int | None = None,
    nodes: int = 1,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    ep: bool | None = None,
    max_model_len: int | None = None,
    gpu_memory_utilization: float | None = None,
    kv_cache_dtype: str = "auto",
    quantization: str | None = None,
    dtype: str = "auto",
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    enforce_eager: bool = False,
    vllm_version: str | None = None,
    allow_long: bool = False,
    hf_overrides: dict[str, object] | None = None,
    head_address: str | None = None,
    gpu_memory: int | None = None,
    compute_capability: tuple[int, int] | None = None,
) -> Plan:
    """Load MODEL, resolve the GPUs (catalog or NVML) and plan. ``max_model_len=-1`` auto-fits."""
    from hangar.hardware import hardware_from_args
    from hangar.models import load_model

    version = vllm_version or DEFAULT_VLLM_VERSION
    try:
        parsed = VllmVersion.parse(version)  # the CLI boundary: a bad value is a usage error
    except ValueError as exc:
        raise UsageError(str(exc), hint="--vllm-version 0.33.0") from exc
    check_supported_version(version, parsed)
    spec = load_model(model_ref, hf_overrides)
    hardware = hardware_from_args(
        gpu, gpus, nodes, gpu_memory=gpu_memory, compute_capability=compute_capability
    )
    auto_fit = max_model_len == -1
    request = PlanRequest(
        tp=tp, pp=pp, dp=dp, ep=ep, max_model_len=None if auto_fit else max_model_len,
        gpu_memory_utilization=gpu_memory_utilization, kv_cache_dtype=kv_cache_dtype,
        quantization=quantization, dtype=dtype, max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs, enforce_eager=enforce_eager, vllm_version=version,
        allow_long_max_model_len=allow_long,
        hf_overrides=json.dumps(hf_overrides, separators=(",", ":")) if hf_overrides else None,
    )
    if head_address:
        request = request.model_copy(update={"head_address": head_address})
    result = plan(spec, hardware, request)
    if auto_fit:
        result = _auto_fit(result)
    return result


def _auto_fit(first: Plan) -> Plan:
    """--max-model-len -1: vLLM shrinks the length to what the KV cache holds (0.33 auto-fit)."""
    target = first.verdict_layout or first.recommended
    if target is None or target.memory.max_model_len_fit <= 0:
        return first
    version = VllmVersion.parse(first.request.vllm_version)
    length = min(target.memory.max_model_len_fit, first.model.derived_max_len_for(version))
    request = first.request.model_copy(update={"max_model_len": length})
    return plan(first.model, first.hardware, request)
