"""Resolve a deployment's ``engine`` to an interpreter: a path, or a name in hangar.engines."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from hangar.deploy.schema import ContainerTargetSection, Deployment
from hangar.errors import InputError
from hangar.models.sources import expand_user


def looks_like_path(engine: str) -> bool:
    return "/" in engine or engine.startswith("~")


def resolve_engine(engine: str) -> Path:
    """Interpreter for ``engine``; InputError naming the field when it cannot run locally."""
    if looks_like_path(engine):
        return expand_user(engine)
    try:
        from hangar.engines import registry
    except ImportError as exc:  # engines not installed in this build
        raise InputError(
            f"engine '{engine}' is a name but engine management is unavailable",
            field="engine",
            hint='set engine = "/path/to/venv/bin/python"',
        ) from exc
    entry = registry.load().get(engine)
    if entry.kind == "image" or not entry.python:
        raise InputError(
            f"engine '{engine}' is a container image; the local target needs an interpreter",
            field="engine",
            hint='use target.kind = "container" or an engine with a venv (hangar engines list)',
        )
    return Path(entry.python)


def engine_key(engine: str) -> str:
    """Directory-safe key for per-engine caches (compile caches differ per vLLM/torch build)."""
    if looks_like_path(engine):
        digest = hashlib.sha256(str(expand_user(engine)).encode()).hexdigest()[:12]
        return f"path-{digest}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", engine)


def image_of(d: Deployment) -> str:
    """A container deployment's image: [target.container] image, else its engine's image."""
    assert isinstance(d.target, ContainerTargetSection)
    if d.target.container.image:
        return d.target.container.image
    from hangar.engines import registry

    entry = None if looks_like_path(d.engine) else registry.load().all().get(d.engine)
    if entry is None or not entry.image:
        raise InputError(
            f"no image: engine {d.engine!r} is not an image engine and "
            "[target.container] image is unset",
            field="target.container.image",
            hint='set image = "REF" or: hangar engines add NAME --image REF',
        )
    return entry.image
