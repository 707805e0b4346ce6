"""Every plan rule on both sides of its threshold, with real model configs from the catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.hardware import lookup
from hangar.hardware.spec import Hardware
from hangar.models import load_model
from hangar.planning import PlanRequest, plan
from hangar.planning.rules import default_rules


def ids(model: str, gpu: str = "H100", gpus: int = 8, nodes: int = 1, **req: object) -> set[str]:
    spec = load_model(model)
    hw = Hardware(gpu=lookup(gpu), gpus_per_node=gpus, nodes=nodes)
    request = PlanRequest(**{"tp": 1, **req})  # type: ignore[arg-type]
    result = plan(spec, hw, request)
    return {f.id for f in result.layouts[0].findings}


def message(model: str, rule: str, gpu: str = "H100", gpus: int = 8, **req: object) -> str:
    spec = load_model(model)
    hw = Hardware(gpu=lookup(gpu), gpus_per_node=gpus)
    result = plan(spec, hw, PlanRequest(**{"tp": 1, **req}))  # type: ignore[arg-type]
    return next(f.message for f in result.layouts[0].findings if f.id == rule)


QWEN8B = "Qwen/Qwen3-8B"  # 32 heads, 8 KV heads, 36 layers, max 40960


def test_rules_file_loads_and_ids_are_unique() -> None:
    rules = default_rules().rules
    assert len(rules) >= 30
    assert len({r.id for r in rules}) == len(rules)
    assert all(r.source for r in rules)


@pytest.mark.parametrize(("tp", "bad"), [(4, False), (8, False), (3, True), (6, True)])
def test_heads_divisible_by_tp(tp: int, bad: bool) -> None:
    assert ("heads_divisible_by_tp" in ids(QWEN8B, tp=tp)) is bad


def test_heads_message_is_vllms_text() -> None:
    text = message(QWEN8B, "heads_divisible_by_tp", tp=3)
    assert text == "Total number of attention heads (32) must be divisible by tensor parallel size (3)."


@pytest.mark.parametrize(
    ("model", "tp", "rule", "present"),
    [
        ("Qwen/Qwen3-30B-A3B", 4, "kv_heads_tp", False),  # 4 KV heads, TP 4
        ("Qwen/Qwen3-30B-A3B", 8, "kv_heads_replicated", True),  # TP 8 > 4 KV heads, replicated
        ("Qwen/Qwen3-30B-A3B", 8, "kv_heads_tp", False),
        ("tiiuae/falcon-180B-chat", 8, "kv_heads_tp", False),
    ],
)
def test_kv_heads(model: str, tp: int, rule: str, present: bool) -> None:
    assert (rule in ids(model, tp=tp, gpus=16)) is present


def test_kv_heads_not_divisible_either_way() -> None:
    # falcon-180B: 232 heads, 8 KV heads; TP 29 divides 232 but neither 8 % 29 nor 29 % 8
    found = ids("tiiuae/falcon-180B-chat", tp=29, gpus=29)
    assert "kv_heads_tp" in found and "heads_divisible_by_tp" not in found


@pytest.mark.parametrize(("tp", "bad"), [(8, False), (16, False), (3, True)])
def test_vision_heads(tp: int, bad: bool) -> None:
    # Llama-4-Scout vision encoder: 16 heads
    found = ids("meta-llama/Llama-4-Scout-17B-16E-Instruct", tp=tp, gpus=16)
    assert ("vision_heads_divisible_by_tp" in found) is bad


def test_expert_parallel_needs_moe() -> None:
    assert "ep_requires_moe" in ids(QWEN8B, tp=2, ep=True)
    assert "ep_requires_moe" not in ids("Qwen/Qwen3-30B-A3B", tp=2, ep=True)
    assert "moe_without_ep" in ids("Qwen/Qwen3-30B-A3B", tp=2)
    assert "moe_without_ep" not in ids("Qwen/Qwen3-30B-A3B", tp=2, ep=True)


@pytest.mark.parametrize(
    ("version", "tp", "rule"),
    [("0.33.0", 16, "world_size_exceeds_gpus_per_node"), ("0.20.0", 16, "world_size_exceeds_gpus_per_node")],
)
def test_world_size_vs_gpus(version: str, tp: int, rule: str) -> None:
    assert rule in ids(QWEN8B, tp=tp, vllm_version=version, gpus=8)
    assert rule not in ids(QWEN8B, tp=8, vllm_version=version, gpus=8)


def test_world_size_0_11_switches_to_ray_silently() -> None:
    text = message(QWEN8B, "world_size_exceeds_gpus_per_node", tp=16, vllm_version="0.11.0")
    assert "silently switches to the Ray executor" in text


def test_multi_node_rules() -> None:
    found = ids("meta-llama/Llama-3.1-405B", tp=8, pp=2, nodes=2, gpus=8)
    assert "world_size_exceeds_gpus_per_node" not in found
    assert "nnodes_divides_world_size" not in found
    assert "world_size_exceeds_total_gpus" in ids("meta-llama/Llama-3.1-405B", tp=8, pp=4, nodes=2, gpus=8)
    assert "tp_spans_nodes" in ids("meta-llama/Llama-3.1-405B", tp=16, nodes=2, gpus=8)
    assert "nnodes_divides_world_size" in ids("meta-llama/Llama-3.1-405B", tp=1, pp=3, nodes=2, gpus=8)


def test_dp_exceeds_gpus() -> None:
    assert "dp_exceeds_gpus" in ids(QWEN8B, tp=4, dp=4, gpus=8)
    assert "dp_exceeds_gpus" not in ids(QWEN8B, tp=4, dp=2, gpus=8)


def test_pipeline_rules() -> None:
    assert "pp_uneven_layers" in ids(QWEN8B, pp=5, gpus=8)  # 36 layers / 5
    assert "pp_uneven_layers" not in ids(QWEN8B, pp=4, gpus=8)
    assert "pp_unsupported_arch" in ids("Qdrant/bge-large-en-v1.5-onnx", pp=2)
    assert "pp_unsupported_arch" not in ids(QWEN8B, pp=2)


def test_uneven_partition_matches_vllm() -> None:
    text = message(QWEN8B, "pp_uneven_layers", pp=5)
    # get_pp_indices: `for i in range(2, remaining + 2): partitions[-i] += 1`, logged with
    # ",".join(...) (vllm/distributed/utils.py:232), so no spaces
    assert "[7,7,7,8,7]" in text


@pytest.mark.parametrize(("length", "bad"), [(40960, False), (40961, True), (100_000, True)])
def test_max_model_len_vs_derived(length: int, bad: bool) -> None:
    assert ("max_model_len_exceeds_derived" in ids(QWEN8B, max_model_len=length)) is bad


def test_allow_long_max_model_len_turns_it_into_a_warning() -> None:
    found = ids(QWEN8B, max_model_len=100_000, allow_long_max_model_len=True)
    assert "max_model_len_exceeds_derived" not in found and "max_model_len_long_allowed" in found


def test_derived_length_message_matches_vllm() -> None:
    text = message(QWEN8B, "max_model_len_exceeds_derived", max_model_len=100_000)
    assert text.startswith(
        "User-specified max_model_len (100000) is greater than the derived max_model_len "
        "(max_position_embeddings=40960.0 or model_max_length=None in model's config.json)."
    )


def test_batched_tokens_rules() -> None:
    assert "batched_tokens_lt_max_model_len" in ids(
        QWEN8B, max_model_len=8192, max_num_batched_tokens=4096, enable_chunked_prefill=False)
    assert "batched_tokens_lt_max_model_len" not in ids(QWEN8B, max_model_len=8192, max_num_batched_tokens=4096)
    assert "batched_tokens_lt_max_num_seqs" in ids(QWEN8B, max_num_batched_tokens=64, max_num_seqs=128)


@pytest.mark.parametrize(
    ("model", "gpu", "version", "bad"),
    [
        ("Qwen/Qwen3-32B-FP8", "T4", "0.33.0", False),  # fp8 min 75 from 0.20 (Marlin)
        ("Qwen/Qwen3-32B-FP8", "T4", "0.11.0", True),  # fp8 min 80 in 0.11
        ("Qwen/Qwen3-32B-FP8", "V100", "0.33.0", True),
        ("openai/gpt-oss-20b", "T4", "0.33.0", True),  # mxfp4 min 80
        ("openai/gpt-oss-20b", "A100", "0.33.0", False),
        ("nvidia/Llama-3.1-70B-Instruct-FP8", "A100", "0.20.0", True),  # modelopt 89 before 0.33
        ("nvidia/Llama-3.1-70B-Instruct-FP8", "A100", "0.33.0", False),
        ("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", "V100", "0.33.0", True),  # awq 75
        ("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", "T4", "0.33.0", False),
    ],
)
def test_quant_min_capability(model: str, gpu: str, version: str, bad: bool) -> None:
    found = ids(model, gpu=gpu, vllm_version=version, tp=8, gpus=8)
    assert ("quant_min_capability" in found) is bad


def test_quant_capability_message() -> None:
    # 0.20+ resolve a gpt_oss "mxfp4" checkpoint to gpt_oss_mxfp4 (mxfp4.py override), which
    # is the name the capability error prints
    text = message("openai/gpt-oss-20b", "quant_min_capability", gpu="T4", gpus=1)
    assert text == ("The quantization method gpt_oss_mxfp4 is not supported for the current GPU. "
                    "Minimum capability: 80. Current capability: 75.")
    old = message("openai/gpt-oss-20b", "quant_min_capability", gpu="T4", gpus=1, vllm_version="0.11.0")
    assert old.startswith("The quantization method mxfp4 is not supported")


def test_nvfp4_emulated_before_blackwell() -> None:
    assert "nvfp4_emulated" in ids("nvidia/Qwen3-235B-A22B-NVFP4", gpu="H100", tp=8)
    assert "nvfp4_emulated" not in ids("nvidia/Qwen3-235B-A22B-NVFP4", gpu="B200", tp=8)


def test_fp8_weight_only_on_ampere() -> None:
    assert "fp8_weight_only_fallback" in ids("Qwen/Qwen3-32B-FP8", gpu="A100", tp=2)
    assert "fp8_weight_only_fallback" not in ids("Qwen/Qwen3-32B-FP8", gpu="H100", tp=2)


def test_quant_method_mismatch() -> None:
    assert "quant_method_mismatch" in ids("Qwen/Qwen3-32B-FP8", quantization="awq", tp=2)
    assert "quant_method_mismatch" not in ids("Qwen/Qwen3-32B-FP8", quantization="fp8", tp=2)
    assert "quant_method_mismatch" not in ids("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", quantization="awq_marlin", tp=4)


def test_unknown_quant_method_in_0_33() -> None:
    assert "quant_unknown_method" in ids(QWEN8B, quantization="bitsandbytes", vllm_version="0.33.0")
    assert "quant_unknown_method" not in ids(QWEN8B, quantization="bitsandbytes", vllm_version="0.20.0")


def test_fp8_block_shapes() -> None:
    # Qwen3-32B-FP8: intermediate 25600 = 200 blocks of 128; TP 8 -> 3200 ok; TP 16 -> 1600 ok
    assert not {"fp8_block_n", "fp8_block_k"} & ids("Qwen/Qwen3-32B-FP8", tp=8)
    # Qwen3-30B-A3B-FP8 MoE intermediate 768: TP 8 -> 96, not a multiple of 128
    found = ids("Qwen/Qwen3-30B-A3B-FP8", tp=8)
    assert "fp8_block_moe" in found
    assert "fp8_block_moe" not in ids("Qwen/Qwen3-30B-A3B-FP8", tp=8, ep=True)
    assert "fp8_block_moe" not in ids("Qwen/Qwen3-30B-A3B-FP8", tp=2)


def test_marlin_and_group_size() -> None:
    # Qwen2.5-72B AWQ: intermediate 29568 = 231 groups of 128 -> TP 2 or 8 split a group
    found = ids("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", tp=8)
    # 0.33: Marlin is one candidate of choose_mp_linear_kernel, so its shape limits are a fallback
    assert {"quant_group_size_tp", "wna16_marlin_shape_fallback"} <= found
    # 0.11 awq_marlin calls verify_marlin_supports_shape directly: a hard error on SM >= 8.0
    old = ids("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", tp=8, vllm_version="0.11.0")
    assert "marlin_min_thread_n" in old and "wna16_marlin_shape_fallback" not in old
    assert "quant_group_size_tp" not in ids("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", tp=3, gpus=3)
    assert "marlin_min_thread_k" not in ids("LDCC/Qwen2.5-72B-Instruct-ko-AWQ", tp=3, gpus=3)


def test_bf16_rules() -> None:
    assert "bf16_requires_sm80" in ids(QWEN8B, gpu="T4", dtype="bfloat16", gpus=1)
    assert "bf16_requires_sm80" not in ids(QWEN8B, gpu="A10", dtype="bfloat16", gpus=1)
    assert "bf16_auto_fallback" in ids(QWEN8B, gpu="T4", gpus=1)
    assert "bf16_auto_fallback" not in ids(QWEN8B, gpu="A10", gpus=1)


def test_fp16_refused_for_gemma3() -> None:
    assert "fp16_refused" in ids("google/medgemma-27b-it", dtype="half", tp=2)
    assert "fp16_refused" not in ids("google/medgemma-27b-it", dtype="bfloat16", tp=2)


def test_kv_cache_dtype_rules() -> None:
    assert "kv_cache_dtype_invalid" in ids(QWEN8B, kv_cache_dtype="fp7")
    assert "kv_cache_dtype_invalid" not in ids(QWEN8B, kv_cache_dtype="fp8")
    assert "kv_cache_dtype_float_mismatch" in ids(QWEN8B, kv_cache_dtype="float16")
    assert "kv_cache_nvfp4_mla" in ids("deepseek-ai/DeepSeek-V3", kv_cache_dtype="nvfp4", tp=8)
    assert "kv_cache_fp8_old_gpu" in ids(QWEN8B, gpu="T4", kv_cache_dtype="fp8", gpus=1)


def test_memory_rules_both_sides() -> None:
    assert "weights_exceed_gpu_memory" in ids("meta-llama/Llama-3.1-70B-Instruct", tp=1)
    assert "weights_exceed_gpu_memory" not in ids("meta-llama/Llama-3.1-70B-Instruct", tp=4)
    # 70B on 2x H100: weights fit, the full 128K context does not
    found = ids("meta-llama/Llama-3.1-70B-Instruct", tp=2, gpus=2)
    assert "kv_cache_too_small" in found
    assert "kv_cache_too_small" not in ids("meta-llama/Llama-3.1-70B-Instruct", tp=2, gpus=2, max_model_len=8192)
    assert "no_kv_cache_memory" in ids("meta-llama/Llama-3.1-70B-Instruct", tp=2, gpus=2,
                                       gpu_memory_utilization=0.84)


def test_kv_too_small_message_per_version() -> None:
    new = message("meta-llama/Llama-3.1-70B-Instruct", "kv_cache_too_small", tp=2, gpus=2)
    old = message("meta-llama/Llama-3.1-70B-Instruct", "kv_cache_too_small", tp=2, gpus=2, vllm_version="0.11.0")
    assert "with the model's max seq len (131072)" in new and "docs.vllm.ai" in new
    assert "models's max seq len" in old and "docs.vllm.ai" not in old
    assert "estimated maximum model length is" in new


def test_mamba_blocks_rule() -> None:
    # Nemotron-H 56B on one H100: KV fits, but 1024 default max_num_seqs > Mamba blocks
    found = ids("nvidia/Nemotron-H-56B-Base-8K", gpu="H200", gpus=1)
    assert "mamba_cache_blocks" in found
    assert "mamba_cache_blocks" not in ids("nvidia/Nemotron-H-56B-Base-8K", gpu="H200", gpus=1, max_num_seqs=8)


def test_gpu_memory_utilization_range() -> None:
    assert "gpu_memory_utilization_range" in ids(QWEN8B, gpu_memory_utilization=1.5)
    assert "gpu_memory_utilization_range" not in ids(QWEN8B, gpu_memory_utilization=0.5)


def test_remaining_rules_both_sides() -> None:
    assert "ep_single_gpu" in ids("Qwen/Qwen3-30B-A3B", tp=1, ep=True, gpus=1)
    assert "ep_single_gpu" not in ids("Qwen/Qwen3-30B-A3B", tp=2, ep=True, gpus=2)
    assert "pp_exceeds_layers" in ids("Qwen/Qwen3-0.6B", pp=32, gpus=32)  # 28 layers
    assert "pp_exceeds_layers" not in ids("Qwen/Qwen3-0.6B", pp=28, gpus=32)
    assert "fp16_refused_auto_fp32" in ids("google/medgemma-27b-it", gpu="T4", tp=8)
    assert "fp16_refused_auto_fp32" not in ids("google/medgemma-27b-it", gpu="A100", tp=8)


def test_marlin_thread_n_and_k() -> None:
    # GPTQ goes through choose_mp_linear_kernel in every read version: a Marlin shape miss is a
    # kernel fallback (wna16_marlin_shape_fallback), not vLLM's verify_marlin_supports_shape error.
    # Llama-2-13B GPTQ int4: intermediate 13824; TP 8 -> down_proj input 1728, not a multiple of 128
    rule = "wna16_marlin_shape_fallback"
    assert rule in ids("TheBloke/Llama-2-13B-chat-GPTQ", gpu="A100", tp=8)
    assert rule not in ids("TheBloke/Llama-2-13B-chat-GPTQ", gpu="A100", tp=2)
    # TP 5 divides the 40 heads but splits gate/up outputs into 2764.8 columns
    assert rule in ids("TheBloke/Llama-2-13B-chat-GPTQ", gpu="A100", tp=5, gpus=5)
    assert rule not in ids("TheBloke/Llama-2-13B-chat-GPTQ", gpu="A100", tp=4)
    assert not {"marlin_min_thread_n", "marlin_min_thread_k"} & ids(
        "TheBloke/Llama-2-13B-chat-GPTQ", gpu="A100", tp=8)


def test_compressed_tensors_scheme_capability() -> None:
    # FP8 W8A8 needs SM 8.9, falls back to W8A16 Marlin from SM 7.5; below that the scheme fails
    model = "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic"
    assert "quant_scheme_capability" in ids(model, gpu="V100", tp=8)
    assert "quant_scheme_capability" not in ids(model, gpu="T4", tp=8)


def test_low_kv_concurrency_warning() -> None:
    model = "meta-llama/Llama-3.1-70B-Instruct"
    assert "low_kv_concurrency" in ids(model, tp=2, gpus=2, max_model_len=16384)
    assert "low_kv_concurrency" not in ids(model, tp=2, gpus=2, max_model_len=4096)


def test_architecture_registry_rules(tmp_path: Path) -> None:
    base = json.loads((Path(__file__).resolve().parents[2] / "src/hangar/models/catalog/Qwen__Qwen3-8B/config.json").read_text())
    for arch, expected in (("FooForBar", "architecture_not_registered"),
                           ("Phi3SmallForCausalLM", "architecture_removed")):
        model = tmp_path / arch
        model.mkdir()
        (model / "config.json").write_text(json.dumps({**base, "architectures": [arch]}))
        assert expected in ids(str(model))
    assert not {"architecture_not_registered", "architecture_removed"} & ids(QWEN8B)
    # a pooling adapter of a registered causal LM is fine (vLLM's _SUFFIX_TO_DEFAULTS)
    model = tmp_path / "cls"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({**base, "architectures": ["Qwen3ForSequenceClassification"]}))
    assert "architecture_not_registered" not in ids(str(model))
