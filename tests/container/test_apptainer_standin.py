"""The apptainer runtime through the behavioural stand-in (tests/container/standins/apptainer):
argv checked as apptainer's CLI would, the command run in a bubblewrap sandbox with the
same binds; launch, serve, stop, and the secret only in the 0600 env file."""

from __future__ import annotations

import json
import shutil
import socket
import stat
import urllib.request
from pathlib import Path

import pytest

from hangar.deploy.io import deployment_from_data
from hangar.launch import orchestrator, process, recorded

from .conftest import fake_vllm_files

STANDINS = Path(__file__).parent / "standins"
SECRET = "hf_apptainer_secret_0815"


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """An apptainer sandbox image (a directory): merged /usr layout + the fake vLLM."""
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed: run scripts/setup-test-host (needs bubblewrap)")
    root = tmp_path / "vllm.sandbox"
    for d in ("usr", "tmp", "proc", "dev", "etc"):
        (root / d).mkdir(parents=True)
    for d in ("bin", "lib", "lib64", "sbin"):
        (root / d).symlink_to(f"usr/{d}")
    for name, data in fake_vllm_files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    env = root / ".singularity.d" / "env"
    env.mkdir(parents=True)
    (env / "90-environment.sh").write_text("export PYTHONPATH=/opt/engine/site-packages\n")
    return root


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import os

    log = tmp_path / "apptainer-argv.jsonl"
    monkeypatch.setenv("PATH", f"{STANDINS}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("APPTAINER_STANDIN_LOG", str(log))
    return log


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_apptainer_launch_serve_stop(sandbox: Path, on_path: Path, tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    data = {
        "model": {"id": str(model), "served_name": "tiny"},
        "engine": "sif",
        "env": {"HF_TOKEN": SECRET},
        "target": {
            "kind": "container",
            "container": {
                "runtime": "apptainer",
                "image": str(sandbox),
                "port": _port(),
                "extra_args": ["--bind", "/usr:/usr:ro"],
                "ready_timeout_s": 60,
                "stop_grace_s": 3,
            },
        },
    }
    result = orchestrator.launch(deployment_from_data(data, source="test"))
    run = result.run
    body = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}).encode()
    req = urllib.request.Request(
        f"{run.base_url}/v1/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert json.loads(resp.read())["object"] == "text_completion"
    (logged,) = [json.loads(line) for line in on_path.read_text().splitlines()]
    argv = logged["argv"]
    assert "HF_TOKEN" in logged["env_names"]  # from the env file, never argv
    assert argv[:2] == ["exec", "--cleanenv"] and "--nv" not in argv  # no GPU asked
    assert f"{model}:/hangar/model:ro" in argv
    env_file = Path(run.run_dir) / "container.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert env_file.read_text() == f"HF_TOKEN={SECRET}\n"
    assert SECRET not in json.dumps(argv)
    seen = json.loads((Path(run.run_dir) / "tmp" / "fake-env.json").read_text())
    assert seen["marker"] == run.id and seen["argv"][1] == "/hangar/model"
    _, stopped = recorded.stop(run.id)
    assert stopped.signalled >= 1
    assert not process.run_processes(run.id, None)
    assert not env_file.exists()


def test_standin_refuses_what_apptainer_refuses(sandbox: Path, on_path: Path) -> None:
    import subprocess

    def standin(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["apptainer", *args], check=False, capture_output=True, text=True, timeout=30
        )

    assert standin("exec", "--gpus", "all", str(sandbox), "true").returncode == 255
    bad_env = standin("exec", "--env", "A=1,2", str(sandbox), "/usr/bin/true")
    assert bad_env.returncode == 255 and "key=value" in bad_env.stderr
    missing = standin("exec", "--bind", "/nonexistent-src:/x", str(sandbox), "/usr/bin/true")
    assert missing.returncode == 255 and "doesn't exist" in missing.stderr
    ok = standin(
        "exec", "--cleanenv", "--bind", "/usr:/usr:ro", "--env", "A=1", str(sandbox), "/usr/bin/env"
    )
    assert ok.returncode == 0 and "A=1" in ok.stdout and "HANGAR_HOME" not in ok.stdout
