"""The context length vLLM derives from a config.json (``max_model_len``'s ceiling and
default), mirroring vllm/config/model.py ``_get_and_verify_max_len``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hangar.models.fields import Config, model_type_of

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


def rope_entries(cfg: Config) -> list[Mapping[str, Any]]:
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(rope, Mapping):
        return []
    if any(isinstance(v, Mapping) for v in rope.values()):  # per-layer-type rope parameters
        return [v for v in rope.values() if isinstance(v, Mapping)]
    return [rope]


def rope_type(entry: Mapping[str, Any]) -> str:
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
        for entry in rope_entries(cfg):
            if rope_type(entry) not in ROPE_TYPES_ALREADY_SCALED:
                factor = float(entry.get("factor") or factor)
        derived *= factor
    default = int(derived)
    for entry in rope_entries(cfg):
        if rope_type(entry) in ("longrope", "su") and cfg.get("original_max_position_embeddings"):
            default = int(cfg["original_max_position_embeddings"])
    top_mml = mml or full_cfg.get("model_max_length")
    mml_int = (
        int(top_mml)
        if isinstance(top_mml, (int, float)) and not isinstance(top_mml, bool)
        else None
    )
    return int(derived), key, default, mml_int


def yarn_max_len(cfg: Config) -> int | None:
    """vLLM 0.8.5-0.20: for a YaRN rope_scaling, derived = original_max_position_embeddings x
    factor (config.py _get_and_verify_max_len: `if rope_type == "yarn": derived_max_model_len =
    rope_scaling["original_max_position_embeddings"]`, then `*= scaling_factor`)."""
    for entry in rope_entries(cfg):
        original = entry.get("original_max_position_embeddings")
        factor = entry.get("factor")
        if not isinstance(factor, (int, float)) or isinstance(factor, bool):
            continue
        if rope_type(entry) == "yarn" and isinstance(original, int) and original > 0:
            return int(original * factor)
    return None
