"""``hangar support MODEL``: can each engine run this model, and if not, what to do.

Per engine: is the architecture in vLLM's registry (native), served through the
Transformers backend (vLLM's ``_TRANSFORMERS_SUPPORTED_MODELS``, or any arch whose
model_type the engine's transformers knows: ``--model-impl auto`` falls back to
``_try_resolve_transformers`` in vllm/model_executor/models/registry.py), or not
at all; are the parsers the model card recommends registered. Then the path:
stay; method A (a nightly engine in its own venv) when the card only shows
``vllm serve``; method B (the model's own ``vllm/vllm-openai:<tag>`` image) when
the card names one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hangar.engines import inventory, registry
from hangar.engines.model import Engine, Inspection
from hangar.errors import HangarError

Support = Literal["native", "transformers"]
_IMAGE = re.compile(r"\bvllm/vllm-openai:([A-Za-z0-9][A-Za-z0-9._-]*)")
_PARSER_FLAGS = {"tool_call_parser": "--tool-call-parser", "reasoning_parser": "--reasoning-parser"}


@dataclass(frozen=True)
class ModelFacts:
    """What ``support`` needs about a model: config facts plus its card's advice."""

    id: str
    architectures: tuple[str, ...]
    model_type: str
    text_model_type: str | None
    parsers: dict[str, str]
    images: tuple[str, ...]
    card_source: str | None


def _serve_lines(card: str) -> list[str]:
    """Lines of ``vllm serve``/``docker run`` commands, with ``\\`` continuations joined."""
    joined = re.sub(r"\\\s*\n\s*", " ", card)
    return [
        ln
        for ln in joined.splitlines()
        if "vllm serve" in ln or "vllm/vllm-openai" in ln or "vllm.entrypoints" in ln
    ]


def card_parsers(card: str) -> dict[str, str]:
    """Parsers named in the card's serve commands (first mention wins)."""
    found: dict[str, str] = {}
    for line in _serve_lines(card):
        for key, flag in _PARSER_FLAGS.items():
            match = re.search(re.escape(flag) + r"[=\s]+([A-Za-z0-9_.-]+)", line)
            if match and key not in found:
                found[key] = match.group(1)
    return found


def card_images(card: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f"vllm/vllm-openai:{m}" for m in _IMAGE.findall(card)))


def _hub_card(model_id: str) -> tuple[str | None, str | None]:
    """README.md from the hub (or its cache); HF_HUB_OFFLINE is honoured by huggingface_hub."""
    if "/" not in model_id or os.environ.get("HANGAR_NO_HUB") == "1":
        return None, None
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(model_id, "README.md")
    except (OSError, ValueError):  # offline, not cached, no such repo or file: no card
        return None, None
    return Path(path).read_text(encoding="utf-8", errors="replace"), f"hub:{model_id}/README.md"


def _card(model_id: str, local_dir: Path | None) -> tuple[str | None, str | None]:
    if local_dir and (local_dir / "README.md").is_file():
        path = local_dir / "README.md"
        return path.read_text(encoding="utf-8", errors="replace"), str(path)
    return _hub_card(model_id)


def _meta_parsers(local_dir: Path | None) -> dict[str, str]:
    """Parsers from the catalog's meta.yaml (``tool_call_parser``/``reasoning_parser``)."""
    if local_dir is None or not (local_dir / "meta.yaml").is_file():
        return {}
    from hangar.models.sources import read_meta

    meta: dict[str, Any] = read_meta(local_dir)
    parsers = {k: str(meta[k]) for k in _PARSER_FLAGS if meta.get(k)}
    serve = meta.get("recommended_serve") or {}
    commands = "\n".join(str(e.get("command", "")) for e in serve.get("vllm_serve_examples") or [])
    return {**card_parsers(commands), **parsers}


def model_facts(ref: str) -> ModelFacts:
    """Load ``ref`` through Hangar's model loader, then read its card (card beats catalog)."""
    from hangar.models import load_model

    spec = load_model(ref)
    card, source = _card(spec.id, spec.local_dir)
    parsers = {**_meta_parsers(spec.local_dir), **(card_parsers(card) if card else {})}
    return ModelFacts(
        id=spec.id,
        architectures=spec.architectures,
        model_type=spec.model_type,
        text_model_type=spec.text_model_type,
        parsers=parsers,
        images=card_images(card) if card else (),
        card_source=source,
    )


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ParserCheck(_Frozen):
    name: str
    present: bool | None


class EngineSupport(_Frozen):
    engine: str
    kind: str
    vllm_version: str | None
    architecture_supported: Support | Literal[False] | None
    model_type_known: bool | None
    parsers: dict[str, ParserCheck]
    recommendation: Literal["stay", "A", "B", "unknown"]
    reason: str
    next_step: str | None = None


class SupportReport(_Frozen):
    model: str
    architectures: tuple[str, ...]
    model_type: str
    card: str | None
    recommended_parsers: dict[str, str]
    images: tuple[str, ...]
    engines: tuple[EngineSupport, ...]
    best_engine: str | None


def architecture_support(facts: ModelFacts, found: Inspection) -> Support | Literal[False]:
    native = set(found.architectures) - set(found.transformers_backend_architectures)
    if any(a in native for a in facts.architectures):
        return "native"
    if any(a in found.transformers_backend_architectures for a in facts.architectures):
        return "transformers"
    return "transformers" if facts.model_type in found.transformers_model_types else False


def _recommend(
    facts: ModelFacts, arch: Support | Literal[False], parsers: dict[str, ParserCheck]
) -> tuple[Literal["stay", "A", "B"], str, str | None]:
    missing = [f"{k} '{p.name}'" for k, p in parsers.items() if p.present is False]
    if arch and not missing:
        how = "natively" if arch == "native" else "through the Transformers backend"
        return "stay", f"architecture served {how}; recommended parsers present", None
    lack = (
        [] if arch else [f"architecture {facts.architectures[0] if facts.architectures else '?'}"]
    )
    why = "engine lacks " + ", ".join(lack + missing)
    if facts.images:
        image = facts.images[0]
        return (
            "B",
            f"{why}; the model card names the image {image}",
            f"hangar engines add {_slug(image)} --image {image}",
        )
    return (
        "A",
        f"{why}; the model card only shows `vllm serve`, so a nightly wheel is the likely fix",
        "hangar engines add nightly --nightly",
    )


def _slug(image: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", image.rsplit(":", 1)[-1])[:64]


def check_engine(facts: ModelFacts, engine: Engine) -> EngineSupport:
    try:
        found = inventory.inspect_engine(engine)
    except HangarError as exc:
        return EngineSupport(
            engine=engine.name,
            kind=engine.kind,
            vllm_version=engine.vllm_version,
            architecture_supported=None,
            model_type_known=None,
            parsers={k: ParserCheck(name=v, present=None) for k, v in facts.parsers.items()},
            recommendation="unknown",
            reason=exc.message,
        )
    present = {"tool_call_parser": found.tool_parsers, "reasoning_parser": found.reasoning_parsers}
    parsers = {k: ParserCheck(name=v, present=v in present[k]) for k, v in facts.parsers.items()}
    arch = architecture_support(facts, found)
    action, reason, step = _recommend(facts, arch, parsers)
    return EngineSupport(
        engine=engine.name,
        kind=engine.kind,
        vllm_version=found.vllm_version,
        architecture_supported=arch,
        model_type_known=facts.model_type in found.transformers_model_types,
        parsers=parsers,
        recommendation=action,
        reason=reason,
        next_step=step,
    )


def support(
    ref: str, engines: list[str] | None = None, *, cwd: Path | None = None
) -> SupportReport:
    """Check ``ref`` against the named engines (default: every registered engine)."""
    facts = model_facts(ref)
    reg = registry.load(cwd)
    chosen = [reg.get(n) for n in engines] if engines else list(reg.all().values())
    results = tuple(check_engine(facts, e) for e in chosen)
    best = next((r.engine for r in results if r.recommendation == "stay"), None)
    return SupportReport(
        model=facts.id,
        architectures=facts.architectures,
        model_type=facts.model_type,
        card=facts.card_source,
        recommended_parsers=facts.parsers,
        images=facts.images,
        engines=results,
        best_engine=best,
    )
