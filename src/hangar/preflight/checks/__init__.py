"""Host checks: HostFacts + what the deployment asks for -> findings (pure functions).

One module per thing checked: ``limits`` (ulimits, table-driven), ``dirs`` (run/cache
dirs, stale temp files), ``network`` (port, NCCL/GLOO interfaces), ``engine`` (engine
interpreter, driver vs CUDA build, nvcc), ``gpu`` (no driver for the GPUs asked, busy
GPUs, shared utilization),
``platform`` (WSL2, unified memory) and ``weights`` (local dir / HF cache).
"""

from __future__ import annotations

from hangar.preflight.checks.dirs import check_dirs, check_stale_files
from hangar.preflight.checks.engine import check_driver, check_engine, check_nvcc
from hangar.preflight.checks.gpu import (
    check_gpu_driver,
    check_gpu_usage,
    check_shared_utilization,
)
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
    check_gpu_driver,
    check_gpu_usage,
    check_shared_utilization,
    check_platform,
    check_nvcc,
    check_socket_ifnames,
    check_weights,
)


# A batch job runs elsewhere: on the submitting host only what it shares with the compute
# nodes is checked (run dir, the engine on the shared filesystem, the weights); ulimits,
# temp dirs, ports and GPUs are the job script's business and the slurm.* checks'.
SUBMIT_HOST_CHECKS: tuple[Check, ...] = (check_dirs, check_engine, check_weights)


def host_findings(
    facts: HostFacts, req: CheckInput, checks: tuple[Check, ...] = CHECKS
) -> list[Finding]:
    """Every host check's findings, in CHECKS order."""
    return [f for check in checks for f in check(facts, req)]


__all__ = ["CHECKS", "SUBMIT_HOST_CHECKS", "Check", "CheckInput", "host_findings", "relevant_env"]
