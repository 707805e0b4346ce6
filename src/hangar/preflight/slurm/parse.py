"""Parsers of sinfo / scontrol / environment text (pure). Formats: Slurm 22.05 and later (see the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from hangar.preflight.slurm.facts import Gres, Mount, SlurmAllocation, SlurmNode, SlurmPartition

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


