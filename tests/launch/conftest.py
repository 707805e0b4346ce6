"""Fixtures: a throwaway "engine" venv whose vLLM is tests/launch/fake_vllm.py, free ports."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.deploy import Deployment

HERE = Path(__file__).parent


def make_fake_engine(root: Path, vllm_version: str = "0.33.0") -> Path:
    """A real venv (no pip) whose `python -m vllm.entrypoints.cli.main serve` is the fake."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    package = site / "vllm" / "entrypoints" / "cli"
    package.mkdir(parents=True)
    for folder in (site / "vllm", site / "vllm" / "entrypoints", package):
        (folder / "__init__.py").write_text("")
    shutil.copy(HERE / "fake_vllm.py", package / "main.py")
    dist = site / f"vllm-{vllm_version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm_version}\n")
    return root / "bin" / "python"


@pytest.fixture(scope="session")
def fake_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fake_engine(tmp_path_factory.mktemp("fake-engine") / "venv")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}'
    )
    return d


def deployment(engine: Path, model: Path, port: int, **serve: object) -> Deployment:
    return Deployment.model_validate(
        {
            "model": {"id": str(model), "served_name": "tiny"},
            "engine": str(engine),
            "serve": serve,
            "target": {"local": {"port": port, "ready_timeout_s": 60, "stop_grace_s": 3}},
        }
    )


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process (own group, no marker) that stop/clean must leave alone."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    yield proc
    proc.kill()
    proc.wait()
