"""Model weights: local directory or Hugging Face cache, interrupted downloads, offline flags."""

from __future__ import annotations

from collections.abc import Mapping

from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.findings import Finding
from hangar.preflight.probe import HostFacts
from hangar.preflight.weights import WeightsFacts


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _missing_local(w: WeightsFacts) -> Finding:
    return Finding(
        id="host.weights.missing",
        severity="error",
        evidence=w.detail,
        message=f"model directory {w.model} has no config.json",
        fix="point model.id at a directory holding config.json and the weights",
    )


def _not_cached(w: WeightsFacts, offline: bool) -> Finding:
    if offline:
        return Finding(
            id="host.weights.offline_missing",
            severity="error",
            evidence=w.detail,
            message=f"HF_HUB_OFFLINE=1 but {w.model} is not in the Hugging Face cache; vLLM cannot download it",
            fix=f"huggingface-cli download {w.model}   (with network), or unset HF_HUB_OFFLINE",
        )
    return Finding(
        id="host.weights.download",
        severity="info",
        evidence=w.detail,
        message=f"{w.model} is not in the Hugging Face cache; vLLM will download it at start",
        fix=f"huggingface-cli download {w.model}   (to download ahead)",
    )


def _incomplete(w: WeightsFacts) -> Finding:
    return Finding(
        id="host.weights.incomplete",
        severity="warning",
        evidence=", ".join(map(str, w.incomplete[:3])),
        message=f"{len(w.incomplete)} interrupted downloads of {w.model} in the HF cache",
        fix=f"huggingface-cli download {w.model}   (resumes them)",
    )


def _offline_mismatch(env: Mapping[str, str], offline: bool) -> Finding | None:
    # An unset TRANSFORMERS_OFFLINE is taken to follow HF_HUB_OFFLINE: only explicit values clash.
    if offline == _truthy(env.get("TRANSFORMERS_OFFLINE", env.get("HF_HUB_OFFLINE"))):
        return None
    return Finding(
        id="host.weights.offline_mismatch",
        severity="warning",
        evidence="HF_HUB_OFFLINE vs TRANSFORMERS_OFFLINE",
        message="HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE disagree; tokenizer and weights loading may take different paths",
        fix="set both to the same value",
    )


def check_weights(facts: HostFacts, req: CheckInput) -> list[Finding]:
    w = req.weights
    if w is None:
        return []
    offline = _truthy(req.env.get("HF_HUB_OFFLINE"))
    out: list[Finding] = []
    if not w.present:
        out.append(_missing_local(w) if w.local else _not_cached(w, offline))
    if w.incomplete:
        out.append(_incomplete(w))
    if (mismatch := _offline_mismatch(req.env, offline)) is not None:
        out.append(mismatch)
    return out
