"""Surface forms written from the emitting sources: each line below is the source's format
string (file and version in the signature's `sources`) with its variables filled in, not a
line copied from a report. Each must name its cause first."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

CASES = [
    (
        (
            "Worker unexpectedly exits with a connection error code 2. End of file. There are some "
            "potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high "
            "memory usage. (2) ray stop --force is called."
        ),
        "host_oom",
    ),
    (
        "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:71",
        "gpu_memory_utilization",
    ),
    (
        "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
        "flashinfer_jit_nvcc",
    ),
    (
        "ptxas /tmp/x.ptx, line 12; error   : Feature '.m16n8k16' requires .target sm_80 or higher",
        "quant_unsupported_gpu",
    ),
    (
        (
            "ValueError: Unrecognized configuration class <class 'transformers.models.foo."
            "configuration_foo.FooConfig'> for this kind of AutoModel: AutoModelForCausalLM."
        ),
        "unsupported_architecture",
    ),
    ("OSError: [Errno 24] Too many open files: '/tmp/tmpabc'", "ulimit_nofile"),
    (
        (
            "thread '<unnamed>' panicked at library/std/src/thread/mod.rs:1: failed to spawn thread: "
            'Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }'
        ),
        "ulimit_nproc",
    ),
    ("OSError: [Errno 28] Espacio insuficiente en el dispositivo", "tmp_disk_full"),
    (
        (
            "host:1:1 [0] misc/socket.cc:484 NCCL WARN Net : Socket creation failed : Address family "
            "not supported by protocol"
        ),
        "nccl_network",
    ),
    (
        "sbatch: error: Parameter --gres=gpu:2 is not accepted here, use --gpus=2",
        "slurm_resources",
    ),
    (
        (
            "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600031 milliseconds before timing out."
        ),
        "nccl_p2p",
    ),
    (
        (
            "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process "
            "exited or there was a network error, NCCL version 2.19.3"
        ),
        "nccl_network",
    ),
    (
        "host:7:9 [0] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
        "nccl_network",
    ),
    (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "gpu_memory_utilization",
    ),
    (
        "Exception: Capture cuda graph failed: CUDA out of memory. Possible solutions:",
        "gpu_memory_utilization",
    ),
    (
        (
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
            "shared memory (shm)."
        ),
        "shm_ipc",
    ),
    (
        (
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 802: "
            "system not yet initialized"
        ),
        "fabric_manager",
    ),
    (
        "ValueError: Tokenizer class FooTokenizer does not exist or is not currently imported.",
        "unsupported_architecture",
    ),
    ("Failed to initialize NVML: Driver/library version mismatch", "cuda_driver_mismatch"),
    (
        (
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
        ),
        "cuda_driver_mismatch",
    ),
    (
        "ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 7f3a",
        "ray_cluster",
    ),
    ("RuntimeError: Version mismatch: The cluster was started with:", "ray_cluster"),
]


@pytest.mark.parametrize(("line", "cause"), CASES)
def test_source_surface_form_names_its_cause(line: str, cause: str) -> None:
    causes = diagnose_text(line).causes
    assert causes and causes[0].cause == cause, [(f.cause, f.signature) for f in causes]


def test_watchdog_across_nodes_is_the_network() -> None:
    # NCCL's init line with two nodes (init.cc 2.18+: "comm %p rank %d nRanks %d nNodes %d ...")
    log = (
        "host:1:1 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 "
        "MNNVL 0\n" + CASES[10][0] + "\n"
    )
    assert diagnose_text(log).causes[0].cause == "nccl_network"


def test_vllm_own_ulimit_warning_is_not_an_emfile() -> None:
    warning = (
        "WARNING 11-29 18:02:24 [system_utils.py:255] Found ulimit of 20000 and failed to "
        "automatically increase with error current limit exceeds maximum limit. This can cause "
        "fd limit errors like `OSError: [Errno 24] Too many open files`. Consider increasing "
        "with ulimit -n"
    )
    assert diagnose_text(warning).causes == ()
