"""GPUs already busy with other processes, and Hangar runs sharing one GPU's memory."""

from __future__ import annotations

from hangar.hardware.detect import DetectedGpu
from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding, Severity, gib
from hangar.preflight.probe import HostFacts

SHARED_UTIL_LIMIT = (
    0.9  # summed gpu_memory_utilization on one GPU; CUDA context + others need the rest
)
GPU_BUSY_FRACTION = 0.05  # memory in use by others before we call a GPU busy
VLLM_DEFAULT_UTIL = 0.92  # default since <=0.20 (vllm/config/cache.py); 0.9 in <=0.11


def _busy_finding(gpu: DetectedGpu, total: int, used: int, util: float) -> Finding:
    pids = ", ".join(str(p.pid) for p in gpu.processes) or "not visible (other container or user)"
    free = total - used
    severity: Severity = "error" if free < util * total else "warning"
    return Finding(
        id="host.gpu.busy",
        severity=severity,
        evidence=f"GPU {gpu.index} {gpu.name}: {gib(used)} of {gib(total)} used; PIDs {pids}",
        message=f"GPU {gpu.index} already holds {gib(used)}; vLLM needs {util:.2f} x total free at start",
        fix=f"stop those processes (hangar status; kill PIDs {pids}) or lower serve.gpu_memory_utilization below {free / total:.2f}",
    )


def check_gpu_usage(facts: HostFacts, req: CheckInput) -> list[Finding]:
    util = req.gpu_memory_utilization or VLLM_DEFAULT_UTIL
    out = []
    for gpu in facts.nvidia.gpus:
        total, used = gpu.memory_total_bytes, gpu.memory_used_bytes
        if total is not None and used is not None and used > GPU_BUSY_FRACTION * total:
            out.append(_busy_finding(gpu, total, used, util))
    return out


def check_shared_utilization(facts: HostFacts, req: CheckInput) -> list[Finding]:
    if not req.other_runs_util:
        return []
    mine = req.gpu_memory_utilization or VLLM_DEFAULT_UTIL
    total = mine + sum(req.other_runs_util.values())
    if total <= SHARED_UTIL_LIMIT:
        return []
    others = ", ".join(f"{k}={v:.2f}" for k, v in req.other_runs_util.items())
    return [
        Finding(
            id="host.gpu.shared_utilization",
            severity="error" if total > 1 else "warning",
            evidence=f"this={mine:.2f}; running: {others}",
            message=f"servers sharing the GPU would reserve {total:.2f} of its memory (keep the sum under {SHARED_UTIL_LIMIT})",
            fix="lower serve.gpu_memory_utilization on each so they sum below 0.9, or stop a run (hangar stop RUN)",
        )
    ]


def check_gpu_driver(facts: HostFacts, req: CheckInput) -> list[Finding]:
    """A deployment that asks for NVIDIA GPUs on a host where NVML finds none cannot start:
    vLLM fails in its platform detection ("Failed to infer device type", vllm/platforms/
    __init__.py) or, with a CPU build, silently runs on the CPU."""
    if req.gpu is None or req.gpu.rocm or facts.nvidia.available:
        return []
    return [
        Finding(
            id="host.gpu.no_driver",
            severity="error",
            evidence=facts.nvidia.reason or "NVML did not answer",
            message=f"the deployment asks for {req.gpus} {req.gpu.id} GPU(s) but this host shows no NVIDIA GPU",
            fix="run on a GPU host with the NVIDIA driver loaded (nvidia-smi must list the GPUs), "
            'or use target.kind = "slurm" to run on the compute nodes',
        )
    ]
