"""SIGTERM to a real ``hangar launch`` process while it waits for readiness (issue 13).

The server is the fake engine in its slow mode (it sleeps before binding its port), so the
launch is caught in the readiness wait. After the signal no process carrying the run's
marker may remain and the run must be recorded as stopped, not "starting".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hangar.deploy import write_deployment

from .conftest import deployment


def marked_pids(run_id: str) -> list[int]:
    """Processes whose environment carries HANGAR_RUN_ID=run_id (the launch's marker)."""
    needle = f"HANGAR_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def hangar_json(*args: str) -> list[dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "hangar", *args, "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def wait_for_starting_run(launch: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert launch.poll() is None, launch.communicate()
        rows = hangar_json("status", "--all")
        if rows and rows[0]["status"] == "starting" and marked_pids(str(rows[0]["id"])):
            return str(rows[0]["id"])
        time.sleep(0.3)
    raise AssertionError("the launch never reached the readiness wait")


def test_sigterm_during_readiness_wait_stops_the_server(
    fake_engine: Path, model_dir: Path, port: int, tmp_path: Path
) -> None:
    file = tmp_path / "hangar.toml"
    write_deployment(deployment(fake_engine, model_dir, port), file)
    env = {**os.environ, "FAKE_VLLM_MODE": "slow", "FAKE_VLLM_DELAY": "120"}
    launch = subprocess.Popen(
        [sys.executable, "-m", "hangar", "launch", str(file)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = wait_for_starting_run(launch)
        launch.send_signal(signal.SIGTERM)
        _, err = launch.communicate(timeout=60)
    finally:
        if launch.poll() is None:
            launch.kill()
    assert "Traceback" not in err, err
    assert launch.returncode != 0
    assert marked_pids(run_id) == []
    run = next(r for r in hangar_json("status", "--all") if r["id"] == run_id)
    assert run["status"] == "stopped" and not run["alive"], run
