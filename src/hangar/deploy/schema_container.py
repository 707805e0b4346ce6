"""``[target.container]``: the one-host container target and the container of a Slurm job,
sharing ``ContainerOptions``."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from hangar.deploy.values import (
    HostAddress,
    Section,
    StrictBool,
    StrictInt,
    no_control_chars,
    one_of,
)

_SHM_SIZE = re.compile(r"\d+[bkmg]?", re.IGNORECASE)  # podman/docker --shm-size: number + unit
# A bind SRC:DST[:ro|rw], both absolute; ',' separates binds in apptainer --bind and pyxis
# --container-mounts, so it cannot occur in a path (docs/containers.md).
_BIND = re.compile(r"(/[^:,]*)(:/[^:,]*)?(:ro|:rw)?")


def split_bind(spec: str) -> tuple[str, str, bool]:
    """``SRC[:DST][:ro|rw]`` (validated by ``_BIND``) as (src, dst, read-only); DST
    defaults to SRC."""
    src, *rest = spec.split(":")
    mode = rest.pop() if rest and rest[-1] in ("ro", "rw") else "rw"
    return src, rest[0] if rest else src, mode == "ro"


class ContainerOptions(Section):
    """What a container setting means wherever it runs: alone on this host
    ([target.container] with kind = "container") or on every node of a Slurm job
    ([target.container] with kind = "slurm"). Each field is declared once, here."""

    image: str | None = Field(
        None, description="image reference or a .sif path; default: the engine's image"
    )
    extra_args: tuple[str, ...] = Field((), description="more runtime flags, verbatim")
    python: str = Field("python3", description="the interpreter inside the image")
    binds: tuple[str, ...] = Field(
        (), description="more bind mounts SRC:DST[:ro] (absolute paths), e.g. a shared model store"
    )
    nvccli: StrictBool = Field(False, description="apptainer --nvccli (with --nv)")
    containall: StrictBool = Field(
        False, description="apptainer --containall instead of --cleanenv (private /dev/shm too)"
    )

    @field_validator("image", "python")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)

    @field_validator("extra_args")
    @classmethod
    def _extra_one_line(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arg in value:
            no_control_chars(arg)
        return value

    @field_validator("binds")
    @classmethod
    def _binds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for bind in value:
            one_of(_BIND, "bind SRC[:DST][:ro] with absolute paths and no ','", bind)
        return value


class ContainerTarget(ContainerOptions):
    """[target.container]: vLLM in a Podman, Docker or Apptainer container on this host.

    What each field becomes on the runtime's command line: docs/containers.md.
    """

    runtime: Literal["podman", "docker", "apptainer"] = "podman"
    host: HostAddress = Field("127.0.0.1", description="host address the port is published on")
    port: StrictInt = Field(8000, ge=1, le=65535, description="host port (and vLLM's port)")
    gpus: str | None = Field(
        None, description='"all" or a device list "0,1"; default: all when resources.gpu is set'
    )
    ipc_host: StrictBool = Field(
        True, description="--ipc=host: vLLM's workers share memory through /dev/shm"
    )
    shm_size: str | None = Field(None, description="--shm-size when ipc_host = false (e.g. 16g)")
    pull: Literal["missing", "never"] = Field(
        "missing", description="pull the image at launch when absent, or refuse"
    )
    ready_timeout_s: float = Field(900, gt=0, allow_inf_nan=False)
    stop_grace_s: float = Field(30, ge=0, allow_inf_nan=False)

    @field_validator("gpus")
    @classmethod
    def _one_line_here(cls, value: str | None) -> str | None:
        return None if value is None else no_control_chars(value)

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, value: str | None) -> str | None:
        if value is not None and value != "all" and not re.fullmatch(r"\d+(,\d+)*", value):
            raise ValueError(f"{value!r} is not 'all' or a device list like '0,1'")
        return value

    @field_validator("shm_size")
    @classmethod
    def _shm(cls, value: str | None) -> str | None:
        return one_of(_SHM_SIZE, "size (e.g. 16g)", value)


class SlurmContainer(ContainerOptions):
    """[target.container] with kind = "slurm": vLLM (and Ray) in a container on every node.

    ``apptainer``: ``apptainer exec --nv`` around each command of node.sh; ``pyxis``: the
    node's srun step runs in the image (``srun --container-image``, NVIDIA's Pyxis/enroot).
    The image must be on a path every node reads (a .sif, or a pyxis image reference).
    """

    runtime: Literal["apptainer", "pyxis"] = "apptainer"
    mount_home: StrictBool = Field(
        False, description="bind the home directory (pyxis --container-mount-home)"
    )

    @model_validator(mode="after")
    def _image_and_runtime_flags(self) -> SlurmContainer:
        if not self.image:
            raise ValueError(
                "image is required inside a Slurm job: a .sif path every node reads "
                '(apptainer) or an image reference or .sqsh path (pyxis), e.g. image = "/shared/vllm.sif"'
            )
        if self.runtime == "pyxis":
            for name in ("nvccli", "containall"):
                if getattr(self, name):
                    raise ValueError(
                        f'{name} is an apptainer option; pyxis has none (set runtime = "apptainer" '
                        f"or remove {name})"
                    )
        return self
