"""The Slurm target: one sbatch job per run, followed through squeue and sacct.

Handle: ``{"run_id", "job_id", "nodes": [...], "head": node}``. The job script (rendered
by ``slurm_render``) writes ``endpoint.json`` into the run dir once the head node's IP is
known; the server's URL comes from there. Only the job id Hangar submitted is ever
cancelled.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from hangar.deploy.schema import Deployment
from hangar.errors import CommandFailed, HangarError
from hangar.launch.targets.base import Observed, RenderContext, Rendered, Stopped
from hangar.launch.targets.slurm_job import ENDPOINT_FILE  # the job writes it
from hangar.proc import run

_TIMEOUT = 30.0  # one Slurm command; slurmctld answers in milliseconds when it is up

# squeue %T states (man squeue, JOB STATE CODES) by what they mean for the launch.
_QUEUED = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SUSPENDED"}
_RUNNING = {"RUNNING", "CONFIGURING", "RESIZING", "SIGNALING", "STAGE_OUT"}
_FAILED = {
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
    "REVOKED",
    "SPECIAL_EXIT",
}


class SlurmNotInstalled(HangarError):
    def __init__(self, command: str) -> None:
        super().__init__(
            f'{command} is not installed here: a target.kind = "slurm" deployment is '
            "submitted from a host with the Slurm client commands (a login node)",
            hint='run it on the cluster\'s login node, or set [target] kind = "local"',
        )


class SlurmRejected(HangarError):
    """sbatch refused the job (bad partition, more GPUs than a node has, ...)."""

    def __init__(self, message: str) -> None:
        super().__init__(
            f"Slurm rejected the job: {message}",
            hint="hangar preflight FILE   (the slurm.* checks), then fix [target.slurm]",
        )
        self.slurm_message = message


def slurm(argv: list[str], env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run a Slurm client command; the one place its failures are translated."""
    try:
        return run(argv, env=env, timeout=_TIMEOUT, check=check).stdout
    except CommandFailed as exc:
        if exc.code == 127:
            raise SlurmNotInstalled(argv[0]) from exc
        raise


def parse_job_id(stdout: str) -> str:
    """``sbatch --parsable`` prints ``jobid[;cluster]``."""
    first = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = first.split(";", 1)[0].strip()
    if not job_id.isdigit():
        raise SlurmRejected(f"sbatch printed no job id ({stdout.strip()!r})")
    return job_id


def find_job(run_id: str, run_dir: Path) -> dict[str, Any] | None:
    """The handle of this user's queued or running job whose working directory is the run
    dir (sbatch --chdir): a launcher killed between sbatch and recording the job id left a
    job only this finds, so `hangar status` shows it and `hangar clean` cancels it by id."""
    try:
        out = slurm(["squeue", "--me", "-h", "-o", "%i|%Z"], check=False)
    except (SlurmNotInstalled, CommandFailed):
        return None
    for line in out.splitlines():
        job_id, _, work_dir = line.strip().partition("|")
        if job_id.isdigit() and work_dir and Path(work_dir) == run_dir:
            return {"run_id": run_id, "job_id": job_id, "nodes": [], "head": None}
    return None


def _sbatch_error(exc: CommandFailed) -> str:
    lines = [ln.strip() for ln in (exc.stderr or exc.stdout).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()] or lines or [str(exc)]
    return errors[-1].removeprefix("sbatch: error: ")


class SlurmTarget:
    kind = "slurm"

    def render(self, d: Deployment, ctx: RenderContext) -> Rendered:
        from hangar.launch.targets.slurm_render import render_slurm

        rendered: Rendered = render_slurm(d, ctx)
        return rendered

    def submit(self, rendered: Rendered, ctx: RenderContext, env: dict[str, str]) -> dict[str, Any]:
        try:
            out = slurm(list(rendered.argv), env=env)
        except CommandFailed as exc:
            raise SlurmRejected(_sbatch_error(exc)) from exc
        return {"run_id": ctx.run_id, "job_id": parse_job_id(out), "nodes": [], "head": None}

    def status(self, handle: dict[str, Any], run_dir: Path) -> Observed:
        job_id = str(handle["job_id"])
        line = slurm(["squeue", "-h", "-j", job_id, "-o", "%T|%r|%N"], check=False).strip()
        if line:
            return _from_squeue(line.splitlines()[0], handle, run_dir)
        return _from_sacct(job_id, handle)

    def logs(self, handle: dict[str, Any], run_dir: Path) -> list[Path]:
        job = run_dir / f"slurm-{handle.get('job_id')}.out"
        nodes = sorted(run_dir.glob("node-*.log"))
        return [p for p in (job, *nodes) if p.exists()] or [job]

    def stop(self, handle: dict[str, Any], run_dir: Path, grace_s: float) -> Stopped:
        job_id = str(handle["job_id"])
        if not _in_queue(job_id):
            return Stopped(signalled=0, forced=False, detail=f"job {job_id} already ended")
        slurm(["scancel", job_id], check=False)
        if _wait_gone(job_id, grace_s + 5):
            return Stopped(signalled=1, forced=False, detail=f"job {job_id} cancelled")
        slurm(["scancel", "--full", "--signal=KILL", job_id], check=False)
        gone = _wait_gone(job_id, 30)
        detail = f"job {job_id} killed" if gone else f"job {job_id} still listed by squeue"
        return Stopped(signalled=1, forced=True, detail=detail)


def _from_squeue(line: str, handle: dict[str, Any], run_dir: Path) -> Observed:
    state, reason, nodelist = (line.split("|") + ["", "", ""])[:3]
    if state in _QUEUED:
        return Observed(phase="queued", reason=reason)
    if state in _RUNNING:
        nodes = expand_nodes(nodelist) if nodelist and not handle.get("nodes") else None
        new = {**handle, "nodes": nodes, "head": nodes[0]} if nodes else None
        return Observed(phase="running", base_url=endpoint_url(run_dir), handle=new)
    return Observed(phase="exited", reason=state.lower())


def _from_sacct(job_id: str, handle: dict[str, Any]) -> Observed:
    out = slurm(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode"], check=False)
    rows = [r.split("|") for r in out.strip().splitlines() if "|" in r]
    if not rows:  # accounting disabled, or the record not written yet: the job is gone
        return Observed(phase="gone", reason="left the queue (no accounting record)")
    state, code = rows[0][0].split()[0], rows[0][1]
    failed = state in _FAILED or code not in ("0:0", "")
    return Observed(phase="failed" if failed else "exited", reason=f"{state.lower()} (exit {code})")


def expand_nodes(nodelist: str) -> list[str]:
    """``ns[1-2]`` -> ``["ns1", "ns2"]``, as Slurm expands it."""
    out = slurm(["scontrol", "show", "hostnames", nodelist], check=False)
    return [n for n in out.split() if n] or [nodelist]


def endpoint_url(run_dir: Path) -> str | None:
    """The URL the job wrote once the head node's IP was known."""
    try:
        data = json.loads((run_dir / ENDPOINT_FILE).read_text(encoding="utf-8"))
        host, port = str(data["host"]), int(data["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _in_queue(job_id: str) -> bool:
    return bool(slurm(["squeue", "-h", "-j", job_id, "-o", "%i"], check=False).strip())


def _wait_gone(job_id: str, timeout_s: float) -> bool:
    """The job and its steps no longer listed (squeue covers steps with the job)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _in_queue(job_id):
            return True
        time.sleep(0.5)
    return False
