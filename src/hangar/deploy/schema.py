"""The deployment file (``hangar.toml``) as one frozen pydantic value.

Every field is declared once here; the JSON schema (``hangar init --schema``),
the TOML rendering and the vLLM argv are all derived from these models.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    field_validator,
    model_validator,
)

SCHEMA_VERSION = 1

# Names whose values must never reach a log, a snapshot or a repr.
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|CREDENTIAL|_KEY$)", re.IGNORECASE
)
MASK = "***"

# vllm serve flags whose value is a credential. On a command line it is visible to every
# user (ps, /proc/<pid>/cmdline), vLLM logs it among its "non-default args"
# (vllm/entrypoints/utils.py log_non_default_args) and Hangar records argv in launch.json
# and the runs store, so the deployment must pass it through [env] instead.
SECRET_FLAGS = {"--api-key": "VLLM_API_KEY", "--hf-token": "HF_TOKEN"}
_SECRET_FLAG_WORDS = frozenset(
    {"key", "token", "secret", "password", "passwd", "apikey", "credential", "credentials"}
)

# TOML takes true for an integer in lax pydantic (port = true becomes port 1).
StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def is_secret_flag(arg: str, following: str | None = None) -> bool:
    """``--api-key K``, ``--hf-token=T`` and the like, given the argument after ``arg``.

    Judged by the flag's last word, so ``--tokenizer`` and ``--return-tokens-as-token-ids``
    are not secrets; a bare switch (``--hf-token`` alone: use the cached login) carries none.
    """
    if not arg.startswith("--"):
        return False
    name, has_value = arg[2:].split("=", 1)[0], "=" in arg
    if not has_value and (following is None or following.startswith("--")):
        return False
    return name.lower().split("-")[-1] in _SECRET_FLAG_WORDS


# RFC 1123 hostname: dot-separated labels of letters, digits and inner hyphens, 1-63
# characters each, 253 in all (an optional trailing dot is the root).
_HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def host_address(value: str) -> str:
    """A bind/publish address: an IPv4 or IPv6 address or an RFC 1123 hostname.

    It reaches ``--host``, ``-p HOST:PORT:PORT`` and the job's URL, so anything else
    (spaces, option text, shell characters) is refused here, once for every target.
    """
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    name = value.removesuffix(".")
    if 0 < len(name) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        return value
    raise ValueError(
        f"{value!r} is not an IP address or hostname (e.g. 127.0.0.1, 0.0.0.0, ::1 "
        "or node01.example.org)"
    )


HostAddress = Annotated[str, AfterValidator(host_address)]


def _no_control_chars(value: str) -> str:
    """Names end up in argv, status lines and HTTP requests: one printable line only."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("must be one line without control characters (newline, tab, NUL)")
    return value


def _no_nul(value: Any) -> Any:
    # The kernel cannot pass a NUL inside an argv entry or an environment value.
    if isinstance(value, str) and "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _strings_without_nul(cls, value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(_no_nul(v) for v in value)
        if isinstance(value, dict):
            for k, v in value.items():
                _no_nul(k)
                _no_nul(v)
            return value
        return _no_nul(value)


class ModelSection(_Section):
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
        return None if value is None else _no_control_chars(value)

    @property
    def name_for_clients(self) -> str:
        return self.served_name or self.id


class Resources(_Section):
    gpu: str | None = Field(None, description="GPU kind from the catalog (hangar gpus list)")
    gpus: StrictInt = Field(1, ge=1, description="GPUs per node")
    nodes: StrictInt = Field(1, ge=1)


class Parallel(_Section):
    tensor: StrictInt = Field(1, ge=1, description="--tensor-parallel-size")
    pipeline: StrictInt = Field(1, ge=1, description="--pipeline-parallel-size")
    data: StrictInt = Field(1, ge=1, description="--data-parallel-size")
    expert: StrictBool = Field(False, description="--enable-expert-parallel")


class Serve(_Section):
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


class LocalTarget(_Section):
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
        return None if value is None else _no_control_chars(value)


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


def _one_of(pattern: re.Pattern[str], what: str, value: str | None) -> str | None:
    if value is not None and not pattern.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid {what}")
    return value


class SlurmTarget(_Section):
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
        return _one_of(_SIMPLE_NAME, "Slurm name (letters, digits, _ . + : / @ -)", value)

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        return _one_of(_SLURM_TIME, "Slurm time limit (e.g. 02:00:00 or 1-00:00:00)", value)

    @field_validator("mem")
    @classmethod
    def _mem(cls, value: str | None) -> str | None:
        return _one_of(_SLURM_MEM, "Slurm memory size (e.g. 200G)", value)

    @field_validator("network_interface")
    @classmethod
    def _ifname(cls, value: str | None) -> str | None:
        return _one_of(_IFNAME, "network interface list (e.g. ib0 or ^lo,docker0)", value)

    @field_validator("modules")
    @classmethod
    def _modules(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            _one_of(_MODULE, "module name (e.g. cuda/12.4)", name)
        return value

    @field_validator("constraint", "python", "tmp_root")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else _no_control_chars(value)

    @field_validator("ray_head_args", "ray_worker_args")
    @classmethod
    def _args_one_line(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arg in value:
            _no_control_chars(arg)
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


class ContainerOptions(_Section):
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
        return None if value is None else _no_control_chars(value)

    @field_validator("extra_args")
    @classmethod
    def _extra_one_line(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arg in value:
            _no_control_chars(arg)
        return value

    @field_validator("binds")
    @classmethod
    def _binds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for bind in value:
            _one_of(_BIND, "bind SRC[:DST][:ro] with absolute paths and no ','", bind)
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
        return None if value is None else _no_control_chars(value)

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, value: str | None) -> str | None:
        if value is not None and value != "all" and not re.fullmatch(r"\d+(,\d+)*", value):
            raise ValueError(f"{value!r} is not 'all' or a device list like '0,1'")
        return value

    @field_validator("shm_size")
    @classmethod
    def _shm(cls, value: str | None) -> str | None:
        return _one_of(_SHM_SIZE, "size (e.g. 16g)", value)


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


class LocalTargetSection(_Section):
    kind: Literal["local"] = "local"
    local: LocalTarget = Field(default_factory=lambda: LocalTarget.model_validate({}))

    @property
    def port(self) -> int:
        return self.local.port

    @property
    def stop_grace_s(self) -> float:
        return self.local.stop_grace_s


class SlurmTargetSection(_Section):
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


class ContainerTargetSection(_Section):
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


class Deployment(_Section):
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
        return None if value is None else _no_control_chars(value)

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
