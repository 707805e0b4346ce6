"""Surface forms of compiled extensions and libraries that do not load or do not fit (field set
8, fixer f1): xFormers' build-info check, torch's Windows DLL loader, torch's own import failing
on an nvidia-* wheel library, Triton's ptxas wrapper, NVRTC's builtins, and the import / attribute
errors where a caller and a library whose API moves disagree. Every log is the emitting source's
format string with its variables filled in (file and version in each signature's `sources`), not
a line copied from a report. Near misses share words with a signature but must not name its
cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes, names
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/opt/venv/lib/python3.11/site-packages"

XFORMERS_BUILT_FOR = (
    "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
    "    PyTorch 2.5.1+cu124 with CUDA 1204 (you have 2.6.0+cu124)\n"
    "    Python  3.11.9 (you have 3.11.9)\n"
    "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-"
    "xformers)\n"
    "  Memory-efficient attention, SwiGLU, sparse and more won't be available.\n"
    "  Set XFORMERS_MORE_DETAILS=1 for more details\n"
)

CASES = [
    # xFormers _cpp_lib.py xFormersInvalidLibException with its build info
    (XFORMERS_BUILT_FOR, "extension_abi_mismatch"),
    # torch/__init__.py _load_dll_libraries, on one line and wrapped by a logger
    (
        (
            "OSError: [WinError 126] The specified module could not be found. Error loading "
            '"C:\\venv\\Lib\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.\n'
        ),
        "other",
    ),
    (
        (
            "ERROR    Could not load torch: [WinError 1114] A dynamic link library (DLL) "
            "initialization routine failed. Error loading\n"
            '         "D:\\env\\lib\\site-packages\\torch\\lib\\shm.dll" or one of its '
            "dependencies.\n"
        ),
        "other",
    ),
    # torch's own `from torch._C import *` failing on an nvidia-* wheel library
    (
        _traceback(
            [(f"{SITE}/torch/__init__.py", 405, "<module>")],
            "ImportError: libcublas.so.12: cannot open shared object file: No such file or directory",
        ).replace("<module>\n", "<module>\n    from torch._C import *  # noqa: F403\n"),
        "other",
    ),
    (
        (
            '  File "/srv/app/.venv/lib64/python3.12/site-packages/torch/__init__.py", line 290, '
            "in <module>\n    from torch._C import *  # noqa: F403\nImportError: libnccl.so.2: "
            "cannot open shared object file: No such file or directory\n"
        ),
        "other",
    ),
    # Triton's make_cubin around ptxas, the 2.x/3.0 and the 3.2+ wording
    (
        (
            "RuntimeError: Internal Triton PTX codegen error: \n"
            "ptxas /tmp/tmpab12cd34.ptx, line 5; fatal   : Unsupported .version 8.7; current "
            "version is '8.6'\nptxas fatal   : Ptx assembly aborted due to errors\n"
        ),
        "other",
    ),
    (
        (
            "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
            "`ptxas` stderr:\nptxas /tmp/k.ptx, line 5; fatal   : Unsupported .version 9.0; "
            "current version is '8.8'\n"
        ),
        "other",
    ),
    # NVRTC's builtins library
    (
        (
            "RuntimeError: CUDA NVRTC compile error: nvrtc: error: failed to open "
            "libnvrtc-builtins.so.12.4.\n  Make sure that libnvrtc-builtins.so.12.4 is installed "
            "correctly.\n"
        ),
        "other",
    ),
    # CPython import_from on a library whose API moves: with and without the file part
    (
        _traceback(
            [(f"{SITE}/torch/_inductor/codecache.py", 210, "get_system")],
            "ImportError: cannot import name 'triton_key' from 'triton.compiler.compiler' "
            f"({SITE}/triton/compiler/compiler.py)",
        ),
        "dependency_mismatch",
    ),
    (
        "ImportError: cannot import name 'get_node_id' from 'ray.util.placement_group'\n",
        "dependency_mismatch",
    ),
    (
        (
            "ImportError: cannot import name 'build_regex_from_schema' from "
            "'outlines_core.fsm.json_schema' (unknown location)\n"
        ),
        "dependency_mismatch",
    ),
    # a serving wrapper calling vLLM's OpenAI serving classes
    (
        "AttributeError: 'OpenAIServingChat' object has no attribute 'create_chat_completion'\n",
        "dependency_mismatch",
    ),
    (
        (
            '{"error":"AttributeError : \'ServingScores\' object has no attribute '
            "'create_score'\"}\n"
        ),
        "dependency_mismatch",
    ),
    # vLLM's call_hf_processor around a processor lacking an attribute
    (
        (
            "AttributeError: 'Qwen2VLImageProcessor' object has no attribute 'merge_size'\n"
            "ValueError: Failed to apply Qwen2VLProcessor on data={'text': '<image>'} with "
            "kwargs={}\n"
        ),
        "dependency_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # xFormers loaded fine: its version line, and a healthy attention backend choice
    ("xformers version: 0.0.29.post2\nUsing xformers attention\n", "extension_abi_mismatch"),
    # a Windows DLL error of torch caused by the page file (1455), not a missing runtime
    (
        (
            "OSError: [WinError 1455] The paging file is too small for this operation to "
            'complete. Error loading "C:\\venv\\Lib\\site-packages\\torch\\lib\\cudnn_cnn64_9.dll" '
            "or one of its dependencies.\n"
        ),
        "other",
    ),
    # ptxas refusing the GPU name is another story (an old ptxas for a new GPU)
    (
        (
            "RuntimeError: Internal Triton PTX codegen error: \nptxas fatal   : Value 'sm_120a' "
            "is not defined for option 'gpu-name'\n"
        ),
        "other",
    ),
    # ptxas' .version refusal outside Triton names nothing here
    (
        "ptxas /tmp/a.ptx, line 5; fatal   : Unsupported .version 8.6; current version is '8.5'\n",
        "other",
    ),
    # the circular-import form of import_from is a user's own module layout
    (
        (
            "ImportError: cannot import name 'remote' from partially initialized module 'ray' "
            "(most likely due to a circular import) (/home/u/ray.py)\n"
        ),
        "dependency_mismatch",
    ),
    # a compiled module of a library is a build question
    (
        "ImportError: cannot import name '_C' from 'triton' (/opt/venv/triton/__init__.py)\n",
        "dependency_mismatch",
    ),
    # the name in DEFAULT_NCCL_SOCKET_IFNAME is not a network problem
    (
        "ImportError: cannot import name 'DEFAULT_NCCL_SOCKET_IFNAME' from 'ray.train.constants'\n",
        "nccl_network",
    ),
    # "Failed to apply" with a shape error, not a missing attribute
    (
        (
            "ValueError: Failed to apply LlavaProcessor on data={'text': 'hi'} with kwargs={}\n"
            "RuntimeError: shape '[1, 3]' is invalid for input of size 4\n"
        ),
        "dependency_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = known_causes(log)
    assert all(c.cause != cause or c.confidence < 0.3 for c in causes), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_a_bare_cuda_library_line_stays_an_extension_question() -> None:
    # without torch's own import in view the glibc line is still read as an extension's build
    log = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    assert_names_first(log, "extension_abi_mismatch")
    assert not names(log, "other") or diagnose_text(log).causes[0].cause != "other"


def test_only_the_xformers_build_line_names_the_mismatch() -> None:
    # the header alone is printed by runs that never use xFormers (test_sources_w1 near miss)
    bare = "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
    assert all(c.confidence < 0.3 for c in diagnose_text(bare).causes)
    full = diagnose_text(XFORMERS_BUILT_FOR).causes[0]
    assert full.cause == "extension_abi_mismatch"
    assert 0.3 <= full.confidence <= 0.5


def test_a_specific_failure_outranks_the_xformers_warning() -> None:
    log = XFORMERS_BUILT_FOR + (
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n"
    )
    assert diagnose_text(log).causes[0].cause != "extension_abi_mismatch"
