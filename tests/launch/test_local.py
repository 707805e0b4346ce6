"""Local launch supervision on real processes and real HTTP (the fake vLLM engine)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from hangar.launch import process
from hangar.launch.errors import LaunchFailed, PreflightFailed, RunNotLive
from hangar.launch.orchestrator import launch
from hangar.launch.recorded import deployment_record, stop
from hangar.launch.runs import clean, open_store, refresh
from hangar.paths import runs_root
from hangar.preflight.probe import port_in_use
from hangar.store import runs as store

from .conftest import deployment


def _port_free(port: int) -> bool:
    return not port_in_use("127.0.0.1", port)


def test_launch_waits_for_every_stage_and_records_the_run(
    fake_engine: Path, model_dir: Path, port: int
) -> None:
    events: list[str] = []
    result = launch(
        deployment(fake_engine, model_dir, port, max_num_seqs=4),
        on_event=lambda e: events.append(f"{e.stage} {e.detail}"),
    )
    try:
        run = result.run
        assert run.status == "ready"
        assert list(run.timings) == [
            "process", "health", "models", "completion", "submit_to_ready_s"
        ]
        assert run.base_url == f"http://127.0.0.1:{port}"
        assert run.vllm_version == "0.33.0"
        assert json.loads(run.deployment_json)["serve"]["max_num_seqs"] == 4
        assert any(e.startswith("completion ok") for e in events)
        stages = [e.stage for e in store.list_events(open_store(), run.id)]
        assert stages == [
            "render", "record", "submit", "running", "endpoint",
            "process", "health", "models", "completion", "ready",
        ]  # preflight is emitted before the run exists
        served = json.loads((Path(run.run_dir) / "server.json").read_text())
        assert served["url"] == run.base_url
        run_dir = Path(run.run_dir)
        assert stat.S_IMODE(run_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE((run_dir / "tmp").stat().st_mode) == 0o700
        seen = json.loads((run_dir / "tmp" / "fake-env.json").read_text())
        assert seen["tmpdir"] == str(run_dir / "tmp")  # TMPDIR is the private run dir
        assert seen["marker"] == run.id
        assert seen["argv"][seen["argv"].index("--served-model-name") + 1] == "tiny"
        assert seen["env"]["VLLM_CACHE_ROOT"].endswith("/vllm")
        assert deployment_record(run.id).is_file()  # engines remove sees the engine in use
        assert len(process.run_processes(run.id, run.handle.get("pgid"))) == 2  # server + its worker
    finally:
        stop(result.run.id)


def test_stop_leaves_nothing_but_spares_bystanders(
    fake_engine: Path, model_dir: Path, port: int, bystander: subprocess.Popen[bytes]
) -> None:
    run = launch(deployment(fake_engine, model_dir, port)).run
    record, stopped = stop(run.id)
    assert (record.status, stopped.signalled, stopped.forced) == ("stopped", 2, False)
    assert process.run_processes(run.id, run.handle.get("pgid")) == []
    assert _port_free(port)
    assert not (Path(run.run_dir) / "tmp").exists()
    assert not deployment_record(run.id).exists()
    assert bystander.poll() is None
    with pytest.raises(RunNotLive):
        stop(run.id)


def test_stop_escalates_to_sigkill_for_a_worker_that_ignores_sigterm(
    fake_engine: Path, model_dir: Path, port: int
) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"FAKE_VLLM_MODE": "stubborn"}}
    )
    run = launch(d).run
    _, stopped = stop(run.id, grace_s=1)
    killed = stopped.forced
    assert killed
    assert process.run_processes(run.id, run.handle.get("pgid")) == []


def test_early_crash_is_caught_with_log_kept_and_run_failed(
    fake_engine: Path, model_dir: Path, port: int
) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"FAKE_VLLM_MODE": "crash"}}
    )
    with pytest.raises(LaunchFailed) as info:
        launch(d)
    exc = info.value
    assert "ValueError: fake engine refused the model" in exc.error_block
    assert Path(exc.log_path).is_file()
    run = store.get_run(open_store(), exc.run_id)
    assert run.status == "failed" and run.error is not None
    assert process.run_processes(run.id, run.handle.get("pgid")) == []


def test_server_dying_on_first_request_fails_the_completion_stage(
    fake_engine: Path, model_dir: Path, port: int
) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"FAKE_VLLM_MODE": "no_complete"}}
    )
    with pytest.raises(LaunchFailed) as info:
        launch(d)
    assert info.value.stage == "completion"
    assert "fake engine died on first request" in Path(info.value.log_path).read_text()
    assert process.run_processes(info.value.run_id, None) == []


def test_preflight_error_starts_nothing(fake_engine: Path, model_dir: Path, port: int) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(PreflightFailed) as info:
            launch(deployment(fake_engine, model_dir, port))
    assert "host.port.in_use" in info.value.errors[0]
    assert store.list_runs(open_store()) == []
    assert not runs_root().exists()


def test_secrets_never_reach_records(fake_engine: Path, model_dir: Path, port: int) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"HF_TOKEN": "hf_secret_value"}}
    )
    run = launch(d).run
    try:
        launch_json = (Path(run.run_dir) / "launch.json").read_text()
        assert "hf_secret_value" not in launch_json + run.deployment_json
        assert "hf_secret_value" not in deployment_record(run.id).read_text()
        assert "hf_secret_value" not in repr(d)
        # the host facts the doctor reads beside the log: private, limits in, env out
        host = Path(run.run_dir) / "host.json"
        assert host.stat().st_mode & 0o777 == 0o600
        facts = json.loads(host.read_text())
        assert facts["ulimits"] and "env" not in facts and "hf_secret_value" not in host.read_text()
    finally:
        stop(run.id)


def _wait_port_free(port: int, timeout: float = 10.0) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
                return
            except OSError:
                time.sleep(0.05)


def test_status_notices_a_server_that_exited_and_clean_removes_only_dead_runs(
    fake_engine: Path, model_dir: Path, port: int, bystander: subprocess.Popen[bytes]
) -> None:
    conn = open_store()
    dead = launch(deployment(fake_engine, model_dir, port)).run
    os.killpg(dead.handle.get("pgid") or 0, 9)
    process._reap_children()
    _wait_port_free(port)  # SIGKILL is asynchronous: the dead server may hold the port a moment
    live = launch(deployment(fake_engine, model_dir, port)).run
    try:
        states = {s.run.id: s for s in refresh(conn)}
        assert states[dead.id].run.status == "exited" and not states[dead.id].alive
        assert states[live.id].alive
        planned = clean(conn, dry_run=True)
        assert {i.run_id for i in planned} == {dead.id}
        assert Path(dead.run_dir).exists()  # dry run removed nothing
        clean(conn)
        assert not Path(dead.run_dir).exists()
        assert Path(live.run_dir, "server.log").exists()
        assert bystander.poll() is None
    finally:
        stop(live.id)


def test_clean_keeps_the_log_of_a_failed_run_unless_asked(
    fake_engine: Path, model_dir: Path, port: int
) -> None:
    d = deployment(fake_engine, model_dir, port).model_copy(
        update={"env": {"FAKE_VLLM_MODE": "crash"}}
    )
    with pytest.raises(LaunchFailed) as info:
        launch(d)
    run_dir = runs_root() / info.value.run_id
    clean(open_store())
    assert sorted(p.name for p in run_dir.iterdir()) == ["server.log"]
    clean(open_store(), logs=True)
    assert not run_dir.exists()
