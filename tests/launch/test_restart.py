"""`hangar engines upgrade --restart` relaunches the live runs of that engine (real processes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hangar.launch import process
from hangar.launch.orchestrator import launch
from hangar.launch.recorded import stop
from hangar.launch.restart import live_runs_using, restart_runs_using

from .conftest import deployment


def test_restart_relaunches_only_runs_of_that_engine(
    fake_engine: Path, model_dir: Path, port: int, bystander: subprocess.Popen[bytes]
) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(update={"env": {"MY_FLAG": "1"}})
    first = launch(d).run
    try:
        assert [r.id for r in live_runs_using(str(fake_engine))] == [first.id]
        assert live_runs_using("some-other-engine") == []
        results = restart_runs_using(first.engine)
        assert len(results) == 1 and results[0].old_run == first.id and results[0].new_run
        assert not process.run_processes(first.id, first.handle.get("pgid"))  # the old group is gone
        new_id = results[0].new_run
        assert [r.id for r in live_runs_using(first.engine)] == [new_id]
        assert bystander.poll() is None
    finally:
        for run in live_runs_using(first.engine):
            stop(run.id)
