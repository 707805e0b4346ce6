"""The checkpoint's quantization, from config.json's quantization_config or hf_quant_config.json.

The *declared* method is kept as the checkpoint names it; the planning data maps it to
vLLM's method name per version (vllm/config/model.py _verify_quantization).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.models.spec import QuantSpec


def parse_quant(full: Mapping[str, Any], quant_file: Mapping[str, Any] | None) -> QuantSpec | None:
    qc = full.get("quantization_config")
    if not isinstance(qc, Mapping):
        text = full.get("text_config")
        qc = text.get("quantization_config") if isinstance(text, Mapping) else None
    if isinstance(qc, Mapping) and qc.get("quant_method"):
        spec = _from_quantization_config(qc)
        if str(full.get("expert_dtype") or "").lower() == "fp4":
            spec = spec.model_copy(update={"expert_format": "mxfp4"})
        return spec
    if isinstance(quant_file, Mapping):
        return _from_modelopt(quant_file)
    return None


def _from_quantization_config(qc: Mapping[str, Any]) -> QuantSpec:
    method = str(qc["quant_method"]).lower()
    if method == "compressed-tensors":
        return _compressed_tensors(qc)
    if method == "modelopt":
        modelopt = _from_modelopt({"quantization": qc})
        if modelopt is not None:
            return modelopt
    block = qc.get("weight_block_size")
    bits = qc.get("bits") or qc.get("w_bit") or _bits_for(method, qc)
    return QuantSpec(
        method=method,
        bits=int(bits) if bits else None,
        group_size=_int(qc.get("group_size") or qc.get("q_group_size")),
        weight_block_size=(int(block[0]), int(block[1]))
        if isinstance(block, list) and len(block) == 2
        else None,
        weight_format=_format_for(method, bits),
        activation_scheme=qc.get("activation_scheme"),
        modules_not_converted=tuple(
            str(m) for m in (qc.get("modules_to_not_convert") or qc.get("ignored_layers") or [])
        ),
    )


def _bits_for(method: str, qc: Mapping[str, Any]) -> int | None:
    if method in ("fp8", "fbgemm_fp8", "experts_int8"):
        return 8
    if method in ("mxfp4", "gpt_oss_mxfp4"):
        return 4
    if method == "bitsandbytes":
        return 4 if qc.get("load_in_4bit") else 8
    return None


def _format_for(method: str, bits: Any) -> str | None:
    if method in ("fp8", "fbgemm_fp8"):
        return "float8"
    if method == "mxfp4":
        return "mxfp4"
    if bits:
        return f"int{int(bits)}"
    return None


def _compressed_tensors(qc: Mapping[str, Any]) -> QuantSpec:
    groups = qc.get("config_groups") or {}
    first: Mapping[str, Any] = (
        next(iter(groups.values()), {}) if isinstance(groups, Mapping) else {}
    )
    weights = first.get("weights") or {}
    acts = first.get("input_activations") or {}
    bits = _int(weights.get("num_bits"))
    wtype = str(weights.get("type") or "int")
    fmt = str(qc.get("format") or "")
    if "nvfp4" in fmt or (wtype == "float" and bits == 4 and weights.get("group_size") == 16):
        weight_format = "nvfp4"
    elif "mxfp4" in fmt:
        weight_format = "mxfp4"
    else:
        weight_format = f"{'float' if wtype == 'float' else 'int'}{bits or ''}"
    block = weights.get("block_structure")
    return QuantSpec(
        method="compressed-tensors",
        bits=bits,
        group_size=_int(weights.get("group_size")),
        weight_block_size=(int(block[0]), int(block[1]))
        if isinstance(block, list) and len(block) == 2
        else None,
        weight_format=weight_format,
        weight_strategy=str(weights["strategy"]) if weights.get("strategy") else None,
        activation_scheme=(f"{acts.get('type')}{acts.get('num_bits')}" if acts else "none"),
        modules_not_converted=tuple(str(m) for m in qc.get("ignore") or []),
    )


def _from_modelopt(data: Mapping[str, Any]) -> QuantSpec | None:
    q = data.get("quantization") if isinstance(data.get("quantization"), Mapping) else data
    if not isinstance(q, Mapping):
        return None
    algo = str(q.get("quant_algo") or "").upper()
    if not algo:
        return None
    method = (
        "modelopt_fp4" if "FP4" in algo else "modelopt_mxfp8" if "MXFP8" in algo else "modelopt"
    )
    return QuantSpec(
        method=method,
        bits=4 if "FP4" in algo else 8,
        group_size=_int(q.get("group_size")),
        weight_format="nvfp4" if "FP4" in algo else "float8",
        kv_cache_quant=q.get("kv_cache_quant_algo"),
        modules_not_converted=tuple(str(m) for m in q.get("exclude_modules") or []),
        source_file="hf_quant_config.json",
    )


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
