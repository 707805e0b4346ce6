"""Two `hangar launch` processes started at the same moment (issue 13, part 2): they never
share a port, a run id or a run dir, and a fresh store is created once, not twice.

The fake engine's slow mode keeps both servers from binding for a while, so the second
launch cannot be saved by preflight's port probe: only the atomic claim refuses it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.deploy import write_deployment
from hangar.launch.recorded import stop
from hangar.launch.runs import open_store
from hangar.store import runs as store

from .conftest import deployment, free_port
from .test_sigterm import marked_pids


def launch_both(files: list[Path]) -> list[subprocess.CompletedProcess[str]]:
    """Start one `hangar launch` per file at once (--detach: no readiness wait needed)."""
    env = {**os.environ, "FAKE_VLLM_MODE": "slow", "FAKE_VLLM_DELAY": "20"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "hangar", "launch", str(f), "--detach"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


@pytest.fixture
def stop_all() -> Iterator[None]:
    yield
    for run in store.list_runs(open_store(), live_only=True):
        stop(run.id, grace_s=1)


def files_on(tmp_path: Path, engine: Path, model: Path, ports: list[int]) -> list[Path]:
    files = []
    for i, port in enumerate(ports):
        file = tmp_path / f"hangar-{i}.toml"
        write_deployment(deployment(engine, model, port), file)
        files.append(file)
    return files


def test_same_port_at_the_same_moment_one_launch_is_refused(
    fake_engine: Path, model_dir: Path, tmp_path: Path, stop_all: None
) -> None:
    port = free_port()
    results = launch_both(files_on(tmp_path, fake_engine, model_dir, [port, port]))
    codes = sorted(r.returncode for r in results)
    assert codes == [0, 1], [(r.returncode, r.stderr) for r in results]
    refused = next(r for r in results if r.returncode == 1)
    last = refused.stderr.strip().splitlines()[-1]
    assert f"port {port} is already used by run" in last and "nothing was started" in last, last
    assert "Traceback" not in refused.stderr
    runs = store.list_runs(open_store())
    assert len(runs) == 1, runs  # the refused launch recorded nothing and started nothing
    assert len(list(Path(runs[0].run_dir).parent.iterdir())) == 1  # nor left a run dir


def test_different_ports_at_the_same_moment_get_their_own_run(
    fake_engine: Path, model_dir: Path, tmp_path: Path, stop_all: None
) -> None:
    results = launch_both(files_on(tmp_path, fake_engine, model_dir, [free_port(), free_port()]))
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    runs = store.list_runs(open_store())
    assert len({r.id for r in runs}) == 2
    assert len({r.run_dir for r in runs}) == 2
    assert all(r.detached for r in runs)
    for run in runs:
        assert marked_pids(run.id), run
