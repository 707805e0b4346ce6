"""Model features from a config.json dict (quantization, block FP8, MoE, dtype)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.workarounds.registry import ModelFeatures

# Expert-count keys across architectures (Mixtral, Qwen MoE, DeepSeek, GLM, gpt-oss ...).
_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


def model_features(config: Mapping[str, Any]) -> ModelFeatures:
    text = config.get("text_config")
    if isinstance(text, Mapping) and "quantization_config" not in config:
        merged = {**text, **{k: v for k, v in config.items() if k != "text_config"}}
        config = merged
    quant = config.get("quantization_config")
    quant = quant if isinstance(quant, Mapping) else {}
    method = quant.get("quant_method")
    return ModelFeatures(
        quantization=str(method) if method else None,
        block_fp8=_is_block_fp8(quant),
        moe=any(int(config.get(k) or 0) > 1 for k in _EXPERT_KEYS),
        dtype=_dtype(config),
    )


def _is_block_fp8(quant: Mapping[str, Any]) -> bool:
    # fp8 checkpoints with weight_block_size (DeepSeek-V3 style) or compressed-tensors
    # float8 weights with a "block" strategy are what DeepGEMM handles.
    if quant.get("quant_method") == "fp8" and quant.get("weight_block_size"):
        return True
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping):
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            if (
                isinstance(weights, Mapping)
                and weights.get("type") == "float"
                and weights.get("num_bits") == 8
                and weights.get("strategy") == "block"
            ):
                return True
    return False


def _dtype(config: Mapping[str, Any]) -> str | None:
    value = config.get("torch_dtype") or config.get("dtype")
    return str(value) if value else None
