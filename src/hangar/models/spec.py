"""Model facts as frozen values, parsed once from config.json (see ``config.py``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MoeSpec(_Frozen):
    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0  # total width of the shared expert(s)
    latent_size: int = 0  # experts run in a smaller latent width (Nemotron-3 LatentMoE)
    moe_layers: int  # decoder layers that hold routed experts
    dense_layers: int  # decoder layers with a plain MLP instead


class MlaSpec(_Frozen):
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    indexer_head_dim: int = 0  # DeepSeek sparse attention (V3.2): an extra FP8 key cache per layer


class MambaSpec(_Frozen):
    """Recurrent-state layers; vLLM's MambaStateShapeCalculator inputs.

    kind: mamba1 | mamba2 | gdn (gated delta net) | short_conv | linear.
    """

    kind: str
    num_layers: int
    intermediate_size: int = 0
    state_size: int = 0
    conv_kernel: int = 4
    n_groups: int = 1
    num_heads: int = 0
    head_dim: int = 0
    # gated delta net (Qwen3-Next / Qwen3.5)
    num_k_heads: int = 0
    num_v_heads: int = 0
    k_head_dim: int = 0
    v_head_dim: int = 0
    ssm_dtype: str | None = None  # e.g. float32 for NemotronH / Qwen3.5 (mamba_ssm_dtype)


class VisionSpec(_Frozen):
    num_heads: int
    hidden_size: int
    num_layers: int
    intermediate_size: int
    num_params: int


class QuantSpec(_Frozen):
    """What the checkpoint declares; vLLM maps it to a method name (see planning data)."""

    method: (
        str  # as declared: fp8, awq, gptq, compressed-tensors, modelopt, modelopt_fp4, mxfp4, ...
    )
    bits: int | None = None
    group_size: int | None = None
    weight_block_size: tuple[int, int] | None = None
    weight_format: str | None = None  # float8 / int4 / nvfp4 / mxfp4 / int8 ...
    weight_strategy: str | None = None  # compressed-tensors: tensor / channel / group / block
    activation_scheme: str | None = None
    kv_cache_quant: str | None = None
    expert_format: str | None = (
        None  # routed experts stored differently (DeepSeek-V4 expert_dtype fp4)
    )
    modules_not_converted: tuple[str, ...] = ()
    source_file: str = "config.json"


class ModelSpec(_Frozen):
    id: str
    source: str  # catalog | local | hub
    local_dir: Path | None = None
    architectures: tuple[str, ...]
    model_type: str
    text_model_type: str | None = None
    dtype: str  # checkpoint dtype as declared (torch_dtype / dtype), default float32 per HF
    num_layers: int
    layer_types: tuple[str, ...]  # per decoder layer mixer: full_attention | sliding_attention |
    #                               chunked_attention | mla | mamba | linear_attention | none
    layer_mlps: tuple[str, ...]  # per decoder layer MLP: dense | moe | none | linear
    # per-layer (NAS, DeciLM block_configs) KV heads and FFN widths; empty = uniform
    layer_kv_heads: tuple[int, ...] = ()
    layer_intermediate: tuple[int, ...] = ()
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int | None
    derived_max_len: int  # as vLLM's _get_and_verify_max_len derives it
    derived_max_len_key: str  # e.g. "max_position_embeddings"
    default_max_len: int  # what vLLM uses when --max-model-len is omitted
    # YaRN before vLLM 0.32: original_max_position_embeddings x factor replaced the derived
    # length (0.8.5-0.20 _get_and_verify_max_len); 0.32+ keep max_position_embeddings as is
    yarn_max_len: int | None = None
    model_max_length: int | None = None
    rope_type: str | None = None
    rope_factor: float | None = None
    sliding_window: int | None = None
    attention_chunk_size: int | None = None
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    mamba: MambaSpec | None = None
    vision: VisionSpec | None = None
    quant: QuantSpec | None = None
    mtp_layers: int = 0  # multi-token-prediction layers in the checkpoint (not loaded by default)
    checkpoint_bytes: int | None = None  # exact safetensors total when known
    num_params: int  # computed from the dimensions (whole checkpoint, loaded part)
    weight_bytes: int  # exact when checkpoint_bytes is known, else computed
    is_pooling: bool = False
    remote_code: bool = False  # config.json auto_map: classes shipped with the model
    features: tuple[str, ...] = ()  # models/features.py feature_tags

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else "unknown"

    def derived_max_len_for(self, version: tuple[int, int, int]) -> int:
        """The derived maximum length as this vLLM version computes it."""
        if self.yarn_max_len and version < YARN_RESCALE_DROPPED:
            return self.yarn_max_len
        return self.derived_max_len

    def default_max_len_for(self, version: tuple[int, int, int]) -> int:
        if self.yarn_max_len and version < YARN_RESCALE_DROPPED:
            return self.yarn_max_len
        return self.default_max_len

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def kv_layers(self) -> int:
        """Decoder layers that keep a KV cache (attention of any kind, MLA included)."""
        return sum(1 for t in self.layer_types if t in KV_LAYER_TYPES)


# First read vLLM wheel whose _get_and_verify_max_len no longer rescales YaRN (0.32.0, checked
# with EngineArgs(...).create_model_config() on a Qwen3 config: 40960, and 131072 refused);
# 0.20.0 still set derived = original_max_position_embeddings x factor. 0.21-0.31 not read.
YARN_RESCALE_DROPPED = (0, 32, 0)

KV_LAYER_TYPES = frozenset({"full_attention", "sliding_attention", "chunked_attention", "mla"})
