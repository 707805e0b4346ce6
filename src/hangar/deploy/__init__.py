"""The deployment file: schema, reading/writing, and ``hangar init``'s builder.

The names below are imported on first use (PEP 562): ``hangar.deploy.params`` is read by
the planner on every ``hangar plan``, which must not pay for building the schema's
pydantic models it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hangar.deploy.io import (
        DEFAULT_FILE,
        deployment_from_data,
        json_schema,
        load_deployment,
        render_toml,
        write_deployment,
    )
    from hangar.deploy.schema import (
        Deployment,
        LocalTarget,
        ModelSection,
        Parallel,
        Resources,
        Serve,
        Target,
    )

_HOME = {
    **dict.fromkeys(
        (
            "DEFAULT_FILE",
            "deployment_from_data",
            "json_schema",
            "load_deployment",
            "render_toml",
            "write_deployment",
        ),
        "hangar.deploy.io",
    ),
    **dict.fromkeys(
        ("Deployment", "LocalTarget", "ModelSection", "Parallel", "Resources", "Serve", "Target"),
        "hangar.deploy.schema",
    ),
}

__all__ = [
    "DEFAULT_FILE",
    "Deployment",
    "LocalTarget",
    "ModelSection",
    "Parallel",
    "Resources",
    "Serve",
    "Target",
    "deployment_from_data",
    "json_schema",
    "load_deployment",
    "render_toml",
    "write_deployment",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'hangar.deploy' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
