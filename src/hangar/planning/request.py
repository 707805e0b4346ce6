"""What the user asks for: the layout (optional) and the serve options that change the rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from hangar.deploy.params import BY_NAME, LAYOUT, PARAMS, file_value
from hangar.planning.versions import DEFAULT_VLLM_VERSION

if TYPE_CHECKING:
    from hangar.deploy.schema import Deployment


class PlanRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    dp: int | None = Field(default=None, ge=1)
    ep: bool | None = None
    max_model_len: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    dtype: str = "auto"
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool | None = None
    enforce_eager: bool = False
    vllm_version: str = DEFAULT_VLLM_VERSION
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
    hf_overrides: str | None = None  # --hf-overrides JSON, already applied to the model facts
    head_address: str = "HEAD_IP"  # the head node's address in multi-node commands

    @property
    def layout_requested(self) -> bool:
        return any(v is not None for v in (self.tp, self.pp, self.dp, self.ep))


def request_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """PlanRequest fields from deployment parameters by name (hangar.deploy.params);
    parameters the request has no field for (gpu, port, ...) and None values are left out."""
    fields = {}
    for name, value in values.items():
        field = BY_NAME[name].request if name in BY_NAME else None
        if field is not None and value is not None:
            fields[field] = value
    return fields


def deployment_request_fields(d: Deployment, *, with_layout: bool = True) -> dict[str, Any]:
    """The PlanRequest fields a deployment sets; ``with_layout=False`` leaves tp/pp/dp/ep
    to the planner."""
    return request_fields(
        {
            p.name: file_value(d, p)
            for p in PARAMS
            if p.path is not None and p.request is not None and (with_layout or p.name not in LAYOUT)
        }
    )
