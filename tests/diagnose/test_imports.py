"""Failures raised while a module is being imported (data/imports.yaml): CPython's traceback of an
import chain (each frame's source line is the import statement it ran), pytest's report of the
same, transformers' lazy-module wrapper, a bare `No module named 'pkg.sub'`, and version checks
that say what they expected. Each log is the emitter's format filled in (file and version in each
signature's `sources`), not a line copied from a report. Near misses: the same exception types at
run time, a shared object that will not load, a circular import, a project's own module."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, assert_not_known

SITE = "/opt/venv/lib/python3.10/site-packages"


def _import_chain(modules: list[tuple[str, str]], error: str) -> str:
    """A traceback through module bodies: (path, the import statement on that line)."""
    lines = ["Traceback (most recent call last):"]
    for path, statement in modules:
        lines += [f'  File "{path}", line 12, in <module>', f"    {statement}"]
    return "\n".join(lines + [error]) + "\n"


CASES = [
    # protobuf's runtime refusing an old _pb2 is named by its own signature; a generic type error
    # raised inside a package's import chain is the import-time fallback
    _import_chain(
        [
            ("/home/u/serve.py", "import ray"),
            (f"{SITE}/ray/__init__.py", "from ray._private.worker import init"),
            (f"{SITE}/ray/_private/worker.py", "from ray.util.tracing import setup"),
        ],
        "TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'",
    ),
    _import_chain(
        [
            (f"{SITE}/vllm/entrypoints/openai/api_server.py", "from fastapi import FastAPI"),
            (f"{SITE}/fastapi/__init__.py", "from .applications import FastAPI as FastAPI"),
        ],
        "AttributeError: 'FieldInfo' object has no attribute 'in_'",
    ),
    # vLLM's logger relaying the same chain from an engine process
    "".join(
        f"ERROR 05-10 15:51:07 [core.py:390] {line}\n"
        for line in _import_chain(
            [(f"{SITE}/vllm/v1/engine/core.py", "from vllm.v1.structured_output import Manager")],
            "ImportError: cannot import name 'Grammar' from 'xgrammar.base'",
        ).splitlines()
    ),
    # pytest 8 src/_pytest/_code/code.py: "<path>:<line>: in <module>", "E   <Type>: <message>"
    (
        "ImportError while loading conftest '/src/ray/python/ray/serve/tests/conftest.py'.\n"
        "conftest.py:8: in <module>\n"
        "    from ray import serve\n"
        "../config.py:6: in <module>\n"
        "    from pydantic import BaseModel, PositiveInt, validator, NonNegativeFloat\n"
        "E   ImportError: cannot import name 'NonNegativeFloat'\n"
    ),
    # transformers utils/import_utils.py _LazyModule._get_module
    (
        "RuntimeError: Failed to import transformers.models.llama.modeling_llama because of the "
        "following error (look up to see its traceback):\n"
        "'FieldInfo' object has no attribute 'required'\n"
    ),
    # CPython importlib: the first missing component, here a submodule, without a traceback
    "$ python -c 'import ray.dashboard.optional_deps'\nModuleNotFoundError: No module named 'aiohttp.signals'\n",
    # protobuf 3.20 / 4.21.0 spelled the refusal with a doubled "not"
    "TypeError: Descriptors cannot not be created directly.\n",
    # tch-rs torch-sys/build.rs under cargo
    (
        "error: failed to run custom build command for `torch-sys v0.17.0`\n"
        "  --- stderr\n"
        "  Error: this tch version expects PyTorch 2.4.0, got 2.5.1, this check can be bypassed "
        "by setting the LIBTORCH_BYPASS_VERSION_CHECK environment variable\n"
    ),
    # pip's Requires-Python check
    "ERROR: Package 'vllm' requires a different Python: 3.8.10 not in '>=3.9'\n",
    # NumPy 1.24 removed the aliases of builtins (numpy/__init__.py __former_attrs__)
    (
        "AttributeError: module 'numpy' has no attribute 'float'.\n"
        "`np.float` was a deprecated alias for the builtin `float`. To avoid this error in "
        "existing code, use `float` by itself.\n"
    ),
    # NumPy 2's refusal of a NumPy 1.x module is a package pair, like its siblings
    (
        "A module that was compiled using NumPy 1.x cannot be run in\n"
        "NumPy 2.0.2 as it may crash. To support both 1.x and 2.x\n"
    ),
]


@pytest.mark.parametrize("log", CASES)
def test_import_time_failure_names_dependency_mismatch(log: str) -> None:
    assert_names_first(log, "dependency_mismatch")


NEAR_MISSES = [
    # a run-time error under `python -m vllm.entrypoints.openai.api_server`: the module body's
    # frame runs the server, its source line is no import
    (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/entrypoints/openai/api_server.py", line 912, in <module>\n'
        "    uvloop.run(run_server(args))\n"
        f'  File "{SITE}/vllm/v1/worker/gpu_model_runner.py", line 1764, in execute_model\n'
        "    hidden = self.model(input_ids)\n"
        "TypeError: forward() takes 2 positional arguments but 3 were given\n"
    ),
    # a compiled extension that will not load under an import is a build's
    _import_chain(
        [(f"{SITE}/vllm/__init__.py", "from vllm._C import ops")],
        f"ImportError: {SITE}/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
    ),
    # a circular import is a defect of the code, not of the environment
    _import_chain(
        [(f"{SITE}/mypkg/__init__.py", "from mypkg.a import f")],
        "ImportError: cannot import name 'f' from partially initialized module 'mypkg.a' (most "
        "likely due to a circular import)",
    ),
    # handled optional imports that healthy starts print: vLLM's source build without
    # vllm/_version.py, xFormers without a matching Triton
    "RuntimeWarning: Failed to read commit hash:\nNo module named 'vllm._version'\n",
    (
        "WARNING:xformers:A matching Triton is not available, some optimizations will not be "
        "enabled. Error caught was: No module named 'triton.ops'\n"
    ),
    # an import-time error the server got past: it came up and serves
    _import_chain(
        [(f"{SITE}/vllm/model_executor/layers/fused_moe/__init__.py", "import triton.ops")],
        "AttributeError: module 'triton' has no attribute 'ops'",
    )
    + "INFO:     Application startup complete.\n",
    # a project's own layout run from the wrong directory
    "ModuleNotFoundError: No module named 'src.utils'\n",
    # a compiled version check naming a GPU capability, not a package
    "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n",
]


@pytest.mark.parametrize("log", NEAR_MISSES)
def test_near_miss_is_not_an_import_time_dependency_mismatch(log: str) -> None:
    assert_not_known(log, "dependency_mismatch")
