"""pytest fixtures for tests that run on a real Slurm cluster (tests/support/slurm_cluster.py).

Register once in tests/conftest.py: ``pytest_plugins = ["support.slurm_plugin"]``.

``slurm_cluster``  session: one running 2-node cluster (untyped ``gpu:4`` per node),
                   shared by every test of the session, torn down at its end.
``ray_python``     session: interpreter of the cached vLLM CPU + Ray venv (support.ray_env).

A missing prerequisite (not root, packages not installed) is a test ERROR whose
message names the command to run (scripts/setup-test-host); the tests are skipped
only when ``HANGAR_SKIP_SLURM=1`` is set.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.ray_env import vllm_ray_python
from support.slurm_cluster import SKIP_ENV, SlurmCluster, SlurmClusterError
from support.vllm_env import VllmEnvError, vllm_skipped

# One cluster per process, even when this module is imported by more than one
# conftest: a second session fixture would otherwise start a second cluster.
_shared: dict[str, SlurmCluster] = {}


def slurm_skipped() -> bool:
    """True only when the user asked explicitly to skip the Slurm tests."""
    return os.environ.get(SKIP_ENV) == "1"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    if slurm_skipped():
        pytest.skip(f"{SKIP_ENV}=1: tests on the real Slurm cluster skipped on request")
    cluster = _shared.get("default")
    owner = cluster is None
    if cluster is None:
        try:
            cluster = _shared["default"] = SlurmCluster.start()
        except SlurmClusterError as exc:
            pytest.fail(str(exc), pytrace=False)
    yield cluster
    if owner:
        _shared.pop("default", None)
        cluster.stop()


@pytest.fixture(scope="session")
def ray_python() -> Path:
    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1: the vLLM + Ray venv is not built")
    try:
        return vllm_ray_python()
    except VllmEnvError as exc:
        pytest.fail(str(exc), pytrace=False)
