"""Surface forms of dependency_mismatch read from the structure of a traceback (data/
api_boundaries.yaml): the exception names an object of one package while the frame that made the
lookup or the call (`called_from`, frames.calling_frame) lies in another. Every log is CPython's
traceback format (Lib/traceback.py) with the emitting source's format string filled in (file and
version in each signature's `sources`), not a line copied from a report. Near misses raise the
same texts from the owner's own frames or from a user's script, and must not name the cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text
from hangar.diagnose.frames import calling_frame

SITE = "/usr/local/lib/python3.12/site-packages"
DIST = "/usr/lib/python3/dist-packages"


def _tb(frames: list[tuple[str, str]], error: str, *, carets: bool = True) -> str:
    """A traceback whose frames are (path, function), outermost first."""
    lines = ["Traceback (most recent call last):"]
    for path, func in frames:
        lines += [f'  File "{path}", line 57, in {func}', "    value = target.name(x)"]
        if carets:  # Python 3.11+ marks the failing expression
            lines.append("            ^^^^^^^^^^^")
    return "\n".join(lines + [error]) + "\n"


# vLLM's envs module raises from its own __getattr__, one frame inside the caller
ENVS_HOOK = (f"{SITE}/vllm/envs.py", "__getattr__")
TORCH_HOOK = (f"{SITE}/torch/__init__.py", "__getattr__")
LAZY_HOOK = (f"{SITE}/transformers/utils/import_utils.py", "__getattr__")
HUB_HOOK = (f"{SITE}/huggingface_hub/__init__.py", "__getattr__")

CASES = [
    # CPython module_getattro / vllm/envs.py __getattr__, called from a framework
    _tb(
        [
            (f"{SITE}/xinference/model/embedding/vllm/core.py", "load"),
            ENVS_HOOK,
        ],
        "AttributeError: module 'vllm.envs' has no attribute 'VLLM_USE_V1'",
    ),
    # the same, no hook frame (a plain module), from a source checkout of a known framework
    _tb(
        [("/home/u/verl/verl/workers/rollout/vllm_rollout/vllm_rollout.py", "__init__")],
        "AttributeError: module 'vllm.model_executor.model_loader' has no attribute "
        "'get_model_loader'. Did you mean: 'get_model'?",
    ),
    # relayed without a traceback (a supervisor re-raising a worker's error as text)
    (
        "xinference.core.supervisor 53091 ERROR    Failed to launch replica m-0: [address=0.0.0.0:"
        "39985, pid=54926] module 'vllm.envs' has no attribute 'VLLM_USE_V1'\n"
    ),
    # PyObject_GenericGetAttr on a vLLM engine object, from a framework's worker
    _tb(
        [("/srv/FastChat/fastchat/serve/vllm_worker.py", "__init__")],
        "AttributeError: 'AsyncLLM' object has no attribute 'engine'",
    ),
    _tb(
        [(f"{SITE}/openrlhf/trainer/ray/vllm_engine.py", "get_ckpt_path")],
        "AttributeError: 'LLMEngine' object has no attribute 'model_executor'",
    ),
    # call-signature TypeErrors (3.10+ qualnames), through vLLM's deprecate_kwargs wrapper
    _tb(
        [
            (f"{SITE}/trl/trainer/grpo_trainer.py", "_generate"),
            (f"{SITE}/vllm/utils/__init__.py", "inner"),
        ],
        "TypeError: LLM.generate() got an unexpected keyword argument 'prompt_token_ids'",
    ),
    _tb(
        [(f"{SITE}/verl/workers/rollout/vllm_rollout/vllm_async_server.py", "wake_up")],
        "TypeError: AsyncLLM.collective_rpc() missing 1 required positional argument: 'method'",
    ),
    _tb(
        [(f"{DIST}/lm_eval/models/vllm_causallms.py", "_model_generate")],
        "TypeError: SamplingParams.__init__() takes 1 positional argument but 2 were given",
    ),
    # transformers: CPython form for a plain submodule, _LazyModule's unquoted form
    _tb(
        [(f"{SITE}/peft/tuners/lora/model.py", "<module>")],
        "AttributeError: module 'transformers.utils' has no attribute 'is_torch_xla_available'",
    ),
    _tb(
        [(f"{SITE}/trl/trainer/utils.py", "<module>"), LAZY_HOOK],
        "AttributeError: module transformers has no attribute top_k_top_p_filtering",
    ),
    # a transformers object asked from a model's remote code, through the cache's hook
    _tb(
        [
            (
                "/root/.cache/huggingface/modules/transformers_modules/phi3/modeling_phi3.py",
                "prepare_inputs_for_generation",
            ),
        ],
        "AttributeError: 'DynamicCache' object has no attribute 'seen_tokens'",
    ),
    _tb(
        [(f"{SITE}/vllm/transformers_utils/tokenizer.py", "get_cached_tokenizer")],
        "AttributeError: 'Qwen2TokenizerFast' object has no attribute 'all_special_tokens_extended'",
    ),
    # a tokenizer method given a keyword the installed transformers does not take
    _tb(
        [(f"{SITE}/vllm/transformers_utils/tokenizer.py", "encode_tokens")],
        "TypeError: PreTrainedTokenizerFast._batch_encode_plus() got an unexpected keyword "
        "argument 'split_special_tokens'",
    ),
    # ProcessorMixin.from_args_and_dict: positional attributes clash with the caller's keyword
    ("TypeError: Glm4vProcessor.__init__() got multiple values for argument 'tokenizer'\n"),
    # torch/__init__.py __getattr__ and a plain torch submodule, asked by other packages
    _tb(
        [(f"{SITE}/transformers/utils/import_utils.py", "is_torch_fx_proxy"), TORCH_HOOK],
        "AttributeError: module 'torch' has no attribute 'compiler'",
    ),
    _tb(
        [(f"{SITE}/torchvision/_meta_registrations.py", "<module>")],
        "AttributeError: module 'torch.library' has no attribute 'register_fake'",
    ),
    # Ray's API from vLLM's executor
    _tb(
        [(f"{SITE}/vllm/executor/ray_utils.py", "initialize_ray_cluster")],
        "AttributeError: module 'ray.util' has no attribute 'get_current_placement_group'",
    ),
    # huggingface_hub's lazy loader (_attach.__getattr__) and its CPython form
    _tb(
        [(f"{SITE}/transformers/utils/hub.py", "<module>"), HUB_HOOK],
        "AttributeError: No huggingface_hub attribute cached_download",
    ),
    _tb(
        [(f"{SITE}/datasets/utils/file_utils.py", "<module>")],
        "AttributeError: module 'huggingface_hub.constants' has no attribute 'HF_HUB_ETAG_TIMEOUT'",
    ),
    # FlashInfer flashinfer/jit/env.py version checks
    (
        "RuntimeError: flashinfer-cubin version (0.6.8.post1) does not match flashinfer version "
        "(0.6.10). Please install the same version of both packages. Set "
        "FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass this check.\n"
    ),
    (
        "RuntimeError: flashinfer-jit-cache version (0.4.1+cu128) does not match flashinfer "
        "version (0.5.2). Please install the same version of both packages. Set "
        "FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass this check.\n"
    ),
    # Ray's dashboard imports (ModuleNotFoundError raised in Ray's own dashboard code)
    _tb(
        [
            (f"{SITE}/ray/dashboard/modules/job/job_head.py", "<module>"),
            (f"{SITE}/ray/dashboard/modules/job/pydantic_models.py", "<module>"),
        ],
        "ModuleNotFoundError: No module named 'pydantic'",
        carets=False,
    ),
    _tb(
        [(f"{SITE}/ray/dashboard/modules/metrics/metrics_head.py", "<module>")],
        "ModuleNotFoundError: No module named 'prometheus_client'",
        carets=False,
    ),
    # services.py start_api_server with an import traceback in the dashboard.log tail
    (
        "2025-01-02 10:00:00,001\tERROR services.py:1207 -- Failed to start the dashboard , "
        "return code 1\n"
        "2025-01-02 10:00:00,002\tERROR services.py:1276 -- \nThe last 20 lines of /tmp/ray/"
        "session_x/logs/dashboard.log (it contains the error message from the dashboard): \n"
        '  File "<frozen importlib._bootstrap>", line 1007, in _find_and_load\n'
        '  File "<frozen importlib._bootstrap>", line 680, in _load_unlocked\n'
        '  File "<frozen importlib._bootstrap_external>", line 850, in exec_module\n'
    ),
    (
        "ERROR services.py:1363 -- Failed to start the dashboard: Failed to start the dashboard, "
        "return code 1\nERROR services.py:1380 -- Couldn't read dashboard.log file. Error: [Errno "
        "2] No such file or directory. It means the dashboard is broken even before it "
        "initializes the logger (mostly dependency issues). Reading the dashboard.err file which "
        "contains stdout/stderr.\n"
    ),
    # Ray Compiled Graphs: ChannelContext.torch_device -> ray.air -> pyarrow
    _tb(
        [
            (f"{DIST}/ray/dag/compiled_dag_node.py", "_device_context_manager"),
            (f"{DIST}/ray/experimental/channel/common.py", "torch_device"),
            (f"{DIST}/ray/air/__init__.py", "<module>"),
        ],
        "ModuleNotFoundError: No module named 'pyarrow'",
    ),
]


@pytest.mark.parametrize("log", CASES)
def test_source_form_names_dependency_mismatch(log: str) -> None:
    assert_names_first(log, "dependency_mismatch")


NEAR_MISSES = [
    # the owner's own lookup: vLLM asks its own module (a vLLM bug or an unregistered feature)
    _tb(
        [(f"{SITE}/vllm/model_executor/kernels/linear/mxfp8/flashinfer.py", "apply_weights")],
        "AttributeError: module 'vllm.utils.flashinfer' has no attribute 'mm_mxfp8'",
    ),
    _tb(
        [(f"{SITE}/vllm/v1/engine/core.py", "run_engine_core"), ENVS_HOOK],
        "AttributeError: module 'vllm.envs' has no attribute 'VLLM_NEW_FLAG'",
    ),
    # vLLM's own object asked by vLLM's own code
    _tb(
        [(f"{SITE}/vllm/v1/engine/async_llm.py", "generate")],
        "AttributeError: 'AsyncLLM' object has no attribute 'engine'",
    ),
    # vLLM's own classes that share Transformers' naming, raised and called in vLLM
    _tb(
        [(f"{SITE}/vllm/v1/engine/async_llm.py", "output_handler")],
        "AttributeError: 'OutputProcessor' object has no attribute 'lora_states'",
    ),
    _tb(
        [(f"{SITE}/vllm/multimodal/processing.py", "apply")],
        "TypeError: Qwen2VLMultiModalProcessor._call_hf_processor() missing 1 required "
        "positional argument: 'tok_kwargs'",
    ),
    _tb(
        [(f"{SITE}/vllm/model_executor/models/qwen2.py", "forward")],
        "TypeError: Qwen2ForCausalLM.forward() got an unexpected keyword argument 'inputs'",
    ),
    # torch asked by torch
    _tb(
        [(f"{SITE}/torch/_dynamo/utils.py", "<module>"), TORCH_HOOK],
        "AttributeError: module 'torch' has no attribute 'xpu'",
    ),
    # a user's own script: names nothing
    _tb(
        [("/home/u/run_inference.py", "main")],
        "AttributeError: 'LLM' object has no attribute 'chat_completion'",
    ),
    _tb(
        [("/home/u/train.py", "<module>")],
        "AttributeError: module 'vllm' has no attribute 'LLM'",
    ),
    _tb(
        [("/home/u/app/main.py", "serve")],
        "TypeError: LLM.generate() got an unexpected keyword argument 'prompt_token_ids'",
    ),
    # a shadowing user file (CPython 3.13's hint) relayed without a traceback
    (
        "AttributeError: module 'vllm.sampling' has no attribute 'X' (consider renaming "
        "'/home/u/vllm.py' since it has the same name as the library you intended to import)\n"
    ),
    # a model class the installed transformers does not know is unsupported_architecture's
    _tb(
        [(f"{SITE}/vllm/model_executor/models/registry.py", "_try_load"), LAZY_HOOK],
        "AttributeError: module transformers has no attribute Qwen3VLForConditionalGeneration",
    ),
    # a compiled op namespace is a build's (extension_abi_mismatch)
    _tb(
        [(f"{SITE}/vllm/_custom_ops.py", "paged_attention_v1")],
        "AttributeError: module 'torch._C' has no attribute '_cuda_getDeviceCount'",
    ),
    # FlashInfer's env var mentioned in a healthy start
    "INFO 05-10 15:51:07 [env.py:12] FLASHINFER_DISABLE_VERSION_CHECK=1 set; skipping check\n",
    # the dashboard failing for a port: no import traceback
    (
        "ERROR services.py:1207 -- Failed to start the dashboard , return code 1\n"
        "OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8265): "
        "address already in use\n"
    ),
    # a healthy start
    (
        "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    ),
]


@pytest.mark.parametrize("log", NEAR_MISSES)
def test_near_miss_does_not_name_dependency_mismatch(log: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != "dependency_mismatch" for c in causes), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_a_framework_caller_outranks_the_engine_bug_reading() -> None:
    # the same AttributeError: raised in vLLM's frames it is vLLM's bug (other), asked from
    # another package's frame it is the pair of versions
    own = _tb(
        [(f"{SITE}/vllm/v1/engine/async_llm.py", "generate")],
        "AttributeError: 'AsyncLLM' object has no attribute 'output_processor_x'",
    )
    other = _tb(
        [(f"{SITE}/openrlhf/trainer/ray/vllm_engine.py", "generate")],
        "AttributeError: 'AsyncLLM' object has no attribute 'output_processor_x'",
    )
    own_top = diagnose_text(own).top
    assert own_top is None or own_top.cause == "other"
    other_top = diagnose_text(other).top
    assert other_top is not None
    assert (other_top.cause, other_top.signature) == (
        "dependency_mismatch",
        "vllm_object_attribute_missing_in_caller",
    )


def test_calling_frame_passes_over_attribute_hooks_and_call_wrappers() -> None:
    caller = f"{SITE}/peft/utils/other.py"
    text = _tb([(caller, "f"), ENVS_HOOK, (f"{SITE}/torch/nn/modules/module.py", "_call_impl")], "")
    assert calling_frame(text.encode()) == caller


def test_calling_frame_is_the_innermost_frame_without_a_hook() -> None:
    text = _tb([(f"{SITE}/vllm/a.py", "g"), ("/home/me/b.py", "h")], "")
    assert calling_frame(text.encode()) == "/home/me/b.py"


def test_calling_frame_needs_a_frame_right_above() -> None:
    text = _tb([("/home/me/b.py", "h")], "").encode()
    assert calling_frame(text + b"x\n" * 5) is None
    assert calling_frame(b"") is None
    # a hook with nothing above it names no caller
    assert calling_frame(_tb([ENVS_HOOK], "").encode()) is None


def test_calling_frame_passes_over_at_most_three_hooks() -> None:
    hooks = [(f"{SITE}/x/h{i}.py", "__getattr__") for i in range(4)]
    text = _tb([("/home/me/b.py", "h"), *hooks], "")
    assert calling_frame(text.encode()) == f"{SITE}/x/h0.py"


def test_an_invalid_called_from_regex_names_the_file_signature_and_key() -> None:
    from hangar.diagnose.knowledge import build
    from hangar.errors import DataError

    text = (
        "schema_version: 1\nsignatures:\n  - id: s\n    cause: other\n    title: t\n"
        "    patterns: ['AttributeError: x']\n    called_from: '(vllm'\n    confidence: 0.5\n"
        "    explanation: e\n    fix: [f]\n"
    )
    with pytest.raises(DataError, match=r"bad\.yaml: signature 's', key 'called_from': invalid"):
        build([("bad.yaml", text)])


def test_a_pip_conflict_line_raises_a_structural_reading() -> None:
    tb = _tb(
        [(f"{SITE}/xinference/model/llm/vllm/core.py", "load"), ENVS_HOOK],
        "AttributeError: module 'vllm.envs' has no attribute 'VLLM_USE_V1'",
    )
    pip = (
        "ERROR: pip's dependency resolver does not currently take into account all the packages "
        "that are installed. This behaviour is the source of the following dependency conflicts."
        "\nxinference 1.16.0 requires vllm<0.11, but you have vllm 0.12.0 which is incompatible.\n"
    )
    plain = diagnose_text(tb).top
    with_pip = diagnose_text(pip + tb).top
    assert plain is not None and with_pip is not None
    assert plain.signature == "vllm_module_attribute_missing_in_caller"
    assert plain.confidence < with_pip.confidence
