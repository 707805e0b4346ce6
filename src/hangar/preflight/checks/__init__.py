"""Host checks: HostFacts + what the deployment asks for -> findings (pure functions).

One module per thing checked: ``limits`` (ulimits, table-driven), ``dirs`` (run/cache
dirs, stale temp files), ``network`` (port, NCCL/GLOO interfaces), ``engine`` (engine
interpreter, driver vs CUDA build, nvcc), ``gpu`` (busy GPUs, shared utilization),
``platform`` (WSL2, unified memory) and ``weights`` (local dir / HF cache).
"""

from __future__ import annotations

from hangar.preflight.checks.dirs import check_dirs, check_stale_files
from hangar.preflight.checks.engine import check_driver, check_engine, check_nvcc
from hangar.preflight.checks.gpu import check_gpu_usage, check_shared_utilization
from hangar.preflight.checks.inputs import Check, CheckInput, relevant_env
from hangar.preflight.checks.limits import check_ulimits
from hangar.preflight.checks.network import check_port, check_socket_ifnames
from hangar.preflight.checks.platform import check_platform
from hangar.preflight.checks.weights import check_weights
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts

# The order of findings in reports follows this tuple.
CHECKS: tuple[Check, ...] = (
    check_ulimits,
    check_dirs,
    check_stale_files,
    check_port,
    check_engine,
    check_driver,
    check_gpu_usage,
    check_shared_utilization,
    check_platform,
    check_nvcc,
    check_socket_ifnames,
    check_weights,
)


def host_findings(facts: HostFacts, req: CheckInput) -> list[Finding]:
    """Every host check's findings, in CHECKS order."""
    return [f for check in CHECKS for f in check(facts, req)]


__all__ = ["CHECKS", "Check", "CheckInput", "host_findings", "relevant_env"]
