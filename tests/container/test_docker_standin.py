"""The docker runtime through the behavioural stand-in (tests/container/standins/docker):
docker's flag rules enforced, then run on podman; launch, serve, stop."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hangar.deploy.io import deployment_from_data
from hangar.launch import orchestrator, recorded

from .conftest import container_deployment, podman
from .test_podman import _completion, free_port

STANDINS = Path(__file__).parent / "standins"


@pytest.fixture
def docker_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    log = tmp_path / "docker-argv.jsonl"
    monkeypatch.setenv("PATH", f"{STANDINS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DOCKER_STANDIN_LOG", str(log))
    return log


def test_docker_launch_serve_stop(fake_image: str, docker_log: Path, tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    data = container_deployment(fake_image, model, free_port(), runtime="docker")
    result = orchestrator.launch(deployment_from_data(data, source="test"))
    assert _completion(result.run.base_url)["object"] == "text_completion"
    runs = [a for a in map(json.loads, docker_log.read_text().splitlines()) if a[0] == "run"]
    assert len(runs) == 1 and "--userns=keep-id" not in runs[0]
    _, stopped = recorded.stop(result.run.id)
    assert "removed" in stopped.detail
    name = f"hangar-{result.run.id}"
    assert podman("container", "exists", name, check=False).returncode == 1


def test_standin_refuses_podman_only_flags(fake_image: str, docker_log: Path) -> None:
    import subprocess

    def docker(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", *args], check=False, capture_output=True, text=True, timeout=60
        )

    assert docker("run", "--userns=keep-id", fake_image, "true").returncode == 125
    assert docker("run", "--device", "nvidia.com/gpu=all", fake_image, "true").returncode == 125
    assert docker("run", "--gpus", "device=0,1", fake_image, "true").returncode == 125
