"""A run directory as the Slurm target hands it over: the job log plus per-node logs.

The lines are quoted from the field set's real excerpts (thread URLs in
tests/fixtures/logs_field/manifest.yaml); only their arrangement into files is ours.
"""

from __future__ import annotations

from pathlib import Path

from hangar.diagnose import diagnose_paths, diagnose_text

ULIMIT_A = """\
+ ulimit -a
core file size              (blocks, -c) 0
max user processes                  (-u) 4096
virtual memory              (kbytes, -v) 67108864
open files                          (-n) 65536
"""
RAY_WORKER = """\
2024-07-10 15:24:06,387\tINFO worker.py:1771 -- Started a local Ray instance.
E0710 15:24:06.605366961 2474524 thd.cc:157]                           pthread_create failed: Resource temporarily unavailable
[2024-07-10 15:24:06,819 E 2474429 2474429] core_worker.cc:251: Failed to register worker 01000000ffffffffffffffffffffffffffffffffffffffffffffffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory
"""
SRUN_EXIT = "srun: error: gpu-node-2: task 1: Exited with exit code 1\n"


def _run_dir(tmp_path: Path, job: str, nodes: dict[str, str]) -> Path:
    run = tmp_path / "run"
    (run / "nodes").mkdir(parents=True)
    (run / "slurm-4242.out").write_text(job)
    for name, text in nodes.items():
        (run / "nodes" / f"{name}.log").write_text(text)
    return run


def test_limit_in_job_log_and_symptom_in_node_log_rank_together(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, ULIMIT_A + SRUN_EXIT, {"gpu-node-1": "", "gpu-node-2": RAY_WORKER})
    (run / "nodes" / "gpu-node-1.log").write_text("INFO starting\n")
    top = diagnose_paths([run]).causes[0]
    assert top.cause == "ulimit_mmap"  # not the thread limit, not Ray, not srun's exit code
    where = {(Path(e.file).name, e.line) for e in top.evidence}
    assert ("gpu-node-2.log", 2) in where  # the symptom, by file and line
    assert ("slurm-4242.out", 4) in where  # the context line that names the cause


def test_without_a_finite_v_the_same_symptom_is_the_thread_limit(tmp_path: Path) -> None:
    job = ULIMIT_A.replace("67108864", "unlimited") + SRUN_EXIT
    run = _run_dir(tmp_path, job, {"gpu-node-2": RAY_WORKER})
    causes = [f.cause for f in diagnose_paths([run]).causes]
    assert causes[0] == "ulimit_nproc"
    assert "other" not in causes  # srun's exit line is a symptom, dropped when a cause is known


def test_paths_given_in_order_keep_their_names(tmp_path: Path) -> None:
    job = tmp_path / "job.err"
    job.write_text(
        "slurmstepd: error: *** JOB 494583 ON gpu-node-1 CANCELLED AT 2024-04-20T09:09:37 "
        "DUE TO TIME LIMIT ***\n"
    )
    node = tmp_path / "node.log"
    node.write_text("INFO 04-20 09:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0\n")
    top = diagnose_paths([node, job]).causes[0]
    assert top.cause == "slurm_time_limit"
    assert (top.evidence[0].file, top.evidence[0].line) == (str(job), 1)


def test_cpu_build_refusing_ray() -> None:
    top = diagnose_text("ValueError: current platform cpu does not support ray.\n").causes[0]
    assert top.cause == "vllm_platform" and "mp" in top.fix


def test_slurm_oom_kill_gres_and_munge() -> None:
    cases = {
        "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step "
        "tasks have been OOM Killed.\n": "host_oom",
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) "
        "specification\n": "slurm_resources",
        "error: Munge decode failed: Invalid credential\n": "slurm_auth",
        "(EngineCore_DP0 pid=89) ERROR 04-20 18:08:14 [core.py:1100] ValueError: Cannot provide a "
        "placement group requiring 4.0 GPUs (placement_group_specs=[{'GPU': 1.0}]) within 1800 "
        "seconds.\n": "ray_cluster",
    }
    for text, cause in cases.items():
        assert diagnose_text(text).causes[0].cause == cause, text


NCCL_TAIL = """\
INFO 01-21 17:23:12 pynccl.py:63] vLLM is using nccl==2.20.5
gpu05:24152:24152 [1] NCCL INFO P2P Chunksize set to 131072
gpu05:24152:24152 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via P2P/IPC
gpu05:24037:24037 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC
"""


def test_a_log_that_stops_in_nccl_p2p_setup_is_a_p2p_hang() -> None:
    top = diagnose_text(NCCL_TAIL).causes[0]
    assert top.cause == "nccl_p2p" and top.confidence < 0.7  # a likely cause, said as such


def test_the_same_stage_followed_by_serving_or_an_error_is_not_a_hang() -> None:
    serving = NCCL_TAIL + 'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    assert diagnose_text(serving).causes == ()
    failed = NCCL_TAIL + "SomeWeirdError: the frobnicator is unhappy\n"
    assert all(f.cause != "nccl_p2p" for f in diagnose_text(failed).causes)


def test_stage_marker_far_from_the_end_is_not_a_hang() -> None:
    later = "".join(
        f"INFO 01-21 17:24:{i % 60:02d} model_runner.py:1] step {i}\n" for i in range(60)
    )
    assert diagnose_text(NCCL_TAIL + later).causes == ()


HANGAR_JOB = """\
hangar: head gpu-node-1 (10.0.0.1) of gpu-node-1 gpu-node-2, job 4242, mode ray
hangar: a node step ended (exit 1) before the server's step; stopping the job
hangar: job ends with exit code 1
"""


def test_hangar_slurm_run_dir_layout(tmp_path: Path) -> None:
    # The Slurm target's job log plus node-%N.log files; node.sh logs the limits it could set.
    run = tmp_path / "run"
    run.mkdir()
    (run / "job.out").write_text(HANGAR_JOB)
    (run / "node-gpu-node-1.log").write_text("hangar: ulimit -v unlimited -n 65536 on gpu-node-1\n")
    (run / "node-gpu-node-2.log").write_text(
        "hangar: ulimit -v 67108864 -n 65536 on gpu-node-2\n" + RAY_WORKER
    )
    top = diagnose_paths([run]).causes[0]
    assert top.cause == "ulimit_mmap"
    assert {Path(e.file).name for e in top.evidence} == {"node-gpu-node-2.log"}


def test_hangar_unlimited_v_leaves_the_thread_limit(tmp_path: Path) -> None:
    log = tmp_path / "node-gpu-node-2.log"
    log.write_text("hangar: ulimit -v unlimited -n 65536 on gpu-node-2\n" + RAY_WORKER)
    assert diagnose_paths([log]).causes[0].cause == "ulimit_nproc"


def test_client_disconnect_on_the_api_server_is_not_a_network_failure() -> None:
    serving = (
        'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 200 OK\n'
        "ConnectionResetError: [Errno 104] Connection reset by peer\n"
    )
    assert all(f.cause != "nccl_network" for f in diagnose_text(serving).causes)
    nccl = "NCCL version 2.4.8\n" + serving.splitlines()[1] + "\n"
    assert diagnose_text(nccl).causes[0].cause == "nccl_network"


def test_ray_status_without_demands_is_healthy() -> None:
    status = "Pending Demands:\n (no resource demands)\n"
    assert diagnose_text(status).causes == ()
