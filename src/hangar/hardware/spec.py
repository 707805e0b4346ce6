"""GPU facts as a frozen value."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GpuSpec(BaseModel):
    """One GPU model, as vLLM sees it through NVML (total memory, capability, name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="canonical catalog id, e.g. 'H100-SXM-80GB'")
    name: str = Field(description="marketing name as NVML reports it, e.g. 'NVIDIA H100 80GB HBM3'")
    aliases: tuple[str, ...] = ()
    memory_bytes: int = Field(gt=0, description="total device memory as NVML reports it")
    compute_capability: tuple[int, int]
    generation: str = Field(
        description="volta | turing | ampere | ada | hopper | blackwell | cdna2 | cdna3 | cdna4"
    )
    vendor: Literal["nvidia", "amd"] = "nvidia"
    gfx: str | None = None  # AMD: the gfx target ROCm builds for (gfx90a, gfx942, gfx950)
    interconnect: str = Field(description="nvlink | pcie")
    nvlink_gbps: int | None = None
    consumer: bool = False
    unified_memory: bool = False
    bf16: bool = True
    fp8: bool = False
    fp4: bool = False
    source: str = ""

    @property
    def capability_int(self) -> int:
        """Capability as vLLM compares it: major*10 + minor (9.0 -> 90)."""
        return self.compute_capability[0] * 10 + self.compute_capability[1]

    @property
    def rocm(self) -> bool:
        return self.vendor == "amd"

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30


class Hardware(BaseModel):
    """The target a plan is made for: one GPU kind, ``gpus_per_node`` of them on ``nodes`` hosts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpu: GpuSpec
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(default=1, ge=1)
    origin: Literal["catalog", "detected"] = Field(
        default="catalog",
        description="'catalog' when --gpu named it, 'detected' when NVML found it",
    )

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes
