"""Per-GPU memory for one layout, following vLLM's accounting (research/vllm-internals.md §3-§4).

    requested  = ceil(total * gpu_memory_utilization)                       (worker request_memory)
    available  = requested - weights - activation peak - non-torch - CUDA graphs
    num_blocks = available // bytes_per_block         (KV-cache groups of the hybrid allocator)
    tokens     = num_blocks / blocks_per_request * max_model_len            (kv_cache_utils.py:1061)

The most loaded GPU decides (vLLM takes the minimum KV size across the TP x PP workers), so
weights and KV are computed for the heaviest pipeline stage. The non-KV terms follow vLLM's
accounting per version (planning/accounting.py); their few constants are fitted by
bench/fit_memory.py, and bench/plan.py prints in-sample and held-out errors separately.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hangar.models.params import Breakdown, base_dtype_bytes, breakdown, category_bytes
from hangar.models.spec import KV_LAYER_TYPES, ModelSpec
from hangar.planning.accounting import activation_peak_bytes, default_accounting, fixed_bytes

GIB = 2**30
BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE

# The non-KV terms (non-torch, activation peak, CUDA graphs) per vLLM version live in
# planning/data/memory.yaml and are computed in planning/accounting.py.
MULTIMODAL_PROFILE_GIB = 0.35  # fitted: +0.25 (0.18-0.19) to +0.43 (<0.18) GiB for VL models
WEIGHT_LOAD_FACTOR = 1.0

KV_DTYPE_BYTES = {
    "auto": None,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "fp8_ds_mla": 1,
    "nvfp4_ds_mla": 1,
    "nvfp4": 0.5,
    "nvfp4_4over6": 0.5,
    "fp8_per_token_head": 1,
    "int8_per_token_head": 1,
    "int4_per_token_head": 0.5,
}
# Opaque per-token sizes for the DeepSeek MLA cache formats (vllm/v1/kv_cache_interface.py).
MLA_FIXED_BYTES = {"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


@dataclass(frozen=True)
class Layout:
    tp: int
    pp: int
    dp: int
    ep: bool


@dataclass(frozen=True)
class MemoryInputs:
    memory_bytes: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    cuda_graphs: bool  # subtract the CUDA-graph estimate (vLLM >= 0.20 default)
    prefix_caching: bool
    vllm_version: tuple[int, int, int] = (0, 33, 0)
    enforce_eager: bool = False
    unified_memory: bool = False
    compute_capability: tuple[int, int] = (9, 0)
    rocm: bool = False


@dataclass(frozen=True)
class MemoryResult:
    weight_bytes_per_gpu: int
    kv_bytes_per_token_per_gpu: int
    requested_bytes: int
    overhead_bytes: int
    kv_available_bytes: int
    kv_cache_bytes_per_gpu: int
    kv_cache_tokens: int
    kv_needed_bytes: int  # one request of max_model_len
    max_concurrency: float
    max_model_len_fit: int
    num_blocks: int
    mamba_num_blocks: int


def pp_partition(num_layers: int, pp: int) -> list[int]:
    """vllm/distributed/utils.py get_pp_indices: the remainder goes to stages before the last."""
    base, rest = divmod(num_layers, pp)
    parts = [base] * pp
    for i in range(2, rest + 2):
        parts[-i] += 1
    return parts


def _stage_ranges(spec: ModelSpec, pp: int) -> list[range]:
    parts, start, out = pp_partition(spec.num_layers, pp), 0, []
    for size in parts:
        out.append(range(start, start + size))
        start += size
    return out


def _shard(spec: ModelSpec, layout: Layout, category: str) -> float:
    """Fraction of a category's parameters that one GPU holds."""
    tp = layout.tp
    if category in ("norms", "router", "mla_replicated"):
        return 1.0
    if category == "attn_kv":
        kv = max(1, spec.num_kv_heads)
        return max(1, kv // tp) / kv
    if category == "experts":
        return 1.0 / (tp * layout.dp)
    return 1.0 / tp


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _mxfp4_alignment(inputs: MemoryInputs | None) -> tuple[int, int]:
    """(hidden, intermediate) alignment of the MXFP4 MoE backend vLLM picks
    (fused_moe/oracle/mxfp4.py:816 mxfp4_round_up_hidden_size_and_intermediate_size in 0.32;
    0.10-0.11 mxfp4.py Mxfp4MoEMethod.create_weights): Marlin (CUDA below SM 9.0, and SM 9.0
    before the wheel vendored triton_kernels in 0.10.2: 0.10.1 logs "leveraging the Marlin
    kernel" on H100) and FlashInfer TRT-LLM (SM 10.x) pad hidden to 256 and the per-rank
    intermediate to 128; Triton matmul_ogs (SM 9.0 from 0.10.2) pads the intermediate to 64;
    ROCm pads both to 256."""
    if inputs is None:
        return 1, 1
    if inputs.rocm:
        return 256, 256
    cap, version = inputs.compute_capability, inputs.vllm_version
    if cap == (9, 0) and version >= (0, 10, 2):
        return 1, 64
    return 256, 128


def mxfp4_expert_padding(spec: ModelSpec, layout: Layout, inputs: MemoryInputs | None) -> float:
    """Growth of the routed-expert bytes from the MXFP4 kernels' load-time padding."""
    q, moe = spec.quant, spec.moe
    fmt = (q.expert_format or q.weight_format or "") if q else ""
    if moe is None or fmt.lower() != "mxfp4":
        return 1.0
    shards = 1 if layout.ep else layout.tp * layout.dp
    inter = max(1, moe.expert_intermediate_size // shards)
    hidden = spec.hidden_size
    align_h, align_i = _mxfp4_alignment(inputs)
    return (_round_up(hidden, align_h) / hidden) * (_round_up(inter, align_i) / inter)


def stage_weight_bytes(
    spec: ModelSpec,
    b: Breakdown,
    layout: Layout,
    stage: int,
    layers: range,
    inputs: MemoryInputs | None = None,
) -> float:
    base = base_dtype_bytes(spec)
    pad = mxfp4_expert_padding(spec, layout, inputs)
    per_param: dict[str, float] = {}  # bytes per parameter x shard, once per category
    total = 0.0
    for i in layers:
        for category, count in b.layers[i].items():
            if category not in per_param:
                per_param[category] = category_bytes(spec, category) * _shard(spec, layout, category)
            share = count * per_param[category]
            total += share * pad if category == "experts" else share
    if stage == 0:
        total += (b.embed + b.vision) * base / layout.tp
    if stage == layout.pp - 1:
        total += b.lm_head * base / layout.tp + b.final_norm * base
    return total


def weight_bytes_per_gpu(spec: ModelSpec, layout: Layout, inputs: MemoryInputs | None = None) -> int:
    b = breakdown(spec)
    stages = _stage_ranges(spec, layout.pp)
    raw = max(stage_weight_bytes(spec, b, layout, s, r, inputs) for s, r in enumerate(stages))
    scale = _checkpoint_scale(spec, b)
    return int(raw * scale * WEIGHT_LOAD_FACTOR)


def _checkpoint_scale(spec: ModelSpec, b: Breakdown) -> float:
    """Exact checkpoint size known: scale the computed split to it."""
    if not spec.checkpoint_bytes:
        return 1.0
    from hangar.models.params import weight_bytes

    computed = weight_bytes(spec, include_unloaded=True)
    return spec.checkpoint_bytes / computed if computed else 1.0


def kv_dtype_bytes(spec: ModelSpec, kv_cache_dtype: str) -> float:
    value = KV_DTYPE_BYTES.get(kv_cache_dtype)
    if value is None:  # auto: the model dtype (fp32 checkpoints run as bf16)
        return float(min(2, DTYPE_BYTES.get(spec.dtype, 2)))
    return float(value)


def layer_kv_bytes_per_token(
    spec: ModelSpec, kind: str, tp: int, kv_cache_dtype: str, kv_heads: int | None = None
) -> float:
    if kind == "mla" and spec.mla:
        if kv_cache_dtype in MLA_FIXED_BYTES:
            return float(MLA_FIXED_BYTES[kv_cache_dtype]) + _indexer_bytes(spec)
        # the whole latent on every rank (mla_attention.py:1371)
        latent = spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim
        return latent * kv_dtype_bytes(spec, kv_cache_dtype) + _indexer_bytes(spec)
    kv_per_gpu = max(1, (spec.num_kv_heads if kv_heads is None else kv_heads) // tp)
    return kv_per_gpu * (spec.head_dim + spec.v_head_dim) * kv_dtype_bytes(spec, kv_cache_dtype)


def _indexer_bytes(spec: ModelSpec) -> float:
    """DeepSeek-V3.2 sparse-attention indexer keys: FP8 values plus one fp32 scale per 128."""
    dim = spec.mla.indexer_head_dim if spec.mla else 0
    return float(dim + 4 * -(-dim // 128)) if dim else 0.0


def _stage_kv_layers(spec: ModelSpec, layers: range) -> list[str]:
    return [spec.layer_types[i] for i in layers]


def kv_bytes_per_token_per_gpu(spec: ModelSpec, layout: Layout, kv_cache_dtype: str) -> int:
    """All KV layers of the heaviest stage, as if every one kept every token."""
    best = 0.0
    heads = spec.layer_kv_heads
    for layers in _stage_ranges(spec, layout.pp):
        total = sum(
            layer_kv_bytes_per_token(
                spec, spec.layer_types[i], layout.tp, kv_cache_dtype, heads[i] if heads else None
            )
            for i in layers
            if spec.layer_types[i] in KV_LAYER_TYPES
        )
        best = max(best, total)
    return int(best)


def kv_bytes_per_token_model(spec: ModelSpec, kv_cache_dtype: str) -> int:
    """Whole model, all layers, one GPU (the JSON contract's model.kv_bytes_per_token)."""
    return kv_bytes_per_token_per_gpu(spec, Layout(1, 1, 1, False), kv_cache_dtype)


def mamba_state_bytes(spec: ModelSpec, tp: int) -> int:
    """Per sequence per Mamba layer on one GPU (MambaStateShapeCalculator)."""
    m = spec.mamba
    if m is None:
        return 0
    conv_b = DTYPE_BYTES.get(spec.dtype, 2) if spec.dtype != "float32" else 2
    ssm_b = DTYPE_BYTES.get(m.ssm_dtype or "", conv_b)
    if m.kind == "gdn":
        conv_dim = m.k_head_dim * m.num_k_heads * 2 + m.v_head_dim * m.num_v_heads
        conv = conv_dim // tp * (m.conv_kernel - 1)
        ssm = max(1, m.num_v_heads // tp) * m.v_head_dim * m.k_head_dim
        return conv * conv_b + ssm * ssm_b
    if m.kind == "mamba1":
        inter = m.intermediate_size // tp
        return inter * (m.conv_kernel - 1) * conv_b + inter * m.state_size * ssm_b
    groups = m.n_groups + (0 if m.n_groups % tp == 0 else tp - m.n_groups)
    conv_dim = m.intermediate_size + 2 * groups * m.state_size
    conv = conv_dim // tp * (m.conv_kernel - 1)
    ssm = max(1, m.num_heads // tp) * m.head_dim * m.state_size
    return conv * conv_b + ssm * ssm_b


@dataclass(frozen=True)
class _Group:
    kind: str
    layers: int
    page_per_token: float  # bytes per token per layer (attention) or per sequence (mamba)


def _kv_groups(
    spec: ModelSpec, layout: Layout, inputs: MemoryInputs
) -> list[tuple[str, int, float]]:
    """(kind, layer count, bytes/token/layer or bytes/seq/layer) on the heaviest stage."""
    stage = max(_stage_ranges(spec, layout.pp), key=len)
    counts: dict[str, int] = {}
    for kind in _stage_kv_layers(spec, stage):
        key = "mamba" if kind in ("mamba", "linear_attention") else kind
        if key in KV_LAYER_TYPES or key == "mamba":
            counts[key] = counts.get(key, 0) + 1
    out = []
    for kind, count in counts.items():
        if kind == "mamba":
            out.append((kind, count, float(mamba_state_bytes(spec, layout.tp))))
        else:
            out.append(
                (
                    kind,
                    count,
                    layer_kv_bytes_per_token(spec, kind, layout.tp, inputs.kv_cache_dtype),
                )
            )
    return out


def _tokens_needed(spec: ModelSpec, kind: str, inputs: MemoryInputs, layout: Layout) -> int:
    """Tokens of KV one max-length request keeps in a layer of this kind (max_memory_usage_bytes)."""
    length = inputs.max_model_len
    in_flight = max(layout.pp, 2) * inputs.max_num_batched_tokens
    if kind == "sliding_attention" and spec.sliding_window:
        return min(spec.sliding_window - 1 + in_flight, length) + BLOCK_SIZE
    if kind == "chunked_attention" and spec.attention_chunk_size:
        return min(spec.attention_chunk_size + in_flight, length)
    return length


def kv_capacity(
    spec: ModelSpec, layout: Layout, inputs: MemoryInputs, available: int
) -> dict[str, float]:
    """num_blocks, tokens, concurrency and one-request need, with the hybrid allocator's groups."""
    groups = _kv_groups(spec, layout, inputs)
    if not groups or available <= 0:
        return {"num_blocks": 0, "tokens": 0, "concurrency": 0.0, "needed": 0, "mamba_blocks": 0}
    group_size = min(count for _, count, _ in groups)
    attn = [g for g in groups if g[0] != "mamba"]
    mamba = [g for g in groups if g[0] == "mamba"]
    block_tokens = BLOCK_SIZE
    if mamba and attn:  # attention block raised until one page holds a Mamba state
        per_token = max(p for _, _, p in attn)
        block_tokens = BLOCK_SIZE * math.ceil(mamba[0][2] / (BLOCK_SIZE * per_token))
    page = max([p * block_tokens for _, _, p in attn] + [p for _, _, p in mamba])
    bytes_per_block = group_size * page
    num_blocks = int(available // bytes_per_block)
    blocks_per_request, total_groups = 0, 0
    for kind, count, _ in groups:
        n_groups = math.ceil(count / group_size)
        total_groups += n_groups
        if kind == "mamba":
            per = 2 if inputs.prefix_caching else 1
        else:
            per = math.ceil(_tokens_needed(spec, kind, inputs, layout) / block_tokens)
        blocks_per_request += n_groups * per
    # get_max_concurrency_for_kv_cache_config: num_blocks / blocks per request
    concurrency = num_blocks / blocks_per_request if blocks_per_request else 0.0
    return {
        "num_blocks": num_blocks,
        "tokens": _logged_tokens(num_blocks, total_groups, block_tokens, concurrency, inputs),
        "concurrency": concurrency,
        "needed": blocks_per_request * bytes_per_block,
        "mamba_blocks": num_blocks if mamba else 0,
    }


def _logged_tokens(
    num_blocks: int, groups: int, block_tokens: int, concurrency: float, inputs: MemoryInputs
) -> int:
    """'GPU KV cache size: N tokens' as each version computes it (kv_cache_utils.py):
    0.33 int(max_concurrency * max_model_len); 0.20 and before num_blocks // groups * block_size
    (the same for uniform models, far apart for hybrid ones)."""
    if inputs.vllm_version >= (0, 33, 0):
        return int(concurrency * inputs.max_model_len)
    return num_blocks // max(1, groups) * block_tokens


def overhead_bytes(spec: ModelSpec, layout: Layout, inputs: MemoryInputs) -> int:
    """Non-KV memory per GPU, term by term (planning/accounting.py, data/memory.yaml)."""
    tier = default_accounting().tier(inputs.vllm_version)
    tokens = inputs.max_num_batched_tokens
    total = fixed_bytes(tier, layout.tp) + activation_peak_bytes(
        spec, tokens, inputs.max_num_seqs, layout.tp, tier
    )
    if spec.vision and tier.engine == "v1":  # the profile run pushes a max-size image batch
        total += MULTIMODAL_PROFILE_GIB * GIB
    return int(total)


def device_total_bytes(memory_bytes: int, rocm: bool = False) -> int:
    """What CUDA reports as total (torch.cuda.mem_get_info) for an NVML total; ROCm entries
    already hold the total torch reports."""
    if rocm:
        return memory_bytes
    return memory_bytes - int(default_accounting().cuda_gap_gib * GIB)


def memory_for(spec: ModelSpec, layout: Layout, inputs: MemoryInputs) -> MemoryResult:
    weights = weight_bytes_per_gpu(spec, layout, inputs)
    requested = math.ceil(
        device_total_bytes(inputs.memory_bytes, inputs.rocm) * inputs.gpu_memory_utilization
    )
    overhead = overhead_bytes(spec, layout, inputs)
    available = requested - weights - overhead
    cap = kv_capacity(spec, layout, inputs, available)
    return MemoryResult(
        weight_bytes_per_gpu=weights,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu(spec, layout, inputs.kv_cache_dtype),
        requested_bytes=requested,
        overhead_bytes=overhead,
        kv_available_bytes=available,
        kv_cache_bytes_per_gpu=max(0, available),
        kv_cache_tokens=int(cap["tokens"]),
        kv_needed_bytes=int(cap["needed"])
        if available > 0
        else _needed_estimate(spec, layout, inputs),
        max_concurrency=round(float(cap["concurrency"]), 2),
        max_model_len_fit=max_len_fit(spec, layout, inputs, available),
        num_blocks=int(cap["num_blocks"]),
        mamba_num_blocks=int(cap["mamba_blocks"]),
    )


def _needed_estimate(spec: ModelSpec, layout: Layout, inputs: MemoryInputs) -> int:
    probe = kv_capacity(spec, layout, inputs, 10**15)
    return int(probe["needed"])


def max_len_fit(spec: ModelSpec, layout: Layout, inputs: MemoryInputs, available: int) -> int:
    """Binary search like vLLM's estimate_max_model_len: the longest request that fits."""
    if available <= 0:
        return 0
    lo, hi = 0, max(inputs.max_model_len, spec.derived_max_len_for(inputs.vllm_version))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        trial = MemoryInputs(**{**inputs.__dict__, "max_model_len": mid})
        if kv_capacity(spec, layout, trial, available)["needed"] <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo
