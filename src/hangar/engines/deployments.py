"""Which deployments name an engine (``engines remove`` refuses while any does).

Rule: a deployment uses engine NAME when a TOML file it is described by has a
key ``engine = "NAME"`` at the top level or in any table; a deployment file
with a ``[model]`` table and no top-level ``engine`` uses ``default`` (the
default of ``hangar.deploy.schema.Deployment.engine``). Files scanned:
``hangar.toml`` and ``*.hangar.toml`` in the current directory and its direct
subdirectories, and every ``*.toml`` under ``<state>/deployments/`` (the
records launch keeps for running deployments).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hangar import paths
from hangar.engines.tomlio import read_toml
from hangar.errors import InputError

DEFAULT_ENGINE = "default"


def deployment_files(cwd: Path | None = None) -> list[Path]:
    base = cwd or Path.cwd()
    found: set[Path] = set()
    for pattern in ("hangar.toml", "*.hangar.toml", "*/hangar.toml", "*/*.hangar.toml"):
        found.update(p for p in base.glob(pattern) if p.is_file())
    records = paths.state_dir() / "deployments"
    if records.is_dir():
        found.update(p for p in records.rglob("*.toml") if p.is_file())
    return sorted(found)


def _engine_values(table: Mapping[str, Any]) -> Iterator[str]:
    for key, value in table.items():
        if key == "engine" and isinstance(value, str):
            yield value
        elif isinstance(value, Mapping):
            yield from _engine_values(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping):
                    yield from _engine_values(item)


def users_of(engine: str, cwd: Path | None = None) -> list[str]:
    """Deployment files that name ``engine``; an unreadable file counts as a user (fail safe)."""
    users: list[str] = []
    for path in deployment_files(cwd):
        try:
            data = read_toml(path)
            names = set(_engine_values(data))
            if "model" in data and "engine" not in data:
                names.add(DEFAULT_ENGINE)
        except InputError:
            users.append(f"{path} (unreadable TOML)")
            continue
        if engine in names:
            users.append(str(path))
    return users
