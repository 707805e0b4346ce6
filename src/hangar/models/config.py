"""config.json (+ hf_quant_config.json) -> ModelSpec, following vLLM's own reading of the fields.

Field aliases and derivations cite the vLLM code they mirror; vLLM reads the *text*
config of multimodal models (``get_hf_text_config``), so do we.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hangar.errors import InputError
from hangar.models.context_length import derive_max_len, rope_entries, rope_type, yarn_max_len
from hangar.models.features import ModelFeatures, feature_tags, model_features
from hangar.models.fields import Config, Reader, first, model_type_of, text_config
from hangar.models.layers import (
    layer_mixers,
    layer_mlps,
    mamba_spec,
    mla_spec,
    moe_spec,
    sliding_window,
    vision_spec,
)
from hangar.models.nas import NasLayers, nas_layers
from hangar.models.params import loaded_params, weight_bytes
from hangar.models.quant import parse_quant
from hangar.models.spec import ModelSpec
from hangar.models.tying import tie_word_embeddings
from hangar.models.validate import positive, validate_fields

# vllm/transformers_utils/config.py:56 CONFIG_FIELD_ALIASES["total_num_kv_heads"] (0.33), in order;
# vLLM falls back to num_attention_heads.
KV_HEAD_ALIASES = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
# vLLM 0.33 is_deepseekmla_spec() text-config model types, in order
# (vllm/transformers_utils/model_arch_config_convertor.py:294; vLLM also requires kv_lora_rank,
# or head_dim for compress-ratio models such as deepseek_v4).
MLA_MODEL_TYPES = frozenset(
    {
        "axk1",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_v41",
        "dots3_note",
        "deepseek_mtp",
        "k3_dspark",
        "glm5_next",
        "glm5_next_text",
        "glm_moe_dsa",
        "glm4_moe_lite",
        "glm4_moe_lite_mtp",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "pangu_ultra_moe",
        "pangu_ultra_moe_mtp",
        "bailing_hybrid",
        "bailing_hybrid_mtp",
        "bailing_hybrid_v3_mtp",
        "hy_v4",
        "hy_v4_mtp",
    }
)
# Encoder-only families whose bare XModel architecture is an embedding model in vLLM.
ENCODER_TYPES = frozenset(
    {
        "bert",
        "roberta",
        "xlm-roberta",
        "nomic_bert",
        "modernbert",
        "new",
        "distilbert",
        "electra",
        "mpnet",
        "gte",
        "jina_bert",
    }
)
# Models with no attention layer at all (vLLM's attention-free MambaForCausalLM & co.).
ATTENTION_FREE_TYPES = frozenset({"mamba", "mamba2", "falcon_mamba"})


def _num_kv_heads(cfg: Config, r: Reader, heads: int) -> int:
    model_type = cfg.get("model_type", "")
    # Falcon without new_decoder_architecture and multi_query=True has one KV head
    # (vllm/config/model.py get_total_num_kv_heads).
    falcon = model_type in ("falcon", "RefinedWeb", "RefinedWebModel")
    if falcon and not cfg.get("new_decoder_architecture") and cfg.get("multi_query"):
        return 1
    if isinstance(cfg.get("attn_config"), Mapping) and "kv_n_heads" in cfg["attn_config"]:
        return int(cfg["attn_config"]["kv_n_heads"])  # DBRX
    for key in KV_HEAD_ALIASES:
        if cfg.get(key) is not None:
            return r.integer(key)
    return heads


def _head_dim(cfg: Config, r: Reader, hidden: int, heads: int) -> int:
    # model_arch_config_convertor.py:91: head_dim if > 0, else hidden_size_per_head, else h/heads.
    for key in ("head_dim", "attention_head_dim", "hidden_size_per_head"):
        value = cfg.get(key)
        if isinstance(value, int) and value > 0:
            return value
    if heads <= 0:
        return 0  # attention-free (Mamba): no KV cache
    return hidden // heads


def _dtype(cfg: Config, full: Config) -> str:
    value = first(cfg, "torch_dtype", "dtype") or first(full, "torch_dtype", "dtype")
    return str(value or "float32").replace("torch.", "")


def _mtp_layers(cfg: Config) -> int:
    return int(
        first(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules") or 0
    )


def _nas_fields(nas: NasLayers) -> dict[str, Any]:
    """Uniform fields that stand for the per-layer ones: the widest FFN, the commonest KV
    head count (nemotron_nas.py checks and shards each layer with its own count)."""
    kv = [k for k in nas.kv_heads if k]
    return {
        "layer_kv_heads": nas.kv_heads,
        "layer_intermediate": nas.intermediate,
        "intermediate_size": max(nas.intermediate, default=0) or 1,
        "num_kv_heads": max(set(kv), key=kv.count) if kv else 1,
    }


def parse_config(
    full: Config,
    *,
    model_id: str,
    source: str,
    path: str = "config.json",
    quant_file: Config | None = None,
    local_dir: Path | None = None,
    checkpoint_bytes: int | None = None,
) -> ModelSpec:
    """Build the frozen ModelSpec; raise InputError naming ``path`` and the field."""
    if not isinstance(full, Mapping):
        raise InputError(
            "top level must be a JSON object",
            source=path,
            hint="point Hangar at the model's Hugging Face config.json",
        )
    cfg = text_config(full)
    r = Reader(cfg, path)
    archs = full.get("architectures") or cfg.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) and a for a in archs):
        raise InputError("expected a list of class names", source=path, field="architectures")
    if "architectures" in full and not archs:
        raise InputError(
            "is empty: vLLM picks the model class from it ('No model architectures are specified')",
            source=path,
            field="architectures",
            hint=f'name the model class in {path}, e.g. "architectures": ["LlamaForCausalLM"]',
        )
    validate_fields(cfg, full, path)
    hidden = r.integer("hidden_size", "n_embd", "d_model", "dim")
    attention_free = model_type_of(cfg) in ATTENTION_FREE_TYPES
    heads = r.integer(
        "num_attention_heads",
        "n_head",
        "num_heads",
        "n_heads",
        "decoder_attention_heads",
        default=0 if attention_free else None,
    )
    positive(hidden, "hidden_size", path)
    if not attention_free:
        positive(heads, "num_attention_heads", path)
    mla = (
        mla_spec(cfg)
        if (model_type_of(cfg) in MLA_MODEL_TYPES or cfg.get("kv_lora_rank"))
        else None
    )
    pattern = cfg.get("hybrid_override_pattern")
    n = (
        len(pattern)
        if isinstance(pattern, str) and pattern
        else r.integer("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers")
    )
    blocks = cfg.get("block_configs")
    nas = nas_layers(blocks, heads, hidden) if isinstance(blocks, list) and blocks else None
    if nas is not None:  # DeciLM / Nemotron-NAS: the block list is the layer list
        n = len(nas.mixers)
    mixers = list(nas.mixers) if nas else layer_mixers(cfg, full, n, mla is not None)
    moe = moe_spec(cfg, r, n, mixers)
    mlps = list(nas.mlps) if nas else layer_mlps(cfg, n, moe)
    derived, key, default_len, mml = derive_max_len(cfg, full)
    head_dim = _head_dim(cfg, r, hidden, heads)
    quant = parse_quant(full, quant_file)
    rope = rope_entries(cfg)
    spec_fields: dict[str, Any] = {
        "id": model_id,
        "source": source,
        "local_dir": local_dir,
        "architectures": tuple(archs),
        "model_type": model_type_of(full) or model_type_of(cfg),
        "text_model_type": model_type_of(cfg) if cfg is not full else None,
        "dtype": _dtype(cfg, full),
        "num_layers": n,
        "layer_types": tuple(mixers),
        "layer_mlps": tuple(mlps),
        "hidden_size": hidden,
        "intermediate_size": r.integer(
            "intermediate_size_mlp",
            "intermediate_size",
            "ffn_hidden_size",
            "n_inner",
            "ffn_dim",
            default=4 * hidden,
        ),
        "num_attention_heads": heads,
        "num_kv_heads": _num_kv_heads(cfg, r, heads),
        "head_dim": head_dim,
        "v_head_dim": int(cfg.get("v_head_dim") or head_dim),
        "vocab_size": r.integer("vocab_size", "padded_vocab_size", "n_vocab", default=32000),
        "tie_word_embeddings": tie_word_embeddings(cfg, full),
        "max_position_embeddings": r.opt_int("max_position_embeddings", "n_positions"),
        "derived_max_len": derived,
        "derived_max_len_key": key,
        "default_max_len": default_len,
        "yarn_max_len": yarn_max_len(cfg),
        "model_max_length": mml,
        "rope_type": rope_type(rope[0]) if rope else None,
        "rope_factor": float(rope[0]["factor"]) if rope and rope[0].get("factor") else None,
        "sliding_window": sliding_window(cfg),
        "attention_chunk_size": cfg.get("attention_chunk_size"),
        "moe": moe,
        "mla": mla,
        "mamba": mamba_spec(cfg, full, hidden, mixers),
        "vision": vision_spec(full),
        "quant": quant,
        "mtp_layers": _mtp_layers(cfg),
        "checkpoint_bytes": checkpoint_bytes,
        "is_pooling": _is_pooling(archs, model_type_of(full) or model_type_of(cfg)),
        "remote_code": bool(full.get("auto_map")),  # classes shipped with the model
        "num_params": 0,
        "weight_bytes": 0,
    }
    if nas is not None:
        spec_fields |= _nas_fields(nas)
    draft = ModelSpec(**spec_fields)
    return draft.model_copy(
        update={
            "num_params": loaded_params(draft),
            "weight_bytes": loaded_weight_bytes(draft),
            "features": feature_tags(draft),
        }
    )


def loaded_weight_bytes(spec: ModelSpec) -> int:
    """Bytes vLLM loads: exact checkpoint size minus parts it skips (MTP layers), when known."""
    computed = weight_bytes(spec)
    if not spec.checkpoint_bytes:
        return computed
    whole = weight_bytes(spec, include_unloaded=True)
    return round(spec.checkpoint_bytes * computed / whole) if whole else spec.checkpoint_bytes


def _is_pooling(archs: list[str], model_type: str) -> bool:
    """Embedding/classification heads; a bare ``XModel`` only for encoder families (vLLM
    registers e.g. InternVLChatModel and ChatGLMModel as generative)."""

    def pooling(arch: str) -> bool:
        if arch.endswith(
            (
                "ForSequenceClassification",
                "ForRewardModeling",
                "ForEmbedding",
                "ForTokenClassification",
            )
        ):
            return True
        return arch.endswith("Model") and model_type in ENCODER_TYPES

    return bool(archs) and all(pooling(a) for a in archs)


def config_features(full: Config, path: str = "config.json") -> ModelFeatures | None:
    """The workaround features of a config.json read outside ``load_model`` (preflight's copy
    of the weights), through the same parse; None when Hangar cannot read the config (the
    plan's finding says why), so no workaround is guessed for an unknown model."""
    try:
        spec = parse_config(full, model_id=path, source="local", path=path)
    except InputError:
        return None
    return model_features(spec)
