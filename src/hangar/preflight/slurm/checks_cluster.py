"""Checks: Slurm installed, partition, time limit, node count, GRES type, node fit, layout vs nodes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hangar.deploy.schema import Deployment, SlurmTarget
from hangar.preflight.findings import Finding, Severity
from hangar.preflight.slurm.common import finding, job_time_s
from hangar.preflight.slurm.facts import SINFO_FORMAT, SlurmFacts, SlurmNode, SlurmPartition
from hangar.preflight.slurm.parse import parse_mem_mb

# ---- checks: installation, partition, nodes -----------------------------------------


def check_installed(facts: SlurmFacts) -> list[Finding]:
    if facts.installed:
        return []
    return [
        finding(
            "slurm.not_installed",
            "error",
            "sbatch is not installed on this machine: a Slurm launch cannot be submitted "
            "from here; nothing was started",
            "run Hangar on the cluster's login node (where `sbatch --version` works), or set "
            'target.kind = "local"',
            "sbatch not found on PATH (nor in /usr/sbin, /sbin)",
        )
    ]


def check_probe_errors(facts: SlurmFacts) -> list[Finding]:
    if not facts.errors:
        return []
    first = facts.errors[0]
    return [
        finding(
            "slurm.probe_failed",
            "warning",
            f"could not ask Slurm ({first.message}): the partition and node checks are "
            "incomplete; if slurmctld is unreachable from here, sbatch fails too",
            f"run `{first.command}` yourself (SLURM_CONF, munge and the controller must answer)",
            "; ".join(f"{e.command}: {e.message}" for e in facts.errors),
        )
    ]


def check_partition(facts: SlurmFacts) -> list[Finding]:
    if facts.partition_missing:
        name = facts.partition_requested
        return [
            finding(
                "slurm.partition_unknown",
                "error",
                f"partition {name!r} does not exist: sbatch refuses the job "
                "(invalid partition name specified)",
                "set target.slurm.partition to one of `sinfo -h -o %P`",
                f"scontrol show partition {name} --oneliner: Partition {name} not found",
            )
        ]
    if (
        facts.partition is None
        and facts.partition_requested is None
        and facts.scontrol
        and not facts.errors
    ):
        return [
            finding(
                "slurm.no_partition",
                "error",
                "no partition given and the cluster has no default partition: sbatch refuses "
                "the job (No partition specified or system default partition)",
                "set target.slurm.partition to one of `sinfo -h -o %P`",
                "scontrol show partition --oneliner: no line with Default=YES",
            )
        ]
    return _check_partition_state(facts.partition) if facts.partition else []


def _check_partition_state(p: SlurmPartition) -> list[Finding]:
    state = p.state.upper()
    if state == "UP":
        return []
    # slurm.conf.5 State: DOWN queues jobs without starting them; DRAIN and INACTIVE
    # refuse new jobs.
    refuses = state in ("DRAIN", "INACTIVE")
    return [
        finding(
            "slurm.partition_state",
            "error" if refuses else "warning",
            f"partition {p.name} is {state}: "
            + (
                "Slurm refuses new jobs"
                if refuses
                else "jobs queue but do not start until it is UP"
            ),
            "choose another partition (target.slurm.partition) or ask the admins; "
            f"`scontrol show partition {p.name}`",
            f"scontrol show partition {p.name}: State={p.state}",
        )
    ]


def _rejects(facts: SlurmFacts) -> str:
    """How a job over a partition limit fails (EnforcePartLimits, slurm.conf.5)."""
    mode = (facts.enforce_part_limits or "").upper()
    if mode in ("ALL", "ANY", "YES"):
        return "sbatch rejects the job at submission"
    if mode == "NO":
        return "the job is accepted but pends forever"
    return "sbatch rejects it or it pends forever (EnforcePartLimits)"


def _limit_severity(s: SlurmTarget) -> Severity:
    # A QOS with flags OverPartQOS/PartitionTimeLimit may lift partition limits (sacctmgr.1).
    return "warning" if s.qos else "error"


def check_time(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    p, t = facts.partition, job_time_s(s)
    if p is None or t is None or p.max_time_s is None or t <= p.max_time_s:
        return []
    return [
        finding(
            "slurm.time_over_max",
            _limit_severity(s),
            f"time limit {s.time} is over partition {p.name}'s MaxTime {p.max_time}: "
            f"{_rejects(facts)} (squeue reason PartitionTimeLimit / PartitionConfig)",
            f"set target.slurm.time to at most {p.max_time}, or pick a partition that allows it",
            f"target.slurm.time = {s.time} ({t} s); scontrol show partition {p.name}: "
            f"MaxTime={p.max_time} ({p.max_time_s} s); EnforcePartLimits={facts.enforce_part_limits}",
        )
    ]


def check_node_count(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    p, n = facts.partition, d.resources.nodes
    if p is None:
        return []
    found = []
    if p.total_nodes is not None and n > p.total_nodes:
        found.append(
            finding(
                "slurm.nodes_over_partition",
                "error",
                f"{n} nodes asked for but partition {p.name} has {p.total_nodes}: sbatch "
                "refuses the job (Node count specification invalid)",
                f"set resources.nodes to at most {p.total_nodes} (and fit the layout), or "
                "pick a larger partition",
                f"resources.nodes = {n}; scontrol show partition {p.name}: "
                f"TotalNodes={p.total_nodes} Nodes={p.nodes}",
            )
        )
    elif p.max_nodes is not None and n > p.max_nodes:
        found.append(
            finding(
                "slurm.nodes_over_max",
                _limit_severity(s),
                f"{n} nodes is over partition {p.name}'s MaxNodes {p.max_nodes}: "
                f"{_rejects(facts)} (squeue reason PartitionNodeLimit / PartitionConfig)",
                f"set resources.nodes to at most {p.max_nodes}, or pick a partition that allows it",
                f"resources.nodes = {n}; scontrol show partition {p.name}: MaxNodes="
                f"{p.max_nodes}; EnforcePartLimits={facts.enforce_part_limits}",
            )
        )
    return found


def _node_summary(nodes: Iterable[SlurmNode]) -> str:
    parts = [
        f"{n.name}: {n.gpus} GPU"
        + (f" ({','.join(n.gpu_types)})" if n.gpu_types else "")
        + f", {n.cpus} CPUs, {n.memory_mb} MB, {n.state}"
        for n in nodes
    ]
    shown = parts[:6] + ([f"... {len(parts) - 6} more"] if len(parts) > 6 else [])
    return "; ".join(shown)


def check_gres_type(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    p, nodes = facts.partition, facts.nodes
    if p is None or not nodes:
        return []
    types = sorted({t for n in nodes for t in n.gpu_types} | set(p.gpu_types))
    where = f"sinfo -N -p {p.name} -o '{SINFO_FORMAT}'"
    if s.gres_type and s.gres_type not in types:
        have = f"types {', '.join(types)}" if types else "untyped GPUs (gpu:N)"
        fix = (
            f"set target.slurm.gres_type to one of {', '.join(types)}"
            if types
            else "remove target.slurm.gres_type (the nodes' GRES has no type)"
        )
        return [
            finding(
                "slurm.gres_type_unknown",
                "error",
                f"GPU type {s.gres_type!r} exists on no node of partition {p.name} (it has "
                f"{have}): sbatch refuses the job (Requested node configuration is not "
                "available / Invalid generic resource (gres) specification)",
                fix,
                f"target.slurm.gres_type = {s.gres_type}; {where}: {_node_summary(nodes)}",
            )
        ]
    if not s.gres_type and len(types) > 1:
        return [
            finding(
                "slurm.gres_types_mixed",
                "warning",
                f"partition {p.name} has several GPU types ({', '.join(types)}) and the "
                "request is untyped: the job may land on any of them",
                f"set target.slurm.gres_type to one of {', '.join(types)}",
                f"{where}: {_node_summary(nodes)}",
            )
        ]
    return []


def check_node_fit(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    """GPUs, CPUs and memory per node vs the partition's nodes (select/cons_tres)."""
    p, nodes = facts.partition, facts.nodes
    if p is None or not nodes:
        return []
    if s.gres_type and not any(s.gres_type in n.gpu_types for n in nodes):
        return []  # slurm.gres_type_unknown says it
    need_mem = parse_mem_mb(s.mem) if s.mem else None
    fits = [
        n
        for n in nodes
        if n.gpus_of(s.gres_type) >= d.resources.gpus
        and (s.cpus_per_task is None or n.cpus is None or n.cpus >= s.cpus_per_task)
        and (need_mem is None or n.memory_mb is None or n.memory_mb >= need_mem)
    ]
    if len(fits) >= d.resources.nodes:
        return _check_usable(d, fits, p)
    return [_no_fit(d, s, facts, len(fits), need_mem)]


def _no_fit(
    d: Deployment, s: SlurmTarget, facts: SlurmFacts, fits: int, need_mem: int | None
) -> Finding:
    p, nodes = facts.partition, facts.nodes
    assert p is not None
    kind = f"{s.gres_type} " if s.gres_type else ""
    ask = [f"{d.resources.gpus} {kind}GPUs"]
    if s.cpus_per_task:
        ask.append(f"{s.cpus_per_task} CPUs")
    if need_mem:
        ask.append(f"{need_mem} MB")
    max_gpus = max(n.gpus_of(s.gres_type) for n in nodes)
    fix = (
        f"set resources.gpus to at most {max_gpus} (and resources.nodes / the layout to match)"
        if max_gpus < d.resources.gpus
        else "lower target.slurm.cpus_per_task / target.slurm.mem, or resources.nodes"
    )
    return finding(
        "slurm.node_config_unavailable",
        "error",
        f"{d.resources.nodes} node(s) with {', '.join(ask)} each asked for, but only {fits} "
        f"node(s) of partition {p.name} have that: Slurm rejects the job "
        "(sbatch: error: Batch job submission failed: Requested node configuration is not "
        "available)",
        fix,
        f"per node: resources.gpus = {d.resources.gpus}, target.slurm.cpus_per_task = "
        f"{s.cpus_per_task}, target.slurm.mem = {s.mem}; sinfo -N -p {p.name} -o "
        f"'{SINFO_FORMAT}': {_node_summary(nodes)}",
    )


def _check_usable(d: Deployment, fits: Sequence[SlurmNode], p: SlurmPartition) -> list[Finding]:
    usable = [n for n in fits if n.usable]
    if len(usable) >= d.resources.nodes:
        return []
    return [
        finding(
            "slurm.nodes_unavailable",
            "warning",
            f"only {len(usable)} of the {len(fits)} nodes of partition {p.name} that fit the "
            f"request are up now; {d.resources.nodes} are needed, so the job waits "
            "(ReqNodeNotAvail / Resources) until enough come back",
            f"check `sinfo -N -p {p.name}`; lower resources.nodes or pick another partition",
            f"node states: {_node_summary(fits)}",
        )
    ]


def check_no_gpus(d: Deployment, facts: SlurmFacts) -> list[Finding]:
    p, nodes = facts.partition, facts.nodes
    if p is None or not nodes or any(n.gpus for n in nodes):
        return []
    return [
        finding(
            "slurm.partition_no_gpus",
            "error",
            f"no node of partition {p.name} has GPU GRES: a request for {d.resources.gpus} "
            "GPUs per node is rejected (Requested node configuration is not available)",
            "set target.slurm.partition to a GPU partition (`sinfo -o '%P %G'`)",
            f"sinfo -N -p {p.name} -o '{SINFO_FORMAT}': {_node_summary(nodes)}",
        )
    ]


# ---- checks: layout vs nodes --------------------------------------------------------


def check_layout(d: Deployment, s: SlurmTarget) -> list[Finding]:
    tp, pp, dp = d.parallel.tensor, d.parallel.pipeline, d.parallel.data
    world, gpus, nodes = tp * pp * dp, d.resources.gpus, d.resources.nodes
    layout = f"tensor {tp} x pipeline {pp} x data {dp} = {world}"
    have = f"resources: {gpus} GPUs/node x {nodes} nodes = {gpus * nodes}"
    if world > gpus * nodes:
        return [
            finding(
                "slurm.layout_exceeds_gpus",
                "error",
                f"the layout needs {world} GPUs but the job asks for {gpus * nodes}: vLLM "
                "cannot place every rank (placement group never ready / not enough GPUs)",
                "raise resources.gpus or resources.nodes, or lower parallel.tensor/pipeline/data",
                f"{layout}; {have}",
            )
        ]
    found = _check_spread(d, s, world, layout, have)
    if world < gpus * nodes:
        found.append(
            finding(
                "slurm.gpus_idle",
                "warning",
                f"the layout uses {world} of the {gpus * nodes} GPUs asked for: the rest "
                "stay idle but count against the allocation",
                f"set resources.gpus = {max(1, world // nodes)} / resources.nodes to match, or "
                "raise parallel.data",
                f"{layout}; {have}",
            )
        )
    return found


def _check_spread(
    d: Deployment, s: SlurmTarget, world: int, layout: str, have: str
) -> list[Finding]:
    tp, nodes, gpus = d.parallel.tensor, d.resources.nodes, d.resources.gpus
    if nodes == 1:
        return []
    found = []
    if s.multinode == "mp" and world % nodes:
        # vllm/engine/arg_utils.py (0.11.1+): world size must be divisible by nnodes.
        found.append(
            finding(
                "slurm.layout_not_divisible",
                "error",
                f"world size {world} is not divisible by {nodes} nodes: vLLM's --nnodes mode "
                "refuses it at start-up",
                "make tensor x pipeline x data a multiple of resources.nodes",
                f"{layout}; resources.nodes = {nodes}",
            )
        )
    if tp > gpus or (gpus * nodes == world and gpus % tp):
        found.append(
            finding(
                "slurm.tp_spans_nodes",
                "warning",
                f"tensor parallel groups of {tp} cross node boundaries ({gpus} GPUs per node): "
                "all-reduce then runs over the network every layer, usually far slower than "
                "pipeline parallelism across nodes",
                f"set parallel.tensor = {gpus} (GPUs per node) and parallel.pipeline = {nodes} "
                "(nodes), as vLLM's multi-node guide recommends",
                f"{layout}; {have}",
            )
        )
    if world <= gpus:
        found.append(
            finding(
                "slurm.nodes_unneeded",
                "warning",
                f"the layout fits on one node ({world} <= {gpus} GPUs) but {nodes} nodes are "
                "asked for: the others idle, and the job waits longer in the queue",
                "set resources.nodes = 1",
                f"{layout}; {have}",
            )
        )
    return found


