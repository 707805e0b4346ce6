"""A log cut inside a traceback (data/stages.yaml `traceback_cut_in_*`): the exception line is
missing, the innermost frames still name the stage that raised. The frames are CPython's format
(Lib/traceback.py) over the functions named in each signature's `sources`; a traceback that goes
on to its exception line, or a server that went on serving, is not a cut log. Also the scheduler
and toolchain forms added with them (Torque's memory kill, CCCL's header check, bash's job report)."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes

from hangar.diagnose import diagnose_text

SITE = "/usr/local/lib/python3.12/dist-packages"


def _cut(frames: list[tuple[str, str, str]], prefix: str = "") -> str:
    """A traceback whose frames are (path, function, source line), ending without its error."""
    lines = ["Traceback (most recent call last):"]
    for path, func, source in frames:
        lines += [f'  File "{path}", line 57, in {func}', f"    {source}"]
    return "".join(f"{prefix}{line}\n" for line in lines)


ENGINE = (f"{SITE}/vllm/v1/engine/core.py", "__init__", "self._initialize_kv_caches(vllm_config)")
KV = (
    f"{SITE}/vllm/v1/engine/core.py",
    "_initialize_kv_caches",
    "available = self.model_executor.determine_available_memory()",
)
PROFILE = (
    f"{SITE}/vllm/v1/worker/gpu_worker.py",
    "determine_available_memory",
    "self.model_runner.profile_run()",
)
CHECK = (
    f"{SITE}/vllm/v1/core/kv_cache_utils.py",
    "check_enough_kv_cache_memory",
    "raise ValueError(",
)
ZMQ = (f"{SITE}/zmq/sugar/socket.py", "bind", "super().bind(addr)")
SHM = (
    f"{SITE}/vllm/distributed/device_communicators/shm_broadcast.py",
    "__init__",
    "self.remote_socket.bind(socket_addr)",
)
SYMM = (
    f"{SITE}/torch/distributed/_symmetric_memory/__init__.py",
    "rendezvous",
    "return _SymmetricMemory.rendezvous(tensor, group_name)",
)

CASES = [
    (_cut([ENGINE, KV], "ERROR 03-18 10:25:43 [core.py:337] "), "gpu_memory_utilization"),
    (_cut([ENGINE, KV, PROFILE]), "gpu_memory_utilization"),
    (
        _cut(
            [(f"{SITE}/vllm/entrypoints/llm.py", "wake_up", "self.llm_engine.wake_up()")],
            "(main_task pid=17) ",
        ),
        "gpu_memory_utilization",
    ),
    (_cut([ENGINE, KV, CHECK]), "kv_cache_too_small"),
    (
        _cut([SHM, ZMQ], "(Worker_TP12 pid=114) ERROR 08-10 23:02:36 [multiproc_executor.py:898] "),
        "port_in_use",
    ),
    (_cut([SYMM], "ERROR 09-30 01:24:08 [multiproc_executor.py:597] "), "nccl_p2p"),
    # Torque's job mail; HTCondor's hold reason
    (
        "PBS Job Id: 3132467.head\njob 3132467 exceeded MEM usage hard limit (2528 > 1126)\n",
        "host_oom",
    ),
    ("Hold reason: Job has gone over memory limit of 2048 megabytes.\n", "host_oom"),
    # CCCL's compatibility check under a FlashInfer JIT build
    (
        (
            "/opt/venv/lib/python3.12/site-packages/flashinfer/data/include/cuda/std/__cccl/"
            'cuda_toolkit.h:30:4: error: #error "CUDA compiler and CUDA toolkit headers are '
            'incompatible, please check your include paths"\n'
        ),
        "flashinfer_jit_nvcc",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_cut_traceback_names_the_stage_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


def test_a_traceback_that_reaches_its_error_is_named_by_the_error() -> None:
    log = (
        _cut([ENGINE, KV, PROFILE])
        + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert all(
        c.signature != "traceback_cut_in_memory_profiling" for c in diagnose_text(log).causes
    )


def test_a_server_that_went_on_serving_is_not_a_cut_log() -> None:
    log = _cut([SHM, ZMQ]) + "INFO:     Application startup complete.\n"
    assert "port_in_use" not in known_causes(log)


def test_a_cut_traceback_far_above_the_end_is_not_the_last_stage() -> None:
    log = _cut([ENGINE, KV]) + "".join(
        f"INFO 03-18 10:26:{i:02d} [loggers.py:1] step {i}\n" for i in range(40)
    )
    assert "gpu_memory_utilization" not in known_causes(log)


def test_bash_job_report_of_a_fatal_signal_is_a_failure() -> None:
    log = (
        "/var/spool/slurm/d/job75896/slurm_script: line 10: 1763903 Segmentation fault      "
        "(core dumped) ./solver --in a.pdbqt\n"
    )
    causes = diagnose_text(log).causes
    assert causes and causes[0].signature == "unrecognised_failure"
