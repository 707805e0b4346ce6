"""A recorded run seen from outside its launch: its deployment record, whether its launcher
or its server still lives, its logs, where it is now, and stopping exactly what it started.
`hangar status`, `logs`, `stop` and `clean` (launch/runs.py, the CLI) read runs through here;
the launch itself (claim.py) uses the same checks for the port it is about to take.
"""

from __future__ import annotations

import shutil
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hangar.launch.errors import RunNotLive
from hangar.launch.targets import Observed, Stopped, target_for
from hangar.launch.targets.local import is_same_process
from hangar.paths import state_dir
from hangar.store import runs as store
from hangar.store.db import connect


def deployment_record(run_id: str) -> Path:
    return state_dir() / "deployments" / f"{run_id}.toml"


def host_port(kind: str, base_url: str | None) -> int | None:
    """The port a run binds on this host (local and container runs; Slurm's are remote)."""
    if kind not in ("local", "container") or not base_url:
        return None
    return urlsplit(base_url).port


def launcher_alive(run: store.RunRecord) -> bool | None:
    """Whether the process that launched the run, and still owns it, is alive (the very
    same process: PID and start time); None when that cannot be told here: the server was
    handed over, the record predates launcher records, or it was launched on another host
    (a state dir on a shared home)."""
    launcher = run.launcher
    if (
        run.detached
        or not launcher
        or launcher.get("host", socket.gethostname()) != (socket.gethostname())
    ):
        return None
    return is_same_process(launcher)


def holds_server(run: store.RunRecord) -> bool:
    """A live run that still has (or is about to have) a server: its launcher is still
    at work, or its target says it runs."""
    if launcher_alive(run):
        return True
    handle = handle_of(run)
    if not handle:
        return False
    return target_for(run.target).status(handle, Path(run.run_dir)).phase in ("queued", "running")


def run_logs(run: store.RunRecord) -> list[Path]:
    """Every log of a recorded run, as its target lays them out."""
    return (
        target_for(run.target).logs(run.handle, Path(run.run_dir))
        if run.handle
        else [Path(run.log_path)]
    )


def handle_of(run: store.RunRecord) -> dict[str, Any]:
    """The run's recorded handle. With none (its launcher was killed between starting the
    server and recording it): for a local run the run id, which the server carries as its
    marker; for a Slurm run the job found by its working directory (the run dir)."""
    if run.handle:
        return run.handle
    if run.target == "local":
        return {"run_id": run.id}
    if run.target == "slurm" and run.live and run.run_dir:
        from hangar.launch.targets.slurm import find_job

        return find_job(run.id, Path(run.run_dir)) or {}
    return {}


def observe(run: store.RunRecord) -> Observed:
    """Where a recorded run is now, asked of its target."""
    return target_for(run.target).status(run.handle, Path(run.run_dir))


def stop(run_ref: str | None, *, grace_s: float | None = None) -> tuple[store.RunRecord, Stopped]:
    """Stop exactly what the run's target started; mark it stopped."""
    conn = connect()
    run = store.get_run(conn, run_ref)
    handle = handle_of(run)
    target = target_for(run.target)
    if (
        not run.live
        or not handle
        or target.status(handle, Path(run.run_dir)).phase
        not in (
            "queued",
            "running",
        )
    ):
        if run.live:
            store.finish_run(conn, run.id, "exited")
            deployment_record(run.id).unlink(missing_ok=True)
        raise RunNotLive(run.id, store.get_run(conn, run.id).status)
    grace = grace_s if grace_s is not None else recorded_grace(run)
    stopped = target.stop(handle, Path(run.run_dir), grace)
    store.finish_run(conn, run.id, "stopped")
    store.add_event(conn, run.id, "stopped", time.time(), stopped.detail)
    deployment_record(run.id).unlink(missing_ok=True)
    shutil.rmtree(Path(run.run_dir) / "tmp", ignore_errors=True)
    return store.get_run(conn, run.id), stopped


def recorded_grace(run: store.RunRecord) -> float:
    target = run.deployment.get("target", {})
    return float(target.get(run.target, {}).get("stop_grace_s", 30))
