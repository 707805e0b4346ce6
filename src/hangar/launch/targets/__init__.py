"""Launch targets, one module each, registered here (the orchestrator looks kinds up)."""

from __future__ import annotations

from hangar.errors import UsageError
from hangar.launch.targets.base import Observed, RenderContext, Rendered, Stopped, Target
from hangar.launch.targets.container import ContainerTarget
from hangar.launch.targets.local import LocalTarget
from hangar.launch.targets.slurm import SlurmTarget

TARGETS: dict[str, Target] = {
    "local": LocalTarget(),
    "slurm": SlurmTarget(),
    "container": ContainerTarget(),
}


def target_for(kind: str) -> Target:
    try:
        return TARGETS[kind]
    except KeyError:
        raise UsageError(
            f"target kind {kind!r} is not implemented (known: {', '.join(TARGETS)})",
            hint='set [target] kind = "local", "slurm" or "container"',
        ) from None


__all__ = ["TARGETS", "Observed", "RenderContext", "Rendered", "Stopped", "Target", "target_for"]
