"""What the probe learns about a Slurm cluster, as frozen values, and the data files the checks read."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from hangar.errors import DataError

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


def checks_data() -> dict[str, Any]:
    return _data(CHECKS_FILE)


