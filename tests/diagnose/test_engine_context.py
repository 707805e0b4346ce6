"""Run context as evidence (issue 11 item 2): what `hangar launch` recorded for a run (its
launch.json, its store row, the preflight host facts) joins the scan as the source
``hangar-run:<id>``, in the forms the signatures match in logs, so that a symptom in the log
and a limit in the record meet. The records are written through the real APIs: the store's
insert_run and the preflight probe's own models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.diagnose import diagnose_paths
from hangar.diagnose.runs import context_lines, run_dirs
from hangar.hardware.detect import DetectedGpu
from hangar.preflight.probe import HostFacts, NvidiaFacts, Ulimit, probe_dir
from hangar.store import runs as store
from hangar.store.db import connect

THREADS = "RuntimeError: can't start new thread\n"
GIB = 2**30


def _host(tmp: Path, v_soft: int | None, u_soft: int | None = 4096) -> dict[str, object]:
    """Preflight's HostFacts as launch would record them (host.json)."""
    facts = HostFacts(
        ulimits=(
            Ulimit(name="address space", flag="-v", unit=1024, soft=v_soft, hard=v_soft),
            Ulimit(name="open files", flag="-n", unit=1, soft=1024, hard=4096),
            Ulimit(name="processes", flag="-u", unit=1, soft=u_soft, hard=u_soft),
        ),
        tmp=probe_dir(tmp),
        run_root=probe_dir(tmp),
        cache_root=probe_dir(tmp),
        stale=(),
        port_in_use=False,
        wsl=False,
        nvcc=None,
        interfaces=("lo", "eth0"),
        nvidia=NvidiaFacts(
            available=True,
            driver_version="535.104.05",
            gpus=tuple(
                DetectedGpu(
                    index=i,
                    nvml_index=i,
                    uuid=f"GPU-{i}",
                    name="NVIDIA H100 80GB HBM3",
                    memory_total_bytes=80 * GIB,
                    memory_used_bytes=0,
                    memory_free_bytes=80 * GIB,
                    compute_capability=(9, 0),
                    driver_version="535.104.05",
                )
                for i in range(2)
            ),
        ),
        engine=None,
        env={},
    )
    data: dict[str, object] = facts.model_dump(mode="json", exclude={"env", "engine"})
    return data


def _run(
    tmp_path: Path, log: str, host: dict[str, object] | None, run_id: str = "ab12cd34"
) -> Path:
    """A run dir as launch/claim.py lays it out, and its row in the store."""
    run_dir = tmp_path / "runs" / run_id
    (run_dir / "tmp").mkdir(parents=True)
    launch = {
        "target": "local",
        "argv": [
            "/venv/bin/python",
            "-c",
            "import os\nprint('hangar: ulimit -v {v}')",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--tensor-parallel-size",
            "2",
        ],
        "env": {"TMPDIR": str(run_dir / "tmp"), "CUDA_VISIBLE_DEVICES": "0,1"},
        "secret_env": ["HF_TOKEN"],
        "files": [],
        "workarounds": [],
        "overrides": [],
    }
    (run_dir / "launch.json").write_text(json.dumps(launch))
    if host is not None:
        (run_dir / "host.json").write_text(json.dumps(host))
    (run_dir / "server.log").write_text(log)
    deployment = {
        "model": {"id": "Qwen/Qwen3-8B"},
        "parallel": {"tensor": 2},
        "resources": {"gpus": 2, "gpu": "H100", "nodes": 1},
    }
    record = store.RunRecord(
        id=run_id,
        label="m",
        log_path=str(run_dir / "server.log"),
        run_dir=str(run_dir),
        deployment_json=json.dumps(deployment),
        engine="default",
        vllm_version="0.11.0",
        status="failed",
        started_at=1.0,
        launcher_json=json.dumps({"pid": 1, "host": "gpu-node-7", "detached": False}),
    )
    conn = connect()
    store.insert_run(conn, record)
    conn.close()
    return run_dir


def test_the_record_reads_as_the_lines_signatures_match(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, THREADS, _host(tmp_path, v_soft=64 * GIB))
    lines = context_lines(run_dir)
    assert "hangar: target local" in lines
    assert "hangar: ulimit -v 67108864 -n 1024 on gpu-node-7" in lines  # launch/spec.py's form
    assert any(
        line.startswith("virtual memory") and "(kbytes, -v) 67108864" in line for line in lines
    )
    assert any(
        line.startswith("max user processes") and line.endswith("(-u) 4096") for line in lines
    )
    assert "CUDA_VISIBLE_DEVICES=0,1" in lines and f"TMPDIR={run_dir / 'tmp'}" in lines
    assert "hangar: NVIDIA driver 535.104.05, 2 GPU(s) visible: NVIDIA H100 80GB HBM3" in lines
    assert "hangar: engine default, vLLM 0.11.0" in lines
    assert any("tensor_parallel_size=2" in line and "2 GPU(s) per node" in line for line in lines)
    assert "hangar: secret env passed by name only: HF_TOKEN" in lines
    assert not any("print(" in line for line in lines)  # the bootstrap's code is not the command


def test_a_finite_address_space_in_the_record_names_the_cause(tmp_path: Path) -> None:
    # The log alone reads as the process limit; the recorded ulimit -v turns it around.
    alone = tmp_path / "alone.log"
    alone.write_text(THREADS)
    assert diagnose_paths([alone]).causes[0].cause == "ulimit_nproc"
    run_dir = _run(tmp_path, THREADS, _host(tmp_path, v_soft=64 * GIB))
    top = diagnose_paths([run_dir / "server.log"]).causes[0]
    assert top.cause == "ulimit_mmap"
    assert any(ev.file == "hangar-run:ab12cd34" for ev in top.evidence)
    assert (
        diagnose_paths([run_dir / "server.log"], run_context=False).causes[0].cause
        == "ulimit_nproc"
    )


def test_an_unlimited_address_space_keeps_the_process_limit(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, THREADS, _host(tmp_path, v_soft=None))
    assert diagnose_paths([run_dir / "server.log"]).causes[0].cause == "ulimit_nproc"


def test_doctor_run_id_reads_the_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _run(tmp_path, THREADS, _host(tmp_path, v_soft=64 * GIB))
    assert main(["doctor", "--json", "ab12cd"]) == 1
    assert json.loads(capsys.readouterr().out)["causes"][0]["cause"] == "ulimit_mmap"


def test_the_record_alone_names_nothing(tmp_path: Path) -> None:
    healthy = "INFO:     Application startup complete.\n"
    run_dir = _run(tmp_path, healthy, _host(tmp_path, v_soft=64 * GIB, u_soft=64))
    assert diagnose_paths([run_dir / "server.log"]).healthy


def test_a_slurm_run_ignores_the_submitting_hosts_facts(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, THREADS, _host(tmp_path, v_soft=64 * GIB))
    launch = json.loads((run_dir / "launch.json").read_text())
    (run_dir / "launch.json").write_text(json.dumps({**launch, "target": "slurm"}))
    lines = context_lines(run_dir)
    assert "hangar: target slurm" in lines
    assert not any("ulimit" in line or "NVIDIA driver" in line for line in lines)


def test_without_host_facts_or_store_row_the_launch_file_still_counts(tmp_path: Path) -> None:
    run_dir = tmp_path / "elsewhere" / "run1"
    run_dir.mkdir(parents=True)
    (run_dir / "launch.json").write_text(
        json.dumps({"target": "slurm", "env": {"NCCL_SOCKET_IFNAME": "lo"}})
    )
    (run_dir / "node-0.log").write_text(THREADS)
    assert run_dirs([run_dir, run_dir / "node-0.log"]) == [run_dir.resolve()]
    assert context_lines(run_dir) == ["hangar: target slurm", "NCCL_SOCKET_IFNAME=lo"]
    (run_dir / "launch.json").write_text("{not json")
    assert context_lines(run_dir) == []
    assert diagnose_paths([run_dir]).causes  # a broken record never fails the diagnosis


def test_the_llm_excerpt_carries_the_record_redacted(tmp_path: Path) -> None:
    from hangar.diagnose import llm

    run_dir = _run(tmp_path, THREADS, _host(tmp_path, v_soft=64 * GIB))
    text = llm.redact(llm.excerpt([run_dir / "server.log"]))
    assert "== hangar-run:ab12cd34 ==" in text
    assert "(kbytes, -v) 67108864" in text
    assert "HF_TOKEN" in text and "hf_" not in text  # names only: no value was ever recorded


def test_an_edited_record_of_the_wrong_shapes_gives_what_it_can(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "odd1"
    run_dir.mkdir(parents=True)
    odd = {"target": "local", "argv": "vllm serve", "env": ["X=1"], "secret_env": "HF_TOKEN"}
    (run_dir / "launch.json").write_text(json.dumps(odd))
    (run_dir / "host.json").write_text(json.dumps({"ulimits": "x", "interfaces": 3, "nvidia": []}))
    assert context_lines(run_dir) == ["hangar: target local", "hangar: nvcc not found on PATH"]
