"""Wordings that changed between versions of the emitting code, and a warning that shares words
with an error: each line is the source's format string filled in (cited in the signature)."""

from __future__ import annotations

from hangar.diagnose import diagnose_text


def test_vllm_import_time_ray_warning_is_not_a_missing_ray() -> None:
    # vllm/executor/ray_utils.py logs this on every start without Ray, single-node included
    log = (
        "WARNING 04-22 21:56:34 ray_utils.py:46] Failed to import Ray with "
        "ModuleNotFoundError(\"No module named 'ray'\"). For multi-node inference, please "
        "install Ray with `pip install ray`.\n"
        "INFO 04-22 21:56:40 api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000\n"
    )
    assert all(c.cause != "ray_cluster" for c in diagnose_text(log).causes)


def test_vllm_raised_ray_import_errors_are_named() -> None:
    for line in (
        (
            "ValueError: Failed to import Ray: No module named 'ray'.Please install Ray with "
            "`pip install ray`."
        ),
        "ValueError: Failed to import Ray, please install Ray with `pip install ray`.",
    ):
        top = diagnose_text(line + "\n").top
        assert top is not None and top.cause == "ray_cluster", line


def test_nccl_2_26_bootstrap_wording_on_loopback_across_nodes_is_the_network() -> None:
    # NCCL 2.26+ src/bootstrap.cc prints "Bootstrap: Using%s" (no space before the colon)
    log = (
        "node1:1234:1234 [0] NCCL INFO Bootstrap: Using lo:127.0.0.1<0>\n"
        "node1:1234:1234 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8\n"
        "node1:1234:1234 [0] include/socket.h:403 NCCL WARN Net : Connect to 127.0.0.1<45011> "
        "failed : Connection refused\n"
    )
    top = diagnose_text(log).top
    assert top is not None and top.cause == "nccl_network"


def test_vllm_platform_probe_on_a_healthy_rocm_start_is_not_a_missing_driver() -> None:
    # vllm/platforms/__init__.py logs the NVML probe at DEBUG, then picks ROCm
    log = (
        "DEBUG 05-10 15:51:01 [__init__.py:39] Exception happens when checking CUDA platform: "
        "NVML Shared Library Not Found\n"
        "DEBUG 05-10 15:51:01 [__init__.py:56] CUDA platform is not available because: NVML "
        "Shared Library Not Found\n"
        "INFO 05-10 15:51:01 [__init__.py:243] Automatically detected platform rocm.\n"
    )
    assert diagnose_text(log).causes == ()


def test_slurm_controller_unreachable_is_not_a_refused_request() -> None:
    # src/common/slurm_errno.c texts after srun's 'Unable to allocate resources: %m'
    for reason in (
        "Unable to contact slurm controller (connect failure)",
        "Socket timed out on send/recv operation",
    ):
        causes = diagnose_text(f"srun: error: Unable to allocate resources: {reason}\n").causes
        assert all(c.cause != "slurm_resources" for c in causes), reason
    top = diagnose_text(
        "srun: error: Unable to allocate resources: Requested node configuration is not available\n"
    ).top
    assert top is not None and top.cause == "slurm_resources"
