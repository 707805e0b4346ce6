"""Per-layer (NAS) configs: DeciLM / Llama-Nemotron ``block_configs``, read as vLLM's
``vllm/model_executor/models/nemotron_nas.py`` reads them (0.32: :134 no_op flags, :148 KV
heads, :60 _ffn_mult_to_intermediate_size, :300 only non-no-op attention layers get a KV
cache). vLLM reads only ``no_op`` and ``ffn_mult``; ``replace_with_linear`` (Hugging Face's
modeling_decilm) is counted as one hidden x hidden linear.

Each block has ``attention`` and ``ffn`` parts. ``no_op`` removes the part (no weights, and
for attention no KV cache); ``replace_with_linear`` swaps it for one hidden x hidden linear
(no KV cache). Attention keeps ``num_attention_heads // n_heads_in_group`` KV heads
(DeciLMDecoderLayer: ``num_kv_heads = config.num_attention_heads //
block_config.attention.n_heads_in_group``); the FFN width is
``_ffn_mult_to_intermediate_size(ffn_mult, hidden)`` = the multiple of 256 at or above
``int(2 * ffn_mult * hidden / 3)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hangar.errors import InputError


@dataclass(frozen=True)
class NasLayers:
    mixers: tuple[str, ...]  # full_attention | linear | none
    mlps: tuple[str, ...]  # dense | linear | none
    kv_heads: tuple[int, ...]  # 0 where the layer has no attention
    intermediate: tuple[int, ...]  # 0 where the layer has no FFN


def _find_multiple(n: int, k: int) -> int:
    return n if n % k == 0 else n + k - (n % k)


def ffn_mult_to_intermediate_size(ffn_mult: float, hidden: int) -> int:
    return _find_multiple(int(2 * ffn_mult * hidden / 3), 256)


def _part(block: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    part = block.get(name)
    if not isinstance(part, Mapping):
        raise InputError("expected an object", field=f"{where}.{name}")
    return part


def _attention(part: Mapping[str, Any], heads: int, where: str) -> tuple[str, int]:
    if part.get("no_op"):
        return "none", 0
    if part.get("replace_with_linear"):
        return "linear", 0
    group = part.get("n_heads_in_group")
    if isinstance(group, bool) or not isinstance(group, int) or group <= 0 or heads % group:
        raise InputError(
            f"must divide num_attention_heads ({heads}), got {group!r}",
            field=f"{where}.attention.n_heads_in_group",
        )
    return "full_attention", heads // group


def _ffn(part: Mapping[str, Any], hidden: int, where: str) -> tuple[str, int]:
    if part.get("no_op"):
        return "none", 0
    if part.get("replace_with_linear"):
        return "linear", 0
    mult = part.get("ffn_mult")
    if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
        raise InputError(f"must be a positive number, got {mult!r}", field=f"{where}.ffn.ffn_mult")
    return "dense", ffn_mult_to_intermediate_size(float(mult), hidden)


def nas_layers(blocks: Sequence[Any], heads: int, hidden: int) -> NasLayers:
    mixers, mlps, kv, inter = [], [], [], []
    for i, block in enumerate(blocks):
        where = f"block_configs[{i}]"
        if not isinstance(block, Mapping):
            raise InputError("expected an object", field=where)
        mixer, kv_heads = _attention(_part(block, "attention", where), heads, where)
        mlp, width = _ffn(_part(block, "ffn", where), hidden, where)
        mixers.append(mixer)
        kv.append(kv_heads)
        mlps.append(mlp)
        inter.append(width)
    return NasLayers(tuple(mixers), tuple(mlps), tuple(kv), tuple(inter))
