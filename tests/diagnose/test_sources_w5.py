"""Surface forms of dependency_mismatch, written from the emitting sources (file and version in
each signature's `sources`): every log below is the source's format string with its variables
filled in, not a line copied from a report. Near misses share words with a signature but must
not name dependency_mismatch."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/usr/lib/python3.12/site-packages"


PIP_HEADER = (
    "ERROR: pip's dependency resolver does not currently take into account all the packages "
    "that are installed. This behaviour is the source of the following dependency conflicts.\n"
)

CASES = [
    # transformers utils/versions.py _compare_versions
    (
        (
            "ImportError: tokenizers>=0.19,<0.20 is required for a normal functioning of this "
            "module, but found tokenizers==0.21.0.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "ImportError: vllm>=0.5.0,<=0.7.3 is required for a normal functioning of this module, "
            "but found vllm==0.8.4.\nTo fix: run `pip install -e .` or set DISABLE_VERSION_CHECK=1\n"
        ),
        "dependency_mismatch",
    ),
    # transformers utils/import_utils.py check_torch_load_is_safe
    (
        (
            "ValueError: Due to a serious vulnerability issue in `torch.load`, even with "
            "`weights_only=True`, we now require users to upgrade torch to at least v2.6 in order to "
            "use the function. This version restriction does not apply when loading files with "
            "safetensors.\n"
        ),
        "dependency_mismatch",
    ),
    # pip install _warn_about_conflicts
    (
        PIP_HEADER + "vllm 0.8.5 requires transformers>=4.51.1, but you have transformers "
        "4.46.3 which is incompatible.\n",
        "dependency_mismatch",
    ),
    # pip check
    (
        "xformers 0.0.28 has requirement torch==2.5.1, but you have torch 2.6.0.\n",
        "dependency_mismatch",
    ),
    # pip resolvelib factory
    (
        (
            "ERROR: Cannot install vllm==0.9.0 and torch==2.5.1 because these package versions have "
            "conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested "
            "torch==2.5.1\n    vllm 0.9.0 depends on torch==2.7.0\n\nERROR: ResolutionImpossible: for "
            "help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/"
            "#dealing-with-dependency-conflicts\n"
        ),
        "dependency_mismatch",
    ),
    # CPython ceval import_from, with a file and for a namespace package (3.8-3.13)
    (
        _traceback(
            [(f"{SITE}/lmcache/integration/vllm/vllm_adapter.py", 12, "<module>")],
            "ImportError: cannot import name 'get_tensor_model_parallel_rank' from "
            f"'vllm.distributed' ({SITE}/vllm/distributed/__init__.py)",
        ),
        "dependency_mismatch",
    ),
    (
        (
            "ImportError: cannot import name 'cached_download' from 'huggingface_hub' "
            f"({SITE}/huggingface_hub/__init__.py)\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "ImportError: cannot import name 'split_torch_state_dict_into_shards' from "
            "'huggingface_hub' (unknown location)\n"
        ),
        "dependency_mismatch",
    ),
    # transformers tokenization_utils_base __getattr__ (v5)
    (
        "AttributeError: Qwen2TokenizerFast has no attribute all_special_tokens_extended\n",
        "dependency_mismatch",
    ),
    # ai-dynamo/dynamo engine import
    (
        (
            "Failed to import python 'vllm' module. Are we running in the correct venv? "
            "ImportError: cannot import name 'X' from 'vllm.engine'\n"
        ),
        "dependency_mismatch",
    ),
    # AttributeError with a second package's frame, and with a pip conflict line
    (
        _traceback(
            [
                (f"{SITE}/vllm/v1/core/sched/scheduler.py", 563, "schedule"),
                ("/home/u/LMCache/lmcache/integration/vllm/vllm_v1_adapter.py", 932, "build"),
            ],
            "AttributeError: 'list' object has no attribute 'req_ids'",
        ),
        "dependency_mismatch",
    ),
    (
        PIP_HEADER
        + _traceback(
            [(f"{SITE}/peft/tuners/lora/model.py", 40, "<module>")],
            "AttributeError: module 'transformers.utils' has no attribute 'is_torch_xla_available'",
        ),
        "dependency_mismatch",
    ),
    # TypeError where one package calls another
    (
        _traceback(
            [
                (f"{SITE}/openrlhf/trainer/ray/vllm_engine.py", 88, "init_process_group"),
                (f"{SITE}/vllm/worker/worker.py", 210, "init_process_group"),
            ],
            "TypeError: Worker.init_process_group() got an unexpected keyword argument 'backend'",
        ),
        "dependency_mismatch",
    ),
    (
        _traceback(
            [(f"{SITE}/trl/trainer/grpo_trainer.py", 501, "_move_model_to_vllm")],
            "TypeError: LLM.collective_rpc() missing 1 required positional argument: 'method'",
        ),
        "dependency_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # circular import (CPython's other import_from form)
    (
        "ImportError: cannot import name 'Engine' from partially initialized module 'myapp.core' "
        "(most likely due to a circular import) (/home/u/myapp/core/__init__.py)\n"
    ),
    # a user's own module, not an installed package
    "ImportError: cannot import name 'helper' from 'utils' (/home/u/project/utils.py)\n",
    # healthy log
    (
        "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
        "INFO:     Application startup complete.\n"
    ),
    # a vLLM-internal AttributeError, no second package in view
    _traceback(
        [
            (f"{SITE}/vllm/v1/engine/core.py", 500, "run_engine_core"),
            (f"{SITE}/vllm/v1/worker/gpu_model_runner.py", 1764, "execute_model"),
        ],
        "AttributeError: 'NoneType' object has no attribute 'shape'",
    ),
    # a bare AttributeError with no context
    "AttributeError: module 'foo' has no attribute 'bar'\n",
    # a keyword error of the user's own class
    "TypeError: MyTrainer.__init__() got an unexpected keyword argument 'lr'\n",
    # a harmless pip conflict: the server came up anyway
    PIP_HEADER + "vllm 0.8.5 requires transformers>=4.51.1, but you have transformers 4.46.3 "
    "which is incompatible.\nINFO:     Application startup complete.\n",
]


@pytest.mark.parametrize("log", NEAR_MISSES)
def test_near_miss_does_not_name_dependency_mismatch(log: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != "dependency_mismatch" for c in causes), [
        (c.cause, c.confidence) for c in causes
    ]


def test_a_pip_conflict_line_raises_a_cross_package_attribute_error() -> None:
    tb = _traceback(
        [(f"{SITE}/peft/tuners/lora/model.py", 40, "<module>")],
        "AttributeError: module 'transformers.utils' has no attribute 'is_torch_xla_available'",
    )
    plain = diagnose_text(tb).causes[0]
    with_pip = diagnose_text(PIP_HEADER + tb).causes[0]
    assert plain.cause == with_pip.cause == "dependency_mismatch"
    assert 0.3 <= plain.confidence <= 0.45 < with_pip.confidence
