"""Asking Slurm (user-level commands, short timeouts) for the facts the checks compare; failures kept as data."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from hangar.deploy.schema import Deployment, SlurmTargetSection
from hangar.errors import CommandFailed
from hangar.preflight.slurm.common import job_time_s
from hangar.preflight.slurm.facts import (
    PROBE_TIMEOUT_S,
    SINFO_FORMAT,
    Mount,
    ProbeError,
    SlurmFacts,
    SlurmNode,
    SlurmPartition,
)
from hangar.preflight.slurm.parse import (
    parse_allocation,
    parse_config_value,
    parse_mounts,
    parse_partitions,
    parse_scontrol_nodes,
    parse_sinfo_nodes,
    parse_slurm_version,
)
from hangar.proc import run

# ---- probing ------------------------------------------------------------------------


def _command_env(env: Mapping[str, str]) -> dict[str, str]:
    # SLURM_CONF and PATH as the caller has them; sbin for sites that keep scontrol there.
    out = dict(env)
    out["PATH"] = os.pathsep.join([env.get("PATH", "/usr/bin:/bin"), "/usr/sbin", "/sbin"])
    return out


def _ask(argv: list[str], env: Mapping[str, str], errors: list[ProbeError]) -> str | None:
    try:
        return run(argv, env=env, timeout=PROBE_TIMEOUT_S).stdout
    except CommandFailed as exc:
        message = (exc.stderr or exc.stdout or f"exit {exc.code}").strip()
        errors.append(ProbeError(command=" ".join(argv), message=message.splitlines()[-1]))
        return None


def _probe_partition(
    wanted: str | None, scontrol: str, env: Mapping[str, str], errors: list[ProbeError]
) -> tuple[SlurmPartition | None, bool]:
    argv = [scontrol, "show", "partition", *([wanted] if wanted else []), "--oneliner"]
    before = len(errors)
    out = _ask(argv, env, errors)
    if out is None:
        # "Partition nosuch not found" is an answer, not a probe failure.
        missing = bool(wanted) and any("not found" in e.message for e in errors[before:])
        if missing:
            del errors[before:]
        return None, missing
    parts = parse_partitions(out)
    if wanted:
        return next((p for p in parts if p.name == wanted), None), False
    return next((p for p in parts if p.default), None), False


def _probe_nodes(
    partition: str,
    tools: Mapping[str, str | None],
    env: Mapping[str, str],
    errors: list[ProbeError],
) -> tuple[SlurmNode, ...]:
    if tools["sinfo"]:
        out = _ask([tools["sinfo"], "-h", "-N", "-p", partition, "-o", SINFO_FORMAT], env, errors)
        if out is not None:
            return parse_sinfo_nodes(out)
    if tools["scontrol"]:
        out = _ask([tools["scontrol"], "show", "node", "--oneliner"], env, errors)
        if out is not None:
            return parse_scontrol_nodes(out, partition)
    return ()


def _probe_version(scontrol: str, env: Mapping[str, str], errors: list[ProbeError]) -> str | None:
    out = _ask([scontrol, "--version"], env, errors)
    return parse_slurm_version(out) if out else None


def _read_mounts() -> tuple[Mount, ...]:
    try:
        return parse_mounts(Path("/proc/mounts").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return ()


def _needs_config(d: Deployment, partition: SlurmPartition | None) -> bool:
    """scontrol show config is only read to say whether a broken limit rejects or pends."""
    if partition is None or not isinstance(d.target, SlurmTargetSection):
        return False
    t = job_time_s(d.target.slurm)
    over_time = t is not None and partition.max_time_s is not None and t > partition.max_time_s
    over_nodes = partition.max_nodes is not None and d.resources.nodes > partition.max_nodes
    return over_time or over_nodes


def probe_slurm(d: Deployment, env: Mapping[str, str]) -> SlurmFacts:
    """What Slurm says about the partition ``d`` would use, and the allocation we are in.

    For a local target nothing is run: only the allocation env matters (the salloc phase).
    """
    cmd_env = _command_env(env)
    tools = {n: shutil.which(n, path=cmd_env["PATH"]) for n in ("sbatch", "sinfo", "scontrol")}
    errors: list[ProbeError] = []
    if not isinstance(d.target, SlurmTargetSection):
        tools["scontrol"] = None  # no partition to ask about
    wanted = d.target.slurm.partition if isinstance(d.target, SlurmTargetSection) else None
    partition: SlurmPartition | None = None
    missing, version, enforce = False, None, None
    nodes: tuple[SlurmNode, ...] = ()
    scontrol = tools["scontrol"]
    if scontrol:
        version = _probe_version(scontrol, cmd_env, errors)
        partition, missing = _probe_partition(wanted, scontrol, cmd_env, errors)
    if partition is not None:
        nodes = _probe_nodes(partition.name, tools, cmd_env, errors)
    if scontrol and _needs_config(d, partition):
        out = _ask([scontrol, "show", "config"], cmd_env, errors)
        enforce = parse_config_value(out, "EnforcePartLimits") if out else None
    return SlurmFacts(
        sbatch=tools["sbatch"],
        sinfo=tools["sinfo"],
        scontrol=scontrol,
        version=version,
        partition=partition,
        partition_requested=wanted,
        partition_missing=missing,
        nodes=nodes,
        allocation=parse_allocation(env),
        enforce_part_limits=enforce,
        mounts=_read_mounts(),
        tmpdir=env.get("TMPDIR"),
        errors=tuple(errors),
    )


