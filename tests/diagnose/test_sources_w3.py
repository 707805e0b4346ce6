"""Surface forms of the configuration and model causes, written from the emitting sources.

Each line is the source's format string (file and version in the signature's `sources`) with
its variables filled in and, where the software adds one, its usual prefix (vLLM's
`ERROR 05-10 ...`, a Ray actor's `(pid=..., ip=...)`, a wrapped second half). None is copied
from a report. Near misses are lines from the same sources that are NOT the failure
(warnings the start survives, request-level errors, the same words in another sense)."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

VLLM = "ERROR 05-10 15:51:02 [core.py:396] "
RAY = "\x1b[36m(RayWorkerWrapper pid=4121, ip=10.0.0.7)\x1b[0m "

CASES = [
    # unsupported_architecture: transformers auto classes, tokenizers, vLLM's registry
    (
        (
            "ValueError: The checkpoint you are trying to load has model type `qwen3_moe` but "
            "Transformers does not recognize this architecture."
        ),
        "unsupported_architecture",
    ),
    (
        "issue with the checkpoint, or because your version of Transformers is out of date.",
        "unsupported_architecture",
    ),
    (
        (
            '  File "/opt/venv/lib/python3.10/site-packages/transformers/models/auto/'
            'configuration_auto.py", line 710, in __getitem__\n'
            "    raise KeyError(key)\n"
            "KeyError: 'qwen3'"
        ),
        "unsupported_architecture",
    ),
    (
        VLLM + "ValueError: Model architectures ['Glm4MoeForCausalLM'] are not supported for "
        "now. Supported architectures: dict_keys(['LlamaForCausalLM'])",
        "unsupported_architecture",
    ),
    (
        (
            "ValueError: The repository /models/custom contains custom code which must be executed "
            "to correctly load the model. You can inspect the repository content at /models/custom ."
        ),
        "unsupported_architecture",
    ),
    (
        "Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
        "unsupported_architecture",
    ),
    (
        (
            "ValueError: Loading THUDM/chatglm3-6b requires you to execute the configuration file in "
            "that repo on your local machine. Make sure you have read the code there to avoid "
            "malicious use, then set the option `trust_remote_code=True` to remove this error."
        ),
        "unsupported_architecture",
    ),
    (
        "ValueError: Tokenizer class Qwen3Tokenizer is not currently imported.",
        "unsupported_architecture",
    ),
    (
        (
            "ValueError: Unrecognized processing class in /models/vl. Can't instantiate a processor, "
            "a tokenizer, an image processor or a feature extractor for this model."
        ),
        "unsupported_architecture",
    ),
    (
        (
            "Exception: data did not match any variant of untagged enum ModelWrapper at line 1251 "
            "column 3"
        ),
        "unsupported_architecture",
    ),
    (
        (
            "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, "
            "got {'factor': 8.0, 'rope_type': 'llama3'}"
        ),
        "unsupported_architecture",
    ),
    (
        (
            "ValueError: Cannot find model module. 'FooForCausalLM' is not a registered model in the "
            "Transformers library (only relevant if the model is meant to be in Transformers)"
        ),
        "unsupported_architecture",
    ),
    (
        (
            "ImportError: cannot import name 'Qwen2_5_VLConfig' from 'transformers' "
            "(/opt/venv/lib/python3.10/site-packages/transformers/__init__.py)"
        ),
        "unsupported_architecture",
    ),
    (
        "ValueError: GGUF model with architecture qwen3moe is not supported yet.",
        "unsupported_architecture",
    ),
    (
        "ModuleNotFoundError: No module named 'transformers.models.qwen3'",
        "unsupported_architecture",
    ),
    ("TypeError: Error: --enable-reasoning requires --reasoning-parser", "missing_parser"),
    (
        (
            "RuntimeError: Failed to load the processor. If the processor is a custom processor not "
            "yet available in the HuggingFace transformers library,"
        ),
        "unsupported_architecture",
    ),
    (
        (
            "llama_model_load: error loading model: error loading model architecture: unknown model "
            "architecture: 'qwen3moe'"
        ),
        "unsupported_architecture",
    ),
    (
        (
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/'
            'rotary_embedding.py", line 721, in get_rope\n'
            '    scaling_type = rope_scaling["type"]\n'
            "KeyError: 'type'"
        ),
        "unsupported_architecture",
    ),
    # tp_heads_divisibility
    (
        RAY + "ValueError: Total number of attention heads (28) must be divisible by tensor "
        "parallel size (8).",
        "tp_heads_divisibility",
    ),
    ("    divisible by tensor parallel size (3).", "tp_heads_divisibility"),
    (
        VLLM + "ValueError: The input size is not aligned with the quantized weight shape. This "
        "can be caused by too large tensor parallel size.",
        "tp_heads_divisibility",
    ),
    (
        "AssertionError: Tensor parallel world size must divide num heads.",
        "tp_heads_divisibility",
    ),
    (
        (
            "ValueError: Weight output_partition_size = 576 is not divisible by weight quantization "
            "block_n = 128."
        ),
        "tp_heads_divisibility",
    ),
    (
        (
            "ValueError: Total number of hidden layers (30) must be divisible by pipeline parallel "
            "size (4)."
        ),
        "tp_heads_divisibility",
    ),
    # expert_parallel
    (
        (
            "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight "
            "quantization block_n = 128."
        ),
        "expert_parallel",
    ),
    (
        (
            "AssertionError: DeepEP kernels not found. Please follow https://github.com/vllm-project/"
            "vllm/blob/main/tools/ep_kernels/README.md to install DeepEP kernels."
        ),
        "expert_parallel",
    ),
    (
        (
            "ValueError: EPLB currently only supports even distribution of experts across ranks. "
            "Got 60 experts and 8 EP ranks."
        ),
        "expert_parallel",
    ),
    ("ValueError: Unknown all2all backend: deepep_ll", "expert_parallel"),
    (
        "NotImplementedError: EXL3 MoE currently does not support expert parallelism",
        "expert_parallel",
    ),
    # kv_cache_too_small
    (
        (
            "(EngineCore_DP0 pid=812) ValueError: To serve at least one request with the model's max "
            "seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV "
            "cache memory (9.32 GiB)."
        ),
        "kv_cache_too_small",
    ),
    (
        (
            "Based on the available memory, the estimated maximum model length is 76336. Try "
            "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
            "the engine."
        ),
        "kv_cache_too_small",
    ),
    (
        "INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: "
        "1638\n" + RAY + "ERROR 06-28 06:11:45 worker_base.py:145] Error executing method "
        "initialize_cache. This might cause deadlock in distributed execution.",
        "kv_cache_too_small",
    ),
    # max_model_len_exceeds_config
    (
        VLLM + "ValueError: User-specified max_model_len (65536) is greater than the derived "
        "max_model_len (max_position_embeddings=32768 or model_max_length=None in model's "
        "config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
        "max_model_len_exceeds_config",
    ),
    (
        (
            "WARNING 05-09 10:00:01 [config.py:3380] User-specified max_model_len (40960) is greater "
            "than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None "
            "in model's config.json). VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme "
            "caution.\n"
            "/tmp/torchinductor_root/x.py:45: block: [337,0,0], thread: [112,0,0] Assertion `index "
            "out of bounds: 0 <= tl.broadcast_to(tmp10, [XBLOCK]) < 32768` failed."
        ),
        "max_model_len_exceeds_config",
    ),
    (
        (
            "ValueError: Warning: User-specified context_length (65536) is greater than the derived "
            "context_length (32768). This may lead to incorrect model outputs or CUDA errors. Note "
            "that the derived context_length may differ from max_position_embeddings in the model's "
            "config. To allow overriding this maximum, set the env var "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        ),
        "max_model_len_exceeds_config",
    ),
    # missing_parser
    (
        (
            '{"object":"error","message":"\\"auto\\" tool choice requires --enable-auto-tool-choice '
            'and --tool-call-parser to be set","type":"BadRequestError","code":400}'
        ),
        "missing_parser",
    ),
    ("KeyError: \"tool helper: 'qwen3_coder' not found in tool_parsers\"", "missing_parser"),
    (
        "KeyError: \"Reasoning parser 'gpt_oss' not found. Available parsers: ['qwen3']\"",
        "missing_parser",
    ),
    ('tool_choice="required" requires --tool-call-parser to be set', "missing_parser"),
    # mamba_cache_blocks
    (
        (
            "ValueError: max_num_seqs (256) exceeds available Mamba cache blocks (95). Each decode "
            "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed."
        ),
        "mamba_cache_blocks",
    ),
    ("`exceeds available Mamba cache blocks (95)...`", "mamba_cache_blocks"),
    # dtype_unsupported
    (
        (
            "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported "
            "dtypes: [torch.float16]"
        ),
        "dtype_unsupported",
    ),
    (
        "`cutlassF` is not supported because:\n    bf16 is only supported on A100+ GPUs",
        "dtype_unsupported",
    ),
    ("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'", "dtype_unsupported"),
    (
        (
            "flag in CLI, for example: --dtype=half.\n"
            "GPU has compute capability 7.0. You can use float16 instead by explicitly setting the "
            "`dtype` flag in CLI"
        ),
        "dtype_unsupported",
    ),
    (
        (
            "ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want "
            "to train the model on CPU. You need Ampere+ GPU with cuda>=11.0."
        ),
        "dtype_unsupported",
    ),
    (
        (
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx( handle, "
            "opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, "
            "CUDA_R_16BF, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"
        ),
        "dtype_unsupported",
    ),
    (
        (
            "RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to "
            "float16."
        ),
        "dtype_unsupported",
    ),
    # quant_unsupported_gpu
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "quant_unsupported_gpu"),
    (
        (
            "ValueError: FP8 quantized models is only supported on GPUs with compute capability >= "
            "8.9 (e.g 4090/H100), actual = `8.0`"
        ),
        "quant_unsupported_gpu",
    ),
    (
        "RuntimeError: NVFP4 requires Blackwell (sm100+) block-scaled tensor cores; found sm90",
        "quant_unsupported_gpu",
    ),
    (
        (
            "ValueError: The quantization method moe_wna16 + awq is not supported for the current "
            "GPU. Minimum capability: 75. Current capability: 70."
        ),
        "quant_unsupported_gpu",
    ),
    ("Minimum capability: 89. Current capability: 86.", "quant_unsupported_gpu"),
    (
        (
            "NotImplementedError: No compiled cutlass_scaled_mm for a compute capability less than "
            "CUDA device capability: 75"
        ),
        "quant_unsupported_gpu",
    ),
    (
        (
            "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute "
            "capability >= 9.0 or 8.9, or ROCm MI300+"
        ),
        "quant_unsupported_gpu",
    ),
    (
        (
            'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes '
            "are ('fp8e4b15', 'fp8e5')\")"
        ),
        "quant_unsupported_gpu",
    ),
    (
        (
            "ValueError: Current platform does not support NVFP4 quantization. Please use Blackwell "
            "and above."
        ),
        "quant_unsupported_gpu",
    ),
    (
        (
            "RuntimeError: Quantization scheme is not supported for the current GPU. Required "
            "capability: 90. Current capability: 80."
        ),
        "quant_unsupported_gpu",
    ),
    (
        (
            "ValueError: Failed to find a kernel that can implement the WNA16 linear layer. Reasons: "
            "\n MacheteLinearKernel requires capability 90, current compute capability is 80"
        ),
        "quant_unsupported_gpu",
    ),
]

# Lines from the same sources that do not stop a start, or say the words in another sense.
NEAR_MISSES = [
    # the start goes on: the vision tower falls back to data parallelism
    (
        "WARNING 05-10 15:51:02 [vision.py:151] The number of vision attention heads is not "
        "divisible by the tensor parallel size. Falling back to data parallelism for the vision "
        "encoder."
    ),
    # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: a warning, and nothing crashed afterwards
    (
        "WARNING 05-09 10:00:01 [config.py:3380] User-specified max_model_len (40960) is greater "
        "than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None "
        "in model's config.json). VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme "
        "caution. If the model uses relative position encoding (RoPE), positions exceeding "
        "derived_max_model_len lead to nan."
    ),
    # SGLang with the override set: logged, and the start goes on
    (
        "[2026-02-14 02:07:50] Warning: User-specified context_length (65536) is greater than the "
        "derived context_length (32768). This may lead to incorrect model outputs or CUDA errors."
    ),
    # a request longer than the served context: an API answer, not a start-up failure
    (
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
        "(4000 in the messages, 1000 in the completion)."
    ),
    # vLLM falls back and keeps going when the GPU lacks bf16
    (
        "WARNING 05-10 15:51:02 [config.py:2100] Your device 'Tesla T4' (with compute capability "
        "7.5) doesn't support torch.bfloat16. Falling back to torch.float16 for compatibility."
    ),
    # weight-only FP4 through Marlin on an older GPU: a performance warning
    (
        "(EngineCore_0 pid=5839) WARNING 08-20 18:04:08 [marlin_utils_fp4.py:196] Your GPU does "
        "not have native support for FP4 computation but FP4 quantization is being used. "
        "Weight-only FP4 compression will be used leveraging the Marlin kernel."
    ),
    # weight-only FP8 through Marlin on an older GPU: a performance warning
    (
        "WARNING 05-10 15:51:02 [marlin_utils_fp8.py:54] Your GPU does not have native support "
        "for FP8 computation but FP8 quantization is being used. Weight-only FP8 compression "
        "will be used leveraging the Marlin kernel."
    ),
    # a bare KeyError outside the config mapping is nobody's architecture
    "KeyError: 'input_ids'",
    # generic lines: the same exception classes with nothing that names a cause
    "AssertionError",
    "KeyError: 'type'",
    "RuntimeError: CUDA error: device-side assert triggered",
    # the healthy KV-cache report
    (
        "INFO 05-10 15:52:01 [kv_cache_utils.py:634] GPU KV cache size: 1,048,880 tokens; "
        "Maximum concurrency for 32,768 tokens per request: 32.01x"
    ),
    # a helper removed from transformers (remote code too old): not a missing model class
    "ImportError: cannot import name 'is_torch_fx_available' from 'transformers.utils'",
    # cuBLAS refusing a float32 GEMM is not a bf16 problem
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasSgemm( handle, "
        "opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"
    ),
    # the parser's own help text in a --help dump
    "  --tool-call-parser {hermes,llama3_json,mistral}  Select the tool call parser",
]


@pytest.mark.parametrize(("text", "cause"), CASES)
def test_source_form_names_its_cause_first(text: str, cause: str) -> None:
    causes = diagnose_text(text + "\n").causes
    assert causes and causes[0].cause == cause, [(c.cause, c.signature) for c in causes]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_names_no_confident_cause(text: str) -> None:
    causes = diagnose_text(text + "\n").causes
    assert not causes or causes[0].confidence < 0.5, [(c.cause, c.signature) for c in causes]


def test_moe_block_split_outranks_the_dense_reading() -> None:
    # The MoE form also carries the dense pattern's words; expert parallelism comes first and
    # the TP reading stays visible lower down (top-3), demoted.
    line = (
        "ValueError: The output_size of gate's and up's weight = 96 is not divisible by weight "
        "quantization block_n = 128.\n"
    )
    causes = [c.cause for c in diagnose_text(line).causes]
    assert causes[:2] == ["expert_parallel", "tp_heads_divisibility"]


def test_initialize_cache_with_no_blocks_is_not_the_context_length() -> None:
    log = (
        "INFO 06-28 06:11:45 gpu_executor.py:45] # GPU blocks: 0, # CPU blocks: 1638\n"
        "ERROR 06-28 06:11:45 worker_base.py:145] Error executing method initialize_cache. "
        "This might cause deadlock in distributed execution.\n"
    )
    assert "kv_cache_too_small" not in [c.cause for c in diagnose_text(log).causes]


def test_keyerror_without_the_config_mapping_is_not_an_architecture() -> None:
    log = (
        '  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 1, '
        "in _prepare\nKeyError: 'qwen3'\n"
    )
    assert "unsupported_architecture" not in [c.cause for c in diagnose_text(log).causes]


def test_failed_inspection_is_not_an_unsupported_architecture() -> None:
    # vLLM 0.8.5 registry._raise_for_unsupported: the architecture IS in the registry, its
    # inspection subprocess failed (a broken install); "not supported for now" is the other case.
    line = (
        "ValueError: Model architectures ['Qwen2ForCausalLM'] failed to be inspected. Please "
        "check the logs for more details.\n"
    )
    causes = diagnose_text(line).causes
    assert not causes or causes[0].cause != "unsupported_architecture"


def test_a_model_class_missing_from_transformers_explains_the_failed_inspection() -> None:
    # vLLM 0.8.5 logs the inspection subprocess's traceback, then "failed to be inspected": the
    # import error inside is the reason, and its cause must stay first.
    log = (
        "ERROR 05-10 15:51:02 [registry.py:343] Error in inspecting model architecture "
        "'Qwen3ForCausalLM'\n"
        "ERROR 05-10 15:51:02 [registry.py:343] ImportError: cannot import name 'Qwen3Config' "
        "from 'transformers' (/opt/venv/lib/python3.12/site-packages/transformers/__init__.py)\n"
        "ValueError: Model architectures ['Qwen3ForCausalLM'] failed to be inspected. Please "
        "check the logs for more details.\n"
    )
    assert diagnose_text(log).causes[0].cause == "unsupported_architecture"


def test_a_device_assert_is_the_forced_context_only_with_the_override_recorded() -> None:
    # The env line is how runs.context_lines prints a launch's recorded env (`env` format).
    crash = (
        "../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [12,0,0], "
        "thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    assert "max_model_len_exceeds_config" not in [c.cause for c in diagnose_text(crash).causes]
    recorded = "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\n" + crash
    assert diagnose_text(recorded).causes[0].cause == "max_model_len_exceeds_config"
