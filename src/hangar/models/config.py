"""config.json (+ hf_quant_config.json) -> ModelSpec, following vLLM's own reading of the fields.

Field aliases and derivations cite the vLLM code they mirror; vLLM reads the *text*
config of multimodal models (``get_hf_text_config``), so do we.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hangar.errors import InputError
from hangar.models.params import loaded_params, weight_bytes
from hangar.models.quant import parse_quant
from hangar.models.spec import MambaSpec, MlaSpec, ModelSpec, MoeSpec, VisionSpec

Config = Mapping[str, Any]

# vllm/transformers_utils/config.py:56 CONFIG_FIELD_ALIASES["total_num_kv_heads"] (0.33), in order;
# vLLM falls back to num_attention_heads.
KV_HEAD_ALIASES = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
# vllm/transformers_utils/model_arch_config_convertor.py:376 derive_max_model_len_and_key (0.33;
# same list in 0.8.5-0.20 _get_and_verify_max_len): the minimum of these keys, except that a
# truthy model_max_length then overrides it.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# RoPE types whose factor vLLM does not apply to the derived length, because
# max_position_embeddings is already the scaled length: vllm/config/model.py:2613
# _get_and_verify_max_len (0.33). Every other type (linear, dynamic, default, mrope->default...)
# multiplies by its `factor` when it has one. 0.20 excluded only su/longrope/llama3 and turned yarn
# into original_max_position_embeddings x factor; 0.8.5-0.11 did that for the single rope_scaling.
ROPE_TYPES_ALREADY_SCALED = frozenset(
    {
        "su",
        "longrope",
        "llama3",
        "yarn",
        "deepseek_yarn",
        "deepseek_llama_scaling",
    }
)
# vLLM 0.33 is_deepseek_mla() text-config model types, in order
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
POOLING_SUFFIXES = ("Model", "ForSequenceClassification", "ForEmbedding", "ForRewardModeling")


def text_config(cfg: Config) -> Config:
    """The language-model part, as vLLM's get_hf_text_config picks it."""
    for key in ("text_config", "llm_config", "language_config", "thinker_config"):
        sub = cfg.get(key)
        if isinstance(sub, Mapping) and sub:
            if "text_config" in sub:  # e.g. thinker_config.text_config
                return text_config(sub)
            return sub
    return cfg


def _first(cfg: Config, *keys: str) -> Any:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            return value
    return None


class _Reader:
    """Typed access to one config dict; errors name the file and the field."""

    def __init__(self, cfg: Config, source: str) -> None:
        self.cfg = cfg
        self.source = source

    def integer(self, *keys: str, default: int | None = None) -> int:
        value = _first(self.cfg, *keys)
        if value is None:
            if default is not None:
                return default
            raise InputError(
                "missing required field",
                source=self.source,
                field=keys[0],
                hint=f"add '{keys[0]}' to {self.source} (the model's Hugging Face config)",
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise InputError(
                f"expected an integer, got {value!r}",
                source=self.source,
                field=keys[0],
                hint=f"fix '{keys[0]}' in {self.source}",
            )
        return int(value)

    def opt_int(self, *keys: str) -> int | None:
        value = _first(self.cfg, *keys)
        return None if value is None else self.integer(*keys)


def _num_kv_heads(cfg: Config, r: _Reader, heads: int) -> int:
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


def _head_dim(cfg: Config, r: _Reader, hidden: int, heads: int) -> int:
    # model_arch_config_convertor.py:91: head_dim if > 0, else hidden_size_per_head, else h/heads.
    for key in ("head_dim", "attention_head_dim", "hidden_size_per_head"):
        value = cfg.get(key)
        if isinstance(value, int) and value > 0:
            return value
    if heads <= 0:
        raise InputError("must be > 0", source=r.source, field="num_attention_heads")
    return hidden // heads


def _rope_entries(cfg: Config) -> list[Mapping[str, Any]]:
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, Mapping):
        return []
    if any(isinstance(v, Mapping) for v in rope.values()):  # per-layer-type rope parameters
        return [v for v in rope.values() if isinstance(v, Mapping)]
    return [rope]


def _rope_type(entry: Mapping[str, Any]) -> str:
    return str(entry.get("rope_type") or entry.get("type") or "default")


def derive_max_len(cfg: Config, full_cfg: Config) -> tuple[int, str, int, int | None]:
    """(derived length, key it came from, default max_model_len, model_max_length).

    Mirrors vllm/config/model.py _get_and_verify_max_len (0.11-0.33): the minimum of the
    length keys, model_max_length overriding, then rope scaling factors that are not
    already folded into max_position_embeddings.
    """
    best: tuple[float, str] | None = None
    for key in MAX_LEN_KEYS:
        value = cfg.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if best is None or value < best[0]:
            best = (float(value), key)
    if best is None:
        best = (2048, "default")  # vLLM warns and assumes 2048
    derived, key = float(best[0]), best[1]
    mml = cfg.get("model_max_length")
    if isinstance(mml, (int, float)) and not isinstance(mml, bool) and mml:
        derived, key = float(mml), "model_max_length"  # Command-R / Cohere override the minimum
    # "gemma3" anywhere in the text model_type: its length is already scaled
    if "gemma3" not in (model_type_of(cfg) or model_type_of(full_cfg)):
        factor = 1.0  # vLLM keeps the *last* non-exempt factor (all layer types share one)
        for entry in _rope_entries(cfg):
            if _rope_type(entry) not in ROPE_TYPES_ALREADY_SCALED:
                factor = float(entry.get("factor") or factor)
        derived *= factor
    default = int(derived)
    for entry in _rope_entries(cfg):
        if _rope_type(entry) in ("longrope", "su") and cfg.get("original_max_position_embeddings"):
            default = int(cfg["original_max_position_embeddings"])
    top_mml = mml or full_cfg.get("model_max_length")
    mml_int = int(top_mml) if isinstance(top_mml, (int, float)) and not isinstance(top_mml, bool) else None
    return int(derived), key, default, mml_int


def model_type_of(cfg: Config) -> str:
    return str(cfg.get("model_type") or "")


def _sliding_window(cfg: Config) -> int | None:
    if cfg.get("use_sliding_window") is False:
        return None  # Qwen2 ships a window it does not use
    value = _first(cfg, "sliding_window", "sliding_window_size")
    return int(value) if isinstance(value, int) and value > 0 else None


_LAYER_TYPE_NAMES = {
    "full_attention": "full_attention",
    "attention": "full_attention",
    "global": "full_attention",
    "sliding_attention": "sliding_attention",
    "sliding_window": "sliding_attention",
    "local": "sliding_attention",
    "chunked_attention": "chunked_attention",
    "linear_attention": "linear_attention",
    "mamba": "mamba",
    "mamba2": "mamba",
    "conv": "mamba",
}


def _layer_mixers(cfg: Config, full: Config, n: int, is_mla: bool) -> list[str]:
    model_type = model_type_of(cfg) or model_type_of(full)
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:  # NemotronH: M mamba, * attention, - MLP, E MoE
        return ["mamba" if c == "M" else "full_attention" if c == "*" else "none" for c in pattern]
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) >= n:
        return [_LAYER_TYPE_NAMES.get(str(t), "full_attention") for t in types[:n]]
    hybrid = cfg.get("hybrid_layer_pattern")  # MiMo-V2: 1 sliding, 0 full
    if isinstance(hybrid, list) and len(hybrid) >= n:
        return ["sliding_attention" if v else "full_attention" for v in hybrid[:n]]
    if model_type in ("mamba", "mamba2", "falcon_mamba"):
        return ["mamba"] * n
    if "attn_layer_period" in cfg:  # Jamba
        period, offset = int(cfg["attn_layer_period"]), int(cfg.get("attn_layer_offset", 0))
        return ["full_attention" if i % period == offset else "mamba" for i in range(n)]
    if cfg.get("full_attention_interval"):  # Qwen3-Next
        k = int(cfg["full_attention_interval"])
        return ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n)]
    if is_mla:
        return ["mla"] * n
    return _attention_only_mixers(cfg, model_type, n)


def _attention_only_mixers(cfg: Config, model_type: str, n: int) -> list[str]:
    window = _sliding_window(cfg)
    if cfg.get("attention_chunk_size"):  # Llama 4: chunked on RoPE layers, full on NoPE layers
        nope = cfg.get("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]
        return ["chunked_attention" if nope[i] else "full_attention" for i in range(n)]
    if window is None:
        return ["full_attention"] * n
    if model_type == "gemma2":  # even layers slide (HF Gemma2DecoderLayer)
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:  # gemma3: every pattern-th layer is global
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    return ["sliding_attention"] * n


def _moe(cfg: Config, r: _Reader, n: int, mixers: list[str]) -> MoeSpec | None:
    experts = r.opt_int("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    if not experts or experts <= 1:
        return None
    top_k = r.integer("num_experts_per_tok", "experts_per_token", "moe_topk", "top_k", default=1)
    expert_inter = r.integer("moe_intermediate_size", "intermediate_size")
    shared_n = r.opt_int("n_shared_experts", "num_shared_experts") or 0
    shared_inter = r.opt_int("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size") or shared_n * expert_inter
    if model_type_of(cfg) == "llama4_text":  # one shared expert of the expert width
        shared_n, shared_inter = 1, expert_inter
    if shared_inter and not shared_n:
        shared_n = 1
    moe_flags = _moe_layer_flags(cfg, n, mixers)
    return MoeSpec(
        num_experts=experts,
        top_k=top_k,
        expert_intermediate_size=expert_inter,
        num_shared_experts=shared_n,
        shared_intermediate_size=shared_inter,
        latent_size=r.opt_int('moe_latent_size') or 0,
        moe_layers=sum(moe_flags),
        dense_layers=sum(1 for i, f in enumerate(moe_flags) if not f and _has_mlp(cfg, i, mixers)),
    )


def _has_mlp(cfg: Config, i: int, mixers: list[str]) -> bool:
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return pattern[i] in "-E"
    return True


def _moe_layer_flags(cfg: Config, n: int, mixers: list[str]) -> list[bool]:
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return [c == "E" for c in pattern]
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list) and len(freq) >= n:
        return [bool(v) for v in freq[:n]]
    first_dense = int(cfg.get("first_k_dense_replace") or 0)
    step = int(cfg.get("interleave_moe_layer_step") or cfg.get("decoder_sparse_step") or 1)
    if isinstance(freq, int) and freq > 1:
        step = freq
    only_mlp = set(cfg.get("mlp_only_layers") or [])
    if model_type_of(cfg) == "llama4_text":
        return [(i + 1) % step == 0 for i in range(n)]
    return [i >= first_dense and (i + 1) % step == 0 and i not in only_mlp for i in range(n)]


def _mla(cfg: Config) -> MlaSpec | None:
    if cfg.get("kv_lora_rank") is None:
        return None
    return MlaSpec(
        kv_lora_rank=int(cfg["kv_lora_rank"]),
        qk_rope_head_dim=int(cfg.get("qk_rope_head_dim") or 64),
        qk_nope_head_dim=int(cfg.get("qk_nope_head_dim") or 128),
        v_head_dim=int(cfg.get("v_head_dim") or 128),
        q_lora_rank=cfg.get("q_lora_rank"),
        indexer_head_dim=int(cfg.get("index_head_dim") or 0) if cfg.get("index_n_heads") else 0,
    )


def _mamba(cfg: Config, full: Config, hidden: int, mixers: list[str]) -> MambaSpec | None:
    layers = sum(1 for m in mixers if m in ("mamba", "linear_attention"))
    if not layers:
        return None
    ssm_dtype = cfg.get("mamba_ssm_dtype") or cfg.get("mamba_ssm_cache_dtype")
    if "linear_num_value_heads" in cfg:  # gated delta net (Qwen3-Next / Qwen3.5)
        return MambaSpec(
            kind="gdn",
            num_layers=layers,
            conv_kernel=int(cfg.get("linear_conv_kernel_dim", 4)),
            num_k_heads=int(cfg["linear_num_key_heads"]),
            num_v_heads=int(cfg["linear_num_value_heads"]),
            k_head_dim=int(cfg["linear_key_head_dim"]),
            v_head_dim=int(cfg["linear_value_head_dim"]),
            ssm_dtype=ssm_dtype,
        )
    if "mamba_d_state" in cfg and "mamba_n_heads" not in cfg:  # mamba1 (Jamba)
        return MambaSpec(
            kind="mamba1",
            num_layers=layers,
            intermediate_size=int(cfg.get("mamba_expand", 2)) * hidden,
            state_size=int(cfg["mamba_d_state"]),
            conv_kernel=int(cfg.get("mamba_d_conv", 4)),
        )
    return _mamba2(cfg, full, hidden, layers, ssm_dtype)


def _mamba2(cfg: Config, full: Config, hidden: int, layers: int, ssm_dtype: Any) -> MambaSpec:
    heads = int(_first(cfg, "mamba_num_heads", "mamba_n_heads", "num_heads") or 0)
    head_dim = int(_first(cfg, "mamba_head_dim", "mamba_d_head", "head_dim") or 0)
    inter = int(_first(cfg, "mamba_d_ssm") or 0) or heads * head_dim
    if not inter:
        inter = int(_first(cfg, "mamba_expand", "expand") or 2) * hidden
    if model_type_of(full) == "nemotron_h" and not ssm_dtype:
        ssm_dtype = "float32"  # vllm/model_executor/models/config.py NemotronH default
    return MambaSpec(
        kind="mamba2",
        num_layers=layers,
        intermediate_size=inter,
        state_size=int(_first(cfg, "ssm_state_size", "mamba_d_state", "state_size") or 128),
        conv_kernel=int(_first(cfg, "conv_kernel", "mamba_d_conv") or 4),
        n_groups=int(_first(cfg, "n_groups", "mamba_n_groups") or 1),
        num_heads=heads,
        head_dim=head_dim,
        ssm_dtype=ssm_dtype,
    )


def _vision(full: Config) -> VisionSpec | None:
    vc = full.get("vision_config")
    if not isinstance(vc, Mapping):
        return None
    heads = int(_first(vc, "num_heads", "num_attention_heads", "n_heads") or 0)
    hidden = int(_first(vc, "hidden_size", "embed_dim", "width") or 0)
    layers = int(_first(vc, "depth", "num_hidden_layers", "num_layers") or 0)
    if not (heads and hidden and layers):
        return None
    inter = int(_first(vc, "intermediate_size") or 4 * hidden)
    patch = int(vc.get("patch_size") or 14)
    per_layer = 4 * hidden * hidden + 2 * hidden * inter + 4 * hidden
    out = int(_first(vc, "out_hidden_size", "projector_output_dim") or 0)
    merge = int(vc.get("spatial_merge_size") or 1)
    merger = (hidden * merge * merge) ** 2 + hidden * merge * merge * out if out else 0
    params = layers * per_layer + 3 * patch * patch * hidden * 2 + merger
    return VisionSpec(
        num_heads=heads,
        hidden_size=hidden,
        num_layers=layers,
        intermediate_size=inter,
        num_params=params,
    )


def _dtype(cfg: Config, full: Config) -> str:
    value = _first(cfg, "torch_dtype", "dtype") or _first(full, "torch_dtype", "dtype")
    return str(value or "float32").replace("torch.", "")


def _mtp_layers(cfg: Config) -> int:
    return int(
        _first(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules") or 0
    )


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
    r = _Reader(cfg, path)
    archs = full.get("architectures") or cfg.get("architectures") or []
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise InputError("expected a list of class names", source=path, field="architectures")
    hidden = r.integer("hidden_size", "n_embd", "d_model", "dim")
    heads = r.integer("num_attention_heads", "n_head", "num_heads", "n_heads")
    if heads <= 0 or hidden <= 0:
        raise InputError(
            "must be > 0",
            source=path,
            field="num_attention_heads",
            hint=f"fix the head count / hidden size in {path}",
        )
    mla = _mla(cfg) if (model_type_of(cfg) in MLA_MODEL_TYPES or cfg.get("kv_lora_rank")) else None
    pattern = cfg.get("hybrid_override_pattern")
    n = (
        len(pattern)
        if isinstance(pattern, str) and pattern
        else r.integer("num_hidden_layers", "n_layer", "num_layers", "n_layers")
    )
    mixers = _layer_mixers(cfg, full, n, mla is not None)
    moe = _moe(cfg, r, n, mixers)
    mlps = _layer_mlps(cfg, n, moe)
    derived, key, default_len, mml = derive_max_len(cfg, full)
    head_dim = _head_dim(cfg, r, hidden, heads)
    quant = parse_quant(full, quant_file)
    rope = _rope_entries(cfg)
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
        "tie_word_embeddings": bool(
            full.get("tie_word_embeddings", cfg.get("tie_word_embeddings", False))
        ),
        "max_position_embeddings": r.opt_int("max_position_embeddings", "n_positions"),
        "derived_max_len": derived,
        "derived_max_len_key": key,
        "default_max_len": default_len,
        "model_max_length": mml,
        "rope_type": _rope_type(rope[0]) if rope else None,
        "rope_factor": float(rope[0]["factor"]) if rope and rope[0].get("factor") else None,
        "sliding_window": _sliding_window(cfg),
        "attention_chunk_size": cfg.get("attention_chunk_size"),
        "moe": moe,
        "mla": mla,
        "mamba": _mamba(cfg, full, hidden, mixers),
        "vision": _vision(full),
        "quant": quant,
        "mtp_layers": _mtp_layers(cfg),
        "checkpoint_bytes": checkpoint_bytes,
        "is_pooling": _is_pooling(archs),
        "num_params": 0,
        "weight_bytes": 0,
    }
    draft = ModelSpec(**spec_fields)
    return draft.model_copy(
        update={
            "num_params": loaded_params(draft),
            "weight_bytes": loaded_weight_bytes(draft),
            "features": features(draft),
        }
    )


def loaded_weight_bytes(spec: ModelSpec) -> int:
    """Bytes vLLM loads: exact checkpoint size minus parts it skips (MTP layers), when known."""
    computed = weight_bytes(spec)
    if not spec.checkpoint_bytes:
        return computed
    whole = weight_bytes(spec, include_unloaded=True)
    return round(spec.checkpoint_bytes * computed / whole) if whole else spec.checkpoint_bytes


def _layer_mlps(cfg: Config, n: int, moe: MoeSpec | None) -> list[str]:
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return ["moe" if c == "E" else "dense" if c == "-" else "none" for c in pattern]
    if moe is None:
        return ["dense"] * n
    flags = _moe_layer_flags(cfg, n, [])
    return ["moe" if f else "dense" for f in flags]


def _is_pooling(archs: list[str]) -> bool:
    return bool(archs) and all(
        a.endswith(POOLING_SUFFIXES) and "CausalLM" not in a and "Generation" not in a
        for a in archs
    )


def features(spec: ModelSpec) -> tuple[str, ...]:
    out: list[str] = []
    if spec.mla:
        out.append("mla")
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


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a JSON file; malformed content becomes one InputError line naming the file."""
    import json

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = (
            f" (line {exc.lineno}, column {exc.colno})"
            if isinstance(exc, json.JSONDecodeError)
            else ""
        )
        raise InputError(
            f"not valid JSON{where}: {exc.msg if isinstance(exc, json.JSONDecodeError) else 'not UTF-8'}",
            source=str(path),
            hint="re-download the file or fix the JSON syntax",
        ) from exc
    if not isinstance(data, dict):
        raise InputError("top level must be a JSON object", source=str(path))
    return data
