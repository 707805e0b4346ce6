"""The deployment file (``hangar.toml``) as one frozen pydantic value.

Every field is declared once here; the JSON schema (``hangar init --schema``),
the TOML rendering and the vLLM argv are all derived from these models.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

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
    id: str = Field(min_length=1, description="Hugging Face id (org/name) or a local directory")
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
    host: str = Field("127.0.0.1", description="bind address; 0.0.0.0 exposes the server")
    port: StrictInt = Field(8000, ge=1, le=65535)
    ready_timeout_s: float = Field(
        900, gt=0, allow_inf_nan=False, description="give up waiting for readiness"
    )
    stop_grace_s: float = Field(
        30, ge=0, allow_inf_nan=False, description="SIGTERM to SIGKILL delay on stop"
    )
    cuda_visible_devices: str | None = None

    @field_validator("host", "cuda_visible_devices")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else _no_control_chars(value)


class Target(_Section):
    kind: Literal["local", "slurm", "container"] = "local"
    local: LocalTarget = Field(default_factory=lambda: LocalTarget.model_validate({}))


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
    target: Target = Field(default_factory=Target)

    @field_validator("name", "engine")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        return None if value is None else _no_control_chars(value)

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
