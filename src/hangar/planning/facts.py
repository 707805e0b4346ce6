"""The facts a rule condition can read, for one (model, hardware, layout, request).

Every name used in data/rules.yaml is built here; the rule loader checks that a rule's
expression only names facts that exist (a typo in the data fails at load time).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from hangar.errors import DataError
from hangar.hardware.spec import Hardware
from hangar.models.spec import ModelSpec
from hangar.planning.accounting import default_accounting
from hangar.planning.memory import Layout, MemoryResult, pp_partition
from hangar.planning.request import PlanRequest
from hangar.planning.tables import table
from hangar.planning.versions import VllmVersion, in_range

GIB = 2**30
# The newest read version's tables (the rules use the version-dependent ones through
# planning/tables.py; these names stay for callers and tests that want 0.33's values).
NEWEST = (0, 33, 0)
FP16_REFUSED = frozenset(table("fp16_refused", NEWEST))
KV_CACHE_DTYPES = table("kv_cache_dtypes", NEWEST)
NO_PP_ARCHS = frozenset(table("no_pp_archs", NEWEST))


@lru_cache(maxsize=1)
def quant_table() -> dict[str, Any]:
    path = resources.files("hangar.planning") / "data" / "quantization.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise DataError(f"{path}: schema_version must be 1")
    return data


@lru_cache(maxsize=1)
def architecture_table() -> dict[str, Any]:
    path = resources.files("hangar.planning") / "data" / "architectures.yaml"
    data = yaml.load(
        path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        raise DataError(f"{path}: schema_version must be 1")
    return data


# vllm/config/model.py _SUFFIX_TO_DEFAULTS: these suffixes adapt a registered *ForCausalLM
ADAPTER_SUFFIXES = ("ForSequenceClassification", "ForRewardModeling", "ForEmbedding", "Model")


@lru_cache(maxsize=1)
def _known_registry_versions() -> tuple[tuple[VllmVersion, str], ...]:
    """The versions whose model registry was read, oldest first (parsed once per process)."""
    return tuple(sorted((VllmVersion.parse(v), v) for v in architecture_table()["versions"]))


def _architecture_facts(architecture: str, version: tuple[int, int, int]) -> dict[str, Any]:
    """Is the architecture in the registry of the newest known vLLM at or below ``version``?"""
    known = _known_registry_versions()
    usable = [v for parsed, v in known if parsed <= version]
    if not usable:
        return {
            "arch_checked": False,
            "arch_registered": True,
            "arch_list_version": "",
            "arch_removed_in": "",
        }
    entry = architecture_table()["versions"][usable[-1]]
    registered = set(entry["registered"])
    candidates = [architecture] + [
        architecture[: -len(suffix)] + "ForCausalLM"
        for suffix in ADAPTER_SUFFIXES
        if architecture.endswith(suffix)
    ]
    later = [v for parsed, v in known if parsed > version]
    unread = later and VllmVersion.parse(usable[-1]) != version
    if unread and any(
        c in architecture_table()["versions"][later[0]]["registered"] for c in candidates
    ):
        # between two read wheels and registered in the next one: it may have been added in
        # this very release (GptOssForCausalLM came in 0.10.1, between 0.8.5 and 0.11.0), so
        # Hangar cannot tell and stays silent instead of warning
        registered.update(candidates)
    return {
        "arch_checked": True,
        "arch_registered": any(c in registered for c in candidates),
        "arch_list_version": usable[-1],
        "arch_removed_in": str((entry.get("previously_supported") or {}).get(architecture, "")),
    }


def resolve_quant_method(declared: str, version: tuple[int, int, int]) -> str:
    alias = quant_table()["aliases"].get(declared, {})
    for entry in alias.get("resolves", []):
        if in_range(version, entry["versions"]):
            return str(entry["name"])
    return declared


def quant_min_capability(method: str, version: tuple[int, int, int]) -> int:
    """vLLM's get_min_capability() for the method at this version; -1 when vLLM lacks it."""
    entry = quant_table()["methods"].get(method)
    if entry is None:
        return -1
    for rng in entry["min_capability"]:
        if in_range(version, rng["versions"]):
            return int(rng["value"])
    return -1


@lru_cache(maxsize=64)
def known_methods(version: tuple[int, int, int]) -> list[str]:
    return sorted(m for m in quant_table()["methods"] if quant_min_capability(m, version) >= 0)


def _user_matches(user: str, declared: str) -> bool:
    accepts = quant_table()["aliases"].get(declared, {}).get("accepts", [declared])
    return user in accepts or user == declared


def divisor_choices(value: int, limit: int) -> str:
    options = [d for d in range(1, limit + 1) if value % d == 0]
    return ", ".join(str(d) for d in options) or "1"


def _tp_choices(spec: ModelSpec, hw: Hardware) -> str:
    limit = hw.total_gpus
    ok = [
        t
        for t in range(1, limit + 1)
        if spec.num_attention_heads % t == 0
        and (spec.mla is not None or spec.num_kv_heads % t == 0 or t % spec.num_kv_heads == 0)
    ]
    return ", ".join(str(t) for t in ok) or "1"


def _quant_shape_facts(
    spec: ModelSpec, layout: Layout, version: tuple[int, int, int]
) -> dict[str, Any]:
    """Per-partition shapes of the quantized linear layers (checked in the worker)."""
    q, tp = spec.quant, layout.tp
    dense_inter = (
        spec.intermediate_size // tp
        if spec.intermediate_size % tp == 0
        else spec.intermediate_size / tp
    )
    moe_inter = spec.moe.expert_intermediate_size if spec.moe else 0
    moe_shards = layout.tp * layout.dp
    per_gpu_moe = moe_inter // moe_shards if moe_inter and not layout.ep else moe_inter
    q_out = (
        spec.num_attention_heads * spec.head_dim // tp if spec.num_attention_heads % tp == 0 else 0
    )
    out: dict[str, Any] = {
        "moe_inter": moe_inter,
        "moe_shards": moe_shards,
        "moe_inter_per_gpu": per_gpu_moe,
        "quant_group": 0,
        "group_bad_k": 0,
        "group_bad_layer": "",
        "block_n": 0,
        "block_k": 0,
        "block_bad_n": 0,
        "block_bad_k": 0,
        "marlin_bad_n": 0,
        "marlin_bad_k": 0,
        "quant_is_int4": False,
    }
    if q is None:
        return out
    # row-parallel inputs (down_proj, o_proj) and column-parallel outputs (gate/up, qkv)
    rows = {"mlp.down_proj": dense_inter, "self_attn.o_proj": q_out}
    cols = {"mlp.gate_up_proj": dense_inter, "self_attn.qkv_proj": q_out}
    if spec.moe and not layout.ep:
        rows["experts.w2"] = per_gpu_moe
        cols["experts.w13"] = per_gpu_moe
    if spec.mla or (spec.moe and spec.moe.dense_layers == 0):
        rows.pop("mlp.down_proj")
        cols.pop("mlp.gate_up_proj")
    if spec.mla:
        rows.pop("self_attn.o_proj")
        cols.pop("self_attn.qkv_proj")
    group = q.group_size or 0
    if group > 0:
        out["quant_group"] = group
        for name, size in rows.items():
            if size and (not isinstance(size, int) or size % group):
                out["group_bad_k"], out["group_bad_layer"] = size, name
                break
    is_int4 = (
        q.bits == 4
        and q.method in ("awq", "gptq", "compressed-tensors")
        and (q.weight_format or "").startswith("int")
    )
    out["quant_is_int4"] = is_int4
    if is_int4:
        # Marlin checks the *merged* output of fused layers (sum of output_partition_sizes):
        # qkv = (heads/TP + 2 x KV heads per GPU) x head_dim, gate_up = 2 x intermediate/TP
        merged = {name: _merged_output(spec, tp, name, size) for name, size in cols.items()}
        out["marlin_bad_n"] = next(
            (s for s in merged.values() if s and (not isinstance(s, int) or s % 64)), 0
        )
        out["marlin_bad_k"] = next(
            (s for s in rows.values() if s and (not isinstance(s, int) or s % 128)), 0
        )
    if q.weight_block_size:
        bn, bk = q.weight_block_size
        out["block_n"], out["block_k"] = bn, bk
        dense_cols = {k: v for k, v in cols.items() if not k.startswith("experts")}
        dense_rows = {k: v for k, v in rows.items() if not k.startswith("experts")}
        out["block_bad_n"] = next(
            (s for s in dense_cols.values() if s and (not isinstance(s, int) or s % bn)), 0
        )
        out["block_bad_k"] = next(
            (s for s in dense_rows.values() if s and (not isinstance(s, int) or s % bk)), 0
        )
    return out


def _merged_output(spec: ModelSpec, tp: int, name: str, size: float) -> float:
    if name == "self_attn.qkv_proj" and size:
        return (
            spec.num_attention_heads // tp + 2 * max(1, spec.num_kv_heads // tp)
        ) * spec.head_dim
    return 2 * size if name in ("mlp.gate_up_proj", "experts.w13") else size


def _quant_tp_choices(spec: ModelSpec, hw: Hardware) -> str:
    q = spec.quant
    if q is None:
        return "1"
    unit = max(
        q.group_size or 1,
        128 if q.bits == 4 else 1,
        q.weight_block_size[1] if q.weight_block_size else 1,
    )
    inter = spec.intermediate_size
    ok = [
        t
        for t in range(1, hw.total_gpus + 1)
        if inter % t == 0 and (inter // t) % unit == 0 and spec.num_attention_heads % t == 0
    ]
    return ", ".join(str(t) for t in ok) or "none"


def _quant_facts(
    spec: ModelSpec, request: PlanRequest, version: tuple[int, int, int], cap: int
) -> dict[str, Any]:
    declared = spec.quant.method if spec.quant else ""
    user = (request.quantization or "").lower()
    method = resolve_quant_method(user or declared, version) if (user or declared) else ""
    min_cap = quant_min_capability(method, version) if method else 0
    fmt = (spec.quant.weight_format or "") if spec.quant else ""
    scheme_min, fallback = _scheme_minimum(declared, fmt, cap)
    return {
        "quant_ckpt": declared,
        "quant_user": user,
        "quant_method": method,
        "quant_user_matches": (not user or not declared or _user_matches(user, declared)),
        "quant_min_cap": min_cap,
        "quant_min_cap_dotted": f"{min_cap // 10}.{min_cap % 10}" if min_cap > 0 else "",
        "quant_known": "[" + ", ".join(known_methods(version)) + "]",
        "quant_is_fp8": method in ("fp8", "modelopt", "fbgemm_fp8") or fmt.startswith("float8"),
        "quant_is_nvfp4": method in ("modelopt_fp4", "modelopt_nvfp4") or fmt == "nvfp4",
        "quant_scheme_min": scheme_min,
        "quant_scheme_fallback": fallback,
        "quant_deprecated": _deprecated(method, version),
        "quant_rocm_ok": _rocm_supports(method, version),
        **_act_dtype_facts(method, request.dtype),
    }


def _rocm_supports(method: str, version: tuple[int, int, int]) -> bool:
    """RocmPlatform.supported_quantization of this version; True where it was not read."""
    for entry in quant_table().get("rocm_supported") or []:
        if in_range(version, entry["versions"]):
            return not method or method in entry["methods"]
    return True


def _deprecated(method: str, version: tuple[int, int, int]) -> bool:
    since = quant_table()["methods"].get(method, {}).get("deprecated_from")
    return bool(method) and since is not None and version >= VllmVersion.parse(str(since))


TORCH_DTYPE = {
    "half": "float16",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "float32": "float32",
}


def _act_dtype_facts(method: str, dtype_req: str) -> dict[str, Any]:
    """An explicit --dtype against the method's get_supported_act_dtypes()."""
    allowed = quant_table().get("act_dtypes", {}).get(method, [])
    run = TORCH_DTYPE.get(dtype_req, "")
    return {
        "quant_act_dtypes": "[" + ", ".join(f"torch.{d}" for d in allowed) + "]" if allowed else "",
        "run_dtype_torch": f"torch.{run}" if run else "",
        "quant_dtype_ok": not allowed or not run or run in allowed,
        "quant_dtype_fix": allowed[0] if allowed else "auto",
    }


def _scheme_minimum(declared: str, fmt: str, cap: int) -> tuple[int, str]:
    """compressed-tensors per-scheme minimum capability, and the fallback when one exists."""
    if declared != "compressed-tensors":
        return 0, ""
    schemes = quant_table()["methods"]["compressed-tensors"]["schemes"]
    key = "float8_w8a8" if fmt.startswith("float8") else "int8" if fmt == "int8" else fmt
    entry = schemes.get(key) or schemes.get(fmt.rstrip("0123456789"))
    if not entry:
        return 0, ""
    fallback = str(entry.get("fallback", "")) if cap >= 75 else ""
    return int(entry["value"]), fallback


def build_facts(
    spec: ModelSpec,
    hw: Hardware,
    layout: Layout,
    request: PlanRequest,
    memory: MemoryResult,
    settings: dict[str, Any],
    version: VllmVersion,
) -> dict[str, Any]:
    """``version`` is ``request.vllm_version`` as ``plan()`` parsed it."""
    cap = hw.gpu.capability_int
    world, world_all = layout.tp * layout.pp, layout.tp * layout.pp * layout.dp
    facts: dict[str, Any] = {
        "vllm_version": request.vllm_version,
        "rocm": hw.gpu.rocm,
        "vllm": list(version),
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "ep": layout.ep,
        "world_size": world,
        "world_all": world_all,
        "nodes": hw.nodes,
        "gpus_per_node": hw.gpus_per_node,
        "gpus_total": hw.total_gpus,
        "tp_fit_node": max(t for t in (1, 2, 4, 8, 16) if t <= hw.gpus_per_node),
        "pp_for_nodes": max(1, world // hw.gpus_per_node),
        "dp_fit": max(1, hw.total_gpus // world),
        "dp_bad_rank": hw.gpus_per_node // world if world else 0,
        "gpu_name": hw.gpu.name,
        "capability": cap,
        "capability_dotted": f"{hw.gpu.compute_capability[0]}.{hw.gpu.compute_capability[1]}",
        "architecture": spec.architecture,
        "model_type": spec.model_type,
        "num_attention_heads": spec.num_attention_heads,
        "num_kv_heads": spec.num_kv_heads,
        "kv_replicas": layout.tp // spec.num_kv_heads if spec.num_kv_heads else 1,
        "kv_div_a": max(layout.tp, spec.num_kv_heads),
        "kv_div_b": min(spec.num_kv_heads, layout.tp),
        "tp_choices": _tp_choices(spec, hw),
        "quant_tp_choices": _quant_tp_choices(spec, hw),
        "is_mla": spec.mla is not None,
        "is_moe": spec.moe is not None,
        # transformers' NemotronHConfig defaults n_routed_experts to 8, so vLLM treats even the
        # dense Nemotron-H checkpoints as MoE for --enable-expert-parallel (0.32.0 accepts it)
        "declares_experts": spec.moe is not None or spec.model_type == "nemotron_h",
        "num_experts": spec.moe.num_experts if spec.moe else 0,
        "vision_heads": spec.vision.num_heads if spec.vision else 0,
        "vision_tp_choices": divisor_choices(spec.vision.num_heads, hw.total_gpus)
        if spec.vision
        else "",
        "num_layers": spec.num_layers,
        "supports_pp": spec.architecture not in table("no_pp_archs", version)
        and not spec.is_pooling,
        "pp_partition": ", ".join(str(p) for p in pp_partition(spec.num_layers, layout.pp))
        if layout.pp <= spec.num_layers
        else "",
        "pp_partition_env": ",".join(str(p) for p in pp_partition(spec.num_layers, layout.pp))
        if layout.pp <= spec.num_layers
        else "",
        "derived_max_len": spec.derived_max_len_for(version),
        "derived_key": spec.derived_max_len_key,
        "derived_max_len_float": float(spec.derived_max_len_for(version)),
        "model_max_length": spec.model_max_length or 0,
        "model_max_length_text": str(spec.model_max_length),
        "allow_long": request.allow_long_max_model_len,
        "model_dtype": spec.dtype,
        "dtype_req": request.dtype,
        # vLLM tests the top-level hf_config.model_type only (config/model.py)
        "fp16_refused": spec.model_type in table("fp16_refused", version),
        "kv_cache_dtype": request.kv_cache_dtype,
        "kv_dtype_valid": request.kv_cache_dtype in table("kv_cache_dtypes", version),
        "kv_dtype_choices": "[" + ", ".join(table("kv_cache_dtypes", version)) + "]",
        "kv_is_fp8": request.kv_cache_dtype.startswith("fp8"),
        "has_mamba": spec.mamba is not None,
        "enforce_eager": request.enforce_eager,
    }
    facts.update(settings)
    facts.update(_architecture_facts(spec.architecture, version))
    facts.update(_quant_facts(spec, request, version, cap))
    facts.update(_quant_shape_facts(spec, layout, version))
    facts["moe_block_choices"] = _moe_block_choices(spec, hw, facts)
    facts.update(_memory_facts(memory, facts, version))
    return facts


def _moe_block_choices(spec: ModelSpec, hw: Hardware, facts: dict[str, Any]) -> str:
    inter, bn = facts["moe_inter"], facts["block_n"]
    if not inter or not bn:
        return ""
    ok = [s for s in range(1, hw.total_gpus + 1) if inter % s == 0 and (inter // s) % bn == 0]
    return ", ".join(str(s) for s in ok) or "none"


def _gib(value: float, version: tuple[int, int, int]) -> str:
    """GiB as vLLM prints them: format_gib() = round(b / 2**30, 2) from 0.20, '%.2f' before."""
    if version >= (0, 20, 0):
        return str(round(value / GIB, 2))
    return f"{value / GIB:.2f}"


def _memory_facts(
    m: MemoryResult, facts: dict[str, Any], version: VllmVersion
) -> dict[str, Any]:
    band = default_accounting().band
    shards = 1
    while (
        shards <= 64 and m.weight_bytes_per_gpu * facts["world_size"] / shards > m.requested_bytes
    ):
        shards *= 2
    return {
        "weight_bytes_per_gpu": m.weight_bytes_per_gpu,
        "weights_gib": _gib(m.weight_bytes_per_gpu, version),
        "requested_bytes": m.requested_bytes,
        "requested_gib": _gib(m.requested_bytes, version),
        "kv_available_bytes": m.kv_available_bytes,
        "kv_available_gib": _gib(m.kv_available_bytes, version),
        "kv_needed_bytes": m.kv_needed_bytes,
        # the plan's measured error band (planning/data/memory.yaml band): an error only when
        # even the optimistic end cannot hold one request, a warning inside the band
        "kv_optimistic_bytes": m.kv_available_bytes + band.high(m.requested_bytes),
        "kv_pessimistic_bytes": m.kv_available_bytes - band.low(m.requested_bytes),
        "kv_band_low_gib": _gib(
            max(0, m.kv_available_bytes - band.low(m.requested_bytes)), version
        ),
        "kv_band_high_gib": _gib(m.kv_available_bytes + band.high(m.requested_bytes), version),
        "kv_cache_tokens": m.kv_cache_tokens,
        "kv_needed_gib": _gib(m.kv_needed_bytes, version),
        "max_model_len_fit": m.max_model_len_fit,
        "max_concurrency": m.max_concurrency,
        "max_concurrency_text": f"{m.max_concurrency:.2f}",
        "mamba_num_blocks": m.mamba_num_blocks,
        "min_shards": shards,
    }
