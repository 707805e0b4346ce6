"""Surface forms added after field set 3's and field set 4's one measurement (stop 17): one line
per emitting source, written from its format string, and the cause it must name."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

CASES = [
    # transformers 4.x cached_file, offline or no Hub access and no cached copy
    (
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't "
            "find it in the cached files and it looks like org/model is not the path to a "
            "directory containing a file named config.json."
        ),
        "hf_access",
    ),
    # vLLM < 0.10 SchedulerConfig, ModelConfig._verify_quantization; torch's fork check
    (
        (
            "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (32768). "
            "This effectively limits the maximum sequence length to max_num_batched_tokens"
        ),
        "other",
    ),
    ("ValueError: Unknown quantization method: mxfp4. Must be one of ['aqlm', 'awq'].", "other"),
    (
        (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method"
        ),
        "other",
    ),
    # torch_npu NPUCachingAllocator (vllm-ascend), after vLLM sized its budget
    (
        (
            "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total "
            "capacity; 55.91 GiB already allocated; 1.80 GiB free)"
        ),
        "gpu_memory_utilization",
    ),
    (
        "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 1.00 GiB",
        "gpu_memory_utilization",
    ),
    # DeepSpeed module_inject / auto_tp
    ("AssertionError: num_heads (52) must be divisible by mp_size (8)", "tp_heads_divisibility"),
    (
        "AssertionError: Number of attention heads (40) must be divisible by mp_size (3)",
        "tp_heads_divisibility",
    ),
    # Ray >= 2.10 node.py
    (
        (
            "Exception: The current node timed out during startup. This could happen because some of "
            "the raylet failed to startup or the GCS has become overloaded."
        ),
        "ray_cluster",
    ),
    # Ray placement_group.py check_placement_group_index
    (
        "ValueError: placement group bundle index 6 is invalid. Valid placement group indexes: 0-4",
        "ray_cluster",
    ),
    # NVIDIA NGC image entrypoint driver check
    (
        (
            "ERROR: This container was built for NVIDIA Driver Release 535.86 or later, but\n"
            "       version 510.85.02 was detected and compatibility mode is UNAVAILABLE."
        ),
        "cuda_driver_mismatch",
    ),
    # CPython's TypeError for a dataclass given an unknown keyword (vllm.LLM(**kwargs))
    (
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'",
        "dependency_mismatch",  # a launcher older or newer than the vLLM it calls
    ),
]


@pytest.mark.parametrize(("line", "cause"), CASES)
def test_source_form_names_its_cause(line: str, cause: str) -> None:
    causes = diagnose_text(line + "\n").causes
    assert causes and causes[0].cause == cause, [(c.cause, c.signature) for c in causes]


def test_a_keyword_error_of_another_class_names_nothing_confident() -> None:
    line = "TypeError: MyTrainer.__init__() got an unexpected keyword argument 'lr'\n"
    assert all(c.confidence < 0.5 for c in diagnose_text(line).causes)


def test_python39_unqualified_init_typeerror_behind_engine_args() -> None:
    """CPython <= 3.9 prints "__init__()" without the class: the caller line shows it."""
    log = (
        "    self.model = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**engine_args))\n"
        "TypeError: __init__() got an unexpected keyword argument 'some_new_arg'\n"
    )
    assert diagnose_text(log).causes[0].cause == "dependency_mismatch"
    bare = "TypeError: __init__() got an unexpected keyword argument 'some_new_arg'\n"
    assert all(c.cause != "dependency_mismatch" for c in diagnose_text(bare).causes)
