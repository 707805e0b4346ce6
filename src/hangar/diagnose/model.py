"""Values of the diagnosis: the signature schema (as packaged data), the cause table and the
result.

Schema notes for signature writers: ``Signature.called_from`` (issue 11) names the package that
made a failing lookup or call, where ``raised_in`` names the one that raised it. The cause table
(``data/causes.yaml``, ``CauseEntry``) holds each cause's title, definition and default fix;
``Cause.title`` is the signature's title, ``Cause.cause_title`` the table's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # imported where used: hangar.planning costs `hangar doctor` 0.19 s to import
    from hangar.planning.findings import Finding

# The taxonomy of `hangar doctor --json`; every signature names exactly one of these.
CauseId = Literal[
    "ulimit_mmap",
    "tp_heads_divisibility",
    "world_size_gpus",
    "expert_parallel",
    "kv_cache_too_small",
    "gpu_memory_utilization",
    "oom_weights",
    "unsupported_architecture",
    "missing_parser",
    "mamba_cache_blocks",
    "nccl_p2p",
    "nccl_network",
    "ray_cluster",
    "cuda_driver_mismatch",
    "quant_unsupported_gpu",
    "flashinfer_jit_nvcc",
    "tmp_disk_full",
    "port_in_use",
    "max_model_len_exceeds_config",
    "dtype_unsupported",
    "shm_ipc",
    "ulimit_nproc",
    "host_oom",
    "tmp_shared",
    "vllm_platform",
    "slurm_time_limit",
    "slurm_resources",
    "slurm_auth",
    "hf_access",
    "extension_abi_mismatch",
    "dependency_mismatch",
    "bad_cli_flag",
    "ulimit_nofile",
    "fabric_manager",
    "other",
]

CAUSES: tuple[str, ...] = CauseId.__args__  # type: ignore[attr-defined]
# The answer that names no cause (a healthy or unrelated log); in the cause table, not a CauseId.
UNKNOWN = "unknown"


class Signature(BaseModel):
    """One known failure: how it shows in a log, what it means, and how to fix it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    cause: CauseId
    title: str
    patterns: tuple[str, ...] = Field(min_length=1, description="any one line matching fires it")
    requires: tuple[str, ...] = Field(
        default=(), description="each must also match some line of the input (co-occurrence)"
    )
    requires_any: tuple[str, ...] = Field(
        default=(), description="at least one must match some line of the input (when given)"
    )
    absent: tuple[str, ...] = Field(default=(), description="any match anywhere suppresses it")
    context: tuple[str, ...] = Field(
        default=(), description="supporting lines: each one seen raises confidence by context_boost"
    )
    confidence: float = Field(gt=0, le=1)
    context_boost: float = Field(default=0.1, ge=0, le=0.5)
    suppresses: tuple[CauseId, ...] = Field(
        default=(), description="causes that are downstream symptoms of this one (demoted)"
    )
    fallback: bool = Field(
        default=False, description="a generic symptom, dropped when any specific signature fires"
    )
    last_resort: bool = Field(
        default=False,
        description=(
            "a fallback that only says a failure happened (an uncaught exception, a panic, an "
            "error-level line): also dropped when any other fallback or a stage marker fired, "
            "since those say more about the same lines"
        ),
    )
    stall: bool = Field(
        default=False,
        description=(
            "a stage marker, not an error: fires only when its last match is among the final "
            "lines of its file (the log stopped there) and no error signature fired"
        ),
    )
    raised_in: str | None = Field(
        default=None,
        description=(
            "a regex the innermost traceback frame must match: the path of the nearest "
            '`File "...", line N, in f` line within the few lines above the pattern\'s line '
            "(where the exception was raised, not every module the traceback passed through)"
        ),
    )
    called_from: str | None = Field(
        default=None,
        description=(
            "a regex the calling frame must match: the innermost traceback frame above the "
            "pattern's line once pass-through frames are skipped (an attribute hook such as "
            "`__getattr__` / `__getattribute__`, or a call wrapper such as torch's `_call_impl`), "
            "i.e. the code that looked the name up or made the call, in whichever package "
            "raised the error"
        ),
    )
    explanation: str
    fix: tuple[str, ...] = Field(min_length=1)
    vllm: str = Field(default="*", description="vLLM versions that print this, e.g. '>=0.6,<0.11'")
    preflight_rule: str | None = None
    sources: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _last_resort_is_a_fallback(self) -> Signature:
        if self.last_resort and not self.fallback:
            raise ValueError("last_resort: true needs fallback: true (it is the last fallback)")
        return self


class SignatureFile(BaseModel):
    """A data file: a version key first, then its signatures."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1]
    signatures: tuple[Signature, ...]


class CauseEntry(BaseModel):
    """One row of the cause table: what the cause id means and its default fix."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    title: str = Field(min_length=1)
    definition: str = Field(min_length=20)
    fix: str = Field(min_length=10, description="names a flag, an env var or a command")


class CauseFile(BaseModel):
    """``data/causes.yaml``: a version key first, then one entry per cause."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1]
    causes: tuple[CauseEntry, ...]


class Evidence(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    line: int = Field(ge=1)
    text: str


class Cause(BaseModel):
    """One ranked cause with the signature that named it and the lines that show it.

    Not a ``planning.findings.Finding`` (the one verdict type of plan, preflight and
    workarounds): a cause is a hypothesis with a confidence, ranked against others, whose
    evidence is lines across several files; ``as_finding`` gives the verdict form."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cause: CauseId
    signature: str
    confidence: float = Field(ge=0, le=1)
    explanation: str
    fix: str
    evidence: tuple[Evidence, ...]
    title: str = Field(default="", exclude=True)
    cause_title: str = Field(default="", exclude=True, description="the cause table's title")
    preflight_rule: str | None = Field(default=None, exclude=True)
    repeats: int = Field(default=1, exclude=True, description="duplicate lines folded (ranks)")
    stall: bool = Field(
        default=False,
        exclude=True,
        description="named by a stage marker at the end of a log written moments ago",
    )

    def as_finding(self) -> Finding:
        """The cause as a verdict (``doctor.<cause>``), with its first evidence line."""
        from hangar.planning.findings import Finding

        first = self.evidence[0] if self.evidence else None
        return Finding(
            id=f"doctor.{self.cause}",
            severity="error",
            message=self.explanation,
            fix=self.fix,
            evidence=f"{first.file}:{first.line}: {first.text}" if first else "",
            source="doctor",
        )


class Diagnosis(BaseModel):
    """What `hangar doctor` concluded: causes best first (empty when the log looks healthy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    causes: tuple[Cause, ...] = ()
    # Guesses below the naming floor (scan.NAME_FLOOR) when no cause reaches it: not a
    # diagnosis ("unknown"), kept for a reader that wants to show them as guesses.
    unconfirmed: tuple[Cause, ...] = Field(default=(), exclude=True)
    files: tuple[str, ...] = Field(default=(), exclude=True)
    lines_scanned: int = Field(default=0, exclude=True)
    bytes_scanned: int = Field(default=0, exclude=True)

    @property
    def healthy(self) -> bool:
        return not self.causes

    @property
    def top(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    def confident(self, threshold: float = 0.5) -> bool:
        """True when the best cause is at least ``threshold`` sure."""
        return bool(self.causes) and self.causes[0].confidence >= threshold
