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
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import Deployment, SlurmTarget, SlurmTargetSection
from hangar.errors import CommandFailed, DataError
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding, Severity
from hangar.proc import run

PROBE_TIMEOUT_S = 10.0
SINFO_FORMAT = "%N|%c|%m|%G|%T"  # node, CPUs, memory (MB), GRES, long state
RAY_OPTIONS_FILE = "ray_start_options.yaml"
CHECKS_FILE = "slurm_checks.yaml"
ALLOCATION_ENV = (
    "SLURM_JOB_ID",
    "SLURM_JOB_NUM_NODES",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_ID",
    "SLURM_STEP_GPUS",
    "CUDA_VISIBLE_DEVICES",
    "SLURM_JOB_PARTITION",
)
# Node states in which a node takes no new job (sinfo.1 NODE STATE CODES).
_UNUSABLE_STATES = ("down", "drain", "fail", "maint", "future", "inval", "reboot", "power")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Gres(_Frozen):
    """One GRES entry of a node: ``gpu:h100:4(S:0-1)`` -> name gpu, type h100, count 4."""

    name: str
    type: str | None
    count: int


class SlurmNode(_Frozen):
    name: str
    cpus: int | None
    memory_mb: int | None
    gres: tuple[Gres, ...]
    state: str

    @property
    def gpus(self) -> int:
        return sum(g.count for g in self.gres if g.name == "gpu")

    @property
    def gpu_types(self) -> tuple[str, ...]:
        return tuple(sorted({g.type for g in self.gres if g.name == "gpu" and g.type}))

    def gpus_of(self, gres_type: str | None) -> int:
        """GPUs a ``--gpus-per-node=[type:]N`` request can use on this node."""
        return sum(g.count for g in self.gres if g.name == "gpu" and gres_type in (None, g.type))

    @property
    def usable(self) -> bool:
        base = self.state.lower().rstrip("*~#!%$@^-+")
        return not any(base.startswith(s) for s in _UNUSABLE_STATES)


class SlurmPartition(_Frozen):
    name: str
    default: bool
    state: str
    max_time: str  # as Slurm prints it: UNLIMITED, 01:00:00, 2-00:00:00
    max_time_s: int | None  # None: unlimited
    max_nodes: int | None  # None: unlimited
    total_nodes: int | None
    nodes: str  # Slurm's hostlist expression
    gpu_types: tuple[str, ...]  # from TRES= gres/gpu:TYPE=N


class SlurmAllocation(_Frozen):
    """The SLURM_* environment of the job the caller runs inside (salloc, sbatch, srun)."""

    job_id: str
    num_nodes: int | None
    gpus_on_node: int | None
    gpus_per_node: str | None
    job_gpus: str | None
    step_id: str | None
    step_gpus: str | None
    cuda_visible_devices: str | None
    partition: str | None

    @property
    def visible_gpus(self) -> int | None:
        """GPUs this process may use: CUDA_VISIBLE_DEVICES wins, else SLURM_GPUS_ON_NODE."""
        if self.cuda_visible_devices is not None:
            return len([x for x in self.cuda_visible_devices.split(",") if x.strip()])
        return self.gpus_on_node


class Mount(_Frozen):
    path: str
    fstype: str


class ProbeError(_Frozen):
    command: str
    message: str


class SlurmFacts(_Frozen):
    sbatch: str | None
    sinfo: str | None
    scontrol: str | None
    version: str | None
    partition: SlurmPartition | None
    partition_requested: str | None  # target.slurm.partition; None: the default partition
    partition_missing: bool  # Slurm answered that the requested partition does not exist
    nodes: tuple[SlurmNode, ...]
    allocation: SlurmAllocation | None
    enforce_part_limits: str | None  # scontrol show config, read only when a limit is hit
    mounts: tuple[Mount, ...]
    tmpdir: str | None  # $TMPDIR here: node-local on most sites
    errors: tuple[ProbeError, ...]

    @property
    def installed(self) -> bool:
        return self.sbatch is not None


# ---- data files ---------------------------------------------------------------------


@cache
def _data(name: str) -> dict[str, Any]:
    text = resources.files("hangar.preflight").joinpath("data", name).read_text("utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or data.get("version") != 1:
        raise DataError(f"preflight/data/{name}: expected a mapping with version: 1")
    return data


def ray_start_options() -> dict[str, Any]:
    """The head-only / worker-only / common ``ray start`` options (ray_start_options.yaml)."""
    data = _data(RAY_OPTIONS_FILE)
    for key in ("head_only", "worker_only", "common", "worker_refuses", "flags"):
        if not isinstance(data.get(key), list):
            raise DataError(f"preflight/data/{RAY_OPTIONS_FILE}: key '{key}' must be a list")
    return data


def _checks() -> dict[str, Any]:
    return _data(CHECKS_FILE)


# ---- parsing (pure) -----------------------------------------------------------------

_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=")
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def parse_key_values(line: str) -> dict[str, str]:
    """``scontrol ... --oneliner`` line -> {key: value}; values may hold spaces (OS=...)."""
    matches = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for match, following in zip(matches, [*matches[1:], None]):
        end = following.start() if following else len(line)
        out.setdefault(match.group(1), line[match.end() : end].strip())
    return out


def parse_slurm_version(text: str) -> str | None:
    """``slurm-wlm 22.05.8`` / ``slurm 23.11.4`` / ``SLURM_VERSION = 24.05.1`` -> 22.05.8."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


def parse_time_s(text: str) -> int | None:
    """A Slurm time (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``) in seconds.

    None for UNLIMITED/INFINITE; ValueError for anything else (sbatch.1 --time).
    """
    text = text.strip()
    if text.upper() in ("UNLIMITED", "INFINITE"):
        return None
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        # D-HH, D-HH:MM, D-HH:MM:SS: hours first.
        parts += [0] * (3 - len(parts))
        return int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    if len(parts) == 1:
        return parts[0] * 60  # minutes
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]  # MM:SS
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


def parse_mem_mb(text: str) -> int:
    """sbatch --mem (``200G``, ``512000``, ``1T``) in MB, Slurm's default unit."""
    match = re.fullmatch(r"(\d+)([KMGT]?)", text.strip().upper())
    if match is None:
        raise ValueError(f"not a Slurm memory size: {text!r}")
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match.group(2)]
    return int(int(match.group(1)) * scale)


def _limit(value: str | None) -> int | None:
    if value is None or not value.isdigit():
        return None  # UNLIMITED, or absent
    return int(value)


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses: ``gpu:2(S:0,2),shard:8`` has two entries."""
    out: list[str] = []
    depth = start = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p for p in (s.strip() for s in out) if p]


def _gres_count(text: str) -> int:
    match = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if match is None:
        raise ValueError(text)
    return (
        int(match.group(1))
        * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[match.group(2)]
    )


def parse_gres(text: str) -> tuple[Gres, ...]:
    """A node's Gres string -> entries; ``(null)`` and empty -> ().

    Forms: ``gpu:4``, ``gpu:h100:4``, ``gpu:h100:4(S:0-1)``, ``gpu:a100:2,gpu:v100:2``,
    ``gpu`` (count 1), ``mps:400``; the socket suffix is dropped (scontrol.1, gres.c:4924).
    """
    if text.strip() in ("", "(null)", "N/A"):
        return ()
    entries: list[Gres] = []
    for item in _split_top_level(text):
        parts = item.split("(", 1)[0].split(":")
        name, rest = parts[0], parts[1:]
        count = 1
        if rest and re.fullmatch(r"\d+[KMGT]?", rest[-1]):
            count = _gres_count(rest.pop())
        entries.append(Gres(name=name, type=":".join(rest) or None, count=count))
    return tuple(entries)


def parse_tres_gpu_types(tres: str) -> tuple[str, ...]:
    """``cpu=4,...,gres/gpu=8,gres/gpu:h100=8`` -> ("h100",)."""
    types: set[str] = set()
    for item in tres.split(","):
        key = item.split("=", 1)[0]
        if key.startswith("gres/gpu:"):
            types.add(key[len("gres/gpu:") :])
    return tuple(sorted(types))


def parse_partitions(text: str) -> tuple[SlurmPartition, ...]:
    """``scontrol show partition [NAME] --oneliner`` -> one SlurmPartition per line."""
    found = []
    for line in text.splitlines():
        kv = parse_key_values(line)
        if "PartitionName" not in kv:
            continue
        max_time = kv.get("MaxTime", "UNLIMITED")
        found.append(
            SlurmPartition(
                name=kv["PartitionName"],
                default=kv.get("Default", "NO").upper() == "YES",
                state=kv.get("State", "UNKNOWN"),
                max_time=max_time,
                max_time_s=parse_time_s(max_time),
                max_nodes=_limit(kv.get("MaxNodes")),
                total_nodes=_limit(kv.get("TotalNodes")),
                nodes=kv.get("Nodes", ""),
                gpu_types=parse_tres_gpu_types(kv.get("TRES", "")),
            )
        )
    return tuple(found)


def _int_prefix(text: str) -> int | None:
    match = re.match(r"\d+", text.strip())
    return int(match.group()) if match else None


def parse_sinfo_nodes(text: str) -> tuple[SlurmNode, ...]:
    """``sinfo -h -N -p P -o '%N|%c|%m|%G|%T'`` -> one SlurmNode per line."""
    nodes = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != 5:
            continue
        name, cpus, mem, gres, state = fields
        nodes.append(
            SlurmNode(
                name=name,
                cpus=_int_prefix(cpus),
                memory_mb=_int_prefix(mem),
                gres=parse_gres(gres),
                state=state,
            )
        )
    return tuple(nodes)


def parse_scontrol_nodes(text: str, partition: str | None) -> tuple[SlurmNode, ...]:
    """``scontrol show node --oneliner`` -> the nodes of ``partition`` (all when None)."""
    nodes = []
    for line in text.splitlines():
        kv = parse_key_values(line)
        if "NodeName" not in kv:
            continue
        if partition is not None and partition not in kv.get("Partitions", "").split(","):
            continue
        nodes.append(
            SlurmNode(
                name=kv["NodeName"],
                cpus=_int_prefix(kv.get("CPUTot", "")),
                memory_mb=_int_prefix(kv.get("RealMemory", "")),
                gres=parse_gres(kv.get("Gres", "")),
                state=kv.get("State", "UNKNOWN"),
            )
        )
    return tuple(nodes)


def parse_allocation(env: Mapping[str, str]) -> SlurmAllocation | None:
    """The allocation env, when SLURM_JOB_ID is set (salloc shell, batch script, step)."""
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        return None
    return SlurmAllocation(
        job_id=job_id,
        num_nodes=_int_prefix(env.get("SLURM_JOB_NUM_NODES", "")),
        gpus_on_node=_int_prefix(env.get("SLURM_GPUS_ON_NODE", "")),
        gpus_per_node=env.get("SLURM_GPUS_PER_NODE"),
        job_gpus=env.get("SLURM_JOB_GPUS"),
        step_id=env.get("SLURM_STEP_ID"),
        step_gpus=env.get("SLURM_STEP_GPUS"),
        cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES"),
        partition=env.get("SLURM_JOB_PARTITION"),
    )


def parse_mounts(text: str) -> tuple[Mount, ...]:
    """/proc/mounts -> (mount point, fstype); octal escapes (\\040 = space) decoded."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            path = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
            mounts.append(Mount(path=path, fstype=fields[2]))
    return tuple(mounts)


def parse_config_value(text: str, key: str) -> str | None:
    """One ``Key = Value`` line of ``scontrol show config``."""
    match = re.search(rf"^{re.escape(key)}\s*=\s*(.*?)\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


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
    t = _job_time_s(d.target.slurm)
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


# ---- helpers for the checks ---------------------------------------------------------


def _job_time_s(s: SlurmTarget) -> int | None:
    return parse_time_s(s.time) if s.time else None


def _version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _at_least(found: str | None, since: str) -> bool | None:
    v = _version(found)
    return None if v is None else v.release >= Version(since).release


def _finding(fid: str, severity: Severity, message: str, fix: str, evidence: str) -> Finding:
    return Finding(
        id=fid,
        severity=severity,
        message=message,
        fix=fix,
        evidence=evidence,
        source="host",
    )


def parse_ray_args(args: Sequence[str]) -> list[tuple[str, str | None]]:
    """``ray start`` args -> [(option, value)]; ``--a=1``, ``--a 1`` and flags alike."""
    flags = set(ray_start_options()["flags"])
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, value = arg.partition("=")
        if eq or not arg.startswith("-"):
            out.append((name, value if eq else None))
        elif name in flags or i + 1 >= len(args) or args[i + 1].startswith("--"):
            out.append((name, None))
        else:
            out.append((name, args[i + 1]))
            i += 1
        i += 1
    return out


def _ray_version(engine: EngineFacts | None) -> str | None:
    """Ray's version in the engine's site-packages, from the dist-info directory name."""
    if engine is None:
        return None
    for site in engine.site_packages:
        for info in sorted(site.glob("ray-*.dist-info")):
            return info.name[len("ray-") : -len(".dist-info")]
    return None


def _serve_flag(args: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in vllm serve extra args (``--f v`` or ``--f=v``); last wins."""
    found = None
    for arg, following in zip(args, [*args[1:], None]):
        if arg == flag:
            found = following or ""
        elif arg.startswith(flag + "="):
            found = arg.split("=", 1)[1]
    return found


def _mount_of(path: str, mounts: Sequence[Mount]) -> Mount | None:
    best = None
    for m in mounts:
        root = m.path.rstrip("/") or "/"
        if (path == root or path.startswith(root.rstrip("/") + "/")) and (
            best is None or len(root) > len(best.path)
        ):
            best = m
    return best


def _node_local_reason(path: str, facts: SlurmFacts) -> str | None:
    """Why ``path`` is probably local to one node, or None when it looks shared."""
    checks = _checks()
    prefixes = list(checks["node_local_prefixes"])
    if facts.tmpdir:
        prefixes.append(facts.tmpdir.rstrip("/"))
    for prefix in sorted(prefixes, key=len, reverse=True):  # $TMPDIR=/tmp/job.1 before /tmp
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            via = " ($TMPDIR)" if prefix == (facts.tmpdir or "").rstrip("/") else ""
            return f"under {prefix}{via}"
    mount = _mount_of(path, facts.mounts)
    if mount is not None and mount.fstype in checks["node_local_fs_types"]:
        return f"on a {mount.fstype} filesystem mounted at {mount.path}"
    return None


def _fs_evidence(path: str, facts: SlurmFacts) -> str:
    mount = _mount_of(path, facts.mounts)
    return f"{path} is on {mount.fstype} ({mount.path})" if mount else path


# ---- checks: installation, partition, nodes -----------------------------------------


def _check_installed(facts: SlurmFacts) -> list[Finding]:
    if facts.installed:
        return []
    return [
        _finding(
            "slurm.not_installed",
            "error",
            "sbatch is not installed on this machine: a Slurm launch cannot be submitted "
            "from here; nothing was started",
            "run Hangar on the cluster's login node (where `sbatch --version` works), or set "
            'target.kind = "local"',
            "sbatch not found on PATH (nor in /usr/sbin, /sbin)",
        )
    ]


def _check_probe_errors(facts: SlurmFacts) -> list[Finding]:
    if not facts.errors:
        return []
    first = facts.errors[0]
    return [
        _finding(
            "slurm.probe_failed",
            "warning",
            f"could not ask Slurm ({first.message}): the partition and node checks are "
            "incomplete; if slurmctld is unreachable from here, sbatch fails too",
            f"run `{first.command}` yourself (SLURM_CONF, munge and the controller must answer)",
            "; ".join(f"{e.command}: {e.message}" for e in facts.errors),
        )
    ]


def _check_partition(facts: SlurmFacts) -> list[Finding]:
    if facts.partition_missing:
        name = facts.partition_requested
        return [
            _finding(
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
            _finding(
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
        _finding(
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


def _check_time(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    p, t = facts.partition, _job_time_s(s)
    if p is None or t is None or p.max_time_s is None or t <= p.max_time_s:
        return []
    return [
        _finding(
            "slurm.time_over_max",
            _limit_severity(s),
            f"time limit {s.time} is over partition {p.name}'s MaxTime {p.max_time}: "
            f"{_rejects(facts)} (squeue reason PartitionTimeLimit / PartitionConfig)",
            f"set target.slurm.time to at most {p.max_time}, or pick a partition that allows it",
            f"target.slurm.time = {s.time} ({t} s); scontrol show partition {p.name}: "
            f"MaxTime={p.max_time} ({p.max_time_s} s); EnforcePartLimits={facts.enforce_part_limits}",
        )
    ]


def _check_node_count(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    p, n = facts.partition, d.resources.nodes
    if p is None:
        return []
    found = []
    if p.total_nodes is not None and n > p.total_nodes:
        found.append(
            _finding(
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
            _finding(
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


def _check_gres_type(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
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
            _finding(
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
            _finding(
                "slurm.gres_types_mixed",
                "warning",
                f"partition {p.name} has several GPU types ({', '.join(types)}) and the "
                "request is untyped: the job may land on any of them",
                f"set target.slurm.gres_type to one of {', '.join(types)}",
                f"{where}: {_node_summary(nodes)}",
            )
        ]
    return []


def _check_node_fit(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
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
    return _finding(
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
        _finding(
            "slurm.nodes_unavailable",
            "warning",
            f"only {len(usable)} of the {len(fits)} nodes of partition {p.name} that fit the "
            f"request are up now; {d.resources.nodes} are needed, so the job waits "
            "(ReqNodeNotAvail / Resources) until enough come back",
            f"check `sinfo -N -p {p.name}`; lower resources.nodes or pick another partition",
            f"node states: {_node_summary(fits)}",
        )
    ]


def _check_no_gpus(d: Deployment, facts: SlurmFacts) -> list[Finding]:
    p, nodes = facts.partition, facts.nodes
    if p is None or not nodes or any(n.gpus for n in nodes):
        return []
    return [
        _finding(
            "slurm.partition_no_gpus",
            "error",
            f"no node of partition {p.name} has GPU GRES: a request for {d.resources.gpus} "
            "GPUs per node is rejected (Requested node configuration is not available)",
            "set target.slurm.partition to a GPU partition (`sinfo -o '%P %G'`)",
            f"sinfo -N -p {p.name} -o '{SINFO_FORMAT}': {_node_summary(nodes)}",
        )
    ]


# ---- checks: layout vs nodes --------------------------------------------------------


def _check_layout(d: Deployment, s: SlurmTarget) -> list[Finding]:
    tp, pp, dp = d.parallel.tensor, d.parallel.pipeline, d.parallel.data
    world, gpus, nodes = tp * pp * dp, d.resources.gpus, d.resources.nodes
    layout = f"tensor {tp} x pipeline {pp} x data {dp} = {world}"
    have = f"resources: {gpus} GPUs/node x {nodes} nodes = {gpus * nodes}"
    if world > gpus * nodes:
        return [
            _finding(
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
            _finding(
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
            _finding(
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
            _finding(
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
            _finding(
                "slurm.nodes_unneeded",
                "warning",
                f"the layout fits on one node ({world} <= {gpus} GPUs) but {nodes} nodes are "
                "asked for: the others idle, and the job waits longer in the queue",
                "set resources.nodes = 1",
                f"{layout}; {have}",
            )
        )
    return found


# ---- checks: inside an allocation ---------------------------------------------------


def _check_allocation(d: Deployment, facts: SlurmFacts) -> list[Finding]:
    a = facts.allocation
    if a is None:
        return []
    if isinstance(d.target, SlurmTargetSection):
        return [_nested_submit(a)]
    return _alloc_nodes(d, a) + _alloc_gpus(d, a)


def _alloc_evidence(a: SlurmAllocation) -> str:
    pairs = {
        "SLURM_JOB_ID": a.job_id,
        "SLURM_JOB_NUM_NODES": a.num_nodes,
        "SLURM_GPUS_ON_NODE": a.gpus_on_node,
        "SLURM_GPUS_PER_NODE": a.gpus_per_node,
        "SLURM_JOB_GPUS": a.job_gpus,
        "SLURM_STEP_ID": a.step_id,
        "CUDA_VISIBLE_DEVICES": a.cuda_visible_devices,
        "SLURM_JOB_PARTITION": a.partition,
    }
    return "env: " + " ".join(f"{k}={v}" for k, v in pairs.items() if v is not None)


def _nested_submit(a: SlurmAllocation) -> Finding:
    return _finding(
        "slurm.inside_allocation",
        "info",
        f"running inside job {a.job_id}: sbatch submits a separate job with its own nodes "
        "and GPUs; this allocation is not used",
        'to serve on this allocation instead, set target.kind = "local" (one node)',
        _alloc_evidence(a),
    )


def _alloc_nodes(d: Deployment, a: SlurmAllocation) -> list[Finding]:
    if a.num_nodes is None or a.num_nodes <= 1:
        return []
    return [
        _finding(
            "slurm.allocation_nodes",
            "warning",
            f"the allocation has {a.num_nodes} nodes but a local launch runs on this node "
            "only; the other nodes idle",
            'use target.kind = "slurm" with resources.nodes = '
            f"{a.num_nodes} to span them, or salloc -N1",
            _alloc_evidence(a),
        )
    ]


def _alloc_gpus(d: Deployment, a: SlurmAllocation) -> list[Finding]:
    visible, want = a.visible_gpus, d.resources.gpus
    found = []
    if visible is None or visible < want:
        seen = "no GPUs" if not visible else f"{visible} GPU(s)"
        found.append(
            _finding(
                "slurm.allocation_gpus",
                "error",
                f"this allocation gives this node {seen} but the deployment needs {want}: "
                "vLLM fails to start its ranks",
                f"salloc again with --gpus-per-node={want} (or --gres=gpu:{want}), or set "
                f"resources.gpus = {visible or 0} and the layout to match",
                _alloc_evidence(a),
            )
        )
    if (
        a.cuda_visible_devices is not None
        and a.gpus_on_node is not None
        and a.visible_gpus != a.gpus_on_node
    ):
        # Slurm sets CVD to the step's GPUs; a different count was changed by hand.
        found.append(
            _finding(
                "slurm.allocation_cvd_mismatch",
                "warning",
                f"CUDA_VISIBLE_DEVICES lists {a.visible_gpus} GPU(s) but Slurm gave this node "
                f"{a.gpus_on_node}: it was changed after Slurm set it",
                "unset CUDA_VISIBLE_DEVICES in this shell (Slurm sets it per step), or use "
                "target.local.cuda_visible_devices",
                _alloc_evidence(a),
            )
        )
    return found


# ---- checks: Ray options, ports, temp dir, object store -----------------------------


def _ray_arg_findings(role: str, args: Sequence[str]) -> list[Finding]:
    opts = ray_start_options()
    known = set(opts["head_only"]) | set(opts["worker_only"]) | set(opts["common"])
    wrong = set(opts["worker_only"]) if role == "head" else set(opts["head_only"])
    field = f"target.slurm.ray_{role}_args"
    found = []
    for name, value in parse_ray_args(args):
        shown = name if value is None else f"{name}={value}"
        if name not in known:
            found.append(_ray_unknown(field, shown, name))
        elif name in wrong and name not in opts["set_by_hangar"]:  # those: _ray_owned
            found.append(_ray_misplaced(role, field, shown, name, opts))
    return found


def _ray_owned(role: str, args: Sequence[str]) -> list[Finding]:
    """User Ray args naming an option the rendered script sets itself on every node."""
    owned: Mapping[str, str] = ray_start_options()["set_by_hangar"]
    field = f"target.slurm.ray_{role}_args"
    return [
        _finding(
            "slurm.ray_arg_set_by_hangar",
            "error",
            f"{name} in {field} is set by Hangar on every node ({owned[name]}): the "
            "renderer refuses the job rather than run Ray with two values",
            f"remove {name} from {field}" + (f"; use {owned[name]}" if "." in owned[name] else ""),
            f"{field} = {list(args)}; set_by_hangar in preflight/data/{RAY_OPTIONS_FILE}",
        )
        for name, _ in parse_ray_args(args)
        if name in owned
    ]


def _ray_args_unused(s: SlurmTarget) -> list[Finding]:
    if s.multinode == "ray" or not (s.ray_head_args or s.ray_worker_args):
        return []
    return [
        _finding(
            "slurm.ray_args_unused",
            "info",
            f"ray_head_args / ray_worker_args are set but multinode = {s.multinode!r} starts no Ray",
            'remove them, or set target.slurm.multinode = "ray"',
            f"ray_head_args = {list(s.ray_head_args)}; ray_worker_args = {list(s.ray_worker_args)}",
        )
    ]


def _ray_unknown(field: str, shown: str, name: str) -> Finding:
    return _finding(
        "slurm.ray_arg_unknown",
        "error",
        f'{name} is not a `ray start` option: ray start exits with "No such option: {name}"',
        f"remove {shown!r} from {field} (options: `ray start --help`)",
        f"{field} has {shown!r}; {ray_start_options()['source']}",
    )


def _ray_misplaced(
    role: str, field: str, shown: str, name: str, opts: Mapping[str, Any]
) -> Finding:
    src = opts["source"]
    if role == "head":
        # --head --address=X turns into "external Redis at X" (scripts.py:1005-1040).
        return _finding(
            "slurm.ray_head_arg_worker_only",
            "error",
            f"{name} is a worker option: with --head Ray takes it as an external Redis "
            "address and the head never comes up as a normal GCS",
            f"remove {shown!r} from {field}; Hangar gives workers the head's address itself",
            f"{field} has {shown!r}; worker_only in {src}",
        )
    # Ray aborts on some, ignores the rest; Hangar's renderer refuses both, so never silent.
    refuses = name in opts["worker_refuses"]
    fix_to = "target.slurm.ray_port" if name == "--port" else "target.slurm.ray_head_args"
    return _finding(
        "slurm.ray_worker_arg_head_only",
        "error",
        f"{name} is a head-only option: "
        + (
            '`ray start` on a worker exits with "' + name + " should only be specified when "
            'starting head node with `--head`."'
            if refuses
            else "a worker ignores it silently, so it has no effect; Hangar's renderer "
            "refuses it rather than let Ray drop it"
        ),
        f"move {shown!r} to {fix_to}",
        f"{field} has {shown!r}; head_only in {src}",
    )


def _ray_arg_value(args: Sequence[str], name: str) -> str | None:
    found = None
    for opt, value in parse_ray_args(args):
        if opt == name:
            found = value
    return found


def _int_or_none(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def _worker_range(args: Sequence[str]) -> tuple[int, int] | None:
    """Ray's worker port range on a node: --min/--max-worker-port, None with a port list."""
    if _ray_arg_value(args, "--worker-port-list") is not None:
        return None
    ports = ray_start_options()["ports"]
    lo = _int_or_none(_ray_arg_value(args, "--min-worker-port"))
    hi = _int_or_none(_ray_arg_value(args, "--max-worker-port"))
    lo = ports["min_worker_port"] if lo is None else lo
    hi = ports["max_worker_port"] if hi is None else hi
    return None if lo == 0 else (lo, hi)


def _ray_head_ports(s: SlurmTarget) -> dict[str, int]:
    """Ports Ray holds fixed on the head node (0 = random, left out)."""
    ports, args = ray_start_options()["ports"], s.ray_head_args
    found = {"Ray GCS (target.slurm.ray_port)": s.ray_port}
    dash = _int_or_none(_ray_arg_value(args, "--dashboard-port"))
    found["Ray dashboard (--dashboard-port)"] = ports["dashboard"] if dash is None else dash
    agent = _int_or_none(_ray_arg_value(args, "--dashboard-agent-listen-port"))
    found["Ray dashboard agent (--dashboard-agent-listen-port)"] = (
        ports["dashboard_agent_listen"] if agent is None else agent
    )
    client = _int_or_none(_ray_arg_value(args, "--ray-client-server-port"))
    found["Ray client server (--ray-client-server-port, with ray[client])"] = (
        ports["client_server"] if client is None else client
    )
    for opt in (
        "--node-manager-port",
        "--object-manager-port",
        "--metrics-export-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
    ):
        value = _int_or_none(_ray_arg_value(args, opt))
        if value:
            found[f"Ray {opt}"] = value
    return {k: v for k, v in found.items() if v}


def _check_ports(s: SlurmTarget, worker_ports: tuple[int, int] | None) -> list[Finding]:
    used: dict[str, int] = {"vLLM API (target.slurm.port)": s.port}
    if s.multinode == "mp":
        used["vLLM --master-port (target.slurm.master_port)"] = s.master_port
    if s.multinode == "ray":
        used.update(_ray_head_ports(s))
    found = _port_clashes(used)
    if s.multinode == "ray":
        found += _worker_range_clashes(used, worker_ports or _worker_range(s.ray_head_args))
    return found


def _port_clashes(used: Mapping[str, int]) -> list[Finding]:
    by_port: dict[int, list[str]] = {}
    for what, port in used.items():
        by_port.setdefault(port, []).append(what)
    return [
        _finding(
            "slurm.port_collision",
            "error",
            f"port {port} is used twice on the head node ({' and '.join(whats)}): the second "
            'to bind fails with "Address already in use"',
            f"give each its own port: change {whats[-1].split('(')[-1].rstrip(')')}",
            "; ".join(f"{w} = {p}" for w, p in used.items()),
        )
        for port, whats in by_port.items()
        if len(whats) > 1
    ]


def _worker_range_clashes(used: Mapping[str, int], rng: tuple[int, int] | None) -> list[Finding]:
    if rng is None:
        return []
    lo, hi = rng
    found = []
    for what, port in used.items():
        if not lo <= port <= hi:
            continue
        ray_own = what.startswith("Ray")
        found.append(
            _finding(
                "slurm.port_in_ray_worker_range",
                "error" if ray_own else "warning",
                f"{what} = {port} is inside Ray's worker port range {lo}-{hi}: "
                + (
                    'ray start refuses it ("Ray component worker_ports is trying to use a '
                    f'port number {port} that is used by other components.")'
                    if ray_own
                    else "a Ray worker process may take it first, and vLLM then fails to bind"
                ),
                f"move {what.split('(')[-1].rstrip(')')} outside {lo}-{hi}, or move the range "
                "with --min-worker-port/--max-worker-port in ray_head_args and ray_worker_args",
                f"{what} = {port}; worker ports {lo}-{hi} (ray/_private/parameter.py:300-351)",
            )
        )
    return found


def _check_shared_node_ports(s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray" or s.exclusive:
        return []
    return [
        _finding(
            "slurm.ray_shared_node",
            "warning",
            "Ray mode on nodes that other jobs may share: a second Ray on the same node "
            "collides on the fixed ports (dashboard agent 52365, dashboard 8265, GCS, worker "
            'range 10002-19999) and fails with "Address already in use" or "Session name ... '
            'does not match persisted value"',
            "set target.slurm.exclusive = true, or give this job its own ports "
            "(ray_port, --dashboard-agent-listen-port, --min/--max-worker-port)",
            "target.slurm.exclusive = false; multinode.md §1.3, §5 row 8 (ray-project/ray#10154)",
        )
    ]


def ray_temp_dir(s: SlurmTarget) -> str:
    """Ray's temp dir on a node, as long as it can get: --temp-dir, else the job dir + /ray."""
    given = _ray_arg_value(s.ray_head_args, "--temp-dir")
    if given:
        return given
    checks = _checks()
    root = (s.tmp_root or "/tmp").rstrip("/")
    return f"{root}{'x' * int(checks['job_temp_suffix_bytes'])}{checks['ray']['tmpdir_suffix']}"


def _check_ray_temp(s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray":
        return []
    ray = _checks()["ray"]
    temp = ray_temp_dir(s)
    n = len(temp.encode("utf-8"))
    best = n + 1 + ray["session_name_min_bytes"] + ray["socket_tail_min_bytes"]
    worst = n + 1 + ray["session_name_max_bytes"] + ray["socket_tail_max_bytes"]
    limit = ray["socket_path_max_bytes"]
    if worst <= limit:
        return []
    shape = "/session_<date>_<pid>/sockets/plasma_store[.N]"
    return [
        _finding(
            "slurm.ray_socket_path_too_long",
            "error" if best > limit else "warning",
            f"Ray's socket path would be {best}-{worst} bytes, over the {limit}-byte AF_UNIX "
            'limit: ray start fails with "validate_socket_filename failed: AF_UNIX path '
            f'length cannot exceed {limit} bytes"',
            "set target.slurm.tmp_root to a short node-local path (e.g. /tmp) or a shorter "
            "--temp-dir; the Ray temp dir must stay under "
            f"{limit - 1 - ray['session_name_max_bytes'] - ray['socket_tail_max_bytes']} bytes",
            f"Ray temp dir (worst case) {temp!r} = {n} bytes + {shape}; "
            "ray/_private/utils.py validate_socket_filepath (Ray 2.60)",
        )
    ]


def _node_memory_mb(s: SlurmTarget, facts: SlurmFacts) -> tuple[int | None, str]:
    mems = [n.memory_mb for n in facts.nodes if n.memory_mb]
    if s.mem:
        return parse_mem_mb(s.mem), f"target.slurm.mem = {s.mem}"
    if mems:
        return min(mems), f"smallest RealMemory in partition: {min(mems)} MB"
    return None, "node memory unknown"


def _check_object_store(s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    if s.multinode != "ray":
        return []
    found = []
    for role, args in (("head", s.ray_head_args), ("worker", s.ray_worker_args)):
        value = _int_or_none(_ray_arg_value(args, "--object-store-memory"))
        if value is not None:
            found += _object_store(role, value, s, facts)
    return found


def _object_store(role: str, size: int, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    ray = _checks()["ray"]
    mem_mb, where = _node_memory_mb(s, facts)
    field = f"target.slurm.ray_{role}_args"
    ev = f"{field}: --object-store-memory={size} ({size / 2**30:.1f} GiB); {where}"
    if size < ray["object_store_min_bytes"]:
        return [
            _finding(
                "slurm.ray_object_store_too_small",
                "error",
                f"--object-store-memory {size} is below Ray's minimum {ray['object_store_min_bytes']}"
                ' bytes: ray start fails ("Attempting to cap object store memory usage...")',
                f"raise --object-store-memory in {field} (2-8 GiB is plenty for vLLM)",
                ev,
            )
        ]
    if mem_mb is None:
        return []
    mem = mem_mb * 2**20
    if size > mem:
        # The job's cgroup (--mem) or the node's RAM: Ray checks the node's total memory.
        sev: Severity = "warning" if s.mem else "error"
        return [
            _finding(
                "slurm.ray_object_store_over_memory",
                sev,
                f"--object-store-memory ({size / 2**30:.1f} GiB) is more than the node memory "
                f'({mem_mb} MB): Ray refuses it ("The requested object store memory size is greater'
                ' than the total available memory.") or the job is killed for memory',
                f"lower --object-store-memory in {field} (vLLM moves tensors outside the object "
                "store; 2-8 GiB is plenty)",
                ev,
            )
        ]
    if size > ray["require_shm_bytes"] and size > mem // 2:
        return [
            _finding(
                "slurm.ray_object_store_over_shm",
                "warning",
                f"--object-store-memory ({size / 2**30:.1f} GiB) is over 10 GB and over half the "
                'node memory, the usual /dev/shm size: Ray then fails ("exceeds /dev/shm size") '
                "unless /dev/shm on the nodes is larger",
                f"lower --object-store-memory in {field}, or check `df -h /dev/shm` on a node",
                ev + "; ray/_private/services.py:2231-2245",
            )
        ]
    return []


# ---- checks: environment traps ------------------------------------------------------


def _all_values(d: Deployment, s: SlurmTarget) -> list[tuple[str, str]]:
    pairs = [(f"env.{k}", v) for k, v in d.env.items()]
    pairs += [("target.slurm.ray_head_args", a) for a in s.ray_head_args]
    pairs += [("target.slurm.ray_worker_args", a) for a in s.ray_worker_args]
    pairs += [("serve.extra_args", a) for a in d.serve.extra_args]
    return pairs


def _check_env_vars_used(d: Deployment, s: SlurmTarget, facts: SlurmFacts) -> list[Finding]:
    found = []
    for where, value in _all_values(d, s):
        if "SLURM_GPUS_PER_TASK" in value:
            found.append(_gpus_per_task(where, value, facts))
        elif "SLURM_JOB_GPUS" in value:
            found.append(
                _finding(
                    "slurm.job_gpus_var",
                    "warning",
                    "SLURM_JOB_GPUS describes the batch node only: srun steps on other nodes "
                    "inherit node 0's GPU ids unchanged",
                    f"remove it from {where}; Hangar passes each node's own count "
                    "(SLURM_GPUS_ON_NODE / CUDA_VISIBLE_DEVICES inside the step)",
                    f"{where} = {value!r}; multinode.md §4.1 (Slurm gres_common.c:255-320)",
                )
            )
    return found


def _gpus_per_task(where: str, value: str, facts: SlurmFacts) -> Finding:
    gone = _checks()["slurm"]["gpus_per_task_env_removed_in"]
    removed = _at_least(facts.version, gone)
    return _finding(
        "slurm.gpus_per_task_var",
        "error" if removed else "warning",
        f"SLURM_GPUS_PER_TASK is not exported since Slurm {gone}"
        + (f" (this cluster runs {facts.version})" if facts.version else "")
        + ", and Hangar passes values literally: Ray or vLLM gets a wrong GPU count",
        f"remove it from {where}; Hangar renders --num-gpus from the node's own GPU count",
        f"{where} = {value!r}; Slurm commit 475e4a611b (23.11.0rc1)",
    )


def _check_ray_env(d: Deployment, s: SlurmTarget, ray_version: str | None) -> list[Finding]:
    if s.multinode != "ray":
        return []
    found = []
    address = d.env.get("RAY_ADDRESS")
    if address is not None and ("://" in address or not address.strip()):
        found.append(
            _finding(
                "slurm.ray_address_bad",
                "error",
                "RAY_ADDRESS "
                + (
                    "is empty: vLLM's ray.init(address=None) then starts a private local Ray and "
                    "waits ~42 min for a placement group that cannot fit"
                    if not address.strip()
                    else "is a URL: ray.init switches to Ray Client instead of joining the job's "
                    "cluster"
                ),
                "remove RAY_ADDRESS from [env]; Hangar exports head-ip:ray_port to vLLM",
                f"env.RAY_ADDRESS = {address!r}; vLLM v1/executor/ray_utils.py:321, Ray worker.py:1515-1531",
            )
        )
    elif address is not None:
        found.append(
            _finding(
                "slurm.ray_address_override",
                "warning",
                "RAY_ADDRESS in [env] overrides the address of the job's own Ray head: vLLM joins "
                "whatever cluster it names",
                "remove RAY_ADDRESS from [env]; Hangar exports head-ip:ray_port itself",
                f"env.RAY_ADDRESS = {address!r}",
            )
        )
    found += _check_auth_mode(d, ray_version)
    return found


def _check_auth_mode(d: Deployment, ray_version: str | None) -> list[Finding]:
    mode = d.env.get("RAY_AUTH_MODE")
    if mode is None or mode.lower() != "token":
        return []  # unset: Hangar exports RAY_AUTH_MODE=disabled on every node
    if "RAY_AUTH_TOKEN" in d.env or "RAY_AUTH_TOKEN_PATH" in d.env:
        return []
    return [
        _finding(
            "slurm.ray_auth_token_missing",
            "warning",
            "RAY_AUTH_MODE=token without RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH: every node then "
            "reads ~/.ray/auth_token, and a worker without the same token fails with "
            '"InvalidAuthToken"',
            "set RAY_AUTH_TOKEN_PATH in [env] to a 0600 file on the shared filesystem, or drop "
            "RAY_AUTH_MODE (Hangar then runs Ray with RAY_AUTH_MODE=disabled)",
            f"env.RAY_AUTH_MODE = {mode}; engine's Ray {ray_version}; Ray 2.59+ "
            "_private/authentication/authentication_token_setup.py",
        )
    ]


def _check_host_ip(d: Deployment) -> list[Finding]:
    if d.resources.nodes == 1 or "VLLM_HOST_IP" not in d.env:
        return []
    return [
        _finding(
            "slurm.vllm_host_ip_global",
            "error",
            'VLLM_HOST_IP in [env] gives every node the same IP: Ray mode fails with "Every node '
            'should have a unique IP address", mp mode cannot bind its queues on the other nodes',
            "remove VLLM_HOST_IP from [env]; Hangar sets it per node from the node's own address "
            "(target.slurm.network_interface picks the NIC)",
            f"env.VLLM_HOST_IP = {d.env['VLLM_HOST_IP']!r}; resources.nodes = {d.resources.nodes}; "
            "vLLM ray_executor.py:296-306 (0.20)",
        )
    ]


# ---- checks: vLLM version and arguments vs the multi-node mode ----------------------


def _check_vllm_mode(d: Deployment, s: SlurmTarget, engine: EngineFacts | None) -> list[Finding]:
    if d.resources.nodes == 1 and s.multinode is None:
        return []
    version = engine.vllm_version if engine else None
    found = _contradicting_args(d, s)
    if s.multinode == "mp":
        found += _mp_version(version)
    if s.multinode == "ray" and engine is not None and engine.cpu_build:
        found.append(
            _finding(
                "slurm.ray_cpu_build",
                "error",
                "the engine is vLLM's CPU build, which cannot run on Ray: vllm serve stops with "
                '"current platform cpu does not support ray"',
                'use a CUDA build of vLLM for Ray mode, or set target.slurm.multinode = "mp"',
                f"engine {engine.python}: {engine.vllm_distribution} {version}, torch "
                f"{engine.torch_version} (cuda {engine.torch_cuda})",
            )
        )
    return found


def _mp_version(version: str | None) -> list[Finding]:
    since = _checks()["vllm"]["nnodes_since"]
    if _at_least(version, since) is not False:
        return []
    return [
        _finding(
            "slurm.mp_needs_nnodes",
            "error",
            f"vLLM {version} has no --nnodes/--node-rank/--master-addr (first in {since}): "
            'vllm serve exits with "unrecognized arguments"',
            f'use an engine with vLLM >= {since}, or set target.slurm.multinode = "ray"',
            f"engine vLLM {version}; vLLM {since} engine/arg_utils.py, cli/serve.py",
        )
    ]


def _contradicting_args(d: Deployment, s: SlurmTarget) -> list[Finding]:
    args = d.serve.extra_args
    backend = _serve_flag(args, "--distributed-executor-backend")
    nnodes = _serve_flag(args, "--nnodes")
    found = []
    expected = s.multinode if s.multinode == "ray" else "mp"
    if backend is not None and backend != expected:
        found.append(
            _finding(
                "slurm.executor_backend_contradicts",
                "error",
                f"serve.extra_args sets --distributed-executor-backend {backend} but "
                f"target.slurm.multinode = {s.multinode!r} needs {expected}: "
                + (
                    '"nnodes > 1 can only be set when distributed executor backend is mp"'
                    if expected == "mp"
                    else "vLLM will not use the Ray cluster the job starts"
                ),
                "remove --distributed-executor-backend from serve.extra_args (Hangar passes it)",
                f"serve.extra_args = {list(args)}; vLLM config/parallel.py",
            )
        )
    for flag in ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"):
        if any(a == flag or a.startswith(flag + "=") for a in args):
            found.append(
                _finding(
                    "slurm.multinode_flag_in_extra_args",
                    "error"
                    if s.multinode == "ray" and flag == "--nnodes" and nnodes not in (None, "1")
                    else "warning",
                    f"serve.extra_args sets {flag}, which Hangar renders per node for "
                    f"multinode = {s.multinode!r}"
                    + (
                        ": with Ray, vLLM refuses nnodes > 1"
                        if s.multinode == "ray" and flag == "--nnodes"
                        else ""
                    ),
                    f"remove {flag} from serve.extra_args (for the port use target.slurm.master_port)",
                    f"serve.extra_args = {list(args)}",
                )
            )
    return found


# ---- checks: shared filesystem ------------------------------------------------------


def _check_python(s: SlurmTarget, engine: EngineFacts | None, facts: SlurmFacts) -> list[Finding]:
    given = s.python
    path = given or (str(engine.python) if engine else None)
    if path is None:
        return []
    where = "target.slurm.python" if given else "the engine's interpreter"
    found = []
    if not Path(path).exists():
        found.append(
            _finding(
                "slurm.python_missing",
                "warning" if given else "error",
                f"{where} {path} does not exist on this machine"
                + (
                    ": it cannot be checked; it must exist on every compute node"
                    if given
                    else ", so it cannot exist at the same path on the compute nodes"
                ),
                "set target.slurm.python to the engine's interpreter as the nodes see it "
                "(`hangar engines list`)",
                f"{where} = {path}: not found here",
            )
        )
    reason = _node_local_reason(path, facts)
    if reason:
        found.append(_node_local("slurm.python_node_local", where, path, reason, facts))
    return found


def _node_local(fid: str, where: str, path: str, reason: str, facts: SlurmFacts) -> Finding:
    return _finding(
        fid,
        "warning",
        f"{where} {path} is {reason}, which is local to each node: the compute nodes "
        "do not see this copy",
        f"move it to a shared filesystem (home, project or scratch space) and update {where}",
        _fs_evidence(path, facts),
    )


def _check_shared_paths(d: Deployment, facts: SlurmFacts, run_dir: Path | None) -> list[Finding]:
    found = []
    if run_dir is not None:
        reason = _node_local_reason(str(run_dir), facts)
        if reason:
            found.append(
                _node_local("slurm.run_dir_node_local", "the run dir", str(run_dir), reason, facts)
            )
    model = d.model.id
    if model.startswith(("/", ".")):
        path = str(Path(model).resolve())
        reason = _node_local_reason(path, facts)
        if reason:
            found.append(_node_local("slurm.model_node_local", "model.id", path, reason, facts))
    return found


def _check_ray_args(d: Deployment, s: SlurmTarget) -> list[Finding]:
    if s.multinode != "ray":
        return _ray_args_unused(s)
    found = _ray_arg_findings("head", s.ray_head_args) + _ray_owned("head", s.ray_head_args)
    found += _ray_arg_findings("worker", s.ray_worker_args)
    return found + _ray_owned("worker", s.ray_worker_args)


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
    (``launch.targets.slurm_render.worker_port_range(d)``); None: Ray's default
    10002-19999 unless the user's args move it. For a local target only the
    allocation checks apply (the salloc phase).
    """
    if not isinstance(d.target, SlurmTargetSection):
        return _check_allocation(d, facts)
    s = d.target.slurm
    ray_version = _ray_version(engine)
    found = _check_installed(facts) + _check_probe_errors(facts) + _check_partition(facts)
    found += _check_time(s, facts) + _check_node_count(d, s, facts)
    found += _check_no_gpus(d, facts) or (_check_gres_type(s, facts) + _check_node_fit(d, s, facts))
    found += _check_layout(d, s) + _check_allocation(d, facts)
    found += _check_ray_args(d, s)
    found += _check_ports(s, ray_worker_ports) + _check_shared_node_ports(s) + _check_ray_temp(s)
    found += _check_object_store(s, facts)
    found += _check_env_vars_used(d, s, facts) + _check_ray_env(d, s, ray_version)
    found += _check_host_ip(d) + _check_vllm_mode(d, s, engine)
    found += _check_python(s, engine, facts) + _check_shared_paths(d, facts, run_dir)
    return found
