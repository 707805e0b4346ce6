"""`hangar workarounds check / review`: facts from a deployment file or from flags."""

from __future__ import annotations

import os
from typing import Any

from hangar.errors import InputError, UsageError
from hangar.models.config import parse_config
from hangar.models.features import ModelFeatures, model_features
from hangar.planning.versions import VllmVersion
from hangar.workarounds.apply import Applied, apply
from hangar.workarounds.registry import (
    Facts,
    Workaround,
    applicable,
    load_registry,
    removal_due,
)


def _checked_version(text: str | None) -> str | None:
    """A --vllm-version that no rule can compare would silently match nothing."""
    if text is not None and VllmVersion.parse_or_none(text) is None:
        raise UsageError(
            f"not a vLLM version: {text!r}", hint="e.g. --vllm-version 0.33.0 (hangar engines list)"
        )
    return text


def check(target: str | None, **opts: Any) -> tuple[Applied, list[Workaround]]:
    """Workarounds for a deployment FILE (probing this host), or for facts given as flags."""
    if target is not None:
        from pathlib import Path

        from hangar.deploy.io import load_deployment
        from hangar.preflight.runner import preflight

        report = preflight(load_deployment(Path(target)), with_plan=False)
        return report.applied, list(report.workarounds)
    chosen = applicable(facts_from_flags(**opts))
    return apply(chosen, {}, []), chosen


def facts_from_flags(
    gpu: str | None = None,
    gpus: int | None = None,
    vllm_version: str | None = None,
    model: str | None = None,
    kv_cache_dtype: str | None = None,
    nvcc: bool | None = None,
    wsl: bool | None = None,
) -> Facts:
    from hangar.preflight.probe import find_nvcc, in_wsl

    spec = None
    if gpu is not None:
        from hangar.hardware import lookup

        spec = lookup(gpu)
    return Facts(
        gpu=spec,
        gpus=gpus or 1,
        tp=gpus or 1,
        cuda=True if spec is not None else None,
        nvcc=(find_nvcc(os.environ) is not None) if nvcc is None else nvcc,
        # No engine to inspect: assume a plain pip install (no flashinfer-cubin/jit-cache).
        flashinfer_prebuilt=False,
        wsl=in_wsl() if wsl is None else wsl,
        vllm_version=_checked_version(vllm_version),
        model=_features(model),
        kv_cache_dtype=kv_cache_dtype,
    )


def _features(model: str | None) -> ModelFeatures | None:
    if model is None:
        return None
    from hangar.preflight.weights import probe_weights, read_config

    weights = probe_weights(model, os.environ)
    config = read_config(weights)
    if config is None:  # checking without the model's features would answer for another model
        raise InputError(
            "cannot read its config.json (not a model directory, not in the Hugging Face "
            "cache or the embedded catalog)",
            source=model,
            field="--model",
            hint="pass a local model directory, or download the model first",
        )
    path = str(weights.config_path or f"{model} (embedded catalog config.json)")
    return model_features(parse_config(config, model_id=model, source="local", path=path))


def engine_versions() -> dict[str, str]:
    """vLLM version of every registered engine (empty when engine management is absent)."""
    try:
        from hangar.engines import registry
    except ImportError:
        return {}
    return {name: e.vllm_version for name, e in registry.load().all().items() if e.vllm_version}


def review(vllm_version: str | None = None) -> list[tuple[Workaround, str]]:
    versions = (
        [_checked_version(vllm_version) or ""]
        if vllm_version
        else sorted(set(engine_versions().values()))
    )
    return [(w, v) for w in load_registry() for v in versions if removal_due(w, v)]
