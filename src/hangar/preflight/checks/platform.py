"""Platform quirks: WSL2, and GPUs that share one memory pool with the CPU."""

from __future__ import annotations

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts

_WSL2 = Finding(
    id="host.platform.wsl2",
    severity="info",
    evidence="/proc/sys/kernel/osrelease mentions microsoft",
    message="running under WSL2: pinned memory is off by default and Ctrl+C can leave workers holding the GPU",
    fix="see workaround wsl2-pin-memory; stop servers with hangar stop",
)


def _unified_memory(gpu_id: str) -> Finding:
    return Finding(
        id="host.platform.unified_memory",
        severity="info",
        evidence=f"{gpu_id}: unified memory",
        message="CPU and GPU share one memory pool: the OS, page cache and vLLM compete for it",
        fix="see workarounds unified-memory-allocator and gb10-memory-utilization",
    )


def check_platform(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out = [_WSL2] if facts.wsl else []
    if req.gpu is not None and req.gpu.unified_memory:
        out.append(_unified_memory(req.gpu.id))
    return out
