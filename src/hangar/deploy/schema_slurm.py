"""``[target.slurm]``: how the job is asked of Slurm (the renderer derives the rest)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from hangar.deploy.values import (
    HostAddress,
    Section,
    StrictBool,
    StrictInt,
    no_control_chars,
    one_of,
)

_SLURM_TIME = re.compile(
    # sbatch --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (man sbatch)
    r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+(:\d{1,2}){0,2}|UNLIMITED|INFINITE"
)
_SLURM_MEM = re.compile(r"\d+[KMGT]?")  # sbatch --mem: size with an optional unit
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+:/@-]*")  # partition, account, gres type ...
_IFNAME = re.compile(r"\^?[A-Za-z0-9_.:-]{1,15}(,\^?[A-Za-z0-9_.:-]{1,15})*")
_MODULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+/@-]*")
# sbatch options Hangar itself derives from [resources] / [target.slurm]; an extra line must
# not contradict them (one source of truth), so these go through their own fields.
SBATCH_OWNED = frozenset(
    {
        "nodes",
        "ntasks",
        "ntasks-per-node",
        "gpus",
        "gpus-per-node",
        "gres",
        "gpus-per-task",
        "output",
        "error",
        "job-name",
        "partition",
        "account",
        "qos",
        "time",
        "cpus-per-task",
        "mem",
        "exclusive",
        "constraint",
        "reservation",
        "parsable",
        "wrap",
        "chdir",
        "export",
    }
)
_SBATCH_EXTRA = re.compile(r"--([a-z][a-z0-9-]*)(=[^\s'\"`$\\;&|<>()]+)?")


class SlurmTarget(Section):
    """[target.slurm]: how the job is asked for; nodes and GPUs come from [resources]."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = Field(None, description="sbatch --time (e.g. 02:00:00, 1-00:00:00)")
    gres_type: str | None = Field(
        None, description="typed GRES gpu:TYPE:N; omitted: untyped --gpus-per-node=N"
    )
    cpus_per_task: StrictInt | None = Field(None, ge=1)
    mem: str | None = Field(None, description="sbatch --mem per node (e.g. 200G)")
    exclusive: StrictBool = False
    constraint: str | None = None
    reservation: str | None = None
    modules: tuple[str, ...] = Field((), description="module load, in this order")
    multinode: Literal["ray", "mp"] | None = Field(
        None, description="required when resources.nodes > 1: Ray cluster or vLLM's --nnodes"
    )
    network_interface: str | None = Field(
        None, description="NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME on the nodes"
    )
    port: StrictInt = Field(8000, ge=1, le=65535, description="vLLM's API port on the head node")
    host: HostAddress | None = Field(
        None, description="bind address on the node; default the node's own IP (VLLM_HOST_IP)"
    )
    master_port: StrictInt = Field(
        29501, ge=1, le=65535, description="mp mode --master-port (vLLM's default 29501)"
    )
    ray_port: StrictInt = Field(6379, ge=1, le=65535, description="Ray GCS port on the head")
    ray_head_args: tuple[str, ...] = Field((), description="more `ray start --head` options")
    ray_worker_args: tuple[str, ...] = Field((), description="more `ray start --address` options")
    python: str | None = Field(
        None,
        description="the engine's interpreter as the compute nodes see it (shared filesystem); "
        "default: the engine's interpreter here; with [target.container], the host "
        "interpreter of Hangar's job helper (default python3)",
    )
    tmp_root: str | None = Field(
        None, description="node-local dir for the job's temp dir (default $SLURM_TMPDIR or /tmp)"
    )
    sbatch_extra: tuple[str, ...] = Field((), description="more #SBATCH options, --name=value")
    queue_timeout_s: float = Field(
        3600, gt=0, allow_inf_nan=False, description="give up when still pending after this"
    )
    ready_timeout_s: float = Field(
        1800, gt=0, allow_inf_nan=False, description="give up waiting for readiness once running"
    )
    stop_grace_s: float = Field(30, ge=0, allow_inf_nan=False)

    @field_validator("partition", "account", "qos", "gres_type", "reservation")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return one_of(_SIMPLE_NAME, "Slurm name (letters, digits, _ . + : / @ -)", value)

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        return one_of(_SLURM_TIME, "Slurm time limit (e.g. 02:00:00 or 1-00:00:00)", value)

    @field_validator("mem")
    @classmethod
    def _mem(cls, value: str | None) -> str | None:
        return one_of(_SLURM_MEM, "Slurm memory size (e.g. 200G)", value)

    @field_validator("network_interface")
    @classmethod
    def _ifname(cls, value: str | None) -> str | None:
        return one_of(_IFNAME, "network interface list (e.g. ib0 or ^lo,docker0)", value)

    @field_validator("modules")
    @classmethod
    def _modules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            one_of(_MODULE, "module name (e.g. cuda/12.4)", name)
        return value

    @field_validator("constraint", "python", "tmp_root")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)

    @field_validator("ray_head_args", "ray_worker_args")
    @classmethod
    def _args_one_line(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arg in value:
            no_control_chars(arg)
        return value

    @field_validator("sbatch_extra")
    @classmethod
    def _extra(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for line in value:
            match = _SBATCH_EXTRA.fullmatch(line)
            if match is None:
                raise ValueError(
                    f"{line!r} is not one sbatch option (--name or --name=value, no spaces, "
                    "quotes or shell characters)"
                )
            if match.group(1) in SBATCH_OWNED:
                raise ValueError(
                    f"{line!r}: --{match.group(1)} is set by Hangar from [resources] or "
                    "[target.slurm]; use that field"
                )
        return value
