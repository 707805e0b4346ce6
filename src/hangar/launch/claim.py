"""A launch's claim on this host: its private run dir, the port it is about to serve on and
the recorded row, taken as one step under the launch lock so that two launches started at
the same moment can never both take a port or share a run dir.

What a run leaves on disk once claimed (launch.json, host.json, the masked deployment) is
written here; the orchestrator only decides when.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hangar.deploy.io import render_toml
from hangar.deploy.schema import Deployment, is_secret_name
from hangar.errors import HangarError
from hangar.launch.recorded import deployment_record, holds_server, host_port
from hangar.launch.targets import RenderContext, Rendered, target_for
from hangar.launch.targets.local import identity
from hangar.paths import HOST_FILE, LAUNCH_FILE, atomic_write_text, runs_root, state_dir
from hangar.planning.plan import default_utilization
from hangar.planning.versions import VllmVersion
from hangar.preflight.engine import EngineFacts
from hangar.preflight.runner import PreflightReport
from hangar.store import runs as store


class PortInUse(HangarError):
    """Another live run of this Hangar holds the port (checked under the launch lock, so
    two launches started at the same moment cannot both take it)."""

    def __init__(self, port: int, other: store.RunRecord) -> None:
        super().__init__(
            f"port {port} is already used by run {other.id} ({other.status}, {other.label}); "
            "nothing was started",
            hint=f"hangar stop {other.id}   or pick another port (--port, target.local.port)",
        )
        self.port = port
        self.other = other.id


def private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def live_utilizations(conn: Any) -> dict[str, float]:
    """gpu_memory_utilization of every live local run on this host (shared-GPU check)."""
    out: dict[str, float] = {}
    for run in store.list_runs(conn, live_only=True):
        if (
            run.target != "local"
            or target_for("local").status(run.handle, Path(run.run_dir)).phase != "running"
        ):
            continue
        serve = run.deployment.get("serve", {})
        # a store read back after a crash can hold anything: an unreadable version is the default
        version = VllmVersion.parse_or_none(run.vllm_version) or VllmVersion(0, 20, 0)
        default = default_utilization(version)
        out[run.id] = float(serve.get("gpu_memory_utilization") or default)
    return out


def new_run_dir(conn: Any) -> tuple[str, Path]:
    """A fresh run id whose directory this process created (mkdir is atomic, so two
    launches never share an id or a run dir, even when their ids are drawn at once)."""
    root = runs_root()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    while True:
        run_id = store.new_run_id(conn)
        try:
            (root / run_id).mkdir(mode=0o700)
        except FileExistsError:
            continue
        return run_id, private_dir(root / run_id)


@contextmanager
def launch_lock() -> Iterator[None]:
    path = state_dir() / "launch.lock"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the fd closes, even on kill -9
        yield
    finally:
        os.close(fd)


def claim_and_record(
    conn: Any, d: Deployment, engine: EngineFacts, ctx: RenderContext, rendered: Rendered
) -> None:
    """Check that no live run holds the port and record this run, as one step across
    processes: the recorded row is the port's claim."""
    try:
        with launch_lock():
            port = host_port(rendered.kind, rendered.base_url)
            holder = port_holder(conn, port) if port is not None else None
            if holder is not None:
                raise PortInUse(port or 0, holder)
            record_run(conn, d, engine, ctx, rendered)
    except PortInUse:
        shutil.rmtree(ctx.run_dir, ignore_errors=True)
        raise


def port_holder(conn: Any, port: int) -> store.RunRecord | None:
    for other in store.list_runs(conn, live_only=True):
        if host_port(other.target, other.base_url) == port and holds_server(other):
            return other
    return None


def record_run(
    conn: Any, d: Deployment, engine: EngineFacts, ctx: RenderContext, rendered: Rendered
) -> None:
    for name, file in rendered.files.items():
        atomic_write_text(ctx.run_dir / name, file.text, mode=file.mode)
    private_dir(ctx.run_dir / "tmp")
    for sub in ("vllm", "torchinductor", "triton"):
        private_dir(ctx.engine_cache / sub)
    launch_doc = {
        "target": rendered.kind,
        "argv": list(rendered.argv),
        "env": {k: v for k, v in rendered.env.items() if not is_secret_name(k)},
        "secret_env": list(rendered.secret_env),  # names only
        "files": sorted(rendered.files),
        "workarounds": list(rendered.applied.ids),
        "overrides": [o.model_dump() for o in rendered.applied.overrides],
    }
    atomic_write_text(ctx.run_dir / LAUNCH_FILE, json.dumps(launch_doc, indent=2), mode=0o600)
    atomic_write_text(deployment_record(ctx.run_id), masked_toml(d), mode=0o600)
    store.insert_run(conn, run_row(d, engine, ctx, rendered))


def run_row(
    d: Deployment, engine: EngineFacts, ctx: RenderContext, rendered: Rendered
) -> store.RunRecord:
    return store.RunRecord(
        id=ctx.run_id,
        label=d.label,
        target=d.target.kind,
        base_url=rendered.base_url or "",
        log_path=str(ctx.run_dir / "server.log"),
        run_dir=str(ctx.run_dir),
        deployment_json=json.dumps(d.snapshot()),
        engine=d.engine,
        engine_python=str(engine.python),
        vllm_version=engine.vllm_version,
        workarounds_json=json.dumps(list(rendered.applied.ids)),
        argv_json=json.dumps(list(rendered.argv)),
        status="queued" if d.target.kind == "slurm" else "starting",
        started_at=time.time(),
        launcher_json=json.dumps(
            {**identity(os.getpid()), "host": socket.gethostname(), "detached": False}
        ),
    )


def record_host(ctx: RenderContext, report: PreflightReport) -> None:
    """The host facts preflight found (limits, temp dir, driver, GPUs, nvcc, vLLM's unmet
    requirements): what the doctor reads beside the log (diagnose/runs.py). Without env
    (values may be secrets) and the rest of the engine (in launch.json and the store)."""
    facts = report.host.model_dump(mode="json", exclude={"env", "engine"})
    engine = report.host.engine
    facts["engine_unmet"] = [u.model_dump(mode="json") for u in engine.unmet] if engine else []
    atomic_write_text(ctx.run_dir / HOST_FILE, json.dumps(facts, indent=2), mode=0o600)


def masked_toml(d: Deployment) -> str:
    return render_toml(d.model_copy(update={"env": d.masked_env()}))
