"""plan(model, hardware, request) -> Plan: a pure function, no I/O.

Enumerates every TP x PP x DP (x EP for MoE) layout that uses the GPUs (or checks the one
requested), runs every rule and the memory model on each, ranks the valid ones and
recommends one with its exact `vllm serve` flags.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.hardware.spec import Hardware
from hangar.models.spec import ModelSpec
from hangar.planning.accounting import check_supported_version, newer_than_known
from hangar.planning.facts import build_facts
from hangar.planning.findings import Finding
from hangar.planning.memory import (
    Layout,
    MemoryInputs,
    MemoryResult,
    kv_bytes_per_token_model,
    memory_for,
)
from hangar.planning.multinode import MultiNode, multi_node
from hangar.planning.request import PlanRequest
from hangar.planning.rules import RuleSet, default_rules
from hangar.planning.serve import ServeOptions, serve_command
from hangar.planning.tables import table
from hangar.planning.versions import VllmVersion

GIB = 2**30


class LayoutMemory(BaseModel):
    model_config = ConfigDict(frozen=True)

    weight_bytes_per_gpu: int
    kv_bytes_per_token_per_gpu: int
    kv_cache_bytes_per_gpu: int
    kv_cache_tokens: int
    max_concurrency: float
    max_model_len_fit: int
    requested_bytes: int
    overhead_bytes: int


class LayoutPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    tp: int
    pp: int
    dp: int
    ep: bool
    valid: bool
    requested: bool
    findings: tuple[Finding, ...]
    memory: LayoutMemory
    serve_args: tuple[str, ...]
    multi_node: MultiNode | None = None  # per-node commands when the layout spans nodes


class Settings(BaseModel):
    """The effective serve settings after vLLM's version- and GPU-dependent defaults."""

    model_config = ConfigDict(frozen=True)

    max_model_len: int
    max_model_len_explicit: bool
    gpu_memory_utilization: float
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    prefix_caching: bool
    cuda_graphs: bool


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: ModelSpec
    hardware: Hardware
    request: PlanRequest
    settings: Settings
    layouts: tuple[LayoutPlan, ...]
    recommended: LayoutPlan | None

    @property
    def verdict_layout(self) -> LayoutPlan | None:
        """The requested layout when there is one, else the recommendation."""
        if self.request.layout_requested:
            return self.layouts[0] if self.layouts else None
        return self.recommended

    @property
    def ok(self) -> bool:
        target = self.verdict_layout
        return target is not None and target.valid


def default_utilization(version: tuple[int, int, int]) -> float:
    """vLLM's default gpu_memory_utilization for this version (planning/data/tables.yaml)."""
    return float(table("gpu_memory_utilization_default", version)[0])


def batch_defaults(
    hw: Hardware,
    max_model_len: int,
    version: tuple[int, int, int] = (0, 33, 0),
    chunked_prefill: bool = True,
) -> tuple[int, int]:
    """`vllm serve` (OPENAI_API_SERVER) max_num_batched_tokens / max_num_seqs defaults.

    0.33: EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py:2940) + :3151; 0.20: :2179;
    0.11: arg_utils.py:1605 (no 160 GiB tier; without chunked prefill the tokens default is
    max_model_len itself); 0.8.5: arg_utils.py:1596 (no A100 exception, no clamps).
    """
    if version < (0, 8, 0):
        return _v0_batch_defaults(max_model_len, version, chunked_prefill)
    gib = hw.gpu.memory_bytes / GIB
    a100 = "A100" in hw.gpu.name.upper()
    gb10 = hw.gpu.compute_capability == (12, 1)  # 0.33 keeps DGX Spark (SM 12.1) on the small tier
    if version >= (0, 33, 0) and gib >= 160:
        tokens, seqs = 16384, 1024
    elif gib >= 70 and (version < (0, 11, 0) or not a100) and not (version >= (0, 33, 0) and gb10):
        tokens, seqs = 8192, 1024
    else:
        tokens, seqs = 2048, 256
    if version < (0, 11, 0):
        return tokens, seqs
    if version < (0, 20, 0):
        tokens = tokens if chunked_prefill else max_model_len
        return tokens, min(seqs, tokens)
    if not chunked_prefill:
        tokens = max(max_model_len, tokens)
    tokens = min(seqs * max_model_len, tokens)
    return tokens, min(seqs, tokens)


V0_LONG_CONTEXT = 32 * 1024  # arg_utils.py (0.6/0.7): chunked prefill switches on above 32K


def _v0_batch_defaults(
    max_model_len: int, version: tuple[int, int, int], chunked_prefill: bool
) -> tuple[int, int]:
    """The V0 engine (default before 0.8.0): SchedulerConfig with max_num_seqs 256; without
    chunked prefill the token budget is max(max_model_len, 2048); chunked prefill is switched
    on by EngineArgs only above 32K tokens, with 512 tokens before 0.6.5 and 2048 after
    (_DEFAULT_MAX_NUM_BATCHED_TOKENS). Hangar's request keeps chunked prefill on by default,
    so `chunked_prefill` only counts above 32K here, as in V0."""
    if chunked_prefill and max_model_len > V0_LONG_CONTEXT:
        return (512 if version < (0, 6, 5) else 2048), 256
    return max(max_model_len, 2048), 256


def effective_settings(
    model: ModelSpec, hw: Hardware, request: PlanRequest, version: VllmVersion | None = None
) -> Settings:
    """vLLM's defaults for what the request leaves open; ``version`` is the request's, parsed
    once by ``plan()`` (parsed here only for callers outside the planner)."""
    version = version or VllmVersion.parse(request.vllm_version)
    length = request.max_model_len or model.default_max_len_for(version)
    tokens, seqs = batch_defaults(hw, length, version, request.enable_chunked_prefill)
    prefix = request.enable_prefix_caching
    return Settings(
        max_model_len=length,
        max_model_len_explicit=request.max_model_len is not None,
        gpu_memory_utilization=(
            default_utilization(version)
            if request.gpu_memory_utilization is None
            else request.gpu_memory_utilization
        ),
        max_num_batched_tokens=request.max_num_batched_tokens or tokens,
        max_num_seqs=request.max_num_seqs or seqs,
        kv_cache_dtype=request.kv_cache_dtype,
        prefix_caching=True if prefix is None else prefix,
        cuda_graphs=not request.enforce_eager and version >= (0, 20, 0),
    )


def candidate_layouts(model: ModelSpec, hw: Hardware, request: PlanRequest) -> list[Layout]:
    total = hw.total_gpus
    if request.layout_requested:
        tp, pp = request.tp or 1, request.pp or 1
        dp = request.dp or 1
        return [Layout(tp, pp, dp, bool(request.ep))]
    out = []
    for tp in _divisors(total):
        for pp in _divisors(total // tp):
            dp = total // (tp * pp)
            out.append(Layout(tp, pp, dp, False))
            if model.moe and tp * dp > 1:
                out.append(Layout(tp, pp, dp, True))
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _memory_inputs(hw: Hardware, s: Settings, version: VllmVersion) -> MemoryInputs:
    return MemoryInputs(
        memory_bytes=hw.gpu.memory_bytes,
        gpu_memory_utilization=s.gpu_memory_utilization,
        max_model_len=s.max_model_len,
        max_num_batched_tokens=s.max_num_batched_tokens,
        max_num_seqs=s.max_num_seqs,
        kv_cache_dtype=s.kv_cache_dtype,
        cuda_graphs=s.cuda_graphs,
        prefix_caching=s.prefix_caching,
        unified_memory=hw.gpu.unified_memory,
        vllm_version=version,
        enforce_eager=not s.cuda_graphs,
        compute_capability=hw.gpu.compute_capability,
        rocm=hw.gpu.rocm,
    )


def serve_args(
    model: ModelSpec, layout: Layout, s: Settings, request: PlanRequest
) -> tuple[str, ...]:
    return serve_command(serve_options(model, layout, s, request))


def serve_options(
    model: ModelSpec, layout: Layout, s: Settings, request: PlanRequest
) -> ServeOptions:
    return ServeOptions(
        model=model.id,
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        ep=bool(layout.ep),
        max_model_len=s.max_model_len,
        gpu_memory_utilization=request.gpu_memory_utilization or None,
        kv_cache_dtype=None if request.kv_cache_dtype == "auto" else request.kv_cache_dtype,
        quantization=request.quantization,
        dtype=None if request.dtype == "auto" else request.dtype,
        enforce_eager=request.enforce_eager,
        max_num_batched_tokens=request.max_num_batched_tokens,
        max_num_seqs=request.max_num_seqs,
        extra_args=("--hf-overrides", request.hf_overrides) if request.hf_overrides else (),
    )


def _layout_memory(m: MemoryResult) -> LayoutMemory:
    return LayoutMemory(
        weight_bytes_per_gpu=m.weight_bytes_per_gpu,
        kv_bytes_per_token_per_gpu=m.kv_bytes_per_token_per_gpu,
        kv_cache_bytes_per_gpu=m.kv_cache_bytes_per_gpu,
        kv_cache_tokens=m.kv_cache_tokens,
        max_concurrency=m.max_concurrency,
        max_model_len_fit=m.max_model_len_fit,
        requested_bytes=m.requested_bytes,
        overhead_bytes=m.overhead_bytes,
    )


def check_layout(
    model: ModelSpec,
    hw: Hardware,
    request: PlanRequest,
    s: Settings,
    layout: Layout,
    rules: RuleSet,
    version: VllmVersion,
) -> LayoutPlan:
    memory = memory_for(model, layout, _memory_inputs(hw, s, version))
    settings = _settings_facts(s, request, version)
    facts = build_facts(model, hw, layout, request, memory, settings, version)
    findings = (*rules.evaluate(facts, version), *filter(None, [newer_than_known(version)]))
    return LayoutPlan(
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        valid=not any(f.severity == "error" for f in findings),
        requested=request.layout_requested,
        findings=findings,
        memory=_layout_memory(memory),
        serve_args=serve_args(model, layout, s, request),
        multi_node=multi_node(
            serve_options(model, layout, s, request),
            hw.nodes,
            hw.gpus_per_node,
            version,
            request.head_address,
        ),
    )


def _settings_facts(s: Settings, request: PlanRequest, version: VllmVersion) -> dict[str, Any]:
    return {
        "max_model_len": s.max_model_len,
        "gpu_memory_utilization": s.gpu_memory_utilization,
        "default_util": default_utilization(version),
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "max_num_seqs": s.max_num_seqs,
        "chunked_prefill": request.enable_chunked_prefill,
        "run_dtype": "float16" if request.dtype in ("half", "float16") else "bfloat16",
    }


HEALTHY_CONCURRENCY = 4  # max-length requests one engine should hold before DP is worth it


def _rank_key(layout: LayoutPlan, hw: Hardware) -> tuple[Any, ...]:
    """Order valid layouts the way an experienced vLLM operator would pick one.

    1. TP inside a node, then the fewest nodes per engine, then no warnings;
    2. pipeline parallel only to span nodes (within a node TP has no pipeline bubbles);
    3. the smallest model-parallel group (TP x PP) whose engine still holds
       HEALTHY_CONCURRENCY max-length requests, DP replicas for the rest (throughput and no
       cross-GPU all-reduce for small models); when no group is healthy, the most concurrency;
    4. for MoE with DP, expert parallelism (vLLM's documented DP+EP deployment);
    5. the most max-length requests the whole deployment holds.
    """
    mp = layout.tp * layout.pp
    nodes_per_engine = math.ceil(mp / hw.gpus_per_node)
    warnings = sum(1 for f in layout.findings if f.severity == "warning")
    concurrency = layout.memory.max_concurrency
    healthy = concurrency >= HEALTHY_CONCURRENCY
    return (
        layout.tp <= hw.gpus_per_node,
        -nodes_per_engine,
        warnings == 0,
        layout.pp <= nodes_per_engine,
        healthy,
        -mp if healthy else concurrency,
        layout.ep == (layout.dp > 1),
        concurrency * layout.dp,
    )


def plan(
    model: ModelSpec, hardware: Hardware, request: PlanRequest, rules: RuleSet | None = None
) -> Plan:
    """Check every candidate layout; the requested one (if any) comes first."""
    version = VllmVersion.parse(request.vllm_version)  # once per plan, passed along
    check_supported_version(request.vllm_version, version)
    ruleset = rules or default_rules()
    s = effective_settings(model, hardware, request, version)
    layouts = [
        check_layout(model, hardware, request, s, lay, ruleset, version)
        for lay in candidate_layouts(model, hardware, request)
    ]
    valid = [lay for lay in layouts if lay.valid]
    recommended = None
    if request.layout_requested:
        recommended = (
            layouts[0]
            if layouts and layouts[0].valid
            else _best_alternative(model, hardware, request, s, ruleset, version)
        )
    elif valid:
        recommended = max(valid, key=lambda lay: _rank_key(lay, hardware))
    if not request.layout_requested:  # best first: valid ones in rank order, then the rejected
        ranked = sorted(valid, key=lambda lay: _rank_key(lay, hardware), reverse=True)
        rejected = sorted((lay for lay in layouts if not lay.valid), key=closeness_key)
        layouts = ranked + rejected
    return Plan(
        model=model,
        hardware=hardware,
        request=request,
        settings=s,
        layouts=tuple(layouts),
        recommended=recommended,
    )


def closeness_key(layout: LayoutPlan) -> tuple[Any, ...]:
    """Rejected layouts, closest to working first: the fewest errors; among memory-only
    failures the one whose KV cache comes nearest to one max-length request, then the one
    whose weights overflow the budget the least."""
    errors = [f for f in layout.findings if f.severity == "error"]
    memory_only = all(f.phase in ("profile", "load") for f in errors)
    m = layout.memory
    return (len(errors), not memory_only, -m.max_model_len_fit, -m.kv_cache_bytes_per_gpu,
            m.weight_bytes_per_gpu - m.requested_bytes, layout.tp * layout.pp)


def recommendation_reason(layout: LayoutPlan, hw: Hardware) -> str:
    """Why the ranking picked this layout, in the terms of _rank_key."""
    conc = layout.memory.max_concurrency
    mp = layout.tp * layout.pp
    parts = []
    if conc >= HEALTHY_CONCURRENCY:
        parts.append(
            f"the smallest model-parallel group (TP x PP = {mp}) whose engine holds at least "
            f"{HEALTHY_CONCURRENCY} max-length requests ({conc:.2f})"
        )
    else:
        parts.append(
            f"no layout holds {HEALTHY_CONCURRENCY} max-length requests per engine; this one "
            f"holds the most ({conc:.2f})"
        )
    if layout.dp > 1:
        parts.append(f"{layout.dp} data-parallel replicas use the other GPUs")
    if layout.ep:
        parts.append("expert parallelism with DP (vLLM's documented DP+EP deployment)")
    if layout.pp > 1:
        parts.append("pipeline parallelism only to span nodes")
    elif layout.tp <= hw.gpus_per_node:
        parts.append("tensor parallelism inside one node")
    if not any(f.severity == "warning" for f in layout.findings):
        parts.append("no warnings")
    return "; ".join(parts)


def _best_alternative(
    model: ModelSpec,
    hw: Hardware,
    request: PlanRequest,
    s: Settings,
    rules: RuleSet,
    version: VllmVersion,
) -> LayoutPlan | None:
    """When the requested layout is rejected, recommend the best valid one instead."""
    free = request.model_copy(update={"tp": None, "pp": None, "dp": None, "ep": None})
    options = [
        check_layout(model, hw, free, s, lay, rules, version)
        for lay in candidate_layouts(model, hw, free)
    ]
    valid = [lay for lay in options if lay.valid]
    return max(valid, key=lambda lay: _rank_key(lay, hw)) if valid else None


def kv_bytes_per_token(model: ModelSpec, kv_cache_dtype: str) -> int:
    return kv_bytes_per_token_model(model, kv_cache_dtype)
