"""SIGHUP to `hangar launch` of a Podman container while it waits for readiness stops the
container (through the container target's stop) and marks the run stopped (issue 13)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from container.conftest import (  # noqa: F401  the fixtures of the container tests
    _podman_env,
    container_deployment,
    containers_conf,
    fake_image,
    podman,
)

from hangar.deploy.io import deployment_from_data, write_deployment
from hangar.launch.runs import open_store
from hangar.store import runs as store

from .conftest import free_port


def test_sighup_during_readiness_wait_stops_the_container(
    fake_image: str,  # noqa: F811
    model_dir: Path,
    tmp_path: Path,
) -> None:
    data = container_deployment(fake_image, model_dir, free_port())
    data["env"] = {"FAKE_VLLM_MODE": "slow", "FAKE_VLLM_DELAY": "120"}
    file = tmp_path / "hangar.toml"
    write_deployment(deployment_from_data(data, source="test"), file)
    launch = subprocess.Popen(
        [sys.executable, "-m", "hangar", "launch", str(file)],
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id, name = running_container(launch)
        launch.send_signal(signal.SIGHUP)
        _, err = launch.communicate(timeout=120)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
    assert launch.returncode == 129 and "Traceback" not in err, err
    running = podman("ps", "--filter", f"name=^{name}$", "--format", "{{.ID}}").stdout
    assert running.strip() == "", f"container {name} still runs"
    run = store.get_run(open_store(), run_id)
    assert run.status == "stopped" and "SIGHUP" in (run.error or ""), run


def running_container(launch: subprocess.Popen[str]) -> tuple[str, str]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert launch.poll() is None, launch.communicate()
        runs = store.list_runs(open_store())
        name = runs[0].handle.get("container") if runs else None
        if name and podman("ps", "--filter", f"name=^{name}$", "--format", "{{.ID}}").stdout:
            return runs[0].id, str(name)
        time.sleep(0.5)
    raise AssertionError("the container never started")
