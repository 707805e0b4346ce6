"""A signal to `hangar launch` of a Slurm job while it waits in the queue cancels the job
(scancel, through the Slurm target's stop) and marks the run stopped (issue 13, part 2)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from slurm.test_hangar_launch import pending_deployment, wait_gone
from support.slurm_cluster import SlurmCluster
from support.slurm_plugin import slurm_cluster  # noqa: F401  the session's one cluster

from hangar.launch.runs import open_store
from hangar.launch.targets.local import identity
from hangar.store import runs as store

from .conftest import make_fake_engine


def test_sigint_while_queued_cancels_the_job(
    slurm_cluster: SlurmCluster,  # noqa: F811
    tmp_path: Path,
    model_dir: Path,
) -> None:
    engine = make_fake_engine(tmp_path / "engine")
    # Two nodes on the one-node partition: Slurm keeps it pending (PartitionNodeLimit).
    path = pending_deployment(slurm_cluster, tmp_path, engine, model_dir, queue_timeout_s=600)
    launch = subprocess.Popen(
        [sys.executable, "-m", "hangar", "launch", str(path), "--force"],
        env={**os.environ, **slurm_cluster.env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        job = queued_job(launch)
        launch.send_signal(signal.SIGINT)
        _, err = launch.communicate(timeout=120)
    finally:
        if launch.poll() is None:
            launch.kill()
            launch.communicate()
    assert launch.returncode == 130 and "Traceback" not in err, err
    wait_gone(slurm_cluster, job)
    run = store.list_runs(open_store())[0]
    assert run.status == "stopped" and "SIGINT" in (run.error or ""), run


def queued_job(launch: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert launch.poll() is None, launch.communicate()
        runs = store.list_runs(open_store())
        if runs and runs[0].handle.get("job_id") and any(
            e.stage == "queued" for e in store.list_events(open_store(), runs[0].id)
        ):
            return int(runs[0].handle["job_id"])
        time.sleep(0.3)
    raise AssertionError("the job never reached the queue wait")


def test_detach_returns_while_queued_and_stop_cancels_the_job(
    slurm_cluster: SlurmCluster,  # noqa: F811
    tmp_path: Path,
    model_dir: Path,
) -> None:
    env, cmd = {**os.environ, **slurm_cluster.env}, [sys.executable, "-m", "hangar"]
    launched = _launch_detached_pending(slurm_cluster, tmp_path, model_dir)
    run = store.list_runs(open_store())[0]
    assert run.detached and run.status == "queued" and f"hangar stop {run.id}" in launched.stdout
    job = int(run.handle["job_id"])
    stopped = subprocess.run(
        [*cmd, "stop", run.id], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert stopped.returncode == 0 and f"job {job} cancelled" in stopped.stdout, stopped
    wait_gone(slurm_cluster, job)


def test_a_job_whose_id_was_never_recorded_is_found_and_cleaned(
    slurm_cluster: SlurmCluster,  # noqa: F811
    tmp_path: Path,
    model_dir: Path,
) -> None:
    """kill -9 of the launcher between sbatch and recording the job id: the record has no
    handle, yet `hangar status` finds the job by its working directory (the run dir) and
    shows it orphaned, and `hangar clean` cancels exactly that job."""
    env, cmd = {**os.environ, **slurm_cluster.env}, [sys.executable, "-m", "hangar"]
    _launch_detached_pending(slurm_cluster, tmp_path, model_dir)
    run = store.list_runs(open_store())[0]
    job = int(run.handle["job_id"])
    dead = subprocess.Popen(["sleep", "30"])
    launcher = identity(dead.pid)
    dead.kill()
    dead.wait()
    store.update_run(
        open_store(),
        run.id,
        status="starting",
        handle_json="{}",
        launcher_json=json.dumps({**launcher, "host": socket.gethostname()}),
    )
    status = subprocess.run(
        [*cmd, "status", "--json"], env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    assert '"orphaned"' in status.stdout, status.stdout
    cleaned = subprocess.run(
        [*cmd, "clean"], env=env, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert cleaned.returncode == 0, cleaned.stderr
    wait_gone(slurm_cluster, job)


def _launch_detached_pending(
    cluster: SlurmCluster, tmp_path: Path, model_dir: Path
) -> subprocess.CompletedProcess[str]:
    """`hangar launch --detach` of a 2-node job on the one-node partition: Slurm keeps it
    pending (PartitionNodeLimit), so it is queued and cannot start by itself."""
    engine = make_fake_engine(tmp_path / "engine")
    path = pending_deployment(cluster, tmp_path, engine, model_dir, queue_timeout_s=600)
    launched = subprocess.run(
        [sys.executable, "-m", "hangar", "launch", str(path), "--force", "--detach"],
        env={**os.environ, **cluster.env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert launched.returncode == 0, launched.stderr
    return launched
