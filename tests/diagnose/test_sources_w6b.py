"""Surface forms of Python packaging and import failures (data/dependencies.yaml), written from
the emitting sources (file and version in each signature's `sources`): every log below is the
source's format string with its variables filled in, not a line copied from a report. Near
misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/usr/local/lib/python3.12/dist-packages"


CASES = [
    # vLLM PlaceholderModule.__getattr__ (vllm/utils, vllm/utils/import_utils.py)
    (
        _traceback(
            [(f"{SITE}/vllm/multimodal/audio.py", 91, "load_bytes")],
            "ImportError: Please install vllm[audio] for audio support",
        ),
        "dependency_mismatch",
    ),
    # vLLM bitsandbytes quantizer / loader guards
    (
        (
            "ImportError: Please install bitsandbytes>=0.45.3 via `pip install "
            "bitsandbytes>=0.45.3` to use bitsandbytes quantizer.\n"
        ),
        "dependency_mismatch",
    ),
    (
        "ImportError: bitsandbytes version is wrong. Please install bitsandbytes>=0.46.1.\n",
        "dependency_mismatch",
    ),
    # vLLM Transformers modeling backend check_version and layer-type import
    (
        (
            "ImportError: Transformers modeling backend requires transformers>=5.0.0.dev0 for "
            "encoder models support, but got 4.57.1\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "ImportError: Could not import layer type constants from transformers. Please ensure "
            "you have a compatible version installed. Expected 'ALLOWED_LAYER_TYPES' or "
            "'ALLOWED_ATTENTION_LAYER_TYPES'/'ALLOWED_MLP_LAYER_TYPES'.\n"
        ),
        "dependency_mismatch",
    ),
    # transformers import_utils *_IMPORT_ERROR templates through requires_backends
    (
        (
            "ImportError: \nLlamaTokenizer requires the SentencePiece library but it was not found "
            "in your environment. Check out the instructions on the\ninstallation page of its "
            "repo: https://github.com/google/sentencepiece#installation and follow the ones\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "WhisperFeatureExtractor requires the librosa library. But that was not found in your "
            "environment. You can install them with pip:\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "Trainer requires the accelerate library >= 1.1.0 it was not found in your "
            "environment.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "Qwen3VLVideoProcessor requires the TorchCodec (https://github.com/pytorch/torchcodec) "
            "library, but it was not found in your environment. You can install it with:\n"
        ),
        "dependency_mismatch",
    ),
    # transformers Backend.error_message (a versioned backend)
    (
        (
            "ImportError: Gemma3nProcessor requires the torch library version >=2.4. That library "
            "was not found with this version in your environment.\n"
        ),
        "dependency_mismatch",
    ),
    # transformers is_torch_available, then the PyTorch template
    (
        (
            "Disabling PyTorch because PyTorch >= 2.4 is required but found 2.3.1\n"
            "ImportError: \nQwen2ForCausalLM requires the PyTorch library but it was not found in "
            "your environment. Check out the instructions on the\n"
        ),
        "dependency_mismatch",
    ),
    (
        "Disabling PyTorch because PyTorch >= 2.1 is required but found 2.0.1\n",
        "dependency_mismatch",
    ),
    # transformers dynamic_module_utils check_imports
    (
        (
            "ImportError: This modeling file requires the following packages that were not found "
            "in your environment: flash_attn, einops. Run `pip install flash_attn einops`\n"
        ),
        "dependency_mismatch",
    ),
    # transformers modeling_utils _check_and_enable_flash_attn_2
    (
        (
            "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
            "following error: the package flash_attn seems to be not installed. Please refer to "
            "the documentation of https://huggingface.co/docs/transformers/perf_infer_gpu_one"
            "#flashattention-2 to install Flash Attention 2.\n"
        ),
        "dependency_mismatch",
    ),
    # lm-format-enforcer integrations/transformers.py
    (
        _traceback(
            [
                (
                    f"{SITE}/vllm/model_executor/guided_decoding/lm_format_enforcer_decoding.py",
                    10,
                    "<module>",
                ),
                (f"{SITE}/lmformatenforcer/integrations/transformers.py", 8, "<module>"),
            ],
            'ImportError: transformers is not installed. Please install it with "pip install '
            'transformers[torch]"',
        ),
        "dependency_mismatch",
    ),
    # NumPy 2 __getattr__ expired attributes
    (
        (
            "AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` "
            "instead.\n"
        ),
        "dependency_mismatch",
    ),
    # numpy._core (NumPy 2 layout) under NumPy 1.x
    ("ModuleNotFoundError: No module named 'numpy._core'\n", "dependency_mismatch"),
    (
        "ModuleNotFoundError: No module named 'numpy._core.multiarray'\n",
        "dependency_mismatch",
    ),
    # the C-API import of a compiled module (NumPy 1.x headers' _import_array)
    ("ImportError: numpy.core.multiarray failed to import\n", "extension_abi_mismatch"),
    ("AttributeError: _ARRAY_API not found\n", "extension_abi_mismatch"),
    # pkg_resources VersionConflict (str is the args tuple) and DistributionNotFound
    (
        (
            "pkg_resources.VersionConflict: (tokenizers 0.21.0 (/usr/lib/python3/dist-packages), "
            "Requirement.parse('tokenizers<0.20,>=0.19'))\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "pkg_resources.ContextualVersionConflict: (protobuf 4.25.3 (/opt/venv/lib/python3.10/"
            "site-packages), Requirement.parse('protobuf<4,>=3.20'), {'tensorboard'})\n"
        ),
        "dependency_mismatch",
    ),
    ("tokenizers 0.21.0 is installed but tokenizers<0.20 is required\n", "dependency_mismatch"),
    (
        (
            "pkg_resources.DistributionNotFound: The 'triton==3.1.0' distribution was not found "
            "and is required by torch\n"
        ),
        "dependency_mismatch",
    ),
    # importlib.metadata PackageNotFoundError
    (
        "importlib.metadata.PackageNotFoundError: No package metadata was found for bitsandbytes\n",
        "dependency_mismatch",
    ),
    # pydantic _migration getattr_migration
    (
        (
            "pydantic.errors.PydanticImportError: `BaseSettings` has been moved to the "
            "`pydantic-settings` package. See https://errors.pydantic.dev/2.9/u/import-error for "
            "more details.\n"
        ),
        "dependency_mismatch",
    ),
    (
        "pydantic.errors.PydanticImportError: `pydantic:parse_raw_as` has been removed in V2.\n",
        "dependency_mismatch",
    ),
    # protobuf descriptor.py and runtime_version.py
    (
        (
            "TypeError: Descriptors cannot be created directly.\nIf this call came from a _pb2.py "
            "file, your generated code is out of date and must be regenerated with protoc >= "
            "3.19.0.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "google.protobuf.runtime_version.VersionError: Detected incompatible Protobuf "
            "Gencode/Runtime versions when loading sentencepiece_model.proto: gencode 5.28.1 "
            "runtime 5.27.2. Runtime version cannot be older than the linked gencode version.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "google.protobuf.runtime_version.VersionError: Detected mismatched Protobuf "
            "Gencode/Runtime major versions when loading a.proto: gencode 6.30.0 runtime 5.29.3. "
            "Same major version is required.\n"
        ),
        "dependency_mismatch",
    ),
    # CPython "No module named" for modules vLLM imports for an optional feature
    (
        _traceback(
            [(f"{SITE}/vllm/multimodal/audio.py", 16, "<module>")],
            "ModuleNotFoundError: No module named 'librosa'",
        ),
        "dependency_mismatch",
    ),
    (
        "(RayWorkerWrapper pid=243) ModuleNotFoundError: No module named 'pyarrow'\n",
        "dependency_mismatch",
    ),
    # torch/_dynamo/eval_frame.py check_if_dynamo_supported
    (
        _traceback(
            [(f"{SITE}/torch/_dynamo/eval_frame.py", 901, "check_if_dynamo_supported")],
            "RuntimeError: Python 3.14+ not yet supported for torch.compile",
        ),
        "dependency_mismatch",
    ),
    (
        (
            "RuntimeError: torch.compile is not supported on Python < 3.13.3 built with GIL "
            "disabled. Please use Python 3.13.3+.\n"
        ),
        "dependency_mismatch",
    ),
    # huggingface_hub file_download.py http_get
    (
        (
            "ValueError: Fast download using 'hf_transfer' is enabled (HF_HUB_ENABLE_HF_TRANSFER=1) "
            "but 'hf_transfer' package is not available in your environment. Try `pip install "
            "hf_transfer`.\n"
        ),
        "dependency_mismatch",
    ),
    # vLLM platforms/__init__.py vllm_version_matches_substr
    (
        (
            "WARNING 05-10 15:51:07 [__init__.py:30] The vLLM package was not found, so its "
            "version could not be inspected. This may cause platform detection to fail.\n"
        ),
        "vllm_platform",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # healthy start
    (
        "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    ),
    # a user's own module, and a module outside the optional list
    "ModuleNotFoundError: No module named 'my_project'\n",
    "ModuleNotFoundError: No module named 'librosa_helpers_local'\n",
    # a core dependency of vLLM (requirements/common.txt) missing: a broken install, not named
    # here
    "ModuleNotFoundError: No module named 'xgrammar'\n",
    # vLLM's own metadata: its platform detection's signature, not the generic one
    "importlib.metadata.PackageNotFoundError: No package metadata was found for vllm\n",
    # Transformers' lazy backends mention, not an error
    "INFO: the sentencepiece library is optional; install it to use slow tokenizers\n",
    # NumPy's other removal wording (future scalars), not the 2.0 expired-attribute error
    "FutureWarning: In the future `np.bool` will be defined as the corresponding NumPy scalar.\n",
    # a pydantic deprecation warning is not the v2 import error
    (
        "PydanticDeprecatedSince20: `pydantic.config:Extra` has been moved to "
        "`pydantic.config:Extra`.\n"
    ),
]


@pytest.mark.parametrize("log", NEAR_MISSES)
def test_near_miss_does_not_name_dependency_mismatch(log: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != "dependency_mismatch" for c in causes), [
        (c.cause, c.confidence) for c in causes
    ]


def test_a_bare_optional_module_is_below_the_specific_guards() -> None:
    # a bare "No module named" of an optional package is named, but less sure than vLLM's or
    # Transformers' own guard for the same package
    bare = diagnose_text("ModuleNotFoundError: No module named 'bitsandbytes'\n").causes[0]
    guard = diagnose_text(
        "ImportError: Please install bitsandbytes>=0.45.3 via `pip install bitsandbytes>=0.45.3` "
        "to use bitsandbytes quantizer.\n"
    ).causes[0]
    assert bare.cause == guard.cause == "dependency_mismatch"
    assert 0.3 <= bare.confidence < guard.confidence


def test_a_compiled_torchvision_mismatch_stays_extension_abi() -> None:
    # torchvision's own C++-ops check next to Transformers' Torchvision template: the compiled
    # mismatch is the root (toolchain.yaml), the template its symptom
    log = (
        "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and "
        "torchvision versions are incompatible, or if you had errors while compiling torchvision "
        "from source.\n"
        "Qwen2VLImageProcessorFast requires the Torchvision library but it was not found in your "
        "environment.\n"
    )
    assert diagnose_text(log).causes[0].cause == "extension_abi_mismatch"


def test_no_platform_line_raises_the_metadata_warning() -> None:
    warning = (
        "WARNING 05-10 15:51:07 [__init__.py:30] The vLLM package was not found, so its version "
        "could not be inspected. This may cause platform detection to fail.\n"
    )
    alone = diagnose_text(warning).causes[0]
    both = diagnose_text(
        warning + "INFO 05-10 15:51:07 [__init__.py:253] No platform detected, vLLM is running "
        "on UnspecifiedPlatform\n"
    ).causes[0]
    assert alone.cause == both.cause == "vllm_platform"
    assert alone.confidence < both.confidence
