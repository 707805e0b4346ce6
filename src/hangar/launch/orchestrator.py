"""The target-neutral launch: preflight → render → record → submit → readiness → diagnosis.

Nothing here knows how a target runs things; it drives the ``Target`` Protocol
(launch/targets/base.py) and records every step in the runs store as typed events. The
claim on the host (run dir, port, recorded row) is claim.py's; a run once recorded (its
logs, where it is now, stopping it) is recorded.py's; relaunching runs is restart.py's.

Layout of one run (all 0700, under Hangar's state dir)::

    runs/<id>/launch.json    argv, env Hangar added (secrets masked), workarounds, overrides
    runs/<id>/<rendered>     what the target rendered (job.sbatch, node.sh, ...)
    runs/<id>/server.json    the URL, written once the server answered
    runs/<id>/tmp/           the local target's TMPDIR
    deployments/<id>.toml    the deployment while it runs (hangar engines remove reads it)
    launch.lock              held while a launch checks its port and records its run

Who owns the server: the launching process (its PID, start time and boot id are recorded)
until it hands the server over, at readiness, or right after submit with ``detach``. Until
then SIGINT, SIGTERM and SIGHUP stop what was started (a second signal waits for that
cleanup); afterwards only `hangar stop` / `hangar clean` touch it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import Deployment, SlurmTargetSection, is_secret_name
from hangar.engines.resolve import engine_key
from hangar.errors import HangarError, InputError, Interrupted, remember_for_crash_log
from hangar.launch import claim
from hangar.launch.error_block import failing_block
from hangar.launch.errors import LaunchFailed, PreflightFailed
from hangar.launch.events import Clock, EventSink, LaunchEvent
from hangar.launch.readiness import NotReady, wait_ready
from hangar.launch.recorded import deployment_record
from hangar.launch.signals import StopSignals
from hangar.launch.targets import Observed, RenderContext, Rendered, Target, target_for
from hangar.paths import (
    atomic_write_text,
    engine_cache_dir,
)
from hangar.preflight.engine import EngineFacts
from hangar.preflight.runner import PreflightReport, preflight
from hangar.store import runs as store
from hangar.store.db import connect

# Reads the logs of a failed run and names the cause; injected by the caller (the CLI
# passes hangar doctor's), because diagnosis is a stage above launch.
Diagnoser = Callable[[list[Path]], str | None]

SERVER_FILE = "server.json"


class LaunchResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    run: store.RunRecord
    report: PreflightReport
    rendered: Rendered


def _secrets(d: Deployment) -> dict[str, str]:
    return {k: v for k, v in d.env.items() if is_secret_name(k)}


def context_for(
    d: Deployment, engine: EngineFacts, report: PreflightReport, run_id: str, run_dir: Path
) -> RenderContext:
    return RenderContext(
        run_id=run_id,
        run_dir=run_dir,
        engine=engine,
        engine_cache=engine_cache_dir(engine_key(d.engine)),
        applied=report.applied,
        secret_names=tuple(sorted(_secrets(d))),
    )


def checked(d: Deployment, env: Mapping[str, str], force: bool) -> PreflightReport:
    """Preflight; PreflightFailed when it found errors (unless forced) or has no engine."""
    conn = connect()
    others = claim.live_utilizations(conn) if d.resources.gpu is not None else {}
    report = preflight(d, env=env, other_runs_util=others)
    errors = [f"{f.id}: {f.message}" for f in report.errors()]
    if report.engine is None or not report.engine.exists:
        # Checked first: no engine cannot be forced, so the hint must not offer --force.
        failed = PreflightFailed(errors or ["engine not found"])
        failed.hint = "hangar engines list   (then set engine = NAME, or a /path/to/bin/python)"
        raise failed
    if not report.ok and not force:
        raise PreflightFailed(errors)
    return report


def render(
    d: Deployment, report: PreflightReport, run_dir: Path, run_id: str = "RUN_ID"
) -> Rendered:
    """What the target would run, without running it (``hangar render``, ``--dry-run``)."""
    assert report.engine is not None
    ctx = context_for(d, report.engine, report, run_id, run_dir)
    return target_for(d.target.kind).render(d, ctx)


def launch(
    d: Deployment,
    *,
    force: bool = False,
    on_event: EventSink | None = None,
    env: Mapping[str, str] | None = None,
    diagnose: Diagnoser | None = None,
    detach: bool = False,
) -> LaunchResult:
    """Preflight, render, record, submit, wait for real readiness, hand the server over.
    ``detach``: hand it over right after submit, without waiting. Raises PreflightFailed /
    PortInUse (nothing started) / LaunchFailed (the run kept as failed, with its logs and
    the diagnosis) / Interrupted (what was started is stopped, the run marked stopped)."""
    clock = Clock()
    sink = on_event or (lambda event: None)
    base_env = dict(os.environ if env is None else env)
    report = checked(d, base_env, force)
    sink(clock.event("preflight", f"{len(report.findings)} findings in {report.seconds:.2f}s"))
    assert report.engine is not None
    remember_for_crash_log("engine", f"{d.engine}: vLLM {report.engine.vllm_version}")
    conn = connect()
    run_id, run_dir = claim.new_run_dir(conn)
    run = _Run(conn, clock, sink, run_id)
    target = target_for(d.target.kind)
    ctx = context_for(d, report.engine, report, run_id, run_dir)
    rendered = target.render(d, ctx)
    run.emit("render", f"{d.target.kind}: {len(rendered.files)} files, {rendered.argv[0]}")
    with StopSignals() as signals, _owned(run, target, d, signals, diagnose):
        with signals.deferred():  # a signal here waits until the run and its handle are recorded
            claim.claim_and_record(conn, d, report.engine, ctx, rendered)
            claim.record_host(ctx, report)
            run.emit("record", str(ctx.run_dir))
            handle = _submit(run, target, rendered, ctx, {**base_env, **_secrets(d)})
        if detach:
            _hand_over(run, "detached right after submit")
        else:
            url, timings = _follow(run, target, handle, d, rendered)
            _ready(run, ctx.run_dir, url, rendered, timings)
    return LaunchResult(run=run.record(), report=report, rendered=rendered)


class _Run:
    """One launch in progress: its store row, its clock, its event sink."""

    def __init__(self, conn: Any, clock: Clock, sink: EventSink, run_id: str) -> None:
        self.conn, self.clock, self.sink, self.id = conn, clock, sink, run_id
        self.handle: dict[str, Any] = {}

    def emit(self, stage: Any, detail: str = "", ok: bool = True) -> LaunchEvent:
        event = self.clock.event(stage, detail, self.id, ok)
        store.add_event(self.conn, self.id, event.stage, event.at, event.detail)
        self.sink(event)
        return event

    def record(self) -> store.RunRecord:
        return store.get_run(self.conn, self.id)

    def set_handle(self, handle: dict[str, Any]) -> None:
        self.handle = handle
        store.set_handle(self.conn, self.id, handle)


def _submit(
    run: _Run, target: Target, rendered: Rendered, ctx: RenderContext, env: dict[str, str]
) -> dict[str, Any]:
    try:
        handle = target.submit(rendered, ctx, env)
    except HangarError as exc:  # nothing started, so no live run
        store.finish_run(run.conn, run.id, "failed", error=f"submit: {exc.message}")
        run.emit("failed", f"submit: {exc.message}", ok=False)
        deployment_record(run.id).unlink(missing_ok=True)
        raise
    run.set_handle(handle)
    logs = target.logs(handle, ctx.run_dir)
    if logs:
        store.update_run(run.conn, run.id, log_path=str(logs[0]))
    what = f"job {handle['job_id']}" if "job_id" in handle else f"pid {handle.get('pid')}"
    run.emit("submit", f"run {run.id}, {what}, log {logs[0] if logs else '-'}")
    return handle


def _poll_s(d: Deployment) -> float:
    return 1.0 if isinstance(d.target, SlurmTargetSection) else 0.5


def _timeouts(d: Deployment) -> tuple[float, float]:
    """(queue timeout, readiness timeout) of the deployment's target."""
    if isinstance(d.target, SlurmTargetSection):
        return d.target.slurm.queue_timeout_s, d.target.slurm.ready_timeout_s
    # local and container: no queue; the section's own readiness timeout
    return 0.0, float(getattr(d.target, d.target.kind).ready_timeout_s)


def _follow(
    run: _Run, target: Target, handle: dict[str, Any], d: Deployment, rendered: Rendered
) -> tuple[str, dict[str, float]]:
    """Wait for the run to be placed and its URL known, then for real readiness."""
    run_dir = Path(run.record().run_dir)
    url = _placed(run, target, handle, d, rendered, run_dir)
    run.emit("endpoint", url)
    store.update_run(run.conn, run.id, base_url=url, status="starting")
    alive = _Alive(target, run, run_dir, _poll_s(d) * 2)
    api_key = os.environ.get("VLLM_API_KEY") or d.env.get("VLLM_API_KEY")
    _, ready_timeout = _timeouts(d)
    timings = wait_ready(
        alive,
        url,
        rendered.served_name,
        ready_timeout,
        lambda stage, t: run.emit(stage, f"ok after {t:.1f}s"),  # type: ignore[arg-type]
        api_key=api_key,
        poll_s=_poll_s(d),
    )
    return url, {**timings, "submit_to_ready_s": run.clock.event("ready").elapsed_s}


def _placed(
    run: _Run,
    target: Target,
    handle: dict[str, Any],
    d: Deployment,
    rendered: Rendered,
    run_dir: Path,
) -> str:
    """Poll the target until it runs and knows its URL; NotReady on a timeout or exit."""
    queue_timeout, ready_timeout = _timeouts(d)
    started = time.monotonic()
    last_reason, running_since = None, None
    while True:
        obs = target.status(run.handle or handle, run_dir)
        if obs.handle:
            run.set_handle(obs.handle)
        if obs.phase == "queued":
            if obs.reason != last_reason:
                run.emit("queued", obs.reason or "pending")
                last_reason = obs.reason
            if time.monotonic() - started > queue_timeout:
                raise NotReady("queued", f"still pending ({obs.reason}) after {queue_timeout:.0f}s")
        elif obs.phase == "running":
            if running_since is None:
                running_since = time.monotonic()
                nodes = ",".join((obs.handle or run.handle).get("nodes") or [])
                run.emit("running", f"nodes {nodes}" if nodes else "started")
            url = rendered.base_url or obs.base_url
            if url:
                return url
            if time.monotonic() - running_since > ready_timeout:
                raise NotReady(
                    "endpoint", f"the job never wrote its endpoint in {ready_timeout:.0f}s"
                )
        else:
            raise NotReady("process", _exit_reason(obs))
        time.sleep(_poll_s(d))


def _exit_reason(obs: Observed) -> str:
    return f"the job ended before serving ({obs.reason})" if obs.reason else "the server exited"


class _Alive:
    """``alive()`` for readiness polling, asking the target at most every ``every_s``."""

    def __init__(self, target: Target, run: _Run, run_dir: Path, every_s: float) -> None:
        self.target, self.run, self.run_dir, self.every_s = target, run, run_dir, every_s
        self.checked, self.answer = 0.0, True

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.checked >= self.every_s:
            self.answer = self.target.status(self.run.handle, self.run_dir).phase == "running"
            self.checked = now
        return self.answer


def _ready(
    run: _Run, run_dir: Path, url: str, rendered: Rendered, timings: dict[str, float]
) -> None:
    doc = {"url": url, "model": rendered.served_name, "run_id": run.id, "target": rendered.kind}
    atomic_write_text(run_dir / SERVER_FILE, json.dumps(doc, indent=2), mode=0o600)
    # Ready and handed over in one write: there is no moment where a kill -9 of the
    # launcher leaves a ready server that looks orphaned.
    store.update_run(
        run.conn,
        run.id,
        status="ready",
        timings_json=json.dumps(timings),
        launcher_json=_handed_over(run.record(), "handed over at readiness"),
    )
    run.emit("ready", url)


def _handed_over(record: store.RunRecord, how: str) -> str:
    return json.dumps({**record.launcher, "detached": True, "handover": how})


def _hand_over(run: _Run, how: str) -> None:
    """From here on the server belongs to the run record: signals to this process no
    longer touch it; `hangar stop` does."""
    store.update_run(run.conn, run.id, launcher_json=_handed_over(run.record(), how))
    run.emit("detached", how)


def _grace(d: Deployment) -> float:
    return d.target.stop_grace_s


def _fail(
    run: _Run, target: Target, d: Deployment, stage: str, reason: str, diagnose: Diagnoser | None
) -> LaunchFailed:
    """Stop what is left, keep the logs, mark the run failed; the error to raise."""
    record = run.record()
    run_dir = Path(record.run_dir)
    target.stop(run.handle, run_dir, _grace(d))
    logs = target.logs(run.handle, run_dir)
    block = failing_block(logs)
    store.finish_run(run.conn, run.id, "failed", error=f"{stage}: {reason}")
    run.emit("failed", f"{stage}: {reason}", ok=False)
    deployment_record(run.id).unlink(missing_ok=True)
    verdict = _diagnosis(diagnose, logs)
    return LaunchFailed(
        run.id, stage, reason, str(logs[0] if logs else record.log_path), block, verdict
    )


def _diagnosis(diagnose: Diagnoser | None, logs: list[Path]) -> str | None:
    if diagnose is None:
        return None
    try:
        return diagnose([p for p in logs if p.exists()])
    except Exception:  # noqa: BLE001  a diagnosis bug must not hide the launch failure
        return None


def _abandon(run: _Run, target: Target, d: Deployment, why: str) -> None:
    """Stop what was started and mark the run stopped (only while it is still live: a run
    already marked failed by a refused submit keeps its status)."""
    try:
        record = run.record()
    except InputError:  # never recorded (refused before): nothing was started
        return
    if not record.live:
        return
    if run.handle:
        target.stop(run.handle, Path(record.run_dir), _grace(d))
    store.finish_run(run.conn, run.id, "stopped", error=why)
    run.emit("stopped", why, ok=False)
    deployment_record(run.id).unlink(missing_ok=True)
    shutil.rmtree(Path(record.run_dir) / "tmp", ignore_errors=True)


@contextmanager
def _owned(
    run: _Run, target: Target, d: Deployment, signals: StopSignals, diagnose: Diagnoser | None
) -> Iterator[None]:
    """While the launch owns the server: a readiness failure becomes LaunchFailed, any other
    way out (a signal, Ctrl-C, a bug) stops what was started. Cleanup defers new signals."""
    try:
        yield
    except NotReady as exc:
        with signals.deferred(then_raise=False):
            failed = _fail(run, target, d, exc.stage, exc.reason, diagnose)
        raise failed from None
    except BaseException as exc:
        why = f"interrupted by {exc}" if isinstance(exc, Interrupted) else "interrupted"
        with signals.deferred(then_raise=False):
            _abandon(run, target, d, f"{why} during startup")
        raise
