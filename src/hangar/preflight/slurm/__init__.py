"""Slurm, Ray and vLLM checked against each other before a job is submitted.

``probe_slurm(d, env)`` asks Slurm (commands any user may run, each with a short
timeout) for the partition the job would use, its nodes and the allocation the caller
may be inside, and keeps what failed as data. ``slurm_findings(d, facts, engine)`` is
pure: it compares those facts with the deployment and returns ``slurm.*`` findings,
errors only where Slurm, Ray or vLLM will certainly refuse or fail.

Parsing follows Slurm 22.05's output (Debian bookworm's 22.05.8; the fixtures under
tests/preflight/data/slurm were captured from it) and the forms later releases print:
typed TRES ``gres/gpu:h100=4``, socket suffixes ``gpu:h100:4(S:0-1)``, ``UNLIMITED``.
Which trap of shared/research/multinode.md each check covers: docs/slurm-checks.md.

Modules: facts (values, data files), parse (pure parsers), probe (asking Slurm), and
the check families checks_cluster, checks_env, checks_ray, checks_vllm.
"""

from __future__ import annotations

from pathlib import Path

from hangar.deploy.schema import Deployment, SlurmTargetSection
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding
from hangar.preflight.slurm.checks_cluster import (
    check_gres_type,
    check_installed,
    check_layout,
    check_no_gpus,
    check_node_count,
    check_node_fit,
    check_partition,
    check_probe_errors,
    check_time,
)
from hangar.preflight.slurm.checks_env import (
    check_allocation,
    check_env_vars_used,
    check_host_ip,
    check_ray_env,
)
from hangar.preflight.slurm.checks_ray import (
    check_object_store,
    check_ports,
    check_ray_temp,
    check_shared_node_ports,
    ray_temp_dir,
)
from hangar.preflight.slurm.checks_vllm import (
    check_python,
    check_ray_args,
    check_shared_paths,
    check_vllm_mode,
)
from hangar.preflight.slurm.common import engine_ray_version, parse_ray_args
from hangar.preflight.slurm.facts import (
    ALLOCATION_ENV,
    Gres,
    Mount,
    ProbeError,
    SlurmAllocation,
    SlurmFacts,
    SlurmNode,
    SlurmPartition,
    checks_data,
    ray_start_options,
)
from hangar.preflight.slurm.parse import (
    parse_allocation,
    parse_config_value,
    parse_gres,
    parse_key_values,
    parse_mem_mb,
    parse_mounts,
    parse_partitions,
    parse_scontrol_nodes,
    parse_sinfo_nodes,
    parse_slurm_version,
    parse_time_s,
    parse_tres_gpu_types,
)
from hangar.preflight.slurm.probe import probe_slurm

__all__ = [
    "ALLOCATION_ENV",
    "Gres",
    "Mount",
    "ProbeError",
    "SlurmAllocation",
    "SlurmFacts",
    "SlurmNode",
    "SlurmPartition",
    "checks_data",
    "parse_allocation",
    "parse_config_value",
    "parse_gres",
    "parse_key_values",
    "parse_mem_mb",
    "parse_mounts",
    "parse_partitions",
    "parse_ray_args",
    "parse_scontrol_nodes",
    "parse_sinfo_nodes",
    "parse_slurm_version",
    "parse_time_s",
    "parse_tres_gpu_types",
    "probe_slurm",
    "ray_start_options",
    "ray_temp_dir",
    "slurm_findings",
]

# ---- entry point --------------------------------------------------------------------


def slurm_findings(
    d: Deployment,
    facts: SlurmFacts,
    engine: EngineFacts | None,
    *,
    run_dir: Path | None = None,
    ray_worker_ports: tuple[int, int] | None = None,
) -> list[Finding]:
    """Every slurm.* finding for ``d``.

    ``run_dir``: where the launcher will put the run (it must be on a shared filesystem).
    ``ray_worker_ports``: the worker-port range the rendered script passes to Ray
    (``launch.targets.slurm_argv.worker_port_range(d)``); None: Ray's default
    10002-19999 unless the user's args move it. For a local target only the
    allocation checks apply (the salloc phase).
    """
    if not isinstance(d.target, SlurmTargetSection):
        return check_allocation(d, facts)
    s = d.target.slurm
    ray_version = engine_ray_version(engine)
    found = check_installed(facts) + check_probe_errors(facts) + check_partition(facts)
    found += check_time(s, facts) + check_node_count(d, s, facts)
    found += check_no_gpus(d, facts) or (check_gres_type(s, facts) + check_node_fit(d, s, facts))
    found += check_layout(d, s) + check_allocation(d, facts)
    found += check_ray_args(d, s)
    found += check_ports(s, ray_worker_ports) + check_shared_node_ports(s) + check_ray_temp(s)
    found += check_object_store(s, facts)
    found += check_env_vars_used(d, s, facts) + check_ray_env(d, s, ray_version)
    found += check_host_ip(d) + check_vllm_mode(d, s, engine)
    # With a container the interpreter is the image's, not a path on the nodes' filesystem.
    found += check_python(s, engine, facts) if d.target.container is None else []
    found += check_shared_paths(d, facts, run_dir)
    return found
