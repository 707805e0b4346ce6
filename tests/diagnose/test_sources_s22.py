"""Surface forms added in stop 22 from the emitters' sources (file and version in each
signature's `sources`): one filled-in format string per form, and near misses that must not name
the cause. Written after field set 12's one measurement, from its misses' emitters."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, assert_not_known

CASES = [
    # urllib3's MaxRetryError repr quoted inside requests' ConnectionError repr
    (
        (
            "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host=\\'huggingface.co\\', "
            'port=443): Max retries exceeded with url: /api/models/org/m/revision/main"))\n'
        ),
        "hf_access",
    ),
    # Triton's bundled ptxas for Blackwell
    (
        "ptxas-blackwell fatal   : Value 'sm_110a' is not defined for option 'gpu-name'\n",
        "flashinfer_jit_nvcc",
    ),
    # TensorRT-LLM's CUDA check
    (
        (
            "[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): "
            "out of memory (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:111)\n"
        ),
        "gpu_memory_utilization",
    ),
    # vLLM < 0.7 model files assert the head split; the assert prints no message
    (
        (
            "Traceback (most recent call last):\n"
            '  File "/opt/vllm/vllm/model_executor/models/chatglm.py", line 53, in __init__\n'
            "    assert self.total_num_kv_heads % tp_size == 0\n"
            "AssertionError\n"
        ),
        "tp_heads_divisibility",
    ),
    (
        (
            '  File "/opt/vllm/vllm/model_executor/models/llama.py", line 98, in __init__\n'
            "    assert self.total_num_heads % tp_size == 0\n"
            "AssertionError\n"
        ),
        "tp_heads_divisibility",
    ),
    # ollama's cudart init
    (
        (
            'time=2024-09-03T16:36:00.853+08:00 level=DEBUG source=gpu.go:537 msg="Unable to load '
            'cudart" library=/usr/lib/ollama/libcudart.so.12 error="your nvidia driver is too old or '
            'missing.  If you have a CUDA GPU please upgrade to run ollama"\n'
        ),
        "cuda_driver_mismatch",
    ),
    # oneCCL's libfabric shm provider
    (
        (
            "2024:08:21-10:24:26:( 4456) |CCL_ERROR| atl_ofi_helper.cpp:907 atl_ofi_get_prov_list: "
            "can't create providers for name shm\nfailed to initialize ATL\n"
        ),
        "shm_ipc",
    ),
    # huggingface_hub's lock files in a shared cache
    (
        (
            "PermissionError: [Errno 13] Permission denied: "
            "'/shared/hf/hub/.locks/models--org--model/6e2501.lock'\n"
        ),
        "tmp_shared",
    ),
    # transformers v5's tokenizer class
    (
        "AttributeError: TokenizersBackend has no attribute all_special_tokens_extended\n",
        "dependency_mismatch",
    ),
    # a name missing from an installed package, quoted without its location
    ("ImportError: cannot import name 'oneshot' from 'llmcompressor'\n", "dependency_mismatch"),
    # a helper that moved between transformers releases
    (
        "AttributeError: module 'transformers.modeling_utils' has no attribute 'Conv1D'\n",
        "dependency_mismatch",
    ),
    # an xFormers wheel built without CUDA
    (
        (
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "    PyTorch 2.3.0+cu121 with CUDA None (you have 2.0.0+cu117)\n"
            "    Python  3.11.9 (you have 3.11.9)\n"
        ),
        "extension_abi_mismatch",
    ),
    # Transformer Engine's FP8 check
    (
        "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.\n",
        "quant_unsupported_gpu",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # an assert about something else than the head split
    ("    assert x % 2 == 0\nAssertionError\n", "tp_heads_divisibility"),
    # a user's own lock file elsewhere
    ("PermissionError: [Errno 13] Permission denied: '/home/u/run.lock'\n", "tmp_shared"),
    # a circular import, and a model class from transformers' lazy top level
    (
        (
            "ImportError: cannot import name 'f' from partially initialized module 'pkg.a' (most "
            "likely due to a circular import)\n"
        ),
        "dependency_mismatch",
    ),
    (
        "AttributeError: module 'transformers.models.qwen3' has no attribute 'Qwen3ForCausalLM'\n",
        "dependency_mismatch",
    ),
    # a ptxas warning, not a refusal
    (
        "ptxas warning : Registers are spilled to local memory in function 'k'\n",
        "flashinfer_jit_nvcc",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    assert_not_known(log, cause)
