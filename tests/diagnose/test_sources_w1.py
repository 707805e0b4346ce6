"""Surface forms of the host, limits, access and toolchain causes, written from the emitting
sources (each signature's `sources` names file and version): the format string with its
variables filled in, never a line copied from a report. `NEAR_MISSES` are lines from the same
code paths that are not failures (or not this failure) and must not name the cause."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

SO = "/opt/venv/lib/python3.12/site-packages"

CASES = [
    # extension_abi_mismatch: glibc, CPython, pybind11, NumPy, Cython, torchvision, xFormers, CUDA
    (
        f"ImportError: {SO}/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
        "extension_abi_mismatch",
    ),
    (
        (
            "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not "
            f"found (required by {SO}/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so)"
        ),
        "extension_abi_mismatch",
    ),
    (
        "ImportError: dynamic module does not define module export function (PyInit__C)",
        "extension_abi_mismatch",
    ),
    (
        (
            "ImportError: Python version mismatch: module was compiled for Python 3.10, but the "
            "interpreter version is incompatible: 3.12.3 (main, Nov  6 2024, 18:32:19)."
        ),
        "extension_abi_mismatch",
    ),
    (
        "A module that was compiled using NumPy 1.x cannot be run in",
        "extension_abi_mismatch",
    ),
    (
        "RuntimeError: module compiled against ABI version 0x1000009 but this version of numpy is 0x2000000",
        "extension_abi_mismatch",
    ),
    (
        (
            "ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 "
            "from C header, got 88 from PyObject"
        ),
        "extension_abi_mismatch",
    ),
    ("RuntimeError: operator torchvision::nms does not exist", "extension_abi_mismatch"),
    (
        (
            "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and "
            "torchvision versions are incompatible, or if you had errors while compiling "
            "torchvision from source."
        ),
        "extension_abi_mismatch",
    ),
    (
        (
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA "
            "major versions. PyTorch has CUDA Version=12.4 and torchvision has CUDA Version=11.8."
        ),
        "extension_abi_mismatch",
    ),
    (
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
        "extension_abi_mismatch",
    ),
    (
        (
            "WARNING 03-02 10:11:12 [interface.py:371] Failed to import from vllm._C: "
            "ModuleNotFoundError(\"No module named 'vllm._C'\")"
        ),
        "extension_abi_mismatch",
    ),
    (
        (
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on "
            "the device"
        ),
        "extension_abi_mismatch",
    ),
    # bad_cli_flag: CPython argparse templates (3.8-3.14 wording), click
    ("vllm serve: error: unrecognized arguments: --tool-server demo", "bad_cli_flag"),
    (
        (
            "vllm serve: error: argument --dtype: invalid choice: 'bf16' (choose from auto, half, "
            "float16, bfloat16, float, float32)"
        ),
        "bad_cli_flag",
    ),
    (
        "api_server.py: error: argument --max-num-seqs: invalid int value: '128k'",
        "bad_cli_flag",
    ),
    ("vllm: error: argument --tensor-parallel-size/-tp: expected one argument", "bad_cli_flag"),
    (
        "vllm serve: error: ambiguous option: --max could match --max-model-len, --max-num-seqs",
        "bad_cli_flag",
    ),
    ("Error: No such option: --gpu-count Did you mean --gpus?", "bad_cli_flag"),
    ("Error: No such option '--nodes'.", "bad_cli_flag"),
    ("Error: Got unexpected extra argument (Qwen/Qwen3-8B)", "bad_cli_flag"),
    # hf_access: huggingface_hub and Transformers
    (
        (
            "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-6a) "
            "Cannot access gated repo for url https://huggingface.co/org/model/resolve/main/config.json."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: You are trying to access a gated repo. Make sure to have access to it at "
            "https://huggingface.co/org/model."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: /models/llama-3-8b is not a local folder and is not a valid model identifier "
            "listed on 'https://huggingface.co/models'"
        ),
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
            "'namespace/repo_name': '/mnt/models/a/b'. Use `repo_type` argument if needed."
        ),
        "hf_access",
    ),
    (
        "Revision Not Found for url: https://huggingface.co/api/models/org/model/revision/v2.",
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in "
            "the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and "
            "downloads online, set 'local_files_only' to False."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and "
            "couldn't find them in the cached files."
        ),
        "hf_access",
    ),
    (
        "ValueError: Invalid repository ID or local directory specified: '/data/qwen'.",
        "hf_access",
    ),
]

NEAR_MISSES = [
    # vLLM's own deprecation notes are warnings, not a rejected flag
    "WARNING 05-10 15:51:00 [argparse_utils.py:169] argument 'disable_log_requests' is deprecated",
    (
        "WARNING 05-10 15:51:00 [argparse_utils.py:293] With `vllm serve`, you should provide the "
        "model as a positional argument or in a config file instead of via the `--model` option."
    ),
    # a 401 of the OpenAI-compatible server (its --api-key), not of the Hub
    'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 401 Unauthorized',
]


@pytest.mark.parametrize(("line", "cause"), CASES)
def test_source_surface_form_names_its_cause(line: str, cause: str) -> None:
    causes = diagnose_text(line).causes
    assert causes and causes[0].cause == cause, [(f.cause, f.signature) for f in causes]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_miss_names_no_cause(line: str) -> None:
    assert diagnose_text(line).causes == (), diagnose_text(line).causes
