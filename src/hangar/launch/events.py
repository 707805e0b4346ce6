"""Launch progress as typed events: the CLI renders them, the store keeps them, the
dashboard and tests read them. One event per stage passed (or failed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

Stage = Literal[
    "preflight",  # checks done (detail: counts)
    "render",  # scripts / argv built
    "record",  # run dir, launch.json and the runs row written
    "submit",  # process started / job submitted (detail: pid or job id)
    "queued",  # still waiting for resources (detail: Slurm's pending reason)
    "running",  # allocated and started (detail: nodes)
    "endpoint",  # the server's address is known
    "process",  # readiness stages, as launch.readiness names them
    "health",
    "models",
    "completion",
    "ready",
    "detached",  # handed over: from here on only `hangar stop` / `hangar clean` touch it
    "failed",
    "stopped",
]


class LaunchEvent(BaseModel):
    model_config = ConfigDict(frozen=True)

    stage: Stage
    at: float  # wall clock (epoch seconds)
    elapsed_s: float  # since the launch began
    detail: str = ""
    run_id: str | None = None
    ok: bool = True


EventSink = Callable[[LaunchEvent], None]


class Clock:
    """Stamps events relative to one start."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def event(
        self, stage: Stage, detail: str = "", run_id: str | None = None, ok: bool = True
    ) -> LaunchEvent:
        elapsed = round(time.monotonic() - self.start, 2)
        return LaunchEvent(
            stage=stage, at=time.time(), elapsed_s=elapsed, detail=detail, run_id=run_id, ok=ok
        )
