"""The workaround registry: packaged data, validated on load, matched against facts.

A workaround applies when every condition it states holds; a fact that is unknown
(None) never satisfies a condition, so an unprobed host gets no guessed fixes.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hangar.errors import DataError
from hangar.hardware.spec import GpuSpec
from hangar.models.features import ModelFeatures
from hangar.planning.versions import VllmVersion

DATA_FILE = "workarounds.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CapabilityRange(_Frozen):
    min: int = 0
    max: int = 999


class Condition(_Frozen):
    """What must hold for a workaround to apply (all stated keys, AND)."""

    compute_capability: CapabilityRange | None = None
    generations: tuple[str, ...] | None = None
    interconnect: str | None = None
    gpu_name: str | None = Field(None, description="regex searched in the GPU's marketing name")
    consumer: bool | None = None
    min_tp: int | None = None
    min_gpus: int | None = None
    cuda: bool | None = Field(None, description="true: a CUDA build of the engine on NVIDIA GPUs")
    nvcc: bool | None = None
    flashinfer_prebuilt: bool | None = None
    wsl: bool | None = None
    unified_memory: bool | None = None
    vllm: str | None = Field(None, description="PEP 440 specifier on the engine's vLLM version")
    quantization: tuple[str, ...] | None = None
    block_fp8: bool | None = None
    moe: bool | None = None
    kv_cache_dtype: str | None = Field(None, description="regex on --kv-cache-dtype")
    model_dtype: tuple[str, ...] | None = None

    @field_validator("vllm")
    @classmethod
    def _specifier(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SpecifierSet(value)
            except InvalidSpecifier as exc:
                raise ValueError(f"invalid version specifier {value!r}") from exc
        return value


class RemoveWhen(_Frozen):
    vllm_fixed_in: str | None = None
    note: str


class Workaround(_Frozen):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    when: Condition
    env: dict[str, str] = Field(default_factory=dict)
    args: tuple[str, ...] = ()
    reason: str
    upstream: tuple[str, ...] = Field(min_length=1)
    added: date
    remove_when: RemoveWhen

    @field_validator("upstream")
    @classmethod
    def _urls(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for url in urls:
            if not url.startswith("https://github.com/"):
                raise ValueError(f"upstream must be a GitHub issue/PR URL, got {url!r}")
        return urls


class Facts(_Frozen):
    """What is known about the deployment and host; None means unknown."""

    gpu: GpuSpec | None = None
    gpus: int = 1
    tp: int = 1
    cuda: bool | None = None
    nvcc: bool | None = None
    flashinfer_prebuilt: bool | None = None
    wsl: bool | None = None
    vllm_version: str | None = None
    model: ModelFeatures | None = None
    kv_cache_dtype: str | None = None


@lru_cache(maxsize=1)
def load_registry() -> tuple[Workaround, ...]:
    """All packaged workarounds; DataError names the entry and key on a bad file."""
    text = resources.files("hangar.workarounds").joinpath("data", DATA_FILE).read_text("utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DataError(f"{DATA_FILE}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != 1:
        raise DataError(f"{DATA_FILE}: missing or unsupported 'version' (expected 1)")
    return tuple(_entry(i, raw) for i, raw in enumerate(data.get("workarounds") or []))


def _entry(index: int, raw: Any) -> Workaround:
    try:
        return Workaround.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        name = raw.get("id", f"#{index}") if isinstance(raw, dict) else f"#{index}"
        raise DataError(f"{DATA_FILE}: entry '{name}', key '{key}': {err['msg']}") from exc


def get(workaround_id: str) -> Workaround | None:
    return next((w for w in load_registry() if w.id == workaround_id), None)


def matches(cond: Condition, facts: Facts) -> bool:
    """True when every condition stated in ``cond`` holds for ``facts``."""
    return all(check(cond, facts) for check in _CHECKS)


def applicable(facts: Facts) -> list[Workaround]:
    return [w for w in load_registry() if matches(w.when, facts)]


def _gpu_checks(cond: Condition, facts: Facts) -> bool:
    gpu = facts.gpu
    wants_gpu = (
        any(
            v is not None
            for v in (cond.compute_capability, cond.generations, cond.interconnect, cond.gpu_name)
        )
        or cond.consumer is not None
        or cond.unified_memory is not None
    )
    if not wants_gpu:
        return True
    if gpu is None:
        return False
    cap = cond.compute_capability
    return (
        (cap is None or cap.min <= gpu.capability_int <= cap.max)
        and (cond.generations is None or gpu.generation in cond.generations)
        and (cond.interconnect is None or gpu.interconnect == cond.interconnect)
        and (cond.gpu_name is None or re.search(cond.gpu_name, gpu.name) is not None)
        and (cond.consumer is None or gpu.consumer == cond.consumer)
        and (cond.unified_memory is None or gpu.unified_memory == cond.unified_memory)
    )


def _layout_checks(cond: Condition, facts: Facts) -> bool:
    return (cond.min_tp is None or facts.tp >= cond.min_tp) and (
        cond.min_gpus is None or facts.gpus >= cond.min_gpus
    )


def _flag(expected: bool | None, actual: bool | None) -> bool:
    return expected is None or (actual is not None and actual == expected)


def _host_checks(cond: Condition, facts: Facts) -> bool:
    return (
        _flag(cond.cuda, facts.cuda)
        and _flag(cond.nvcc, facts.nvcc)
        and _flag(cond.flashinfer_prebuilt, facts.flashinfer_prebuilt)
        and _flag(cond.wsl, facts.wsl)
    )


def _version_check(cond: Condition, facts: Facts) -> bool:
    if cond.vllm is None:
        return True
    version = VllmVersion.parse_or_none(facts.vllm_version)
    return version is not None and version.satisfies(cond.vllm)


def _model_checks(cond: Condition, facts: Facts) -> bool:
    model = facts.model
    stated = (cond.quantization, cond.block_fp8, cond.moe, cond.model_dtype)
    if all(v is None for v in stated):
        return _kv_check(cond, facts)
    if model is None:
        return False
    return (
        (cond.quantization is None or model.quantization in cond.quantization)
        and _flag(cond.block_fp8, model.block_fp8)
        and _flag(cond.moe, model.moe)
        and (cond.model_dtype is None or model.dtype in cond.model_dtype)
        and _kv_check(cond, facts)
    )


def _kv_check(cond: Condition, facts: Facts) -> bool:
    if cond.kv_cache_dtype is None:
        return True
    return (
        facts.kv_cache_dtype is not None
        and re.search(cond.kv_cache_dtype, facts.kv_cache_dtype) is not None
    )


_CHECKS = (_gpu_checks, _layout_checks, _host_checks, _version_check, _model_checks)


def removal_due(workaround: Workaround, vllm_version: str | None) -> bool:
    """True when the engine is at or past the version that fixed the upstream problem."""
    fixed = workaround.remove_when.vllm_fixed_in
    current = VllmVersion.parse_or_none(vllm_version)
    fixed_version = VllmVersion.parse_or_none(fixed)
    return current is not None and fixed_version is not None and current >= fixed_version
