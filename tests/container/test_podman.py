"""The container target on real Podman: launch, readiness, logs, stop (--purge), clean,
preflight, and no secret in anything Hangar writes."""

from __future__ import annotations

import json
import os
import socket
import urllib.request
from pathlib import Path

import pytest

from hangar.deploy.io import deployment_from_data
from hangar.launch import orchestrator, recorded
from hangar.launch.errors import PreflightFailed
from hangar.launch.runs import clean, open_store, refresh
from hangar.paths import state_dir
from hangar.preflight.runner import preflight

from .conftest import container_deployment, podman

SECRET = "hf_container_secret_4711"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    return d


def _launch(fake_image: str, model_dir: Path, **container: object) -> orchestrator.LaunchResult:
    data = container_deployment(fake_image, model_dir, free_port(), **container)
    data["env"] = {"HF_TOKEN": SECRET, "FAKE_VLLM_NOTE": "visible"}
    return orchestrator.launch(deployment_from_data(data, source="test"))


def _completion(url: str) -> dict[str, object]:
    body = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}).encode()
    req = urllib.request.Request(
        f"{url}/v1/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return dict(json.loads(resp.read()))


def _hangar_files() -> list[Path]:
    return [p for p in state_dir().rglob("*") if p.is_file()]


def test_launch_serve_stop_purge_and_no_secret_anywhere(
    fake_image: str, model_dir: Path, tmp_path: Path
) -> None:
    podman("tag", fake_image, f"{fake_image}-purge")
    result = _launch(f"{fake_image}-purge", model_dir)
    run = result.run
    assert run.base_url.startswith("http://127.0.0.1:")
    assert _completion(run.base_url)["object"] == "text_completion"
    name = f"hangar-{run.id}"
    labels = podman("container", "inspect", "--format", "{{json .Config.Labels}}", name).stdout
    assert json.loads(labels)["io.hangar.run"] == run.id
    run_dir = Path(run.run_dir)
    env_file = run_dir / "container.env"
    refresh(open_store())  # a status look that sees the container
    assert not env_file.exists()  # written 0600 at submit, gone once the container exists
    inside = podman("container", "inspect", "--format", "{{json .Config.Env}}", name).stdout
    assert f"HF_TOKEN={SECRET}" in json.loads(inside)
    # inside: local model read-only, offline hub, per-run temp dir, the secret from the file
    seen = json.loads((run_dir / "tmp" / "fake-env.json").read_text())
    assert seen["argv"][:2] == ["serve", "/hangar/model"] and seen["marker"] == run.id
    assert seen["tmpdir"] == "/tmp"
    assert SECRET not in " ".join(result.rendered.argv)
    for path in _hangar_files():
        assert SECRET.encode() not in path.read_bytes(), path
    stopped_run, stopped = recorded.stop(run.id)
    assert stopped_run.status == "stopped" and "removed" in stopped.detail
    assert podman("container", "exists", name, check=False).returncode == 1
    assert not env_file.exists()
    from hangar.launch.targets.container import remove_image

    assert "removed" in remove_image(stopped_run.handle)
    assert podman("image", "exists", f"{fake_image}-purge", check=False).returncode == 1
    assert podman("image", "exists", fake_image, check=False).returncode == 0


def test_clean_removes_only_labelled_stopped_containers_of_dead_runs(
    fake_image: str, model_dir: Path
) -> None:
    result = _launch(fake_image, model_dir)
    name = f"hangar-{result.run.id}"
    podman("stop", "-t", "2", name)  # the server ends on its own: the run is no longer live
    bystander = f"hangar-bystander-{os.getpid()}"  # Hangar's name pattern, no Hangar labels
    podman("create", "--name", bystander, fake_image, "true")
    try:
        states = refresh(open_store())
        assert not next(s for s in states if s.run.id == result.run.id).alive
        items = clean(open_store(), dry_run=True)
        assert [i.container for i in items if i.container] and all(
            i.run_id == result.run.id for i in items if i.container
        )
        clean(open_store())
        assert podman("container", "exists", name, check=False).returncode == 1
        assert podman("container", "exists", bystander, check=False).returncode == 0
    finally:
        podman("rm", "-f", bystander, check=False)


def test_preflight_refuses_a_missing_image_and_warns_without_shm(model_dir: Path) -> None:
    data = container_deployment(
        "localhost/hangar-test-absent:none", model_dir, free_port(), ipc_host=False
    )
    d = deployment_from_data(data, source="test")
    report = preflight(d, with_plan=False)
    ids = {f.id: f.severity for f in report.findings}
    assert ids["container.image.missing"] == "error"
    assert ids["container.shm"] == "warning"
    with pytest.raises(PreflightFailed):
        orchestrator.launch(d)


def test_a_server_that_crashes_fails_the_launch_with_its_log(
    fake_image: str, model_dir: Path
) -> None:
    from hangar.launch.errors import LaunchFailed

    data = container_deployment(fake_image, model_dir, free_port())
    data["env"] = {"FAKE_VLLM_MODE": "crash"}
    with pytest.raises(LaunchFailed) as err:
        orchestrator.launch(deployment_from_data(data, source="test"))
    assert "Traceback" in err.value.error_block or err.value.error_block
    run_id = err.value.run_id
    assert podman("container", "exists", f"hangar-{run_id}", check=False).returncode == 1


def test_an_absent_image_to_pull_is_judged_by_its_tag(model_dir: Path) -> None:
    data = container_deployment(
        "localhost/hangar-test-absent:v0.33.0", model_dir, free_port(), pull="missing"
    )
    report = preflight(deployment_from_data(data, source="test"), with_plan=False)
    ids = {f.id: f.severity for f in report.findings}
    assert ids["container.image.pull"] == "warning" and report.ok, ids
    assert report.engine is not None and report.engine.vllm_version == "0.33.0"
