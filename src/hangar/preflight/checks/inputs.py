"""What every host check takes: the probed HostFacts plus the deployment's asks, flattened."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel, ConfigDict

from hangar.hardware.spec import GpuSpec
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts
from hangar.preflight.weights import WeightsFacts


class CheckInput(BaseModel):
    """What the checks need from the deployment, flattened (no schema coupling)."""

    model_config = ConfigDict(frozen=True)

    host: str = "127.0.0.1"
    port: int = 8000
    gpus: int = 1
    nodes: int = 1
    tp: int = 1
    gpu: GpuSpec | None = None
    gpu_memory_utilization: float | None = None
    env: dict[str, str] = {}  # deployment env over the caller's relevant env
    other_runs_util: dict[str, float] = {}  # live Hangar runs on this host -> their utilization
    weights: WeightsFacts | None = None


Check = Callable[[HostFacts, CheckInput], list[Finding]]


def relevant_env(
    env: Mapping[str, str], deployment_env: Mapping[str, str], names: tuple[str, ...]
) -> dict[str, str]:
    merged = {k: env[k] for k in names if k in env}
    merged.update({k: v for k, v in deployment_env.items() if k in names})
    return merged
