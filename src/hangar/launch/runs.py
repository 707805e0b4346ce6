"""Status and cleanup of recorded runs (the library side of status / clean)."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.launch import process
from hangar.launch.readiness import health_ok
from hangar.launch.recorded import (
    deployment_record,
    handle_of,
    launcher_alive,
    observe,
    recorded_grace,
)
from hangar.launch.targets import target_for
from hangar.paths import runs_root
from hangar.store import runs as store
from hangar.store.db import connect

# `hangar status` asks every ready run's /health: a hung server must not hold the listing
# for readiness's 5 s each (a healthy vLLM answers /health in milliseconds).
STATUS_PROBE_S = 1.0


class RunState(BaseModel):
    """A run as it is now, probed rather than read from its record.

    ``state`` is the record's status, or what the probe found instead: ``orphaned`` (its
    launcher died before handing the server over, the server still runs: `hangar clean`
    stops it) or ``unresponsive`` (ready, its process alive, the endpoint does not answer).
    """

    model_config = ConfigDict(frozen=True)

    run: store.RunRecord
    alive: bool
    pids: tuple[int, ...]  # local runs: the processes carrying the run's marker
    detail: str = ""  # e.g. Slurm's pending reason
    state: str = ""
    fix: str = ""

    @property
    def shown(self) -> str:
        return self.state or self.run.status


def open_store() -> sqlite3.Connection:
    return connect()


def _unreadable(run: store.RunRecord) -> RunState:
    """A row Hangar cannot read: listed (even without --all) with its fix, because nothing
    tells whether its server still runs; only the run's marker is trusted to find one."""
    pids = process.run_processes(run.id, None) if run.target == "local" else []
    running = f"; processes {', '.join(map(str, pids))} carry its marker" if pids else ""
    return RunState(
        run=run,
        alive=True,
        pids=tuple(pids),
        state="unreadable",
        detail=run.unreadable + running,
        fix=store.UNREADABLE_FIX,
    )


def _state(run: store.RunRecord) -> RunState:
    if run.unreadable:
        return _unreadable(run)
    handle = handle_of(run)
    if not run.live or not handle:
        return RunState(run=run, alive=False, pids=())
    obs = target_for(run.target).status(handle, Path(run.run_dir))
    pids = process.run_processes(run.id, handle.get("pgid")) if run.target == "local" else []
    alive = obs.phase in ("queued", "running")
    state = RunState(run=run, alive=alive, pids=tuple(pids), detail=obs.reason)
    if alive and launcher_alive(run) is False:
        return state.model_copy(
            update={
                "state": "orphaned",
                "fix": f"hangar clean   (stops it)   or   hangar stop {run.id}",
                "detail": f"its launcher (pid {run.launcher.get('pid')}) died while starting",
            }
        )
    if (
        alive
        and run.status == "ready"
        and run.base_url
        and not health_ok(run.base_url, None, timeout=STATUS_PROBE_S)
    ):
        return state.model_copy(
            update={
                "state": "unresponsive",
                "fix": f"hangar logs {run.id}   (then hangar stop {run.id})",
                "detail": f"{run.base_url}/health does not answer",
            }
        )
    return state


def refresh(conn: sqlite3.Connection) -> list[RunState]:
    """Every run with its target's view; live runs that are gone become 'exited' (or
    'failed' when their launcher died before the server was ready: lost)."""
    states = []
    for run in store.list_runs(conn):
        state = _state(run)
        if run.live and not state.alive and not _launch_at_work(run):
            state = _ended(conn, run, state)
        elif run.live and state.alive and run.status != "ready" and run.detached:
            state = _promote(conn, run, state)
        states.append(state)
    return states


def _launch_at_work(run: store.RunRecord) -> bool:
    """Its launcher is alive and still owns the run (it records the outcome itself)."""
    return launcher_alive(run) is True


def _ended(conn: sqlite3.Connection, run: store.RunRecord, state: RunState) -> RunState:
    if launcher_alive(run) is False:
        pid = run.launcher.get("pid")
        store.finish_run(
            conn,
            run.id,
            "failed",
            error=f"lost: its launcher (pid {pid}) died while starting and the server is gone",
        )
    else:
        why = "the server exited on its own" if run.target == "local" else state.detail
        store.finish_run(conn, run.id, "exited", error=why or "the job left the queue")
    deployment_record(run.id).unlink(missing_ok=True)
    return RunState(run=store.get_run(conn, run.id), alive=False, pids=())


def _promote(conn: sqlite3.Connection, run: store.RunRecord, state: RunState) -> RunState:
    """A run detached before readiness follows its target: queued -> starting once placed,
    ready once its endpoint answers (nobody else is watching it)."""
    obs = observe(run)
    if obs.phase == "running" and run.status == "queued":
        store.update_run(conn, run.id, status="starting")
        state = state.model_copy(update={"run": store.get_run(conn, run.id)})
    url = run.base_url or (obs.base_url or "")
    if obs.phase != "running" or not url or not health_ok(url, None):
        return state
    store.update_run(conn, run.id, status="ready", base_url=url)
    return state.model_copy(update={"run": store.get_run(conn, run.id)})


class CleanItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: Path | None = None
    run_id: str | None
    why: str
    container: tuple[str, str] | None = None  # (runtime, container id) to remove
    orphan: bool = False  # a server whose launcher died while starting: stopped, not removed
    record: bool = False  # an unreadable row of the store: the row is deleted

    @property
    def what(self) -> str:
        if self.record:
            return f"the unreadable record of run {self.run_id}"
        if self.orphan:
            return f"the orphaned server of run {self.run_id}"
        return (
            f"{self.container[0]} container {self.container[1]}"
            if self.container
            else str(self.path)
        )


# Container states in which nothing runs any more (podman ps / docker ps .State).
_STOPPED_STATES = ("exited", "created", "stopped", "dead", "configured")


def container_items(live: set[str]) -> list[CleanItem]:
    """Stopped containers carrying this Hangar's labels whose runs are no longer live
    (found by label, never by name pattern)."""
    from hangar.launch.targets.container import own_containers

    items = []
    for runtime in ("podman", "docker"):
        if shutil.which(runtime) is None:
            continue
        for row in own_containers(runtime):
            if row["run"] in live or row["state"] not in _STOPPED_STATES:
                continue
            items.append(
                CleanItem(
                    run_id=row["run"],
                    why=f"stopped container {row['name']} of run {row['run']}, no longer live",
                    container=(runtime, row["id"]),
                )
            )
    return items


def clean_plan(conn: sqlite3.Connection, *, logs: bool = False) -> list[CleanItem]:
    """What `hangar clean` removes: files of dead runs only (never a live run's)."""
    states = refresh(conn)
    live = {s.run.id for s in states if s.alive}
    known = {s.run.id: s.run for s in states}
    items: list[CleanItem] = [
        CleanItem(run_id=s.run.id, why=s.detail or "orphaned", orphan=True)
        for s in states
        if s.state == "orphaned"
    ]
    # An unreadable row goes once no process carries its marker (its server, if any, is
    # then gone); its run dir stays until the next clean, as any unrecorded one.
    items += [
        CleanItem(run_id=s.run.id, why=s.run.unreadable, record=True)
        for s in states
        if s.state == "unreadable" and not s.pids
    ]
    root = runs_root()
    for run_dir in sorted(root.iterdir()) if root.is_dir() else []:
        run_id = run_dir.name
        if run_id in live or not run_dir.is_dir():
            continue
        run = known.get(run_id)
        if run is not None and run.status == "failed" and not logs:
            items += [
                CleanItem(
                    path=p,
                    run_id=run_id,
                    why="failed run: temp files and sockets (log kept; --logs removes it)",
                )
                for p in sorted(run_dir.iterdir())
                if p.name != "server.log"
            ]
        else:
            items.append(
                CleanItem(
                    path=run_dir,
                    run_id=run_id,
                    why=f"run dir of a {run.status if run else 'unrecorded'} run",
                )
            )
    items += container_items(live)
    records = deployment_record("x").parent
    for rec in sorted(records.glob("*.toml")) if records.is_dir() else []:
        if rec.stem not in live:
            items.append(
                CleanItem(path=rec, run_id=rec.stem, why="deployment record of a dead run")
            )
    return items


def clean(
    conn: sqlite3.Connection, *, dry_run: bool = False, logs: bool = False
) -> list[CleanItem]:
    items = clean_plan(conn, logs=logs)
    if not dry_run:
        for item in items:
            if item.record and item.run_id is not None:
                store.delete_run(conn, item.run_id)
            elif item.orphan and item.run_id is not None:
                stop_orphan(conn, item.run_id)
            elif item.container is not None:
                from hangar.launch.targets.container import remove_container

                remove_container(*item.container)
            elif item.path is None:
                continue
            elif item.path.is_dir() and not item.path.is_symlink():
                shutil.rmtree(item.path, ignore_errors=True)
            else:
                item.path.unlink(missing_ok=True)
    return items


def stop_orphan(conn: sqlite3.Connection, run_id: str) -> None:
    """Stop a server whose launcher died before handing it over, through its target (the
    recorded process group and marker, job id or container: never a name), remove its
    temp dir, and mark the run stopped."""
    run = store.get_run(conn, run_id)
    handle = handle_of(run)
    stopped = target_for(run.target).stop(handle, Path(run.run_dir), recorded_grace(run))
    why = "orphaned (its launcher died while starting); stopped by hangar clean"
    store.finish_run(conn, run.id, "stopped", error=why)
    store.add_event(conn, run.id, "stopped", time.time(), f"hangar clean: {stopped.detail}")
    deployment_record(run.id).unlink(missing_ok=True)
    shutil.rmtree(Path(run.run_dir) / "tmp", ignore_errors=True)
