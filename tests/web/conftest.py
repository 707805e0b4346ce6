"""A seeded HANGAR_HOME (real launches with the fake engine, a recorded Slurm run with a
real incident log, real eval results against the fake OpenAI server, a registered engine)
and a real ``hangar ui`` process serving it on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.launch.conftest import deployment, free_port, make_fake_engine

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "evaluation"))

from fake_server import FakeServer

SECRET = "hf_WebUiSecretValue0123456789abcd"
INCIDENT_LOG = TESTS / "fixtures" / "logs" / "gpu_memory_utilization"


@dataclass(frozen=True)
class Seeded:
    home: Path
    engine: Path
    model_dir: Path
    ready_run: str
    failed_run: str
    slurm_run: str
    evals: tuple[str, str, str]  # two alike, the third measured with another output_len


@dataclass(frozen=True)
class Ui:
    url: str
    seeded: Seeded
    proc: subprocess.Popen[bytes]


def _model_dir(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}'
    )
    return root


def _launch(engine: Path, model_dir: Path, env: dict[str, str]) -> str:
    from hangar.launch.errors import LaunchFailed
    from hangar.launch.orchestrator import launch
    from hangar.launch.runs import open_store
    from hangar.store.runs import get_run

    d = deployment(engine, model_dir, free_port()).model_copy(update={"env": env})
    try:
        return launch(d).run.id
    except LaunchFailed:
        return get_run(open_store(), None).id


def _slurm_record(home: Path) -> str:
    """A finished Slurm run recorded through the runs API, its log a real incident log."""
    from hangar.launch.runs import open_store
    from hangar.store import runs as store

    source = next(p for p in sorted(INCIDENT_LOG.iterdir()) if p.suffix == ".log")
    run_dir = home / "slurm-run"
    run_dir.mkdir()
    log = run_dir / "slurm-4242.out"  # as the Slurm target lays out its logs
    log.write_text(source.read_text(errors="replace") + f"\nexport HF_TOKEN={SECRET}\n")
    conn = open_store()
    run_id = store.new_run_id(conn)
    t0 = time.time() - 600
    store.insert_run(conn, store.RunRecord(
        id=run_id, label="big-model", target="slurm", log_path=str(log), run_dir=str(run_dir),
        deployment_json=json.dumps({"model": {"id": "org/big"}, "env": {"HF_TOKEN": "***"}}),
        engine="vllm-0.11", vllm_version="0.11.0", status="failed",
        handle_json=json.dumps({"job_id": "4242", "nodes": ["gpu-a01", "gpu-a02"]}),
        started_at=t0, ended_at=t0 + 300, error="the server exited before it was ready",
        argv_json=json.dumps(["vllm", "serve", "org/big", "--api-key", SECRET]),
    ))
    for i, stage in enumerate(("render", "submit", "queued", "running", "failed")):
        store.add_event(conn, run_id, stage, t0 + 20 * i, f"{stage} step")
    conn.close()
    return run_id


def _evals(fake: FakeServer) -> tuple[str, str, str]:
    from hangar.evaluation import EvalOptions, PerfOptions, evaluate, resolve_target
    from hangar.evaluation.history import save_eval

    ids = []
    for i, output_len in enumerate((4, 4, 6)):
        perf = PerfOptions(concurrency=[1, 2, 4], num_requests=4, input_len=8,
                           output_len=output_len, warmup=0)
        suites = ["smoke", "perf"] if i == 0 else ["perf"]
        result = evaluate(resolve_target(fake.url),
                          EvalOptions(suites=suites, perf=perf, timeout=5.0))
        save_eval(result)
        ids.append(result.id)
    return ids[0], ids[1], ids[2]


def _register_engine(python: Path) -> None:
    from hangar.cli.engines import engines

    engines.main(args=["add", "fake-0.33", "--python", str(python)], prog_name="hangar",
                 standalone_mode=False)


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    home = tmp_path_factory.mktemp("ui-home")
    root = tmp_path_factory.mktemp("ui-data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HANGAR_HOME", str(home))
        mp.setenv("HF_HUB_OFFLINE", "1")
        engine = make_fake_engine(root / "engine")
        model_dir = _model_dir(root / "tiny")
        _register_engine(engine)
        failed = _launch(engine, model_dir, {"FAKE_VLLM_MODE": "crash"})
        ready = _launch(engine, model_dir, {"HF_TOKEN": SECRET})
        slurm = _slurm_record(home)
        fake = FakeServer().start()
        try:
            evals = _evals(fake)
        finally:
            fake.stop()
        yield Seeded(home, engine, model_dir, ready, failed, slurm, evals)
        _stop_quietly(ready)


def _stop_quietly(run_id: str) -> None:
    from hangar.errors import HangarError
    from hangar.launch.recorded import stop

    try:
        stop(run_id)
    except HangarError:
        pass


def start_ui(home: Path, *args: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {**os.environ, "HANGAR_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    with (home / f"ui-{port}.log").open("wb") as log:  # read it when a request fails
        proc = subprocess.Popen(
            [sys.executable, "-m", "hangar", "ui", "--port", str(port), *args],
            env=env, stdout=subprocess.DEVNULL, stderr=log,
        )
    return proc, port


def wait_up(proc: subprocess.Popen[bytes], url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"hangar ui exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (401 with a token, ...)
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"hangar ui did not answer at {url}")


def stop_ui(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def ui(seeded: Seeded) -> Iterator[Ui]:
    proc, port = start_ui(seeded.home)
    url = f"http://127.0.0.1:{port}"
    wait_up(proc, url + "/static/app.css")
    yield Ui(url, seeded, proc)
    stop_ui(proc)


@pytest.fixture
def use_seeded_home(seeded: Seeded, monkeypatch: pytest.MonkeyPatch) -> Seeded:
    """For a test that launches into the served store itself."""
    monkeypatch.setenv("HANGAR_HOME", str(seeded.home))
    return seeded


def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where page screenshots go: $HANGAR_UI_SCREENSHOTS (kept) or a pytest temp dir."""
    chosen = os.environ.get("HANGAR_UI_SCREENSHOTS")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("ui-screenshots")

