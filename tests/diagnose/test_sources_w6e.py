"""Surface forms of Ray, Slurm and host-resource failures (data/network.yaml and data/slurm.yaml, and the
older forms in host.yaml, slurm.yaml, network.yaml, limits.yaml that the same sources print),
written from the emitting sources (file and version in each signature's `sources`): every log
below is the source's format string with its variables filled in, not a line copied from a
report. Near misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text

NODE_ID = "2b4598e19bbbae3705111f616c84508861100638e4e1f7856c77461b"
SITE = "/usr/lib/python3.12/site-packages"


def _ray_log(level: str, where: str, msg: str) -> str:
    # Ray's Python logger format: "%(asctime)s\t%(levelname)s %(filename)s:%(lineno)s -- %(message)s"
    return f"2026-12-02 01:10:11,123\t{level} {where} -- {msg}\n"


def _raylet(level: str, where: str, msg: str) -> str:
    # Ray C++ RAY_LOG prefix: "[%Y-%m-%d %H:%M:%S,%f %L %P %t] file.cc:line: "
    return f"[2026-12-02 01:10:11,123 {level} 2741 2741] {where}: {msg}\n"


CASES = [
    # Ray 2.30+ gcs_node_manager.cc InferDeathInfo, through ActorDiedError
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: RayWorkerWrapper\n\tactor_id: 8a1f2c3d4e5f60718293a4b501000000\n"
        "\tpid: 321\n\tip: 10.20.0.12\n"
        "The actor died because its node has died. Node Id: " + NODE_ID + "\n"
        "\tthe actor's node was terminated unexpectedly: health check failed due to missing too "
        "many heartbeats\n",
        "ray_cluster",
    ),
    # the same reason in ray.nodes() / `ray list nodes --detail`
    (
        "  state: DEAD\n  state_message: health check failed due to missing too many heartbeats\n",
        "ray_cluster",
    ),
    # Ray exceptions.py LocalRayletDiedError
    (
        (
            "ray.exceptions.LocalRayletDiedError: The task's local raylet died. Check raylet.out for "
            "more information.\n"
        ),
        "ray_cluster",
    ),
    # Ray _private/process_watcher.py report_raylet_error_logs
    (
        _ray_log(
            "ERROR",
            "process_watcher.py:116",
            "Raylet is terminated. Termination is unexpected. Possible reasons include: (1) "
            "SIGKILL by the user or system OOM killer, (2) Invalid memory access from Raylet "
            "causing SIGSEGV or SIGBUS, (3) Other termination signals. Last 20 lines of the "
            "Raylet logs:",
        ),
        "ray_cluster",
    ),
    # Ray exceptions.py OutOfDiskError (class line, and the message alone)
    (
        (
            "ray.exceptions.OutOfDiskError: Local disk is full\nThe object cannot be created because "
            "the local object store is full and the local disk's utilization is over capacity (95% "
            "by default).Tip: Use `df` on this node to check disk usage and `ray memory` to check "
            "object store memory usage.\n"
        ),
        "tmp_disk_full",
    ),
    (
        (
            "The object cannot be created because the local object store is full and the local "
            "disk's utilization is over capacity (95% by default).\n"
        ),
        "tmp_disk_full",
    ),
    # Ray file_system_monitor.cc (host.yaml)
    (
        _raylet(
            "E",
            "file_system_monitor.cc:116",
            "/tmp/ray/session_2026-12-02_01-00-00_000000_2741 is over 95% full, available space: "
            "1073741824; capacity: 536870912000. Object creation will fail if spilling is "
            "required.",
        ),
        "tmp_disk_full",
    ),
    # Ray exceptions.py ObjectStoreFullError
    (
        (
            "ray.exceptions.ObjectStoreFullError: Failed to put object "
            "00ffffffffffffffffffffffffffffffffffffff0100000001000000 in object store because it is "
            "full. Object size is 2147483648 bytes.\nThe local object store is full of objects that "
            "are still in scope and cannot be evicted. Tip: Use the `ray memory` command to list "
            "active objects in the cluster.\n"
        ),
        "host_oom",
    ),
    # Ray _raylet.pyx worker exit detail under Kubernetes
    (
        (
            "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker exits unexpectedly. Worker "
            "exits with an exit code None. The worker may have exceeded K8s pod memory limits.\n"
        ),
        "host_oom",
    ),
    # Ray memory monitor (slurm.yaml)
    (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
        "Memory on the node (IP: 10.20.0.11, ID: " + NODE_ID + ") where the task (actor ID: "
        "8a1f2c3d, name=RayWorkerWrapper.__init__, pid=321, memory used=61.2GB) was running was "
        "120.5GB / 125.8GB (0.957), which exceeds the memory usage threshold of 0.95.\n",
        "host_oom",
    ),
    # Ray parameter.py RayParams.update_pre_selected_port
    (
        (
            "ValueError: Ray component worker_ports is trying to use a port number 16379 that is used "
            "by other components.\nPort information: {'gcs': 16379, 'object_manager': 'random', "
            "'worker_ports': '9998 ports from 10002 to 19999'}\nIf you allocate ports, please make "
            "sure the same port is not used by multiple components.\n"
        ),
        "port_in_use",
    ),
    # Ray scripts.py `ray start --head`
    (
        (
            "ConnectionError: Ray is trying to start at 10.20.0.11:6379, but is already running at "
            "10.20.0.11:6379. Please specify a different port using the `--port` flag of `ray start` "
            "command.\n"
        ),
        "port_in_use",
    ),
    # Ray node.py socket path check under a deep per-job TMPDIR
    (
        (
            "OSError: AF_UNIX path length cannot exceed 107 bytes: '/var/tmp/pbs.5513403.pbs01/"
            "ray/session_2026-12-02_01-00-00_000000_2741/sockets/plasma_store'\n"
        ),
        "tmp_shared",
    ),
    # Ray grpc_server.cc (network.yaml)
    (
        _raylet(
            "C",
            "grpc_server.cc:120",
            "Failed to start the grpc server. The specified port is 8076. This means that Ray's "
            "core components will not be able to function correctly.",
        ),
        "port_in_use",
    ),
    # asyncio base_events.py create_server through uvicorn (host.yaml)
    (
        (
            "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
            "address already in use\n"
        ),
        "port_in_use",
    ),
    # torch c10d TCPStore (libuv backend, torch 2.4+)
    (
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
            "network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: "
            "address already in use\n"
        ),
        "port_in_use",
    ),
    # pyzmq bind (zmq/sugar/socket.py: strerror + " (addr=...)")
    (
        "zmq.error.ZMQError: Address already in use (addr='tcp://10.20.0.11:5570')\n",
        "port_in_use",
    ),
    # Slurm interfaces/mpi.c
    (
        (
            "srun: error: mpi_g_client_init: unable to resolve MPI plugin offset from plugin_id=106. "
            "This error usually results from a job being submitted against an MPI plugin which was "
            "not compiled into slurmd but was for job submission command.\n"
        ),
        "slurm_resources",
    ),
    ("srun: error: MPI: Cannot create context for mpi/pmix_v5\n", "slurm_resources"),
    # Slurm auth/slurm (23.11+)
    (
        "sbatch: error: auth_p_verify: sack_verify failure: Invalid authentication credential\n",
        "slurm_auth",
    ),
    ("slurmd: error: cred_p_verify: decode_jwt() failed\n", "slurm_auth"),
    # Slurm slurm_errno.c ESLURM_AUTH_UNPACK / ESLURMD_CREDENTIAL_REPLAYED after srun's prefixes
    ("srun: error: Unable to allocate resources: Cannot unpack credential\n", "slurm_auth"),
    (
        (
            "srun: error: Task launch for StepId=4242.0 failed on node gpu-node-2: Job credential "
            "replayed\n"
        ),
        "slurm_auth",
    ),
    # Slurm slurmstepd req.c and task_cgroup_memory.c (slurm.yaml), 25.05 wording
    (
        (
            "slurmstepd: error: *** STEP 4242.0 ON gpu-node-1 CANCELLED AT 2026-12-02T01:10:11 DUE "
            "TO TIME LIMIT ***\n"
        ),
        "slurm_time_limit",
    ),
    (
        (
            "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks "
            "have been OOM Killed.\n"
        ),
        "host_oom",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


HEALTHY = (
    _ray_log("INFO", "worker.py:1841", "Started a local Ray instance.")
    + "INFO 12-02 01:10:11 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000\n"
    + "INFO:     Application startup complete.\n"
)

NEAR_MISSES = [
    # a graceful raylet stop (process_watcher.py's other branch)
    (
        _ray_log(
            "INFO", "process_watcher.py:116", "Raylet is terminated. Termination is graceful."
        ),
        "ray_cluster",
    ),
    # a healthy start
    (HEALTHY, "ray_cluster"),
    (HEALTHY, "port_in_use"),
    # slurmstepd's other cancellations (req.c): not the time limit
    (
        (
            "slurmstepd: error: *** JOB 4242 ON gpu-node-1 CANCELLED AT 2026-12-02T01:10:11 DUE TO "
            "PREEMPTION ***\n"
        ),
        "slurm_time_limit",
    ),
    (
        (
            "slurmstepd: error: *** JOB 4242 ON gpu-node-1 CANCELLED AT 2026-12-02T01:10:11 DUE TO "
            "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"
        ),
        "slurm_time_limit",
    ),
    # the spill INFO lines of a healthy raylet (local_object_manager.cc)
    (
        _raylet(
            "I",
            "local_object_manager.cc:166",
            "Spilled 50 MiB, 1 objects, write throughput 230 MiB/s",
        ),
        "tmp_disk_full",
    ),
    # `ray status` with nothing pending
    ("Pending Demands:\n (no resource demands)\n", "ray_cluster"),
    # a torch.distributed bind to an address this host does not have: the network, not a port
    (
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
            "network address. port: 29500, useIpv6: false, code: -99, name: EADDRNOTAVAIL, message: "
            "address not available\n"
        ),
        "port_in_use",
    ),
    # a resource refusal after the same srun prefix is not an authentication failure
    (
        (
            "srun: error: Unable to allocate resources: Requested node configuration is not "
            "available\n"
        ),
        "slurm_auth",
    ),
    # a socket path error that is not Ray's temp dir (a Unix socket the user passed)
    ("ValueError: unix socket path '/run/app.sock' is not writable\n", "tmp_shared"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != cause for c in causes), [(c.cause, c.confidence) for c in causes]


def _case(needle: str) -> str:
    return next(log for log, _ in CASES if needle in log)


def test_raylet_death_yields_to_a_full_disk() -> None:
    # raylet.err of a node whose /tmp/ray filled, then process_watcher's report
    log = _case("file_system_monitor.cc") + _case("Raylet is terminated")
    top = diagnose_text(log).causes[0]
    assert top.cause == "tmp_disk_full"


def test_k8s_memory_hint_is_a_guess_only() -> None:
    hint = _case("K8s pod memory limits")
    causes = diagnose_text(hint).causes
    assert causes[0].cause == "host_oom"
    assert causes[0].confidence < 0.5
    # a specific cause in the same log wins over the guess
    with_port = diagnose_text(hint + _case("but is already running at")).causes
    assert with_port[0].cause == "port_in_use"
