"""GPU facts as a frozen value."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class GpuSpec(BaseModel):
    """One GPU model, as vLLM sees it through NVML (total memory, capability, name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="canonical catalog id, e.g. 'H100-SXM-80GB'")
    name: str = Field(description="marketing name as NVML reports it, e.g. 'NVIDIA H100 80GB HBM3'")
    aliases: tuple[str, ...] = ()
    memory_bytes: int = Field(gt=0, description="total device memory as NVML reports it")
    compute_capability: tuple[int, int]
    generation: str = Field(description="volta | turing | ampere | ada | hopper | blackwell")
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
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30
