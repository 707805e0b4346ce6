"""The local target: start ``vllm serve`` in its own process group and supervise it.

Layout of one run (all 0700, under Hangar's state dir)::

    runs/<id>/server.log     the whole log, kept on failure
    runs/<id>/launch.json    argv, env Hangar added (secrets masked), workarounds, overrides
    runs/<id>/tmp/           TMPDIR: vLLM IPC sockets, vllm_dist_* dirs
    deployments/<id>.toml    the deployment while it runs (hangar engines remove reads it)

Compile caches are per engine under the cache dir (engines/<key>/{vllm,torchinductor,triton}).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.deploy.io import render_toml
from hangar.deploy.schema import Deployment
from hangar.launch import process
from hangar.launch.engine import engine_key
from hangar.launch.errors import LaunchFailed, PreflightFailed, RunNotLive
from hangar.launch.readiness import NotReady, wait_ready
from hangar.launch.spec import LaunchSpec, build_launch, engine_cache_dir, runs_root
from hangar.paths import atomic_write_text, state_dir
from hangar.preflight.engine import EngineFacts
from hangar.preflight.runner import PreflightReport, preflight
from hangar.store import runs as store
from hangar.store.db import connect

Progress = Callable[[str, str], None]  # (event, detail)


class LaunchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    run: store.RunRecord
    report: PreflightReport
    spec: LaunchSpec


def deployment_record(run_id: str) -> Path:
    return state_dir() / "deployments" / f"{run_id}.toml"


def _private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def live_utilizations(conn: object) -> dict[str, float]:
    """gpu_memory_utilization of every live Hangar run on this host (shared-GPU check)."""
    out: dict[str, float] = {}
    for run in store.list_runs(conn, live_only=True):  # type: ignore[arg-type]
        if process.run_processes(run.id, run.pgid):
            serve = run.deployment.get("serve", {})
            out[run.id] = float(serve.get("gpu_memory_utilization") or 0.92)
    return out


def launch(
    d: Deployment,
    *,
    force: bool = False,
    progress: Progress | None = None,
    env: Mapping[str, str] | None = None,
) -> LaunchResult:
    """Preflight, start, wait for real readiness, record. Raises PreflightFailed / LaunchFailed."""
    emit = progress or (lambda event, detail: None)
    base_env = dict(os.environ if env is None else env)
    conn = connect()
    store.ensure_schema(conn)
    others = live_utilizations(conn) if not _cpu_only(d) else {}
    report = preflight(d, env=base_env, other_runs_util=others)
    emit("preflight", f"{len(report.findings)} findings in {report.seconds:.2f}s")
    if not report.ok and not force:
        raise PreflightFailed([f"{f.id}: {f.message}" for f in report.errors()])
    if report.engine is None or not report.engine.exists:
        raise PreflightFailed(
            [f"{f.id}: {f.message}" for f in report.errors()] or ["engine not found"]
        )
    run_id = store.new_run_id(conn)
    spec = _prepare(d, report, run_id)
    record = _record(d, report.engine, spec, run_id)
    store.insert_run(conn, record)
    try:
        child = _spawn(spec, base_env, run_id)
    except OSError as exc:  # not executable, bad #! line, ...: no process, so no "starting" run
        store.finish_run(conn, run_id, "failed", error=f"process: {exc.strerror or exc}")
        _drop_record(run_id)
        raise LaunchFailed(
            run_id,
            "process",
            f"cannot start {spec.argv[0]}: {exc.strerror or exc}",
            str(spec.log_path),
        ) from exc
    store.update_run(conn, run_id, pid=child.pid, pgid=child.pid)
    emit("started", f"run {run_id}, pid {child.pid}, log {spec.log_path}")
    timings = _await(conn, d, spec, run_id, child, base_env, emit)
    store.update_run(conn, run_id, status="ready", timings_json=json.dumps(timings))
    return LaunchResult(run=store.get_run(conn, run_id), report=report, spec=spec)


def _cpu_only(d: Deployment) -> bool:
    return d.resources.gpu is None


def _prepare(d: Deployment, report: PreflightReport, run_id: str) -> LaunchSpec:
    assert report.engine is not None
    run_dir = _private_dir(runs_root() / run_id)
    _private_dir(run_dir / "tmp")
    cache = engine_cache_dir(engine_key(d.engine))
    for sub in ("vllm", "torchinductor", "triton"):
        _private_dir(cache / sub)
    spec = build_launch(d, report.engine, list(report.workarounds), run_dir, cache)
    launch_doc = {
        "argv": list(spec.argv),
        "env": spec.recorded_env(),
        "workarounds": [w.id for w in report.workarounds],
        "overrides": [o.model_dump() for o in spec.applied.overrides],
    }
    atomic_write_text(run_dir / "launch.json", json.dumps(launch_doc, indent=2), mode=0o600)
    atomic_write_text(deployment_record(run_id), _masked_toml(d), mode=0o600)
    return spec


def _masked_toml(d: Deployment) -> str:
    return render_toml(d.model_copy(update={"env": d.masked_env()}))


def _record(d: Deployment, engine: EngineFacts, spec: LaunchSpec, run_id: str) -> store.RunRecord:
    return store.RunRecord(
        id=run_id,
        label=d.label,
        target="local",
        base_url=spec.base_url,
        log_path=str(spec.log_path),
        run_dir=str(spec.run_dir),
        deployment_json=json.dumps(d.snapshot()),
        engine=d.engine,
        engine_python=str(engine.python),
        vllm_version=engine.vllm_version,
        workarounds_json=json.dumps([o for o in spec.applied.ids]),
        argv_json=json.dumps(list(spec.argv)),
        status="starting",
        started_at=time.time(),
    )


def _spawn(spec: LaunchSpec, base_env: Mapping[str, str], run_id: str) -> subprocess.Popen[bytes]:
    # A long-running server, so Popen rather than hangar.proc.run: argv list, explicit
    # env, its own session/process group (stop signals the group, never a name).
    env = {**spec.child_env(base_env), process.MARKER: run_id}
    fd = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        child = subprocess.Popen(
            list(spec.argv),
            env=env,
            cwd=spec.run_dir,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        os.close(fd)
    process.track(child)
    return child


def _await(
    conn: object,
    d: Deployment,
    spec: LaunchSpec,
    run_id: str,
    child: subprocess.Popen[bytes],
    base_env: Mapping[str, str],
    emit: Progress,
) -> dict[str, float]:
    api_key = spec.child_env(base_env).get("VLLM_API_KEY")
    local = d.target.local
    try:
        return wait_ready(
            lambda: child.poll() is None,
            spec.base_url,
            spec.served_name,
            local.ready_timeout_s,
            lambda stage, t: emit("stage", f"{stage} ok after {t:.1f}s"),
            api_key=api_key,
        )
    except NotReady as exc:
        raise _fail(conn, run_id, spec, local.stop_grace_s, exc.stage, exc.reason) from None
    except BaseException:
        process.terminate(run_id, child.pid, local.stop_grace_s)
        store.finish_run(conn, run_id, "stopped", error="interrupted during startup")  # type: ignore[arg-type]
        _drop_record(run_id)
        raise


def _fail(
    conn: object, run_id: str, spec: LaunchSpec, grace: float, stage: str, reason: str
) -> LaunchFailed:
    """Stop what is left, keep the log, mark the run failed; the error to raise."""
    run = store.get_run(conn, run_id)  # type: ignore[arg-type]
    process.terminate(run_id, run.pgid, grace)
    block = error_block(spec.log_path)
    store.finish_run(conn, run_id, "failed", error=f"{stage}: {reason}")  # type: ignore[arg-type]
    _drop_record(run_id)
    return LaunchFailed(run_id, stage, reason, str(spec.log_path), block, _diagnose(spec.log_path))


def _drop_record(run_id: str) -> None:
    deployment_record(run_id).unlink(missing_ok=True)


_ERROR_START = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|Error:|error:")


def error_block(log_path: Path, max_lines: int = 40) -> str:
    """The last error block of a log: from the first error line of the final burst to the end."""
    try:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    tail = lines[-400:]
    starts = [i for i, line in enumerate(tail) if _ERROR_START.search(line)]
    if not starts:
        return "\n".join(tail[-max_lines:])
    first = starts[0]
    for i in reversed(starts):  # walk back over one contiguous burst of error lines
        if i < starts[-1] - max_lines:
            break
        first = i
    return "\n".join(tail[first : first + max_lines])


def _diagnose(log_path: Path) -> str | None:
    """hangar doctor's one-line verdict, when that stage is installed."""
    try:
        from hangar.diagnose import diagnose_paths
    except ImportError:
        return None
    try:
        top = diagnose_paths([log_path]).top
    except Exception:  # noqa: BLE001  a diagnosis bug must not hide the launch failure
        return None
    if top is None:
        return None
    return f"{top.title or top.cause}: {top.explanation} Fix: {top.fix}"


def stop(run_ref: str | None, *, grace_s: float | None = None) -> tuple[store.RunRecord, int, bool]:
    """SIGTERM the run's process group, SIGKILL after the grace period; mark it stopped."""
    conn = connect()
    store.ensure_schema(conn)
    run = store.get_run(conn, run_ref)
    if not process.run_processes(run.id, run.pgid):
        if run.status in store.LIVE_STATUSES:
            store.finish_run(conn, run.id, "exited")
            _drop_record(run.id)
        raise RunNotLive(run.id, store.get_run(conn, run.id).status)
    grace = (
        grace_s
        if grace_s is not None
        else float(run.deployment.get("target", {}).get("local", {}).get("stop_grace_s", 30))
    )
    count, killed = process.terminate(run.id, run.pgid, grace)
    store.finish_run(conn, run.id, "stopped")
    _drop_record(run.id)
    _remove_tmp(Path(run.run_dir))
    return store.get_run(conn, run.id), count, killed


def _remove_tmp(run_dir: Path) -> None:
    import shutil

    shutil.rmtree(run_dir / "tmp", ignore_errors=True)


class Restarted(BaseModel):
    model_config = ConfigDict(frozen=True)

    old_run: str
    new_run: str | None
    error: str | None = None


def live_runs_using(engine: str) -> list[store.RunRecord]:
    """Live runs (still holding processes) whose deployment names ``engine``."""
    conn = connect()
    store.ensure_schema(conn)
    return [
        run
        for run in store.list_runs(conn, live_only=True)
        if run.engine == engine and process.run_processes(run.id, run.pgid)
    ]


def relaunchable(run: store.RunRecord) -> Deployment:
    """The recorded deployment, minus masked secrets (they come from the shell again)."""
    data = run.deployment
    data["env"] = {k: v for k, v in (data.get("env") or {}).items() if v != "***"}
    return Deployment.model_validate(data)


def restart_runs_using(engine: str, *, progress: Progress | None = None) -> list[Restarted]:
    """Stop each live run on ``engine`` (its process group only) and launch it again, so it
    picks up the engine's current build. A failed relaunch is reported, never hidden."""
    results = []
    for run in live_runs_using(engine):
        deployment = relaunchable(run)
        stop(run.id)
        try:
            new = launch(deployment, progress=progress)
        except (LaunchFailed, PreflightFailed) as exc:
            results.append(Restarted(old_run=run.id, new_run=None, error=str(exc)))
            continue
        results.append(Restarted(old_run=run.id, new_run=new.run.id))
    return results
