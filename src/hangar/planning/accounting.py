"""vLLM's non-KV memory per GPU, term by term, per version (planning/data/memory.yaml).

What vLLM subtracts from ``requested = total x gpu_memory_utilization`` before sizing the KV
cache (v1: ``vllm/v1/worker/gpu_worker.py determine_available_memory``; v0:
``vllm/worker/worker.py determine_num_available_blocks``):

    non_kv = non_torch (CUDA context growth, cuBLAS workspaces, NCCL / custom all-reduce)
           + activation peak of the profile run
           + CUDA-graph estimate        (only the versions that subtract it, 0.20 on)
           + multimodal encoder profile (VL models)

The activation peak is the larger of two moments that are never alive together
(``gpu_model_runner.py profile_run``: ``_dummy_run(max_num_tokens)`` then
``_dummy_sampler_run`` on one hidden state per request):

    forward  = max_num_batched_tokens x (3 x hidden + 3 x mlp_width / TP) x 2 bytes
               (gate_up output 2 x width, activation output 1 x width, residual, normed
               input and attention output at hidden size, bf16)
    sampler  = max_num_seqs x padded_vocab x 4 bytes x sampler_copies
               (fp32 logits, their sort values and int64 indices, softmax, masks, scatter,
               exponential noise: ``vllm/v1/sample/ops/topk_topp_sampler.py``; the dummy
               run sets top_k = vocab - 1 and top_p = 0.9 so every branch runs)

``sampler_copies``, ``fixed_gib`` and ``tp_extra_gib`` are the fitted constants; the
committed script ``bench/fit_memory.py`` prints them from ../shared/calibration.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from hangar.errors import DataError, UsageError
from hangar.models.spec import ModelSpec
from hangar.planning.findings import Finding
from hangar.planning.versions import DEFAULT_VLLM_VERSION, VllmVersion

GIB = 2**30
VOCAB_PADDING = 64  # vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE
ACT_BYTES = 2  # activations run in bf16/fp16
LOGIT_BYTES = 4  # the sampler works on float32 logits (sampler.py: logits.to(torch.float32))
_TIER_KEYS = {
    "since",
    "engine",
    "sampler_copies",
    "fixed_gib",
    "tp_extra_gib",
    "cudagraphs_subtracted",
    "fitted_on",
    "source",
}


@dataclass(frozen=True)
class Tier:
    since: tuple[int, int, int]
    engine: str  # v0 | v1
    sampler_copies: float
    fixed_gib: float
    tp_extra_gib: float
    cudagraphs_subtracted: bool


@dataclass(frozen=True)
class Band:
    """The plan's own error on available KV, as a share of the budget (measured, not fitted)."""

    optimistic: float  # vLLM found up to this share of the budget more than predicted
    pessimistic: float  # ... this share less
    source: str
    optimistic_floor_gib: float = 0.0  # small budgets: at least this many GiB either way
    pessimistic_floor_gib: float = 0.0

    def high(self, requested: int) -> int:
        """Bytes vLLM may find beyond the prediction (the optimistic end)."""
        return int(max(self.optimistic * requested, self.optimistic_floor_gib * GIB))

    def low(self, requested: int) -> int:
        return int(max(self.pessimistic * requested, self.pessimistic_floor_gib * GIB))


@dataclass(frozen=True)
class Accounting:
    tiers: tuple[Tier, ...]  # newest first
    band: Band
    oldest: tuple[int, int, int]
    cuda_gap_gib: float  # NVML total minus the total CUDA reports

    def tier(self, version: tuple[int, int, int]) -> Tier:
        return next((t for t in self.tiers if version >= t.since), self.tiers[-1])


def _tier(entry: dict[str, Any], where: str) -> Tier:
    unknown = set(entry) - _TIER_KEYS
    if unknown:
        raise DataError(f"{where}: unknown key(s) {sorted(unknown)}")
    try:
        return Tier(
            since=VllmVersion.parse(str(entry["since"])),
            engine=str(entry["engine"]),
            sampler_copies=float(entry["sampler_copies"]),
            fixed_gib=float(entry["fixed_gib"]),
            tp_extra_gib=float(entry["tp_extra_gib"]),
            cudagraphs_subtracted=bool(entry["cudagraphs_subtracted"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{where}: {exc}") from exc


def parse_accounting(data: dict[str, Any], name: str = "memory.yaml") -> Accounting:
    if data.get("schema_version") != 1:
        raise DataError(f"{name}: schema_version must be 1")
    tiers = tuple(_tier(t, f"{name} tiers[{i}]") for i, t in enumerate(data.get("tiers") or []))
    if not tiers or list(tiers) != sorted(tiers, key=lambda t: t.since, reverse=True):
        raise DataError(f"{name}: tiers must be non-empty and listed newest first")
    band = data.get("band") or {}
    try:
        parsed_band = Band(
            float(band["optimistic"]), float(band["pessimistic"]), str(band["source"])
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{name} band: {exc}") from exc
    gap = data.get("cuda_gap_gib", 0.0)
    if not isinstance(gap, (int, float)) or gap < 0:
        raise DataError(f"{name}: cuda_gap_gib must be a number >= 0")
    return Accounting(
        tiers=tiers, band=parsed_band, oldest=tiers[-1].since, cuda_gap_gib=float(gap)
    )


@functools.cache
def default_accounting() -> Accounting:
    text = resources.files("hangar.planning.data").joinpath("memory.yaml").read_text()
    return parse_accounting(yaml.safe_load(text))


def padded_vocab(spec: ModelSpec) -> int:
    return -(-spec.vocab_size // VOCAB_PADDING) * VOCAB_PADDING


def mlp_width(spec: ModelSpec) -> int:
    """Widest MLP a token passes through: dense, or top_k routed experts (fused-MoE caches
    intermediate_cache1/2 are tokens x top_k x 2N and x N) plus the shared expert."""
    if spec.moe is None:
        return spec.intermediate_size
    routed = spec.moe.top_k * spec.moe.expert_intermediate_size
    return max(
        spec.intermediate_size if spec.moe.dense_layers else 0,
        routed + spec.moe.shared_intermediate_size,
    )


def forward_peak_bytes(spec: ModelSpec, tokens: int, tp: int) -> float:
    return tokens * (3 * spec.hidden_size + 3 * mlp_width(spec) / tp) * ACT_BYTES


def sampler_peak_bytes(spec: ModelSpec, max_num_seqs: int, tier: Tier) -> float:
    if spec.is_pooling:
        return 0.0
    return max_num_seqs * padded_vocab(spec) * LOGIT_BYTES * tier.sampler_copies


def activation_peak_bytes(spec: ModelSpec, tokens: int, seqs: int, tp: int, tier: Tier) -> float:
    return max(forward_peak_bytes(spec, tokens, tp), sampler_peak_bytes(spec, seqs, tier))


def fixed_bytes(tier: Tier, tp: int) -> float:
    return (tier.fixed_gib + (tier.tp_extra_gib if tp > 1 else 0.0)) * GIB


def check_supported_version(text: str, version: tuple[int, int, int]) -> Finding | None:
    """Refuse a version older than every rule and memory tier Hangar has (memory.yaml);
    for one newer than the newest release the rules were read from, the finding that says
    so (:func:`newer_than_known`), which the plan shows on every layout."""
    oldest = default_accounting().oldest
    if version < oldest:
        first = ".".join(map(str, oldest))
        raise UsageError(
            f"--vllm-version {text}: unknown version range; Hangar's rules and memory "
            f"accounting start at vLLM {first}",
            hint=f"--vllm-version {first} or newer (e.g. --vllm-version {DEFAULT_VLLM_VERSION})",
        )
    return newer_than_known(version)


NEWER_THAN_KNOWN = "vllm_version_newer_than_rules"


def newer_than_known(version: tuple[int, int, int]) -> Finding | None:
    """A warning when ``version`` is past the newest release whose source the rules and
    memory tiers were read from (DEFAULT_VLLM_VERSION's major.minor; its patch releases
    share its rules): those are applied, and nothing says they still hold."""
    newest = VllmVersion.parse(DEFAULT_VLLM_VERSION)
    if tuple(version[:2]) <= tuple(newest[:2]):
        return None
    known = f"{newest.major}.{newest.minor}"
    shown = ".".join(map(str, version))
    return Finding(
        id=NEWER_THAN_KNOWN,
        severity="warning",
        source="plan",
        phase="frontend",  # the version is the engine's: known before anything starts
        message=(
            f"vLLM {shown} is newer than every release Hangar's rules and memory "
            f"accounting were read from (newest: {known}); the {known} rules are applied, "
            "unverified for this version"
        ),
        fix=(
            f"plan with --vllm-version {DEFAULT_VLLM_VERSION} to see the verified rules, "
            "or upgrade Hangar for rules read from the newer release"
        ),
        evidence=f"planning/versions.py DEFAULT_VLLM_VERSION = {DEFAULT_VLLM_VERSION}",
    )
