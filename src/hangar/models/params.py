"""Parameter counts and weight bytes computed from a ModelSpec's dimensions.

Counts are grouped by how vLLM shards them (see planning/memory.py): TP-sharded linear
layers, KV projections (replicated once TP exceeds the KV heads), routed experts (sharded
over TP x DP, or placed whole with EP), replicated parts (norms, routers, MLA down
projections), vocab-parallel embedding and LM head.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from hangar.models.spec import ModelSpec, QuantSpec

NON_GATED_MLP = frozenset(
    {
        "gpt2",
        "gpt_bigcode",
        "opt",
        "falcon",
        "bert",
        "roberta",
        "xlm-roberta",
        "gptj",
        "gpt_neox",
        "phi",
        "bloom",
        "mpt",
        "starcoder2",
        "nomic_bert",
        "nemotron_h",
        "nemotron",
    }
)
# Categories that are linear layers a checkpoint's quantization applies to.
QUANTIZED = frozenset(
    {"attn", "attn_kv", "mla_sharded", "mla_replicated", "mlp", "experts", "shared", "mamba"}
)
DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "float8": 1,
}


@dataclass(frozen=True)
class Breakdown:
    """Parameters per category: ``layers[i]`` for decoder layer i, plus the ends."""

    embed: int
    lm_head: int
    final_norm: int
    vision: int
    mtp: int
    layers: list[dict[str, int]] = field(default_factory=list)

    def total(self, include_unloaded: bool = False) -> int:
        body = sum(sum(layer.values()) for layer in self.layers)
        extra = self.mtp if include_unloaded else 0
        return self.embed + self.lm_head + self.final_norm + self.vision + body + extra


def _gated(spec: ModelSpec) -> int:
    return 2 if (spec.text_model_type or spec.model_type) in NON_GATED_MLP else 3


def _attention(spec: ModelSpec, kv_heads: int | None = None) -> dict[str, int]:
    h, hd, vhd = spec.hidden_size, spec.head_dim, spec.v_head_dim
    q_o = h * spec.num_attention_heads * hd + spec.num_attention_heads * vhd * h
    kv = h * (spec.num_kv_heads if kv_heads is None else kv_heads) * (hd + vhd)
    return {"attn": q_o, "attn_kv": kv, "norms": 2 * h}


def _mla(spec: ModelSpec) -> dict[str, int]:
    m = spec.mla
    assert m is not None
    h, heads = spec.hidden_size, spec.num_attention_heads
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    if m.q_lora_rank:
        replicated = h * m.q_lora_rank + m.q_lora_rank
        sharded = m.q_lora_rank * heads * qk
    else:
        replicated, sharded = 0, h * heads * qk
    replicated += h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
    sharded += (
        m.kv_lora_rank * heads * (m.qk_nope_head_dim + m.v_head_dim) + heads * m.v_head_dim * h
    )
    return {"mla_replicated": replicated, "mla_sharded": sharded, "norms": 2 * h}


def _mamba(spec: ModelSpec) -> dict[str, int]:
    m = spec.mamba
    assert m is not None
    h = spec.hidden_size
    if m.kind == "gdn":
        key, value = m.num_k_heads * m.k_head_dim, m.num_v_heads * m.v_head_dim
        proj = h * (2 * key + 2 * value) + h * 2 * m.num_v_heads + value * h
        conv = (2 * key + value) * m.conv_kernel
        return {"mamba": proj, "norms": conv + 2 * h + m.v_head_dim + 2 * m.num_v_heads}
    if m.kind == "mamba1":
        inter, rank = m.intermediate_size, math.ceil(h / 16)
        proj = h * 2 * inter + inter * (rank + 2 * m.state_size) + rank * inter + inter * h
        return {"mamba": proj, "norms": inter * (m.conv_kernel + m.state_size + 1) + 2 * h}
    inter, groups_state = m.intermediate_size, 2 * m.n_groups * m.state_size
    proj = h * (2 * inter + groups_state + m.num_heads) + inter * h
    conv = (inter + groups_state) * m.conv_kernel
    return {"mamba": proj, "norms": conv + inter + 3 * m.num_heads + 2 * h}


def _mlp(spec: ModelSpec, kind: str, width: int | None = None) -> dict[str, int]:
    h = spec.hidden_size
    if kind == "dense":
        return {"mlp": _gated(spec) * h * (spec.intermediate_size if width is None else width)}
    if kind == "linear":  # NAS replace_with_linear: one hidden x hidden projection
        return {"mlp": h * h, "norms": h}
    if kind != "moe" or spec.moe is None:
        return {}
    moe = spec.moe
    width = moe.latent_size or h
    out = {
        "experts": moe.num_experts * _gated(spec) * width * moe.expert_intermediate_size,
        "router": h * moe.num_experts,
    }
    if moe.latent_size:  # down/up projections into the latent space (replicated per TP rank)
        out["mlp"] = 2 * h * moe.latent_size
    if moe.shared_intermediate_size:
        out["shared"] = _gated(spec) * h * moe.shared_intermediate_size
    return out


def _mixer(spec: ModelSpec, kind: str, kv_heads: int | None = None) -> dict[str, int]:
    if kind == "mla":
        return _mla(spec)
    if kind in ("mamba", "linear_attention"):
        return _mamba(spec) if spec.mamba else {}
    if kind == "none":
        return {"norms": spec.hidden_size}
    if kind == "linear":  # NAS replace_with_linear attention: no KV cache
        return {"attn": spec.hidden_size * spec.hidden_size, "norms": spec.hidden_size}
    return _attention(spec, kv_heads)


def breakdown(spec: ModelSpec) -> Breakdown:
    layers = []
    for i, (mixer, mlp) in enumerate(zip(spec.layer_types, spec.layer_mlps)):
        layer: dict[str, int] = {}
        kv = spec.layer_kv_heads[i] if spec.layer_kv_heads else None
        width = spec.layer_intermediate[i] if spec.layer_intermediate else None
        for part in (_mixer(spec, mixer, kv), _mlp(spec, mlp, width)):
            for key, value in part.items():
                layer[key] = layer.get(key, 0) + value
        layers.append(layer)
    embed = spec.vocab_size * spec.hidden_size
    lm_head = 0 if (spec.tie_word_embeddings or spec.is_pooling) else embed
    mtp = _mtp_params(spec, layers)
    vision = spec.vision.num_params if spec.vision else 0
    return Breakdown(embed, lm_head, spec.hidden_size, vision, mtp, layers)


def _mtp_params(spec: ModelSpec, layers: list[dict[str, int]]) -> int:
    if not spec.mtp_layers or not layers:
        return 0
    biggest = max(layers, key=lambda layer: sum(layer.values()))
    per = sum(biggest.values()) + 2 * spec.hidden_size * spec.hidden_size
    if spec.mla:  # DeepSeek-style MTP checkpoints carry their own embedding and head copy
        per += 2 * spec.vocab_size * spec.hidden_size
    return spec.mtp_layers * per


def base_dtype_bytes(spec: ModelSpec) -> int:
    """Bytes of an unquantized parameter as vLLM loads it (--dtype auto: fp32 -> bf16)."""
    return min(2, DTYPE_BYTES.get(spec.dtype, 2))


def quantized_bytes(quant: QuantSpec) -> float:
    """Bytes per weight element including scales/zeros for a quantized linear layer."""
    fmt = (quant.weight_format or "").lower()
    group = quant.group_size if quant.group_size and quant.group_size > 0 else 0
    if fmt == "nvfp4":
        return 0.5 + 1 / 16
    if fmt == "mxfp4":
        return 0.5 + 1 / 32
    if fmt.startswith("float8") or fmt == "float8":
        block = quant.weight_block_size
        return 1.0 + (4 / (block[0] * block[1]) if block else 0.0)
    bits = quant.bits or 8
    zero = bits / 8 if quant.method in ("awq", "gptq", "auto_gptq", "auto_awq") else 0.0
    scales = (2 + zero) / group if group else 0.0
    return bits / 8 + scales


@functools.lru_cache(maxsize=256)
def _joined(modules: tuple[str, ...]) -> str:
    return " ".join(modules).lower()


def _excluded(quant: QuantSpec, category: str) -> bool:
    names = _joined(quant.modules_not_converted)
    if category in ("attn", "attn_kv", "mla_sharded", "mla_replicated"):
        return "self_attn" in names or ".attn" in names or "attention" in names
    if category == "shared":
        return "shared_expert" in names
    if category == "mamba":
        return "mixer" in names or "mamba" in names
    return False


def category_bytes(spec: ModelSpec, category: str) -> float:
    """Bytes per parameter of ``category`` in this checkpoint."""
    q = spec.quant
    if q is None or category not in QUANTIZED or _excluded(q, category):
        return float(base_dtype_bytes(spec))
    if category == "experts" and q.expert_format:
        return quantized_bytes(q.model_copy(update={"weight_format": q.expert_format}))
    return quantized_bytes(q)


def weight_bytes(spec: ModelSpec, include_unloaded: bool = False) -> int:
    b = breakdown(spec)
    base = base_dtype_bytes(spec)
    total = float((b.embed + b.lm_head + b.final_norm + b.vision) * base)
    for layer in b.layers:
        total += sum(n * category_bytes(spec, cat) for cat, n in layer.items())
    if include_unloaded and b.mtp:
        total += b.mtp * category_bytes(spec, "experts" if spec.moe else "mlp")
    return int(total)


def loaded_params(spec: ModelSpec) -> int:
    return breakdown(spec).total()


def checkpoint_params(spec: ModelSpec) -> int:
    return breakdown(spec).total(include_unloaded=True)
