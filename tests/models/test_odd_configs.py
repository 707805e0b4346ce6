"""Config shapes outside the catalog's families parse to sensible facts (no crash, no
attention invented for attention-free models, no MLP where the block has none). The dicts
carry the fields that matter of public configs (state-spaces/mamba-130m-hf,
ai21labs/Jamba-v0.1, OpenGVLab/InternVL2-8B, openai/whisper-large-v3), trimmed."""

from __future__ import annotations

import pytest

from hangar.models.config import parse_config

MAMBA = {"architectures": ["MambaForCausalLM"], "model_type": "mamba", "hidden_size": 768,
         "intermediate_size": 1536, "num_hidden_layers": 24, "state_size": 16, "conv_kernel": 4,
         "expand": 2, "vocab_size": 50280, "time_step_rank": 48, "tie_word_embeddings": True}
JAMBA = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096,
         "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "attn_layer_period": 8, "attn_layer_offset": 4,
         "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 16,
         "num_experts_per_tok": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
         "vocab_size": 65536, "max_position_embeddings": 262144}
INTERNVL = {"architectures": ["InternVLChatModel"], "model_type": "internvl_chat",
            "llm_config": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                           "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                           "num_attention_heads": 28, "num_key_value_heads": 4,
                           "vocab_size": 151674, "max_position_embeddings": 32768},
            "vision_config": {"hidden_size": 1024, "num_attention_heads": 16,
                              "num_hidden_layers": 24, "intermediate_size": 4096}}
WHISPER = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper",
           "d_model": 1280, "decoder_layers": 32, "decoder_attention_heads": 20,
           "decoder_ffn_dim": 5120, "vocab_size": 51866, "max_target_positions": 448}


def spec(cfg: dict[str, object]):  # type: ignore[no-untyped-def]
    return parse_config(cfg, model_id="t", source="local")


def test_pure_mamba_is_attention_free() -> None:
    s = spec(MAMBA)
    assert s.kv_layers == 0 and s.mamba is not None and s.mamba.kind == "mamba1"
    assert s.num_params / 1e6 == pytest.approx(129, rel=0.02)  # mamba-130m
    assert "mha" not in s.features


def test_jamba_interleaves_attention_and_experts() -> None:
    s = spec(JAMBA)
    assert s.kv_layers == 4 and s.moe is not None and s.moe.moe_layers == 16
    assert s.num_params / 1e9 == pytest.approx(51.6, rel=0.01)


def test_internvl_is_generative_with_its_llm_config() -> None:
    s = spec(INTERNVL)
    assert not s.is_pooling and s.vision is not None and s.num_kv_heads == 4


def test_whisper_decoder_fields() -> None:
    s = spec(WHISPER)
    assert s.num_attention_heads == 20 and s.derived_max_len == 448
