"""Signals and kill -9 of a real ``hangar launch`` process (issue 13, part 2).

The server is the fake engine (tests/launch/fake_vllm.py) in its slow mode: it sleeps
before binding its port, so the launch is caught in the readiness wait. The store is read
in this process (same HANGAR_HOME) rather than through `hangar status` subprocesses, which
keeps each test to one or two Hangar processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.deploy import write_deployment
from hangar.launch.runs import RunState, open_store, refresh
from hangar.store import runs as store

from .conftest import deployment, make_fake_engine
from .test_sigterm import marked_pids

# A fake engine whose server ignores SIGTERM until it binds its port (sitecustomize runs in
# every interpreter of that venv): stopping it takes the whole grace period, so a second
# signal can be sent while Hangar is still cleaning up.
_IGNORE_TERM = """
import os, signal
if os.environ.get("TEST_FAKE_IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
"""


@pytest.fixture(scope="module")
def stubborn_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = make_fake_engine(tmp_path_factory.mktemp("stubborn-engine") / "venv")
    site = next((python.parent.parent / "lib").glob("python3*/site-packages"))
    (site / "sitecustomize.py").write_text(_IGNORE_TERM)
    return python


def start_launch(file: Path, *extra: str, **env: str) -> subprocess.Popen[str]:
    full_env = {**os.environ, "FAKE_VLLM_MODE": "slow", "FAKE_VLLM_DELAY": "120", **env}
    return subprocess.Popen(
        [sys.executable, "-m", "hangar", "launch", str(file), *extra],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def latest_run() -> store.RunRecord | None:
    runs = store.list_runs(open_store())
    return runs[0] if runs else None


def wait_in_readiness(launch: subprocess.Popen[str], timeout_s: float = 90) -> str:
    """The run id, once its server runs and the launch waits for readiness."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert launch.poll() is None, launch.communicate()
        run = latest_run()
        if run is not None and run.status == "starting" and run.handle and marked_pids(run.id):
            return run.id
        time.sleep(0.2)
    raise AssertionError("the launch never reached the readiness wait")


def marked_until(run_id: str, timeout_s: float = 10) -> list[int]:
    """The run's marked processes, polled: one read of /proc can miss a process that is
    exec'ing or being scheduled under CI load (an empty list was seen once while the server
    was alive), so an empty answer is trusted only once the timeout has passed."""
    deadline = time.monotonic() + timeout_s
    while not (pids := marked_pids(run_id)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return pids


def state_once_gone(run_id: str, timeout_s: float = 30, kill_marked: bool = False) -> RunState:
    """The run's state once `hangar status` no longer sees its server alive.

    Polls the store's own view rather than the marker scan: a process killed while stopped
    loses its environment (the marker) a moment before it stops counting as running, so
    "no marked process" can come just before "not alive" (seen once in a CI run)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for pid in marked_pids(run_id) if kill_marked else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        state = next(s for s in refresh(open_store()) if s.run.id == run_id)
        if not state.alive or time.monotonic() > deadline:
            assert not state.alive, state
            return state
        time.sleep(0.2)


@pytest.fixture
def launch_file(fake_engine: Path, model_dir: Path, port: int, tmp_path: Path) -> Path:
    file = tmp_path / "hangar.toml"
    write_deployment(deployment(fake_engine, model_dir, port), file)
    return file


@pytest.fixture
def reaper() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def run_of(run_id: str) -> store.RunRecord:
    return store.get_run(open_store(), run_id)


# SIGTERM: tests/launch/test_sigterm.py, and its exit code 143 in the second-signal test.
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_signal_during_readiness_wait_stops_the_server_with_its_exit_code(
    launch_file: Path, reaper: list[subprocess.Popen[str]], sig: signal.Signals, code: int
) -> None:
    launch = start_launch(launch_file)
    reaper.append(launch)
    run_id = wait_in_readiness(launch)
    launch.send_signal(sig)
    _, err = launch.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert launch.returncode == code, err
    assert marked_pids(run_id) == []
    run = run_of(run_id)
    assert run.status == "stopped" and sig.name in (run.error or ""), run


def test_second_signal_during_cleanup_still_stops_everything(
    stubborn_engine: Path,
    model_dir: Path,
    port: int,
    tmp_path: Path,
    reaper: list[subprocess.Popen[str]],
) -> None:
    file = tmp_path / "hangar.toml"
    write_deployment(deployment(stubborn_engine, model_dir, port), file)  # grace 3 s
    launch = start_launch(file, TEST_FAKE_IGNORE_TERM="1")
    reaper.append(launch)
    run_id = wait_in_readiness(launch)
    launch.send_signal(signal.SIGTERM)
    time.sleep(1.0)  # Hangar is now waiting out the grace period of a server ignoring TERM
    launch.send_signal(signal.SIGINT)
    launch.send_signal(signal.SIGHUP)
    _, err = launch.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert launch.returncode == 143, err  # the first signal's code
    assert marked_pids(run_id) == []  # SIGKILL after the grace period, not abandoned half-way
    assert run_of(run_id).status == "stopped"


def test_kill_9_during_the_wait_shows_orphaned_and_clean_stops_it(
    launch_file: Path,
    reaper: list[subprocess.Popen[str]],
    bystander: subprocess.Popen[bytes],
    capsys: pytest.CaptureFixture[str],
) -> None:
    launch = start_launch(launch_file)
    reaper.append(launch)
    run_id = wait_in_readiness(launch)
    launch.kill()
    launch.communicate(timeout=30)
    assert marked_until(run_id), "the server outlives a kill -9 of its launcher"

    state = next(s for s in refresh(open_store()) if s.run.id == run_id)
    assert (state.state, state.alive) == ("orphaned", True), state
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "orphaned" in out and "hangar clean" in out, out

    assert main(["clean"]) == 0
    assert f"stopped the orphaned server of run {run_id}" in capsys.readouterr().out
    assert marked_pids(run_id) == []
    run = run_of(run_id)
    assert run.status == "stopped" and "orphaned" in (run.error or "")
    assert not (Path(run.run_dir) / "tmp").exists()
    assert bystander.poll() is None  # stopped by its recorded group and marker only


def test_kill_9_before_the_server_started_shows_lost(
    launch_file: Path, reaper: list[subprocess.Popen[str]]
) -> None:
    launch = start_launch(launch_file)
    reaper.append(launch)
    run_id = wait_in_readiness(launch)
    launch.kill()
    launch.communicate(timeout=30)
    # the server dies too (a crash, an OOM kill, ...); kill again until the store sees none: a
    # worker forked between one listing and its kill carries the marker as well (CI load)
    state = state_once_gone(run_id, kill_marked=True)
    assert state.run.status == "failed" and (state.run.error or "").startswith("lost:"), state


def test_a_reused_pid_is_not_the_recorded_process(
    bystander: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """A record whose launcher and server PIDs now belong to an unrelated process (PID
    reuse): neither counts as alive, and clean signals nothing."""
    from hangar.launch.targets.local import boot_id, start_ticks

    conn = open_store()
    pid = bystander.pid
    wrong = {"pid": pid, "start": (start_ticks(pid) or 0) + 1, "boot": boot_id()}
    store.insert_run(
        conn,
        store.RunRecord(
            id="reused01",
            label="tiny",
            log_path=str(tmp_path / "server.log"),
            run_dir=str(tmp_path),
            deployment_json="{}",
            engine="x",
            status="starting",
            started_at=time.time(),
            handle_json=f'{{"run_id": "reused01", "pgid": {pid}, "pid": {pid}, '
            f'"start": {wrong["start"]}, "boot": "{wrong["boot"]}"}}',
            launcher_json=f'{{"pid": {pid}, "start": {wrong["start"]}, "boot": "{boot_id()}"}}',
        ),
    )
    state = next(s for s in refresh(conn) if s.run.id == "reused01")
    assert not state.alive and state.run.status == "failed", state
    assert main(["clean"]) == 0
    assert bystander.poll() is None


def test_after_readiness_status_probes_the_server(
    launch_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ready run whose server stops answering, then dies, is shown as it is."""
    launch = subprocess.run(
        [sys.executable, "-m", "hangar", "launch", str(launch_file)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert launch.returncode == 0, launch.stderr
    run = latest_run()
    assert run is not None and run.status == "ready" and run.detached
    pgid = int(run.handle["pgid"])
    os.killpg(pgid, signal.SIGSTOP)  # alive, but the endpoint no longer answers
    try:
        state = next(s for s in refresh(open_store()) if s.run.id == run.id)
        assert (state.state, state.alive) == ("unresponsive", True), state
    finally:
        os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGCONT)
    state = state_once_gone(run.id)
    assert state.run.status == "exited", state  # not "ready" forever


def test_detach_hands_the_server_over_at_once(
    launch_file: Path, reaper: list[subprocess.Popen[str]]
) -> None:
    launch = start_launch(launch_file, "--detach", FAKE_VLLM_DELAY="3")
    reaper.append(launch)
    out, err = launch.communicate(timeout=90)
    assert launch.returncode == 0, err
    run = latest_run()
    assert run is not None and run.detached and run.launcher["handover"].startswith("detached")
    assert f"hangar stop {run.id}" in out, out
    try:
        assert marked_pids(run.id), "the detached server runs on after hangar launch exits"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = next(s for s in refresh(open_store()) if s.run.id == run.id)
            assert state.state != "orphaned", state  # handed over, so not an orphan
            if state.run.status == "ready":
                break
            time.sleep(0.5)
        assert state.run.status == "ready", state
    finally:
        assert main(["stop", run.id]) == 0
    assert marked_pids(run.id) == []


def test_stop_finds_a_server_whose_handle_was_never_recorded(
    launch_file: Path, reaper: list[subprocess.Popen[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """kill -9 between starting the server and recording its handle: the server carries the
    run's marker, so status still sees it and stop still stops it (and only it)."""
    launch = start_launch(launch_file)
    reaper.append(launch)
    run_id = wait_in_readiness(launch)
    launch.kill()
    launch.communicate(timeout=30)
    store.set_handle(open_store(), run_id, {})  # as if the kill came before the write
    state = next(s for s in refresh(open_store()) if s.run.id == run_id)
    assert (state.state, state.alive) == ("orphaned", True), state
    assert main(["stop", run_id]) == 0
    assert f"run {run_id} stopped" in capsys.readouterr().out
    assert marked_pids(run_id) == []
