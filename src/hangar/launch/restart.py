"""Relaunching the live runs of an engine whose build changed (`hangar engines update
--restart`): each is stopped through its recorded handle and launched again from its recorded
deployment, so it picks up the new build."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import Deployment
from hangar.launch.errors import LaunchFailed, PreflightFailed
from hangar.launch.events import EventSink
from hangar.launch.orchestrator import launch
from hangar.launch.recorded import observe, stop
from hangar.store import runs as store
from hangar.store.db import connect


class Restarted(BaseModel):
    model_config = ConfigDict(frozen=True)

    old_run: str
    new_run: str | None
    error: str | None = None


def live_runs_using(engine: str) -> list[store.RunRecord]:
    """Live runs (still running) whose deployment names ``engine``."""
    conn = connect()
    return [
        run
        for run in store.list_runs(conn, live_only=True)
        if run.engine == engine and run.handle and observe(run).phase in ("queued", "running")
    ]


def relaunchable(run: store.RunRecord) -> Deployment:
    """The recorded deployment, minus masked secrets (they come from the shell again)."""
    data = run.deployment
    data["env"] = {k: v for k, v in (data.get("env") or {}).items() if v != "***"}
    return Deployment.model_validate(data)


def restart_runs_using(engine: str, *, on_event: EventSink | None = None) -> list[Restarted]:
    """Stop each live run on ``engine`` and launch it again, so it picks up the engine's
    current build. A failed relaunch is reported, never hidden."""
    results = []
    for run in live_runs_using(engine):
        deployment = relaunchable(run)
        stop(run.id)
        try:
            new = launch(deployment, on_event=on_event)
        except (LaunchFailed, PreflightFailed) as exc:
            results.append(Restarted(old_run=run.id, new_run=None, error=str(exc)))
            continue
        results.append(Restarted(old_run=run.id, new_run=new.run.id))
    return results
