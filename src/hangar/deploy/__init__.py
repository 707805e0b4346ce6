"""The deployment file: schema, reading/writing, and ``hangar init``'s builder."""

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
