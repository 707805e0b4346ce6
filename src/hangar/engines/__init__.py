"""Engines: vLLM installs side by side (managed venvs, external interpreters, images).

Public API::

    registry.load() -> Registry                      # engines.toml + ./hangar-engines.toml
    manage.add_venv(name, source_for(vllm=...))      # build a managed venv with uv
    manage.add_python(name, path) / add_image(name, ref)
    manage.plan_upgrade(name, to) / upgrade(name, to) / rollback(name) / prune(name) / remove(name)
    inventory.inspect_engine(engine) -> Inspection   # reads files only, never imports vLLM/torch
    support.support(model_ref, engines) -> SupportReport
"""

from hangar.engines.inventory import inspect_engine
from hangar.engines.manage import (
    add_image,
    add_python,
    add_venv,
    plan_upgrade,
    prune,
    remove,
    rollback,
    source_for,
    upgrade,
)
from hangar.engines.model import Engine, HistoryEntry, Inspection, InstallSource
from hangar.engines.registry import Registry, load

__all__ = [
    "Engine",
    "HistoryEntry",
    "Inspection",
    "InstallSource",
    "Registry",
    "add_image",
    "add_python",
    "add_venv",
    "inspect_engine",
    "load",
    "plan_upgrade",
    "prune",
    "remove",
    "rollback",
    "source_for",
    "upgrade",
]
