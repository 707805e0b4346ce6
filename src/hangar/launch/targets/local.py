"""The local target: ``vllm serve`` in its own process group on this host.

Handle: ``{"run_id", "pid", "pgid", "start", "boot"}``. A process belongs to the run only
when it carries ``HANGAR_RUN_ID=<id>`` (launch.process), or is the recorded leader with the
recorded start time (``/proc/PID/stat`` field 22) since the same boot, so a reused PID
never gets a signal and never passes for the server.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from hangar.deploy.schema import Deployment, LocalTargetSection
from hangar.errors import HangarError
from hangar.launch import process
from hangar.launch.spec import build_launch
from hangar.launch.targets.base import Observed, RenderContext, Rendered, Stopped

LOG_NAME = "server.log"


class ProcessStartFailed(HangarError):
    """The executable could not be started at all (no process, so no run)."""

    def __init__(self, argv0: str, reason: str) -> None:
        super().__init__(f"cannot start {argv0}: {reason}", hint="hangar preflight FILE")
        self.reason = reason


class LocalTarget:
    kind = "local"

    def render(self, d: Deployment, ctx: RenderContext) -> Rendered:
        spec = build_launch(d, ctx.engine, ctx.applied, ctx.run_dir, ctx.engine_cache)
        return Rendered(
            kind=self.kind,
            argv=spec.argv,
            env={k: v for k, v in spec.env_overlay.items() if k not in ctx.secret_names},
            secret_env=ctx.secret_names,
            base_url=spec.base_url,
            served_name=spec.served_name,
            applied=spec.applied,
        )

    def submit(self, rendered: Rendered, ctx: RenderContext, env: dict[str, str]) -> dict[str, Any]:
        child_env = {**env, **rendered.env, process.MARKER: ctx.run_id}
        for name in rendered.secret_env:  # the deployment's secrets win, as its env does
            if name in env:
                child_env[name] = env[name]
        child = _spawn(rendered.argv, child_env, ctx.run_dir)
        return {"run_id": ctx.run_id, "pgid": child.pid, **identity(child.pid)}

    def status(self, handle: dict[str, Any], run_dir: Path) -> Observed:
        if (
            process.own_child_alive(handle.get("pid"))
            or is_same_process(handle)
            or process.run_processes(str(handle.get("run_id")), handle.get("pgid"))
        ):
            return Observed(phase="running")
        return Observed(phase="exited", reason="the server process exited")

    def logs(self, handle: dict[str, Any], run_dir: Path) -> list[Path]:
        return [run_dir / LOG_NAME]

    def stop(self, handle: dict[str, Any], run_dir: Path, grace_s: float) -> Stopped:
        count, killed = process.terminate(str(handle.get("run_id")), handle.get("pgid"), grace_s)
        how = "SIGKILL after the grace period" if killed else "SIGTERM"
        return Stopped(signalled=count, forced=killed, detail=f"{count} processes, {how}")


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot, /proc/PID/stat field 22); None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # comm may hold spaces and ')'
    return int(fields[19]) if len(fields) > 19 and fields[0] not in ("Z", "X") else None


def identity(pid: int) -> dict[str, Any]:
    """What tells this process apart from a later one given the same PID."""
    return {"pid": pid, "start": start_ticks(pid), "boot": boot_id()}


def is_same_process(recorded: dict[str, Any]) -> bool:
    """The recorded process is alive and is the one recorded (same start time and boot):
    a PID reused by another process is not mistaken for it."""
    pid, start = recorded.get("pid"), recorded.get("start")
    if not isinstance(pid, int) or start is None:
        return False
    return start_ticks(pid) == start and recorded.get("boot") == boot_id()


def grace_of(d: Deployment) -> float:
    assert isinstance(d.target, LocalTargetSection)
    return d.target.local.stop_grace_s


def _spawn(argv: tuple[str, ...], env: dict[str, str], run_dir: Path) -> subprocess.Popen[bytes]:
    # A long-running server, so Popen rather than hangar.proc.run: argv list, explicit
    # env, its own session/process group (stop signals the group, never a name).
    log = run_dir / LOG_NAME
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = subprocess.Popen(
            list(argv),
            env=env,
            cwd=run_dir,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:  # not executable, bad #! line, ...
        raise ProcessStartFailed(argv[0], exc.strerror or str(exc)) from exc
    finally:
        os.close(fd)
    process.track(child)
    return child
