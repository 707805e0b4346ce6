"""Status and cleanup of recorded runs (the library side of status / clean)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.launch import process
from hangar.launch.orchestrator import deployment_record, observe
from hangar.paths import runs_root
from hangar.store import runs as store
from hangar.store.db import connect


class RunState(BaseModel):
    model_config = ConfigDict(frozen=True)

    run: store.RunRecord
    alive: bool
    pids: tuple[int, ...]  # local runs: the processes carrying the run's marker
    detail: str = ""  # e.g. Slurm's pending reason


def open_store() -> sqlite3.Connection:
    return connect()


def _state(run: store.RunRecord) -> RunState:
    if not run.live or not run.handle:
        return RunState(run=run, alive=False, pids=())
    obs = observe(run)
    pids = process.run_processes(run.id, run.handle.get("pgid")) if run.target == "local" else []
    return RunState(
        run=run, alive=obs.phase in ("queued", "running"), pids=tuple(pids), detail=obs.reason
    )


def refresh(conn: sqlite3.Connection) -> list[RunState]:
    """Every run with its target's view; live runs that are gone become 'exited'."""
    states = []
    for run in store.list_runs(conn):
        state = _state(run)
        if run.live and run.handle and not state.alive:
            why = "the server exited on its own" if run.target == "local" else state.detail
            store.finish_run(conn, run.id, "exited", error=why or "the job left the queue")
            deployment_record(run.id).unlink(missing_ok=True)
            state = RunState(run=store.get_run(conn, run.id), alive=False, pids=())
        states.append(state)
    return states


class CleanItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: Path | None = None
    run_id: str | None
    why: str
    container: tuple[str, str] | None = None  # (runtime, container id) to remove

    @property
    def what(self) -> str:
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
    items: list[CleanItem] = []
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
            if item.container is not None:
                from hangar.launch.targets.container import remove_container

                remove_container(*item.container)
            elif item.path is None:
                continue
            elif item.path.is_dir() and not item.path.is_symlink():
                shutil.rmtree(item.path, ignore_errors=True)
            else:
                item.path.unlink(missing_ok=True)
    return items
