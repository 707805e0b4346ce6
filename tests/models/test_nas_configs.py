"""DeciLM / Nemotron-NAS per-layer block_configs, read as vLLM's nemotron_nas.py reads them."""

from __future__ import annotations

import pytest

from hangar.errors import InputError
from hangar.models import load_model
from hangar.models.config import parse_config
from hangar.models.nas import ffn_mult_to_intermediate_size
from hangar.planning.memory import kv_bytes_per_token_model


def test_nemotron_super_49b_is_a_49b_model_with_attention_on_49_layers() -> None:
    spec = load_model("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    # the model card: 49.9B parameters; 31 of the 80 blocks have attention no_op
    assert spec.num_params / 1e9 == pytest.approx(49.9, rel=0.02)
    assert spec.kv_layers == 49 and spec.num_kv_heads == 8
    # 49 attention layers x 8 KV heads x (128 + 128) x 2 bytes
    assert kv_bytes_per_token_model(spec, "auto") == 49 * 8 * 256 * 2


def test_ffn_mult_width_is_decilms() -> None:
    assert ffn_mult_to_intermediate_size(5.25, 8192) == 28672
    assert ffn_mult_to_intermediate_size(1.3125, 8192) == 7168


def test_bad_block_is_named() -> None:
    cfg = {"architectures": ["DeciLMForCausalLM"], "model_type": "nemotron-nas",
           "hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 1,
           "vocab_size": 1000, "block_configs": [{"attention": {"n_heads_in_group": 3},
                                                  "ffn": {"ffn_mult": 1.0}}]}
    with pytest.raises(InputError, match=r"block_configs\[0\]\.attention\.n_heads_in_group"):
        parse_config(cfg, model_id="t", source="local")
