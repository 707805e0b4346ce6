"""Build a deployment from answers (flags or the wizard) and the plan's recommendation."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import Deployment


class Answers(BaseModel):
    """Everything `hangar init` asks; None means "not given" (default or recommendation)."""

    model_config = ConfigDict(frozen=True)

    model: str
    engine: str = "default"
    gpu: str | None = None
    gpus: int = 1
    nodes: int = 1
    target: str = "local"
    host: str = "127.0.0.1"
    port: int = 8000
    tp: int | None = None
    pp: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    served_name: str | None = None
    # [target.slurm] (target = "slurm")
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None
    gres_type: str | None = None
    multinode: str | None = None
    network_interface: str | None = None
    python: str | None = None


def catalog_parsers(model: str) -> tuple[str | None, str | None]:
    """Tool-call and reasoning parsers the embedded catalog records for ``model``."""
    try:
        from hangar.models.sources import catalog_entry, read_meta
    except ImportError:
        return None, None
    folder = catalog_entry(model)
    if folder is None:
        return None, None
    meta = read_meta(folder)
    return meta.get("tool_call_parser"), meta.get("reasoning_parser")


def build_deployment(a: Answers, *, source: str = "command-line flags") -> Deployment:
    from hangar.deploy.io import deployment_from_data

    tool, reasoning = catalog_parsers(a.model)
    data: dict[str, Any] = {
        "model": {"id": a.model, "served_name": a.served_name},
        "engine": a.engine,
        "resources": {"gpu": a.gpu, "gpus": a.gpus, "nodes": a.nodes},
        "parallel": {"tensor": a.tp or 1, "pipeline": a.pp or 1},
        "serve": {
            "max_model_len": a.max_model_len,
            "gpu_memory_utilization": a.gpu_memory_utilization,
            "tool_call_parser": a.tool_call_parser or tool,
            "reasoning_parser": a.reasoning_parser or reasoning,
        },
        "target": _target(a),
    }
    return deployment_from_data(data, source=source)


def deployment_for_cli(target: str | None, overrides: dict[str, Any]) -> Deployment:
    """`hangar preflight/launch [FILE | MODEL] [flags]`: a file (flags override it) or a model id."""
    from hangar.deploy.params import deployment_for

    return deployment_for(target, {k: v for k, v in overrides.items() if v is not None})


def with_target_kind(d: Deployment, kind: str | None) -> Deployment:
    """``--target KIND`` over the file's [target]: the port carries over, the rest is the
    kind's defaults (inside a Slurm allocation, local runs on the allocation's node)."""
    from hangar.deploy.io import deployment_from_data

    if kind is None or kind == d.target.kind:
        return d
    data = d.model_dump(mode="json")
    data["target"] = {"kind": kind, kind: {"port": d.target.port}}
    return deployment_from_data(data, source=f"--target {kind}")


_SLURM_ANSWERS = (
    "partition",
    "account",
    "qos",
    "time",
    "gres_type",
    "multinode",
    "network_interface",
    "python",
)


def _target(a: Answers) -> dict[str, Any]:
    if a.target != "slurm":
        return {"kind": a.target, a.target: {"host": a.host, "port": a.port}}
    given = {k: getattr(a, k) for k in _SLURM_ANSWERS if getattr(a, k) is not None}
    host = {"host": a.host} if a.host != "127.0.0.1" else {}  # default: the node's own IP
    return {"kind": "slurm", "slurm": {"port": a.port, **host, **given}}
