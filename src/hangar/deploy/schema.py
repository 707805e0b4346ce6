"""The deployment file (``hangar.toml``) as one frozen pydantic value.

Every field is declared once here; the JSON schema (``hangar init --schema``),
the TOML rendering and the vLLM argv are all derived from these models.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from hangar.deploy.schema_container import (
    ContainerOptions,
    ContainerTarget,
    SlurmContainer,
    split_bind,
)
from hangar.deploy.schema_slurm import SBATCH_OWNED, SlurmTarget
from hangar.deploy.values import (
    MASK,
    SECRET_FLAGS,
    HostAddress,
    Section,
    StrictBool,
    StrictInt,
    host_address,
    is_secret_flag,
    is_secret_name,
    no_control_chars,
)

# Re-exported: callers import every deployment type from here.
__all__ = [
    "MASK",
    "SBATCH_OWNED",
    "SCHEMA_VERSION",
    "SECRET_FLAGS",
    "TARGET_KINDS",
    "ContainerOptions",
    "ContainerTarget",
    "ContainerTargetSection",
    "Deployment",
    "HostAddress",
    "LocalTarget",
    "LocalTargetSection",
    "ModelSection",
    "Parallel",
    "Resources",
    "Serve",
    "SlurmContainer",
    "SlurmTarget",
    "SlurmTargetSection",
    "Target",
    "host_address",
    "is_secret_flag",
    "is_secret_name",
    "split_bind",
]  # fmt: skip

SCHEMA_VERSION = 1

class ModelSection(Section):
    id: str = Field(
        min_length=1,
        description="Hugging Face id (org/name, e.g. Qwen/Qwen3-8B) or a local directory",
    )
    revision: str | None = Field(None, description="hub revision (branch, tag or commit)")
    served_name: str | None = Field(None, description="name clients use; defaults to the id")
    trust_remote_code: StrictBool = False

    @field_validator("id", "served_name", "revision")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)

    @property
    def name_for_clients(self) -> str:
        return self.served_name or self.id


class Resources(Section):
    gpu: str | None = Field(None, description="GPU kind from the catalog (hangar gpus list)")
    gpus: StrictInt = Field(1, ge=1, description="GPUs per node")
    nodes: StrictInt = Field(1, ge=1)


class Parallel(Section):
    tensor: StrictInt = Field(1, ge=1, description="--tensor-parallel-size")
    pipeline: StrictInt = Field(1, ge=1, description="--pipeline-parallel-size")
    data: StrictInt = Field(1, ge=1, description="--data-parallel-size")
    expert: StrictBool = Field(False, description="--enable-expert-parallel")


class Serve(Section):
    max_model_len: StrictInt | None = Field(None, ge=1)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, allow_inf_nan=False)
    max_num_seqs: StrictInt | None = Field(None, ge=1)
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    tool_call_parser: str | None = Field(None, description="enables --enable-auto-tool-choice")
    reasoning_parser: str | None = None
    enforce_eager: StrictBool = False
    extra_args: tuple[str, ...] = Field((), description="more vllm serve flags, verbatim")

    @field_validator("extra_args")
    @classmethod
    def _no_secret_flags(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        for arg, following in zip(args, (*args[1:], None)):
            if is_secret_flag(arg, following):
                flag = arg.split("=", 1)[0]
                env = SECRET_FLAGS.get(flag, "the matching environment variable")
                raise ValueError(
                    f"'{flag}' would put a secret on the command line (visible in ps, logged "
                    f"by vLLM and recorded by Hangar); set {env} under [env] or in the shell"
                )
        return args


class LocalTarget(Section):
    host: HostAddress = Field("127.0.0.1", description="bind address; 0.0.0.0 exposes the server")
    port: StrictInt = Field(8000, ge=1, le=65535)
    ready_timeout_s: float = Field(
        900, gt=0, allow_inf_nan=False, description="give up waiting for readiness"
    )
    stop_grace_s: float = Field(
        30, ge=0, allow_inf_nan=False, description="SIGTERM to SIGKILL delay on stop"
    )
    cuda_visible_devices: str | None = None

    @field_validator("cuda_visible_devices")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)


class LocalTargetSection(Section):
    kind: Literal["local"] = "local"
    local: LocalTarget = Field(default_factory=lambda: LocalTarget.model_validate({}))

    @property
    def port(self) -> int:
        return self.local.port

    @property
    def stop_grace_s(self) -> float:
        return self.local.stop_grace_s


class SlurmTargetSection(Section):
    kind: Literal["slurm"] = "slurm"
    slurm: SlurmTarget = Field(default_factory=lambda: SlurmTarget.model_validate({}))
    container: SlurmContainer | None = Field(
        None, description="run vLLM (and Ray) in this container on every node"
    )

    @property
    def port(self) -> int:
        return self.slurm.port

    @property
    def stop_grace_s(self) -> float:
        return self.slurm.stop_grace_s


class ContainerTargetSection(Section):
    kind: Literal["container"] = "container"
    container: ContainerTarget = Field(default_factory=lambda: ContainerTarget.model_validate({}))

    @property
    def port(self) -> int:
        return self.container.port

    @property
    def stop_grace_s(self) -> float:
        return self.container.stop_grace_s


# One entry per implemented target kind; a kind not listed is refused by name.
TARGET_KINDS = ("local", "slurm", "container")
Target = Annotated[
    LocalTargetSection | SlurmTargetSection | ContainerTargetSection, Field(discriminator="kind")
]


def _target_with_kind(value: Any) -> Any:
    """Default kind 'local'; a kind Hangar does not implement is refused in one line."""
    if not isinstance(value, dict):
        return value
    kind = value.get("kind", "local")
    if kind not in TARGET_KINDS:
        raise ValueError(
            f"target.kind {kind!r} is not implemented in this Hangar (it runs: "
            f"{', '.join(TARGET_KINDS)}); nothing would be launched"
        )
    return {**value, "kind": kind}


class Deployment(Section):
    """A whole deployment: what to serve, with which engine, where and how."""

    version: Literal[1] = 1
    name: str | None = Field(None, description="label shown in status; defaults to the model")
    model: ModelSection
    engine: str = Field(
        "default",
        description="engine name (hangar engines list) or an interpreter path; switching "
        "engines is editing this one line",
    )
    resources: Resources = Field(default_factory=lambda: Resources.model_validate({}))
    parallel: Parallel = Field(default_factory=lambda: Parallel.model_validate({}))
    serve: Serve = Field(default_factory=lambda: Serve.model_validate({}))
    env: dict[str, str] = Field(
        default_factory=dict, description="extra environment; wins over workarounds"
    )
    target: Target = Field(default_factory=LocalTargetSection)

    @field_validator("name", "engine")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)

    @field_validator("target", mode="before")
    @classmethod
    def _target_kind(cls, value: Any) -> Any:
        return _target_with_kind(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"'{name}' is not a valid environment variable name")
        return env

    @model_validator(mode="after")
    def _layout_fits(self) -> Deployment:
        per_node = self.parallel.tensor * self.parallel.pipeline * self.parallel.data
        total = self.resources.gpus * self.resources.nodes
        if per_node > total and self.resources.gpu is not None:
            raise ValueError(
                f"parallel layout needs {per_node} GPUs (tensor x pipeline x data) but resources "
                f"give {total} (gpus x nodes)"
            )
        return self

    @model_validator(mode="after")
    def _multinode_mode(self) -> Deployment:
        t = self.target
        if isinstance(t, SlurmTargetSection) and self.resources.nodes > 1 and not t.slurm.multinode:
            raise ValueError(
                f"resources.nodes = {self.resources.nodes} needs target.slurm.multinode "
                '= "ray" or "mp" (how the nodes form one vLLM engine)'
            )
        if isinstance(t, ContainerTargetSection) and self.resources.nodes > 1:
            raise ValueError(
                f'resources.nodes = {self.resources.nodes} with target.kind = "container": one '
                'container runs on this host; use target.kind = "slurm"'
            )
        if isinstance(t, LocalTargetSection) and self.resources.nodes > 1:
            raise ValueError(
                f'resources.nodes = {self.resources.nodes} with target.kind = "local": one '
                'process cannot span nodes; use target.kind = "slurm"'
            )
        return self

    @property
    def label(self) -> str:
        return self.name or self.model.name_for_clients

    def masked_env(self) -> dict[str, str]:
        """The env with secret-looking values replaced, for logs and snapshots."""
        return {k: (MASK if is_secret_name(k) else v) for k, v in self.env.items()}

    def snapshot(self) -> dict[str, object]:
        """JSON-ready copy with secrets masked: what the runs store records."""
        data = self.model_dump(mode="json")
        data["env"] = self.masked_env()
        return data

    def __repr_args__(self):  # type: ignore[no-untyped-def]
        # Secrets masked in repr too (tracebacks, --debug output).
        for key, value in super().__repr_args__():
            yield key, (self.masked_env() if key == "env" else value)
