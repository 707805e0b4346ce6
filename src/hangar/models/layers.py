"""The decoder's structure from config.json: which mixer and MLP each layer has, and the
MoE, MLA, Mamba/linear-attention and vision-tower dimensions vLLM sizes things with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.models.fields import Config, Reader, first, model_type_of
from hangar.models.spec import MambaSpec, MlaSpec, MoeSpec, VisionSpec


def sliding_window(cfg: Config) -> int | None:
    if cfg.get("usesliding_window") is False:
        return None  # Qwen2 ships a window it does not use
    value = first(cfg, "sliding_window", "sliding_window_size")
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


def layer_mixers(cfg: Config, full: Config, n: int, is_mla: bool) -> list[str]:
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
    window = sliding_window(cfg)
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


def moe_spec(cfg: Config, r: Reader, n: int, mixers: list[str]) -> MoeSpec | None:
    experts = r.opt_int("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    if not experts or experts <= 1:
        return None
    top_k = r.integer("num_experts_per_tok", "experts_per_token", "moe_topk", "top_k", default=1)
    expert_inter = r.integer("moe_intermediate_size", "intermediate_size")
    shared_n = r.opt_int("n_shared_experts", "num_shared_experts") or 0
    shared_inter = (
        r.opt_int("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size")
        or shared_n * expert_inter
    )
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
        latent_size=r.opt_int("moe_latent_size") or 0,
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
    if cfg.get("expert_layer_period"):  # Jamba: experts every period-th layer from offset
        period, offset = int(cfg["expert_layer_period"]), int(cfg.get("expert_layer_offset", 0))
        return [i % period == offset for i in range(n)]
    if model_type_of(cfg) == "llama4_text":
        return [(i + 1) % step == 0 for i in range(n)]
    return [i >= first_dense and (i + 1) % step == 0 and i not in only_mlp for i in range(n)]


def mla_spec(cfg: Config) -> MlaSpec | None:
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


def mamba_spec(cfg: Config, full: Config, hidden: int, mixers: list[str]) -> MambaSpec | None:
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
    if model_type_of(cfg) in ("mamba", "falcon_mamba"):  # Mamba-1: intermediate x state per layer
        return MambaSpec(
            kind="mamba1",
            num_layers=layers,
            intermediate_size=int(
                cfg.get("intermediate_size") or int(cfg.get("expand", 2)) * hidden
            ),
            state_size=int(cfg.get("state_size", 16)),
            conv_kernel=int(cfg.get("conv_kernel", 4)),
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
    heads = int(first(cfg, "mamba_num_heads", "mamba_n_heads", "num_heads") or 0)
    head_dim = int(first(cfg, "mamba_head_dim", "mamba_d_head", "head_dim") or 0)
    inter = int(first(cfg, "mamba_d_ssm") or 0) or heads * head_dim
    if not inter:
        inter = int(first(cfg, "mamba_expand", "expand") or 2) * hidden
    if model_type_of(full) == "nemotron_h" and not ssm_dtype:
        ssm_dtype = "float32"  # vllm/model_executor/models/config.py NemotronH default
    return MambaSpec(
        kind="mamba2",
        num_layers=layers,
        intermediate_size=inter,
        state_size=int(first(cfg, "ssm_state_size", "mamba_d_state", "state_size") or 128),
        conv_kernel=int(first(cfg, "conv_kernel", "mamba_d_conv") or 4),
        n_groups=int(first(cfg, "n_groups", "mamba_n_groups") or 1),
        num_heads=heads,
        head_dim=head_dim,
        ssm_dtype=ssm_dtype,
    )


def vision_spec(full: Config) -> VisionSpec | None:
    vc = full.get("vision_config")
    if not isinstance(vc, Mapping):
        return None
    heads = int(first(vc, "num_heads", "num_attention_heads", "n_heads") or 0)
    hidden = int(first(vc, "hidden_size", "embed_dim", "width") or 0)
    layers = int(first(vc, "depth", "num_hidden_layers", "num_layers") or 0)
    if not (heads and hidden and layers):
        return None
    inter = int(first(vc, "intermediate_size") or 4 * hidden)
    patch = int(vc.get("patch_size") or 14)
    per_layer = 4 * hidden * hidden + 2 * hidden * inter + 4 * hidden
    out = int(first(vc, "out_hidden_size", "projector_output_dim") or 0)
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


def layer_mlps(cfg: Config, n: int, moe: MoeSpec | None) -> list[str]:
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return ["moe" if c == "E" else "dense" if c == "-" else "none" for c in pattern]
    if model_type_of(cfg) in ("mamba", "mamba2", "falcon_mamba"):
        return ["none"] * n  # a Mamba block is the whole layer: no separate MLP
    if moe is None:
        return ["dense"] * n
    flags = _moe_layer_flags(cfg, n, [])
    return ["moe" if f else "dense" for f in flags]
