"""Surface forms of distributed launches (torchrun / torch.distributed.elastic, the c10d
TCPStore, Slurm's environment as Lightning and submitit read it, gRPC behind a proxy, Ray
Compiled Graph, vLLM's multi-node mp launch), written from the emitting sources (file and
version in each signature's `sources` in data/launches.yaml): every log below is the source's
format string with its variables filled in, not a line copied from a report. Near misses share
words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/opt/venv/lib/python3.11/site-packages"

# torch/distributed/rendezvous.py and distributed_c10d.py frames of init_process_group (env://)
INIT_FRAMES = [
    (f"{SITE}/torch/distributed/c10d_logger.py", 81, "wrapper"),
    (f"{SITE}/torch/distributed/distributed_c10d.py", 1710, "init_process_group"),
    (f"{SITE}/torch/distributed/rendezvous.py", 278, "_env_rendezvous_handler"),
    (f"{SITE}/torch/distributed/rendezvous.py", 189, "_create_c10d_store"),
]
LIGHTNING_FRAMES = [
    (f"{SITE}/lightning/fabric/utilities/distributed.py", 297, "_init_dist_connection"),
    *INIT_FRAMES,
]


def store_timeout(joined: int, world: int, seconds: int = 1801) -> str:
    # torch/csrc/distributed/c10d/TCPStore.cpp waitForWorkers (DistStoreError)
    return (
        f"torch.distributed.DistStoreError: Timed out after {seconds} seconds waiting for "
        f"clients. {joined}/{world} clients joined."
    )


def lightning_member(rank: int, world: int) -> str:
    # lightning/fabric/utilities/distributed.py _init_dist_connection
    return f"Initializing distributed: GLOBAL_RANK: {rank}, MEMBER: {rank + 1}/{world}\n"


# torch/distributed/elastic/multiprocessing/errors/__init__.py ChildFailedError.format_msg
def child_failed(exitcode: int, message: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/torch/distributed/run.py", line 892, in main\n'
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-11-30_10:12:44\n"
        "  host      : gpu017.cluster\n"
        "  rank      : 0 (local_rank: 0)\n"
        f"  exitcode  : {exitcode} (pid: 48211)\n"
        "  error_file: <N/A>\n"
        f"  traceback : {message}\n"
        "============================================================\n"
    )


def rdzv_join(node: str = "gpu017_48200_0", run_id: str = "4242") -> str:
    # torch/distributed/elastic/rendezvous/dynamic_rendezvous.py next_rendezvous
    return (
        f"INFO:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node '{node}' attempts "
        f"to join the next round of the rendezvous '{run_id}'.\n"
    )


VLLM_RAY_FRAMES = [
    (f"{SITE}/vllm/v1/executor/ray_executor.py", 404, "execute_model"),
    (f"{SITE}/ray/experimental/compiled_dag_ref.py", 115, "get"),
    (f"{SITE}/ray/dag/compiled_dag_node.py", 2541, "_execute_until"),
]

CASES = [
    # TCPStore: only the server's own client joined, under Lightning's SLURMEnvironment
    (
        lightning_member(0, 4) + _traceback(LIGHTNING_FRAMES, store_timeout(1, 4)),
        "other",
    ),
    # ... under a Slurm env dump, and under submitit
    (
        "SLURM_JOB_ID=881234\nSLURM_NTASKS=8\n" + _traceback(INIT_FRAMES, store_timeout(1, 8, 601)),
        "other",
    ),
    (
        (
            "submitit INFO (2026-11-30 10:12:44,123) - Starting with JobEnvironment(job_id=881234, "
            "hostname=gpu017, local_rank=0(1), node=0(1), global_rank=0(1))\n"
        )
        + _traceback(INIT_FRAMES, store_timeout(1, 8, 601)),
        "other",
    ),
    # Slurm shrank the node count (srun/opt.c) and the ranks that started wait for the rest
    (
        "srun: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1\n"
        + _traceback(INIT_FRAMES, store_timeout(8, 16, 600)),
        "other",
    ),
    # Lightning's SLURMEnvironment.validate_settings / _validate_srun_variables
    (
        (
            "ValueError: You set `devices=8` in Lightning, but the number of tasks per node "
            "configured in SLURM `--ntasks-per-node=1` does not match. HINT: Set `devices=1`.\n"
        ),
        "world_size_gpus",
    ),
    (
        (
            "ValueError: You set `num_nodes=2` in Lightning, but the number of nodes configured in "
            "SLURM `--nodes=1` does not match. HINT: Set `num_nodes=1`.\n"
        ),
        "world_size_gpus",
    ),
    (
        (
            "RuntimeError: You set `--ntasks=4` in your SLURM bash script, but this variable is not "
            "supported. HINT: Use `--ntasks-per-node=4` instead.\n"
        ),
        "bad_cli_flag",
    ),
    # Lightning's rank 0 alone at the end of a Slurm job's log (a hang)
    (
        "SLURM_JOB_ID=881234\nGPU available: True (cuda), used: True\n" + lightning_member(0, 4),
        "other",
    ),
    # torchrun waiting at the c10d rendezvous (the log stops there)
    (
        (
            "INFO:torch.distributed.launcher.api:Starting elastic_operator with launch configs:\n"
            "  nnodes           : 2:2\n"
        )
        + rdzv_join(),
        "nccl_network",
    ),
    # torchrun's summary of a worker killed by SIGBUS
    (child_failed(-7, "Signal 7 (SIGBUS) received by PID 48211"), "shm_ipc"),
    (
        (
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0 "
            "(pid: 48211) of binary: /opt/venv/bin/python\n"
        ),
        "shm_ipc",
    ),
    # the store connection reset while the process group was created
    (
        _traceback(INIT_FRAMES, "torch.distributed.DistNetworkError: Connection reset by peer"),
        "nccl_network",
    ),
    # vLLM 0.32 entrypoints/cli/serve.py run_headless, with --master-addr left at its default
    (
        (
            "INFO 11-30 10:12:44 [serve.py:225] Launching vLLM (v0.32.0) headless multiproc "
            "executor, with head node address 127.0.0.1:29501 for torch.distributed process group.\n"
        ),
        "nccl_network",
    ),
    # vLLM multiproc_executor.py collective_rpc on a follower without --headless
    (
        _traceback(
            [
                (f"{SITE}/vllm/v1/engine/core.py", 98, "__init__"),
                (f"{SITE}/vllm/v1/executor/multiproc_executor.py", 396, "collective_rpc"),
            ],
            "AssertionError: collective_rpc should not be called on follower node",
        ),
        "bad_cli_flag",
    ),
    # vLLM config/parallel.py and engine/arg_utils.py, cli/serve.py run_headless
    (
        (
            "ValueError: nnodes > 1 can only be set when distributed executor backend is mp, uni or "
            "external_launcher.\n"
        ),
        "bad_cli_flag",
    ),
    (
        "ValueError: nnodes > 1 can only be set when distributed exectuor backend is mp.\n",
        "bad_cli_flag",
    ),
    (
        (
            "ValueError: Invalid data-parallel launch options: `--nnodes 2` requires "
            "`--data-parallel-backend mp`; got `--data-parallel-backend ray`. Use the MP backend or "
            "set `--nnodes 1`.\n"
        ),
        "bad_cli_flag",
    ),
    (
        (
            "ValueError: Invalid data-parallel launch options: `--node-rank` must be between 0 and "
            "1; got `--node-rank 2`. Set it to this node's zero-based index.\n"
        ),
        "bad_cli_flag",
    ),
    ("ValueError: data_parallel_size_local must be > 0 in headless mode\n", "bad_cli_flag"),
    ("ValueError: api_server_count can't be set in headless mode\n", "bad_cli_flag"),
    # vLLM v1/executor/ray_executor.py _check_ray_cgraph_installation
    (
        (
            "ValueError: Ray Compiled Graph is not installed. Run `pip install ray[cgraph]` to "
            "install it.\n"
        ),
        "dependency_mismatch",
    ),
    ("ValueError: Ray version 2.43.0 is required, but found 2.40.0\n", "dependency_mismatch"),
    (
        (
            "ValueError: cupy is not installed but required since "
            "VLLM_USE_RAY_COMPILED_DAG_CHANNEL_TYPE is set to 'nccl'. Run `pip install ray[cgraph]` "
            "and check cupy installation.\n"
        ),
        "dependency_mismatch",
    ),
    # Ray dag/compiled_dag_node.py _execute_until at Ray's default, raised in vLLM's executor
    (
        _traceback(
            VLLM_RAY_FRAMES,
            "ray.exceptions.RayChannelTimeoutError: System error: If the execution is expected to "
            "take a long time, increase RAY_CGRAPH_get_timeout which is currently 10 seconds. "
            "Otherwise, this may indicate that the execution is hanging.",
        ),
        "other",
    ),
    # gRPC http_connect_handshaker.cc, and pick_first with a proxy in the environment
    (
        (
            "[2026-11-30 10:12:44,123 E 4821 4821] core_worker.cc:512: Failed to register worker to "
            "Raylet: UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: "
            "ipv4:10.1.2.3:3128: HTTP proxy returned response code 403\n"
        ),
        "other",
    ),
    (
        (
            "https_proxy=http://proxy.example.org:3128\n"
            "grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n"
            "\tstatus = StatusCode.UNAVAILABLE\n"
            '\tdetails = "failed to connect to all addresses; last error: UNKNOWN: '
            'ipv4:127.0.0.1:6379: Failed to connect to remote host: Connection refused"\n'
        ),
        "other",
    ),
    # Ray 0.8 core_worker/transport/direct_task_transport.cc
    (
        (
            "F0107 12:13:33.059109 10234 direct_task_transport.cc:154] Lost connection with local "
            "raylet. Error: IOError: 14: failed to connect to all addresses\n"
        ),
        "other",
    ),
    # Slurm 13.12-18.08 gres_common.c NoDevFiles, as a tool and as CUDA read it
    (
        _traceback(
            [(f"{SITE}/ray/utils.py", 274, "get_cuda_visible_devices")],
            "ValueError: invalid literal for int() with base 10: 'NoDevFiles'",
        ),
        "other",
    ),
    (
        "CUDA_VISIBLE_DEVICES=NoDevFiles\n"
        + _traceback(
            [(f"{SITE}/torch/cuda/__init__.py", 319, "_lazy_init")],
            "RuntimeError: No CUDA GPUs are available",
        ),
        "world_size_gpus",
    ),
    # submitit helpers.py TorchDistributedEnvironment.export
    (
        "RuntimeError: Cannot export environment variables as MASTER_ADDR is already set\n",
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # 1/N joined with nothing to say the job runs under Slurm: left to the network reading
    (_traceback(INIT_FRAMES, store_timeout(1, 4)), "other"),
    # under Slurm, but another rank did try to reach the store (a network problem)
    (
        "SLURM_NTASKS=8\n"
        "[W socket.cpp:464] [c10d] The client socket has failed to connect to [gpu018]:29500 "
        "(errno: 113 - No route to host).\n" + _traceback(INIT_FRAMES, store_timeout(1, 8)),
        "other",
    ),
    # under Slurm, a whole node joined and the other did not: not 'only rank 0 started'
    ("SLURM_NTASKS=16\n" + _traceback(INIT_FRAMES, store_timeout(8, 16)), "other"),
    # Lightning under Slurm got past the rendezvous (healthy)
    (
        "SLURM_JOB_ID=881234\n"
        + lightning_member(0, 4)
        + "----------------------------------------------------------------------------------------"
        "------------\ndistributed_backend=nccl\nAll distributed processes registered. Starting "
        "with 4 processes\n",
        "other",
    ),
    # torchrun's agents all joined (healthy)
    (
        rdzv_join()
        + (
            "INFO:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node "
            "'gpu017_48200_0' has joined round 0 of the rendezvous '4242' as rank 0 in a world of "
            "size 2.\n"
        ),
        "nccl_network",
    ),
    # a worker that exited 1 with a traceback elsewhere: torchrun's summary names nothing
    (
        child_failed(
            1, "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
        ),
        "other",
    ),
    # an HTTP client hung up on the API server: not a rendezvous
    (
        "ERROR:    Exception in ASGI application\nConnectionResetError: [Errno 104] Connection reset by peer\n",
        "nccl_network",
    ),
    # a follower with the head's real address (healthy)
    (
        (
            "INFO 11-30 10:12:44 [serve.py:225] Launching vLLM (v0.32.0) headless multiproc "
            "executor, with head node address 10.0.0.1:29501 for torch.distributed process group.\n"
        ),
        "nccl_network",
    ),
    # a compiled-graph timeout at vLLM's own 300 s: a hang whose cause is elsewhere
    (
        _traceback(
            VLLM_RAY_FRAMES,
            "ray.exceptions.RayChannelTimeoutError: System error: If the execution is expected to "
            "take a long time, increase RAY_CGRAPH_get_timeout which is currently 300 seconds. "
            "Otherwise, this may indicate that the execution is hanging.",
        ),
        "other",
    ),
    # gRPC failing with no_proxy set and no proxy variable: not a proxy problem
    (
        (
            "no_proxy=localhost,127.0.0.1\n"
            '\tdetails = "failed to connect to all addresses; last error: UNKNOWN: '
            'ipv4:10.0.0.2:6379: Failed to connect to remote host: Connection refused"\n'
        ),
        "other",
    ),
    # NoDevFiles in a CPU-only job's environment that runs fine
    ("CUDA_VISIBLE_DEVICES=NoDevFiles\nEpoch 1/10: loss 0.412\nDone.\n", "world_size_gpus"),
    # Slurm's warning alone (a single-task job meant that way)
    ("srun: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1\nDone.\n", "other"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != cause for c in causes), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_a_store_timeout_under_slurm_outranks_the_network_reading() -> None:
    log = "SLURM_NTASKS=8\n" + _traceback(INIT_FRAMES, store_timeout(1, 8))
    plain = diagnose_text(_traceback(INIT_FRAMES, store_timeout(1, 8))).causes
    under_slurm = diagnose_text(log).causes
    assert plain[0].cause == "nccl_network"
    assert under_slurm[0].cause == "other"
    assert "srun" in under_slurm[0].fix
    assert [c.cause for c in under_slurm][1:2] == ["nccl_network"]


def test_torchrun_summary_alone_is_only_a_guess() -> None:
    diagnosis = diagnose_text(child_failed(1, "To enable traceback see: https://pytorch.org"))
    assert diagnosis.healthy
    assert any(c.signature == "torchrun_child_failed" for c in diagnosis.unconfirmed)
