"""Where a model's files are: a local directory, the Hugging Face cache, or nowhere yet.

Read from the cache layout directly (models--org--name/snapshots/<rev>/...), so no
huggingface_hub import and no network.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.models.hfcache import repo_cache_dir
from hangar.models.sources import expand_user


class WeightsFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    local: bool
    present: bool
    config_path: Path | None = None
    detail: str = ""
    incomplete: tuple[Path, ...] = ()


def is_local_model(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~")) or expand_user(model).is_dir()


def probe_weights(model: str, env: Mapping[str, str], revision: str | None = None) -> WeightsFacts:
    if is_local_model(model):
        path = expand_user(model)
        config = path / "config.json"
        present = config.is_file()
        return WeightsFacts(
            model=model,
            local=True,
            present=present,
            config_path=config if present else None,
            detail=str(path),
        )
    repo = repo_cache_dir(model, env)
    cached = _cached_config(repo, revision)
    incomplete = tuple(sorted((repo / "blobs").glob("*.incomplete"))) if repo.is_dir() else ()
    detail = f"{repo}" + ("" if cached else " (no snapshot with config.json)")
    return WeightsFacts(
        model=model,
        local=False,
        present=cached is not None,
        config_path=cached,
        detail=detail,
        incomplete=incomplete,
    )


def _cached_config(repo: Path, revision: str | None) -> Path | None:
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / (revision or "main")
    if ref.is_file():
        candidate = snapshots / ref.read_text().strip() / "config.json"
        if candidate.is_file():
            return candidate
    if revision and (snapshots / revision / "config.json").is_file():
        return snapshots / revision / "config.json"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None


def read_config(weights: WeightsFacts) -> dict[str, Any] | None:
    """config.json from the local dir or HF cache, else the embedded catalog, else None."""
    path = weights.config_path or _catalog_config(weights.model)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _catalog_config(model: str) -> Path | None:
    from importlib import resources

    if "/" not in model or is_local_model(model):
        return None
    entry = resources.files("hangar.models").joinpath(
        "catalog", model.replace("/", "__"), "config.json"
    )
    return Path(str(entry)) if entry.is_file() else None
