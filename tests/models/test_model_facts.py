"""ModelSpec parsing against real configs: vLLM's field aliases and derivations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.errors import InputError
from hangar.models import load_model
from hangar.models.config import parse_config
from hangar.models.context_length import derive_max_len
from hangar.models.sources import catalog_folders, from_catalog


def test_every_catalog_entry_parses() -> None:
    specs = [from_catalog(folder) for folder in catalog_folders()]
    assert len(specs) >= 55
    assert all(s.num_params > 0 and s.weight_bytes > 0 and s.num_layers > 0 for s in specs)


@pytest.mark.parametrize(
    ("model", "billions"),
    [
        ("Qwen/Qwen3-235B-A22B", 235.1), ("meta-llama/Llama-3.1-70B-Instruct", 70.6),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7), ("deepseek-ai/DeepSeek-V3", 671.0),
        ("openai/gpt-oss-20b", 20.9), ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 108.6),
        ("Qwen/Qwen3-Next-80B-A3B-Thinking", 79.6), ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", 120.7),
    ],
)
def test_parameter_counts_match_published_sizes(model: str, billions: float) -> None:
    assert load_model(model).num_params / 1e9 == pytest.approx(billions, rel=0.01)


def test_features_cover_the_catalog_kinds() -> None:
    assert "mla" in load_model("deepseek-ai/DeepSeek-V3").features
    assert "sliding-window" in load_model("openai/gpt-oss-20b").features
    assert "hybrid-mamba2" in load_model("nvidia/Nemotron-H-56B-Base-8K").features
    assert "hybrid-gdn" in load_model("Qwen/Qwen3-Next-80B-A3B-Thinking").features
    assert "multimodal" in load_model("Qwen/Qwen3.5-27B").features
    assert "quant:modelopt_fp4" in load_model("nvidia/Qwen3-235B-A22B-NVFP4").features
    assert "quant:mxfp4" in load_model("openai/gpt-oss-20b").features
    assert "quant:awq" in load_model("LDCC/Qwen2.5-72B-Instruct-ko-AWQ").features
    assert "quant:gptq" in load_model("TheBloke/Llama-2-13B-chat-GPTQ").features


def test_nemotron_h_layer_pattern() -> None:
    spec = load_model("nvidia/Nemotron-H-56B-Base-8K")
    assert spec.num_layers == 118 and spec.kv_layers == 10
    assert spec.mamba is not None and spec.mamba.ssm_dtype == "float32"


def test_quant_from_hf_quant_config() -> None:
    q = load_model("nvidia/Qwen3-235B-A22B-NVFP4").quant
    assert q is not None and q.method == "modelopt_fp4" and q.group_size == 16
    assert q.source_file == "hf_quant_config.json"
    fp8 = load_model("Qwen/Qwen3-32B-FP8").quant
    assert fp8 is not None and fp8.weight_block_size == (128, 128)


def test_kv_head_alias_order_and_falcon_multi_query() -> None:
    base = {"architectures": ["X"], "hidden_size": 64, "num_attention_heads": 8, "num_hidden_layers": 2}
    spec = parse_config({**base, "num_kv_heads": 2, "num_key_value_heads": 4}, model_id="t", source="local")
    assert spec.num_kv_heads == 2  # num_kv_heads comes before num_key_value_heads
    falcon = parse_config({**base, "model_type": "falcon", "multi_query": True}, model_id="f", source="local")
    assert falcon.num_kv_heads == 1
    assert parse_config(base, model_id="m", source="local").num_kv_heads == 8


def test_derived_max_len_like_vllm() -> None:
    cfg = {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 4.0}}
    assert derive_max_len(cfg, cfg)[0] == 16384  # linear factor multiplies
    yarn = {"max_position_embeddings": 163840, "rope_scaling": {"type": "yarn", "factor": 40}}
    assert derive_max_len(yarn, yarn)[0] == 163840  # yarn is already folded in
    both = {"max_position_embeddings": 8192, "seq_length": 4096}
    assert derive_max_len(both, both)[:2] == (4096, "seq_length")  # the minimum wins
    assert derive_max_len({}, {})[0] == 2048  # vLLM's assumption with no key
    assert load_model("microsoft/Phi-3-mini-128k-instruct").default_max_len == 4096  # longrope


def test_local_directory_with_safetensors_index(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[2] / "src/hangar/models/catalog/Qwen__Qwen3-8B/config.json"
    (tmp_path / "config.json").write_text(src.read_text())
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 16_381_470_720}}))
    spec = load_model(str(tmp_path))
    assert spec.source == "local" and spec.weight_bytes == 16_381_470_720


def test_missing_config_in_directory(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no config.json"):
        load_model(str(tmp_path))
