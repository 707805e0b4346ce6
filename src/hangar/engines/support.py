"""``hangar support MODEL``: can each engine run this model, and if not, what to do.

Per engine: is the architecture in vLLM's registry (native), served through the
Transformers backend (vLLM's ``_TRANSFORMERS_SUPPORTED_MODELS``, or any arch whose
model_type the engine's transformers knows: ``--model-impl auto`` falls back to
``_try_resolve_transformers`` in vllm/model_executor/models/registry.py), or not
at all; are the parsers, flags and versions the model card asks for (engines/card.py:
its ``vllm serve`` lines, install lines and deploy guides in the same dir) present.
Then the path: stay (runs as is); method A (a nightly or newer venv) when the card
only shows ``vllm serve``/``pip install``; method B (the image the card names, e.g.
``vllm/vllm-openai:<tag>``); source when the card installs vLLM from git.
JSON contract (``hangar support --json``): docs/containers.md#support.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hangar.engines import card, inventory, registry
from hangar.engines.model import Engine, Inspection
from hangar.errors import HangarError
from hangar.planning.versions import VllmVersion

Support = Literal["native", "transformers"]
Recommendation = Literal["stay", "A", "B", "source", "unknown"]
VERDICTS = {
    "stay": "runs as is",
    "A": "needs a nightly (or newer) venv",
    "B": "needs the image the card names",
    "source": "needs a source build",
    "unknown": "unknown (engine not readable)",
}
_PARSER_FLAGS = card.PARSER_FLAGS


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
    asks: card.CardAsks = field(default_factory=card.CardAsks)
    remote_code: bool = False  # config.json auto_map: classes shipped with the model


def card_parsers(text: str) -> dict[str, str]:
    return card.card_parsers(text)


def card_images(text: str) -> tuple[str, ...]:
    return card.card_images(text)


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


def _meta(local_dir: Path | None) -> dict[str, Any]:
    if local_dir is None or not (local_dir / "meta.yaml").is_file():
        return {}
    from hangar.models.sources import read_meta

    meta: dict[str, Any] = read_meta(local_dir)
    return meta


def _meta_parsers(local_dir: Path | None) -> dict[str, str]:
    """Parsers from the catalog's meta.yaml (``tool_call_parser``/``reasoning_parser``)."""
    meta = _meta(local_dir)
    parsers = {k: str(meta[k]) for k in _PARSER_FLAGS if meta.get(k)}
    return {**card_parsers(_meta_commands(meta)), **parsers}


def _meta_commands(meta: dict[str, Any]) -> str:
    serve = meta.get("recommended_serve") or {}
    return "\n".join(str(e.get("command", "")) for e in serve.get("vllm_serve_examples") or [])


def _meta_asks(local_dir: Path | None) -> card.CardAsks:
    """The catalog's recipe (vLLM recipes: serve commands, images, minimum version)."""
    meta = _meta(local_dir)
    serve = meta.get("recommended_serve") or {}
    base = card.read_card(_meta_commands(meta))
    images = tuple(str(i) for i in serve.get("docker_images") or [])
    minimum = serve.get("min_vllm_version")
    return replace(base, images=images or base.images, vllm_min=str(minimum) if minimum else None)


def merged_asks(from_card: card.CardAsks, from_meta: card.CardAsks) -> card.CardAsks:
    """The card's own words win field by field; the catalog fills what the card omits."""
    return replace(
        from_card,
        flags=tuple(dict.fromkeys((*from_card.flags, *from_meta.flags))),
        parsers={**from_meta.parsers, **from_card.parsers},
        images=from_card.images or from_meta.images,
        vllm_min=from_card.vllm_min or from_meta.vllm_min,
        chat_template=from_card.chat_template or from_meta.chat_template,
    )


# vLLM publishes one image per platform: vllm/vllm-openai (CUDA) beside vllm-openai-cpu,
# -xpu, -rocm, -tpu; AMD's are also under rocm/. A recipe's "Intel Xeon 6" section names
# the -cpu one, which cannot use a GPU.
PLATFORMS = ("cuda", "cpu", "xpu", "rocm", "tpu", "hpu", "neuron")
_PLATFORM_IMAGE = re.compile(rf"(?:^|[-_/:.])({'|'.join(PLATFORMS[1:])})(?=$|[-_/:.])")


def image_platform(image: str) -> str:
    """The platform an image is built for: "cuda" unless its name says cpu/xpu/rocm/..."""
    match = _PLATFORM_IMAGE.search(image.lower())
    return match.group(1) if match else "cuda"


def images_for(images: tuple[str, ...], platform: str = "cuda") -> tuple[str, ...]:
    """The images built for ``platform`` (support recommends only those)."""
    return tuple(i for i in images if image_platform(i) == platform)


def model_facts(ref: str, platform: str = "cuda") -> ModelFacts:
    """Load ``ref`` through Hangar's model loader, then read its card (card beats catalog).

    ``images`` keeps only those built for ``platform`` (a GPU deployment is not offered
    a CPU image)."""
    from hangar.models import load_model

    spec = load_model(ref)
    text, source = _card(spec.id, spec.local_dir)
    text = "\n".join([text or "", *_guides(spec.local_dir)])
    from_card, from_meta = card.read_card(text), _meta_asks(spec.local_dir)
    asks = merged_asks(
        replace(from_card, images=images_for(from_card.images, platform)),
        replace(from_meta, images=images_for(from_meta.images, platform)),
    )
    parsers = {**_meta_parsers(spec.local_dir), **asks.parsers}
    return ModelFacts(
        id=spec.id,
        architectures=spec.architectures,
        model_type=spec.model_type,
        text_model_type=spec.text_model_type,
        parsers=parsers,
        images=asks.images,
        card_source=source,
        asks=asks,
        remote_code=spec.remote_code,
    )


def _guides(local_dir: Path | None) -> list[str]:
    """Deploy guides shipped next to the card (the card links them: same dir only)."""
    if local_dir is None:
        return []
    names = sorted(p for p in local_dir.glob("*.md") if p.name != "README.md")
    return [p.read_text(encoding="utf-8", errors="replace") for p in names[:8]]


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
    recommendation: Recommendation
    reason: str
    next_step: str | None = None
    verdict: str = ""  # the recommendation in words (VERDICTS)
    reasons: tuple[str, ...] = ()  # every requirement of the card this engine misses


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


def missing(facts: ModelFacts, found: Inspection, parsers: dict[str, ParserCheck]) -> list[str]:
    """Every requirement of the card and config that ``found`` does not meet, in words."""
    a = facts.asks
    out = [f"{k} '{p.name}'" for k, p in parsers.items() if p.present is False]
    if found.flags:
        out += [f"flag {f}" for f in a.flags if f not in found.flags]
    version = found.vllm_version or ""
    if a.vllm_min and version and _older(version, a.vllm_min, a.vllm_exact):
        out.append(f"vllm{'==' if a.vllm_exact else '>='}{a.vllm_min} (has {version})")
    tf = found.transformers_version or ""
    if a.transformers_min and tf and _older(tf, a.transformers_min, False):
        out.append(f"transformers>={a.transformers_min} (has {tf})")
    if a.nightly and not _is_dev(version):
        out.append("a nightly vLLM (the card installs from the nightly index or --pre)")
    if a.vllm_from_source:
        out.append("vLLM built from git (the card installs it from source)")
    if a.transformers_from_source:
        out.append("transformers from git (the card installs it from source)")
    return out


def _older(have: str, want: str, exact: bool) -> bool:
    h, w = VllmVersion.parse_or_none(have), VllmVersion.parse_or_none(want)
    if h is None or w is None:
        return False
    return h != w if exact else h < w


def _is_dev(version: str) -> bool:
    return bool(re.search(r"dev|rc|\+g[0-9a-f]", version))


def _recommend(
    facts: ModelFacts, arch: Support | Literal[False], lacks: list[str]
) -> tuple[Recommendation, str, str | None]:
    if arch and not lacks:
        how = "natively" if arch == "native" else "through the Transformers backend"
        note = (
            "; needs trust_remote_code (auto_map)" if facts.remote_code and arch != "native" else ""
        )
        return "stay", f"architecture served {how}; everything the card asks is present{note}", None
    arch_name = facts.architectures[0] if facts.architectures else "?"
    lack = (
        []
        if arch
        else [
            f"architecture {arch_name}"
            + (" (needs trust_remote_code / a plugin)" if facts.remote_code else "")
        ]
    )
    why = "engine lacks " + ", ".join(lack + lacks)
    if facts.images:
        image = facts.images[0]
        return (
            "B",
            f"{why}; the model card names the image {image}",
            f"hangar engines add {_slug(image)} --image {image}",
        )
    if facts.asks.vllm_from_source:
        return (
            "source",
            f"{why}; the card builds vLLM from source",
            "hangar engines add src --spec 'vllm @ git+https://github.com/vllm-project/vllm'",
        )
    a = facts.asks
    if a.vllm_min and not a.nightly and not _is_dev(a.vllm_min):
        return (
            "A",
            f"{why}; the card asks for vLLM {a.vllm_min}",
            f"hangar engines add vllm-{a.vllm_min} --vllm {a.vllm_min}",
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
        return _unknown(facts, engine, exc.message)
    present = {"tool_call_parser": found.tool_parsers, "reasoning_parser": found.reasoning_parsers}
    parsers = {k: ParserCheck(name=v, present=v in present[k]) for k, v in facts.parsers.items()}
    arch = architecture_support(facts, found)
    lacks = missing(facts, found, parsers)
    action, reason, step = _recommend(facts, arch, lacks)
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
        verdict=VERDICTS[action],
        reasons=tuple(lacks) + (() if arch else ("architecture not registered",)),
    )


def _check_listed(facts: ModelFacts, reg: registry.Registry, engine: Engine) -> EngineSupport:
    """One engine of "every engine": a project-file interpreter is not run unless named
    (a cloned repository's ./hangar-engines.toml must not run code on `hangar support`)."""
    if reg.is_project(engine.name) and registry.runs_interpreter(engine):
        why = f"defined by {engine.defined_in}: its interpreter is not run unless named"
        return _unknown(facts, engine, why, f"hangar support {facts.id} --engine {engine.name}")
    return check_engine(facts, engine)


def _unknown(facts: ModelFacts, engine: Engine, reason: str, step: str | None = None) -> EngineSupport:
    """An engine that was not inspected: nothing about it is known but why."""
    return EngineSupport(
        engine=engine.name,
        kind=engine.kind,
        vllm_version=engine.vllm_version,
        architecture_supported=None,
        model_type_known=None,
        parsers={k: ParserCheck(name=v, present=None) for k, v in facts.parsers.items()},
        recommendation="unknown",
        reason=reason,
        next_step=step,
        verdict=VERDICTS["unknown"],
    )


def support(
    ref: str, engines: list[str] | None = None, *, cwd: Path | None = None, platform: str = "cuda"
) -> SupportReport:
    """Check ``ref`` against the named engines (default: every registered engine); images
    are recommended for ``platform`` (cuda, or cpu/xpu/rocm/tpu)."""
    facts = model_facts(ref, platform)
    reg = registry.load(cwd)
    if engines:
        results = tuple(check_engine(facts, reg.get(n)) for n in engines)
    else:
        results = tuple(_check_listed(facts, reg, e) for e in reg.all().values())
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
