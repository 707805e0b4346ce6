"""Hangar's vLLM data pinned against what vLLM's own source says, per read version.

The expected strings and values below were read from the vLLM 0.8.5 / 0.11.0 / 0.20.0 / 0.33.0
wheels (`pip download vllm==X --no-deps`, *.py only); each cites the file:line it came from.
vLLM's f-string fields are written as the Hangar fact that fills them. No vLLM code is kept here.
"""

from __future__ import annotations

import pytest

from hangar.hardware import lookup
from hangar.hardware.spec import Hardware
from hangar.models import load_model
from hangar.models.config import KV_HEAD_ALIASES, MLA_MODEL_TYPES
from hangar.models.context_length import MAX_LEN_KEYS, ROPE_TYPES_ALREADY_SCALED
from hangar.planning import PlanRequest, plan
from hangar.planning.facts import (
    FP16_REFUSED,
    KV_CACHE_DTYPES,
    NO_PP_ARCHS,
    known_methods,
    quant_min_capability,
    resolve_quant_method,
)
from hangar.planning.plan import batch_defaults, default_utilization
from hangar.planning.rules import default_rules

V33, V20, V11, V085 = (0, 33, 0), (0, 20, 0), (0, 11, 0), (0, 8, 5)
VERSIONS = {"0.33": V33, "0.20": V20, "0.11": V11, "0.8.5": V085}

DOCS = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
LONG_WARNING = (
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative "
    "position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model "
    "uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA "
    "array out-of-bounds error."
)
BF16 = (
    "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {gpu_name} "
    "GPU has compute capability {capability_dotted}. You can use float16 instead by explicitly "
    "setting the `dtype` flag in CLI, for example: --dtype=half."
)
KV_TOO_SMALL_HEAD = (
    "To serve at least one request with the {whose} max seq len ({max_model_len}), "
    "({kv_needed_gib} GiB KV cache is needed, which is larger than the available KV cache memory "
    "({kv_available_gib} GiB)."
)
ESTIMATE = "Based on the available memory, the estimated maximum model length is {max_model_len_fit}."
TRY = "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."

# QuantizationMethods Literal, in order (vllm/model_executor/layers/quantization/__init__.py)
QUANT_METHODS = {
    "0.33": ["awq", "auto_awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4",
             "modelopt_mxfp8", "modelopt_mixed", "auto_gptq", "gptq", "gptq_marlin", "awq_marlin",
             "humming", "compressed-tensors", "experts_int8", "quark", "moe_wna16", "torchao",
             "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "online", "fp8_per_tensor",
             "fp8_per_block", "fp8_per_channel", "int8_per_channel_weight_only",
             "nvfp4_per_token", "mxfp8"],
    "0.20": ["awq", "fp8", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
             "modelopt_mixed", "gguf", "gptq_marlin", "awq_marlin", "gptq", "humming",
             "compressed-tensors", "bitsandbytes", "experts_int8", "quark", "moe_wna16", "torchao",
             "inc", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "cpu_awq", "online",
             "fp8_per_tensor", "fp8_per_block", "int8_per_channel_weight_only", "mxfp8"],
    "0.11": ["awq", "deepspeedfp", "tpu_int8", "fp8", "ptpc_fp8", "fbgemm_fp8", "modelopt",
             "modelopt_fp4", "bitblas", "gguf", "gptq_marlin_24", "gptq_marlin", "gptq_bitblas",
             "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "hqq", "experts_int8",
             "ipex", "quark", "moe_wna16", "torchao", "auto-round", "rtn", "inc", "mxfp4",
             "petit_nvfp4"],
    "0.8.5": ["aqlm", "awq", "deepspeedfp", "tpu_int8", "fp8", "ptpc_fp8", "fbgemm_fp8",
              "modelopt", "nvfp4", "marlin", "bitblas", "gguf", "gptq_marlin_24", "gptq_marlin",
              "gptq_bitblas", "awq_marlin", "gptq", "compressed-tensors", "bitsandbytes", "qqq",
              "hqq", "experts_int8", "neuron_quant", "ipex", "quark", "moe_wna16", "torchao"],
}
# CacheDType Literal, in order (0.33/0.20/0.11 vllm/config/cache.py, 0.8.5 vllm/config.py:1291)
KV_DTYPES = {
    "0.33": ["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
             "nvfp4_ds_mla", "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc",
             "turboquant_3bit_nc", "octave_k3v4", "octave_k3v3", "octave_k3v3_compact",
             "ultraquant_4bit", "int4_per_token_head", "int8_per_token_head",
             "fp8_per_token_head", "nvfp4", "nvfp4_4over6"],
    "0.20": ["auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla",
             "turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc",
             "int8_per_token_head", "fp8_per_token_head", "nvfp4"],
    "0.11": ["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"],
    "0.8.5": ["auto", "fp8", "fp8_e4m3", "fp8_e5m2"],
}

# (rule id, read version) -> vLLM's text with Hangar fact names in its f-string fields
VLLM_TEXTS: dict[tuple[str, str], str] = {
    # config/parallel.py:1072 (0.33), :812 (0.20)
    **{("world_size_exceeds_gpus_per_node", v): (
        "World size ({world_size}) is larger than the number of available GPUs ({gpus_per_node}) "
        "in this node. If this is intentional and you are using:\n"
        "- ray, set '--distributed-executor-backend ray'.\n"
        "- multiprocessing, set '--nnodes' appropriately.") for v in ("0.33", "0.20")},
    # v1/worker/gpu_worker.py:488 (0.33), :243 (0.20, trailing space included)
    ("dp_exceeds_gpus", "0.33"): "DP adjusted local rank {gpus_per_node} is out of bounds for {gpus_per_node} devices.",
    ("dp_exceeds_gpus", "0.20"): "DP adjusted local rank {gpus_per_node} is out of bounds. ",
    # engine/arg_utils.py:2409 (0.33), :1745 (0.20)
    ("nnodes_divides_world_size", "0.33"): (
        "Invalid data-parallel launch options: `--nnodes {nodes}` must evenly divide the total "
        "world size ({world_all}). Adjust `--nnodes`, `--data-parallel-size`, "
        "`--pipeline-parallel-size`, `--tensor-parallel-size`, or `--prefill-context-parallel-size`."),
    ("nnodes_divides_world_size", "0.20"): "world_size={world_all} must be divisible by nnodes={nodes}.",
    **{("heads_divisible_by_tp", v): (
        "Total number of attention heads ({num_attention_heads}) must be divisible by tensor "
        "parallel size ({tp}).") for v in VERSIONS},
    # distributed/utils.py ensure_divisibility
    **{("kv_heads_tp", v): "{kv_div_a} is not divisible by {kv_div_b}" for v in VERSIONS},
    **{("vision_heads_divisible_by_tp", v): "{vision_heads} is not divisible by {tp}" for v in VERSIONS},
    **{("ep_requires_moe", v): (
        "Number of experts in the model must be greater than 0 when expert parallelism is "
        "enabled.") for v in VERSIONS},
    **{("pp_unsupported_arch", v): (
        "Pipeline parallelism is not supported for this model. Supported models implement the "
        "`SupportsPP` interface.") for v in VERSIONS},
    **{("pp_uneven_layers", v): (
        "Hidden layers were unevenly partitioned: [{pp_partition_env}]. This can be manually "
        "overridden using the VLLM_PP_LAYER_PARTITION environment variable") for v in VERSIONS},
    # config/model.py _get_and_verify_max_len
    **{("max_model_len_exceeds_derived", v): (
        "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        "({derived_key}={" + field + "} or model_max_length={model_max_length_text} in model's "
        "config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. " + LONG_WARNING)
        for v, field in (("0.33", "derived_max_len_float"), ("0.20", "derived_max_len_float"),
                         ("0.11", "derived_max_len"))},
    ("max_model_len_exceeds_derived", "0.8.5"): (
        "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        "({derived_key}={derived_max_len} or model_max_length={model_max_length_text} in model's "
        "config.json). This may lead to incorrect model outputs or CUDA errors. To allow "
        "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
    **{("max_model_len_long_allowed", v): (
        "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        "({derived_key}={" + field + "} or model_max_length={model_max_length_text} in model's "
        "config.json). " + LONG_WARNING)
        for v, field in (("0.33", "derived_max_len_float"), ("0.20", "derived_max_len_float"),
                         ("0.11", "derived_max_len"))},
    ("max_model_len_long_allowed", "0.8.5"): (
        "User-specified max_model_len ({max_model_len}) is greater than the derived max_model_len "
        "({derived_key}={derived_max_len} or model_max_length={model_max_length_text} in model's "
        "config.json). This may lead to incorrect model outputs or CUDA errors. Make sure the "
        "value is correct and within the model context size."),
    # config/scheduler.py verify_max_model_len
    **{("batched_tokens_lt_max_model_len", v): (
        "max_num_batched_tokens ({max_num_batched_tokens}) is smaller than max_model_len "
        "({max_model_len}). This effectively limits the maximum sequence length to "
        "max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
        "max_num_batched_tokens or decrease max_model_len.") for v in VERSIONS},
    **{("batched_tokens_lt_max_num_seqs", v): (
        "max_num_batched_tokens ({max_num_batched_tokens}) must be greater than or equal to "
        "max_num_seqs ({max_num_seqs}).") for v in VERSIONS},
    # config/model.py _verify_quantization
    **{("quant_method_mismatch", v): (
        "Quantization method specified in the model config ({quant_ckpt}) does not match the "
        "quantization method specified in the `quantization` argument ({quant_user}).")
        for v in VERSIONS},
    **{("quant_unknown_method", v): (
        "Unknown quantization method: {quant_method}. Must be one of " + repr(QUANT_METHODS[v]) + ".")
        for v in VERSIONS},
    # model_executor/models/registry.py (0.33:1235, 0.20:984, 0.11:616; absent in 0.8.5)
    **{("architecture_removed", v): (
        "Model architecture {architecture} was supported in vLLM until v{arch_removed_in}, and "
        "is not supported anymore. Please use an older version of vLLM if you want to use this "
        "model architecture.") for v in ("0.11", "0.20", "0.33")},
    # config/vllm.py _get_quantization_config (0.11: config/__init__.py:270)
    **{("quant_dtype_unsupported", v): (
        "{run_dtype_torch} is not supported for quantization method {quant_method}. "
        "Supported dtypes: {quant_act_dtypes}") for v in ("0.11", "0.20", "0.33")},
    # config/model.py:1480: ValueError(msg, method) prints as a tuple (also raised by 0.32.0)
    ("quant_deprecated_method", "0.33"): (
        "('The quantization method %s is deprecated and will be removed in future versions of "
        "vLLM. To bypass, set `--allow-deprecated-quantization`.', '{quant_method}')"),
    # config/vllm.py _get_quantization_config
    **{("quant_min_capability", v): (
        "The quantization method {quant_method} is not supported for the current GPU. Minimum "
        "capability: {quant_min_cap}. Current capability: {capability}.") for v in VERSIONS},
    **{("quant_min_capability_unconverted_awq", v): (
        "The quantization method awq is not supported for the current GPU. Minimum capability: "
        "75. Current capability: {capability}.") for v in ("0.20", "0.11", "0.8.5")},
    **{("quant_min_capability_unconverted_gptq", v): (
        "The quantization method gptq is not supported for the current GPU. Minimum capability: "
        "60. Current capability: {capability}.") for v in ("0.20", "0.11", "0.8.5")},
    # compressed_tensors.py _check_scheme_supported: one string in 0.33, a 3-tuple before
    ("quant_scheme_capability", "0.33"): (
        "Quantization scheme is not supported for the current GPU. Min capability: "
        "{quant_scheme_min}. Current capability: {capability}."),
    **{("quant_scheme_capability", v): (
        "('Quantization scheme is not supported for ', 'the current GPU. Min capability: "
        "{quant_scheme_min}. ', 'Current capability: {capability}.')") for v in ("0.20", "0.11", "0.8.5")},
    **{("fp8_weight_only_fallback", v): (
        "Your GPU does not have native support for FP8 computation but FP8 quantization is being "
        "used. Weight-only FP8 compression will be used leveraging the Marlin kernel. This may "
        "degrade performance for compute-heavy workloads.") for v in VERSIONS},
    **{("nvfp4_emulated", v): (
        "Your GPU does not have native support for FP4 computation but FP4 quantization is being "
        "used. Weight-only FP4 compression will be used leveraging the Marlin kernel. This may "
        "degrade performance for compute-heavy workloads.") for v in ("0.33", "0.20", "0.11")},
    # quantization/utils/marlin_utils.py verify_marlin_supports_shape (double space before min_thread_n)
    **{("marlin_min_thread_n", v): (
        "Weight output_size_per_partition = {marlin_bad_n} is not divisible by  min_thread_n = 64. "
        "Consider reducing tensor_parallel_size or running with --quantization gptq.")
        for v in ("0.11", "0.8.5")},
    **{("marlin_min_thread_k", v): (
        "Weight input_size_per_partition = {marlin_bad_k} is not divisible by min_thread_k = 128. "
        "Consider reducing tensor_parallel_size or running with --quantization gptq.")
        for v in ("0.11", "0.8.5")},
    # quantization/utils/fp8_utils.py (0.8.5: fp8.py)
    **{("fp8_block_n", v): (
        "Weight output_partition_size = {block_bad_n} is not divisible by weight quantization "
        "block_n = {block_n}.") for v in VERSIONS},
    **{("fp8_block_k", v): (
        "Weight input_size_per_partition = {block_bad_k} is not divisible by weight quantization "
        "block_k = {block_k}.") for v in VERSIONS},
    **{("fp8_block_moe", v): (
        "The output_size of gate's and up's weight = {moe_inter_per_gpu} is not divisible by "
        "weight quantization block_n = {block_n}.") for v in VERSIONS},
    **{("bf16_requires_sm80", v): BF16 for v in VERSIONS},
    ("bf16_auto_no_fallback", "0.8.5"): BF16,
    # config/model.py _resolve_auto_dtype: device name is !r-formatted
    **{("bf16_auto_fallback", v): (
        "Your device '{gpu_name}' (with compute capability {capability_dotted}) doesn't support "
        "torch.bfloat16. Falling back to torch.float16 for compatibility.") for v in ("0.33", "0.20", "0.11")},
    **{("fp16_refused_auto_fp32", v): (
        "Your device '{gpu_name}' (with compute capability {capability_dotted}) doesn't support "
        "torch.{model_dtype}. Falling back to torch.float32 for compatibility.") for v in ("0.33", "0.20", "0.11")},
    **{("fp16_refused", v): (
        "The model type '{model_type}' does not support float16. Reason: Numerical instability. "
        "Please use bfloat16 or float32 instead.") for v in ("0.33", "0.20", "0.11")},
    ("kv_cache_dtype_invalid", "0.33"): (
        "Invalid kv_cache_dtype: '{kv_cache_dtype}'. Valid values are: " + repr(KV_DTYPES["0.33"])),
    ("kv_cache_dtype_float_mismatch", "0.33"): (
        'kv_cache_dtype="{kv_cache_dtype}" is incompatible with dtype="{run_dtype}". Please set '
        "`--kv-cache-dtype` to `auto` or `{run_dtype}`."),
    ("kv_cache_nvfp4_mla", "0.33"): (
        "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please "
        "use a different --kv-cache-dtype (e.g., 'fp8', 'auto', or 'nvfp4_ds_mla' with a sparse "
        "MLA backend) for MLA models such as DeepSeek."),
    **{("gpu_memory_utilization_over_one", v): (
        "GPU memory utilization must be less than 1.0. Got {gpu_memory_utilization}.")
        for v in ("0.11", "0.8.5")},
    # vllm/platforms/interface.py:1147 verify_quantization, read in the 0.32.0 wheel (the
    # CPU build in tests/support/vllm_env.py); rocm.py device_name = "rocm"
    ("quant_not_on_rocm", "0.33"): "{quant_method} quantization is currently not supported in rocm.",
    # v1/core/kv_cache_planning.py (0.33), kv_cache_utils.py (older)
    ("no_kv_cache_memory", "0.33"): (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine (this flag also controls CPU memory reservation on the CPU "
        "backend, despite its name). " + DOCS),
    ("no_kv_cache_memory", "0.20"): (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine. " + DOCS),
    **{("no_kv_cache_memory", v): (
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
        "initializing the engine.") for v in ("0.11", "0.8.5")},
    ("kv_cache_too_small", "0.33"): (
        KV_TOO_SMALL_HEAD.replace("{whose}", "model's") + " " + ESTIMATE + " Try increasing "
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
        "decreasing `max_model_len` when initializing the engine. " + DOCS),
    ("kv_cache_too_small", "0.20"): (
        KV_TOO_SMALL_HEAD.replace("{whose}", "models's") + " " + ESTIMATE + " " + TRY + " " + DOCS),
    ("kv_cache_too_small", "0.11"): (
        KV_TOO_SMALL_HEAD.replace("{whose}", "models's") + " " + ESTIMATE + " " + TRY),
    # 0.8.5: the estimate's second f-string is a dangling statement, hence the double space
    ("kv_cache_too_small", "0.8.5"): (
        KV_TOO_SMALL_HEAD.replace("{whose}", "models's") + " Based on the available memory,  " + TRY),
    # config/compilation.py resolve_cudagraph_mode_and_sizes
    **{("mamba_cache_blocks", v): (
        "max_num_seqs ({max_num_seqs}) exceeds available Mamba cache blocks ({mamba_num_blocks}). "
        "Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot "
        "proceed. Please lower max_num_seqs to at most {mamba_num_blocks} or increase "
        "gpu_memory_utilization.") for v in ("0.33", "0.20")},
}

# rule id -> read versions where vLLM raises/logs it (None: Hangar-only wording everywhere)
HANGAR_ONLY = {
    "world_size_exceeds_total_gpus", "tp_spans_nodes", "kv_heads_replicated", "ep_single_gpu",
    "moe_without_ep", "moe_intermediate_tp", "pp_exceeds_layers", "quant_unknown_cli_choice",
    "auto_gptq_needs_marlin", "wna16_marlin_shape_fallback", "quant_group_size_tp",
    "kv_cache_fp8_old_gpu", "gpu_memory_utilization_range", "weights_exceed_gpu_memory",
    "low_kv_concurrency",
}


def test_every_message_is_pinned_or_marked_hangar() -> None:
    for rule in default_rules().rules:
        for name, version in VERSIONS.items():
            text = rule.message_for(version)
            if text is None or text.startswith("[Hangar] "):
                continue
            assert (rule.id, name) in VLLM_TEXTS, f"{rule.id} @ {name}: unverified vLLM text"


@pytest.mark.parametrize(("rule_id", "version"), sorted(VLLM_TEXTS))
def test_vllm_text_is_byte_exact(rule_id: str, version: str) -> None:
    rule = next(r for r in default_rules().rules if r.id == rule_id)
    assert rule.message_for(VERSIONS[version]) == VLLM_TEXTS[(rule_id, version)]


def test_hangar_only_rules_do_not_pose_as_vllm() -> None:
    for rule in default_rules().rules:
        if rule.id in HANGAR_ONLY:
            assert all(m.text.startswith("[Hangar] ") for m in rule.messages), rule.id


def test_sources_cite_a_file_and_line() -> None:
    for rule in default_rules().rules:
        if rule.id != "tp_spans_nodes":  # a docs page, not code
            assert ".py:" in rule.source, rule.id


# ---------------------------------------------------------------- quantization.yaml

@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_known_methods_are_the_quantization_literal(version: str) -> None:
    assert set(known_methods(VERSIONS[version])) == set(QUANT_METHODS[version])


# get_min_capability() of the class each name maps to, per version (0 = never refuses / not CUDA)
MIN_CAP = {
    "fp8": {"0.33": 75, "0.20": 75, "0.11": 80, "0.8.5": 80},
    "awq": {"0.33": 75, "0.20": 75, "0.11": 75, "0.8.5": 75},
    "awq_marlin": {"0.33": 75, "0.20": 75, "0.11": 80, "0.8.5": 80},
    "gptq": {"0.33": 60, "0.20": 60, "0.11": 60, "0.8.5": 60},
    "gptq_marlin": {"0.33": 60, "0.20": 75, "0.11": 80, "0.8.5": 80},
    "auto_gptq": {"0.33": 60},
    "auto_awq": {"0.33": 75},
    "compressed-tensors": {"0.33": 70, "0.20": 70, "0.11": 70, "0.8.5": 70},
    "modelopt": {"0.33": 80, "0.20": 89, "0.11": 89, "0.8.5": 89},
    "modelopt_fp4": {"0.33": 75, "0.20": 75, "0.11": 80},
    "nvfp4": {"0.8.5": 100},
    "modelopt_mixed": {"0.33": 75, "0.20": 89},
    "modelopt_mxfp8": {"0.33": 80, "0.20": 80},
    "mxfp8": {"0.33": 80, "0.20": 75},
    "mxfp4": {"0.33": 80, "0.20": 80, "0.11": 80},
    "gpt_oss_mxfp4": {"0.33": 80, "0.20": 80},
    "fbgemm_fp8": {"0.33": 80, "0.20": 80, "0.11": 80, "0.8.5": 80},
    "fp_quant": {"0.33": 100, "0.20": 100},
    "experts_int8": {"0.33": 80, "0.20": 80, "0.11": 80, "0.8.5": 80},
    "moe_wna16": {"0.33": 70, "0.20": 70, "0.11": 70, "0.8.5": 70},
    "quark": {"0.33": 70, "0.20": 70, "0.11": 70, "0.8.5": 70},
    "torchao": {"0.33": 75, "0.20": 75, "0.11": 75, "0.8.5": 75},
    "inc": {"0.33": 60, "0.20": 60, "0.11": 0},
    "humming": {"0.33": 75, "0.20": 75},
    "deepseek_v4_fp8": {"0.33": 75, "0.20": 75},
    "online": {"0.33": 75, "0.20": 75},
    "bitsandbytes": {"0.20": 70, "0.11": 70, "0.8.5": 70},
    "gguf": {"0.20": 60, "0.11": 60, "0.8.5": 60},
    "marlin": {"0.8.5": 80},
    "gptq_bitblas": {"0.11": 80, "0.8.5": 70},
    "gptq_marlin_24": {"0.11": 80, "0.8.5": 80},
    "hqq": {"0.11": 80, "0.8.5": 80},
    "bitblas": {"0.11": 70, "0.8.5": 70},
    "ptpc_fp8": {"0.11": 80, "0.8.5": 80},
    "rtn": {"0.11": 80},
    "auto-round": {"0.11": 60},
    "petit_nvfp4": {"0.11": 90},
    "deepspeedfp": {"0.11": 60, "0.8.5": 60},
    "aqlm": {"0.8.5": 60},
    "qqq": {"0.8.5": 80},
}


@pytest.mark.parametrize("method", sorted(MIN_CAP))
def test_min_capability_per_version(method: str) -> None:
    for name, version in VERSIONS.items():
        assert quant_min_capability(method, version) == MIN_CAP[method].get(name, -1), name


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        # 0.33 auto_gptq.py/auto_awq.py overrides; 0.8.5-0.20 gptq_marlin.py/awq_marlin.py
        ("gptq", {"0.33": "auto_gptq", "0.20": "gptq_marlin", "0.11": "gptq_marlin", "0.8.5": "gptq_marlin"}),
        ("awq", {"0.33": "auto_awq", "0.20": "awq_marlin", "0.11": "awq_marlin", "0.8.5": "awq_marlin"}),
        # GptOssMxfp4Config exists from 0.20
        ("mxfp4", {"0.33": "gpt_oss_mxfp4", "0.20": "gpt_oss_mxfp4", "0.11": "mxfp4", "0.8.5": "mxfp4"}),
        ("fp8", {v: "fp8" for v in VERSIONS}),
    ],
)
def test_checkpoint_method_resolution(declared: str, expected: dict[str, str]) -> None:
    for name, version in VERSIONS.items():
        assert resolve_quant_method(declared, version) == expected[name], name


# ---------------------------------------------------------------- constant tables

def test_constant_tables_match_vllm_0_33() -> None:
    assert list(KV_CACHE_DTYPES) == KV_DTYPES["0.33"]
    assert FP16_REFUSED == {"gemma2", "gemma3", "gemma3_text", "glm4"}  # plamo2 left after 0.20
    assert KV_HEAD_ALIASES == (
        "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
        "num_attention_groups")
    assert MAX_LEN_KEYS == (
        "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
        "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
    assert ROPE_TYPES_ALREADY_SCALED == {
        "su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}
    assert {"deepseek_v3", "kimi_k2", "glm4_moe_lite", "deepseek_v4"} <= MLA_MODEL_TYPES
    assert "kimi_vl" not in MLA_MODEL_TYPES  # vLLM checks the text config's model_type
    assert "MambaForCausalLM" not in NO_PP_ARCHS and "Mamba2ForCausalLM" in NO_PP_ARCHS


def test_default_gpu_memory_utilization() -> None:
    assert default_utilization(V085) == default_utilization(V11) == 0.9
    assert default_utilization(V20) == default_utilization(V33) == 0.92


def _hw(gpu: str) -> Hardware:
    return Hardware(gpu=lookup(gpu), gpus_per_node=1, nodes=1)


@pytest.mark.parametrize(
    ("gpu", "version", "expected"),
    [
        ("B200", V33, (16384, 1024)),  # >= 160 GiB tier (0.33)
        ("B200", V20, (8192, 1024)),  # no 160 GiB tier in 0.20
        ("H100", V33, (8192, 1024)),
        ("H200", V11, (8192, 1024)),
        ("A100", V33, (2048, 256)),  # "a100" in the name keeps the small tier
        ("A100", V085, (8192, 1024)),  # 0.8.5 had no A100 exception
        ("T4", V33, (2048, 256)),
    ],
)
def test_batch_defaults_per_gpu_and_version(
    gpu: str, version: tuple[int, int, int], expected: tuple[int, int]
) -> None:
    assert batch_defaults(_hw(gpu), 32768, version) == expected


def test_batch_defaults_clamps_and_chunked_prefill() -> None:
    # 0.20+: tokens = min(max_num_seqs * max_model_len, default), seqs = min(seqs, tokens)
    assert batch_defaults(_hw("H100"), 4, V33) == (4096, 1024)
    # 0.11 had no clamp; without chunked prefill the default is max_model_len itself
    assert batch_defaults(_hw("H100"), 4, V11) == (8192, 1024)
    assert batch_defaults(_hw("H100"), 100, V11, chunked_prefill=False) == (100, 100)
    assert batch_defaults(_hw("H100"), 32768, V33, chunked_prefill=False) == (32768, 1024)


# ---------------------------------------------------------------- rules that depend on the version

QWEN8B = "Qwen/Qwen3-8B"
AWQ72B = "LDCC/Qwen2.5-72B-Instruct-ko-AWQ"


def _findings(model: str, gpu: str = "H100", gpus: int = 8, **req: object) -> dict[str, str]:
    hw = Hardware(gpu=lookup(gpu), gpus_per_node=gpus, nodes=1)
    result = plan(load_model(model), hw, PlanRequest(**{"tp": 1, **req}))  # type: ignore[arg-type]
    return {f.id: f.message for f in result.layouts[0].findings}


def test_kv_cache_dtype_lists_differ_by_version() -> None:
    assert "kv_cache_dtype_invalid" not in _findings(QWEN8B, kv_cache_dtype="float16")
    assert "kv_cache_dtype_invalid" in _findings(QWEN8B, kv_cache_dtype="float16", vllm_version="0.11.0")
    assert "kv_cache_dtype_invalid" in _findings(QWEN8B, kv_cache_dtype="nvfp4_4over6", vllm_version="0.20.0")
    assert "kv_cache_dtype_invalid" not in _findings(QWEN8B, kv_cache_dtype="fp8_inc", vllm_version="0.11.0")


def test_derived_length_is_an_int_before_0_20() -> None:
    text = _findings(QWEN8B, max_model_len=100_000, vllm_version="0.11.0")["max_model_len_exceeds_derived"]
    assert "(max_position_embeddings=40960 or model_max_length=None" in text


def test_dp_past_the_last_gpu() -> None:
    text = _findings(QWEN8B, tp=4, dp=4, gpus=8)["dp_exceeds_gpus"]
    assert text == "DP adjusted local rank 8 is out of bounds for 8 devices."


def test_awq_below_marlin_stays_plain_awq_before_0_33() -> None:
    # T4 (7.5): 0.11's awq_marlin needs SM 8.0, so vLLM keeps awq (min 75) and starts
    assert not {"quant_min_capability", "quant_min_capability_unconverted_awq"} & set(
        _findings(AWQ72B, gpu="T4", tp=8, vllm_version="0.11.0"))
    # V100 (7.0) is below plain awq's 75 too
    text = _findings(AWQ72B, gpu="V100", tp=8, vllm_version="0.11.0")["quant_min_capability_unconverted_awq"]
    assert text.startswith("The quantization method awq is not supported")


def test_quant_user_value_unknown_before_0_20_is_an_argparse_error() -> None:
    found = _findings(QWEN8B, quantization="auto_gptq", vllm_version="0.11.0")
    assert "quant_unknown_cli_choice" in found and "quant_unknown_method" not in found


def test_auto_gptq_needs_marlin_on_0_33() -> None:
    model = "TheBloke/Llama-2-13B-chat-GPTQ"
    assert "auto_gptq_needs_marlin" in _findings(model, gpu="V100", tp=8)
    assert "auto_gptq_needs_marlin" not in _findings(model, gpu="V100", tp=8, vllm_version="0.20.0")


def test_bf16_checkpoint_on_turing_failed_before_0_11() -> None:
    assert "bf16_auto_no_fallback" in _findings(QWEN8B, gpu="T4", gpus=1, vllm_version="0.8.5")
    assert "bf16_auto_fallback" in _findings(QWEN8B, gpu="T4", gpus=1, vllm_version="0.11.0")


def test_gpu_memory_utilization_bounds_per_version() -> None:
    assert "gpu_memory_utilization_over_one" in _findings(QWEN8B, gpu_memory_utilization=1.5, vllm_version="0.11.0")
    assert "gpu_memory_utilization_range" in _findings(QWEN8B, gpu_memory_utilization=1.5)


def test_moe_intermediate_must_split_over_tp_times_dp() -> None:
    # Qwen3-30B-A3B: moe_intermediate_size 768; 5 MoE shards do not divide it
    assert "moe_intermediate_tp" in _findings("Qwen/Qwen3-30B-A3B", dp=5, gpus=5)
    assert "moe_intermediate_tp" not in _findings("Qwen/Qwen3-30B-A3B", dp=5, gpus=5, ep=True)
    assert "moe_intermediate_tp" not in _findings("Qwen/Qwen3-30B-A3B", dp=4, gpus=4)
