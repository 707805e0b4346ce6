"""Field checks of a config.json before it is read: counts that must be positive, known dtypes.
One line per bad field, naming the file and the field."""

from __future__ import annotations

from collections.abc import Mapping

from hangar.errors import InputError
from hangar.models.context_length import rope_entries
from hangar.models.fields import Config, Reader, first

# torch dtypes a config may declare (transformers writes str(torch.dtype) minus "torch.").
KNOWN_DTYPES = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "half",
        "float",
        "double",
        "auto",
        "float8_e4m3fn",
        "float8_e5m2",
        "int8",
        "uint8",
    }
)
# Counts that must be >= 1 when present (a 0 or negative value is a broken config, not a model).
POSITIVE_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "num_key_value_heads",
    "num_kv_heads",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "head_dim",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "num_experts_per_tok",
    # read as int(...) by models/layers.py; a period or step of 0 would divide by zero
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "attn_layer_period",
    "expert_layer_period",
    "full_attention_interval",
    "interleave_moe_layer_step",
    "decoder_sparse_step",
    "original_max_position_embeddings",
    "linear_conv_kernel_dim",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "state_size",
    "conv_kernel",
    "expand",
    "mamba_expand",
    "mamba_d_state",
    "mamba_d_conv",
)
# Also read as int(...), where 0 is meaningful (an offset, no dense layers, no indexer).
NON_NEGATIVE_FIELDS = (
    "attn_layer_offset",
    "expert_layer_offset",
    "first_k_dense_replace",
    "index_head_dim",
)


def positive(value: int, field: str, path: str) -> None:
    if value <= 0:
        raise InputError(
            f"must be a positive integer, got {value}",
            source=path,
            field=field,
            hint=f"fix '{field}' in {path} (compare with the model's config.json on the hub)",
        )


def validate_fields(cfg: Config, full: Config, path: str) -> None:
    """Refuse impossible values with the field's own name, before anything is derived."""
    r = Reader(cfg, path)
    for field in POSITIVE_FIELDS:
        if cfg.get(field) is not None:
            positive(r.integer(field), field, path)
    for field in NON_NEGATIVE_FIELDS:
        if cfg.get(field) is not None and r.integer(field) < 0:
            raise InputError(
                f"must be 0 or more, got {cfg[field]!r}",
                source=path,
                field=field,
                hint=f"fix '{field}' in {path}",
            )
    attn = cfg.get("attn_config")
    if isinstance(attn, Mapping) and attn.get("kv_n_heads") is not None:  # DBRX
        value = Reader(attn, f"{path}: attn_config").integer("kv_n_heads")
        positive(value, "attn_config.kv_n_heads", path)
    dtype = first(cfg, "torch_dtype", "dtype") or first(full, "torch_dtype", "dtype")
    if dtype is not None and str(dtype).replace("torch.", "") not in KNOWN_DTYPES:
        field = (
            "torch_dtype" if first(cfg, "torch_dtype") or first(full, "torch_dtype") else "dtype"
        )
        raise InputError(
            f"unknown dtype {dtype!r}",
            source=path,
            field=field,
            hint=f"use one of bfloat16, float16, float32 for '{field}' in {path}",
        )
    for entry in rope_entries(cfg):
        factor = entry.get("factor")
        if factor is not None and (
            isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0
        ):
            raise InputError(
                f"expected a positive number, got {factor!r}",
                source=path,
                field="rope_scaling.factor",
                hint=f"fix rope_scaling.factor in {path}, e.g. 4.0",
            )
