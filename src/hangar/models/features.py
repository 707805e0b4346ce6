"""What a model *is*, read once: every feature is derived from the ModelSpec that
``models/config.py`` builds from config.json, never from the JSON again.

``model_features`` is the part the workaround registry matches (quantization, block FP8,
MoE, dtype); ``feature_tags`` is the short list ``hangar plan`` and ``models show`` print.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hangar.models.spec import ModelSpec, QuantSpec


class ModelFeatures(BaseModel):
    """The parts of a model's config that workarounds care about."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    quantization: str | None = None  # the checkpoint's declared method (QuantSpec.method)
    block_fp8: bool = False
    moe: bool = False
    dtype: str | None = None


def model_features(spec: ModelSpec) -> ModelFeatures:
    quant = spec.quant
    return ModelFeatures(
        quantization=quant.method if quant else None,
        block_fp8=quant is not None and is_block_fp8(quant),
        moe=spec.is_moe,
        dtype=spec.dtype,
    )


def is_block_fp8(quant: QuantSpec) -> bool:
    """Block-scaled FP8 weights, the GEMMs vLLM sends to DeepGEMM: fp8 checkpoints with a
    weight_block_size (DeepSeek-V3 style), or compressed-tensors float8 weights with the
    "block" strategy (vllm/model_executor/layers/quantization/compressed_tensors)."""
    if quant.method == "fp8":
        return quant.weight_block_size is not None
    return (
        quant.method == "compressed-tensors"
        and quant.weight_format == "float8"
        and quant.weight_strategy == "block"
    )


def feature_tags(spec: ModelSpec) -> tuple[str, ...]:
    """Attention kind, MoE shape, layer kinds, modality, quantization, pooling."""
    out: list[str] = []
    if spec.mla:
        out.append("mla")
    elif not spec.kv_layers:
        pass  # attention-free
    elif spec.num_kv_heads == 1:
        out.append("mqa")
    elif spec.num_kv_heads < spec.num_attention_heads:
        out.append("gqa")
    else:
        out.append("mha")
    kinds = set(spec.layer_types)
    if spec.moe:
        out.append(f"moe({spec.moe.num_experts}x top{spec.moe.top_k})")
    if "sliding_attention" in kinds:
        out.append("sliding-window")
    if "chunked_attention" in kinds:
        out.append("chunked-attention")
    if spec.mamba:
        out.append(f"hybrid-{spec.mamba.kind}" if spec.kv_layers else spec.mamba.kind)
    if spec.vision:
        out.append("multimodal")
    if spec.quant:
        out.append(f"quant:{spec.quant.method}")
    if spec.is_pooling:
        out.append("pooling")
    return tuple(out)
