"""What every launch target provides: the Protocol, and the values passed across it.

A target is one module under ``launch/targets`` registered in ``TARGETS``. The
orchestrator (``launch.orchestrator``) never knows which one it drives:

    render(deployment, context) -> Rendered     pure: files and argv, nothing executed
    submit(rendered, context, env) -> Handle    start it (a process, an sbatch job, ...)
    status(handle) -> Observed                  where it is now (queued, running, gone)
    logs(handle, run_dir) -> list[Path]         the log files to show and to diagnose
    stop(handle, grace_s) -> Stopped            stop exactly what submit started

A ``Handle`` is JSON the runs store keeps per run (pid/pgid for local; job id, node
list and head node for Slurm), so status/stop work from any later process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hangar.deploy.schema import Deployment
from hangar.preflight.engine import EngineFacts
from hangar.workarounds import Applied


class RenderedFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    mode: int = 0o600


class Rendered(BaseModel):
    """Everything a target would run, as data: what ``hangar render`` prints."""

    model_config = ConfigDict(frozen=True)

    kind: str
    # File name (relative to the run dir) -> content; the first is the main script.
    files: dict[str, RenderedFile] = Field(default_factory=dict)
    argv: tuple[str, ...]  # the command submit runs (vllm itself, or sbatch ...)
    env: dict[str, str] = Field(default_factory=dict)  # added over the caller's env
    secret_env: tuple[str, ...] = ()  # names passed through the environment, never written
    base_url: str | None = None  # known before submit (local); else found at run time
    served_name: str
    applied: Applied = Field(default_factory=Applied)

    def main_file(self) -> tuple[str, RenderedFile] | None:
        return next(iter(self.files.items()), None)


class RenderContext(BaseModel):
    """What rendering needs beyond the deployment; built by the orchestrator (or by
    ``hangar render`` with a placeholder run dir)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    run_dir: Path
    engine: EngineFacts
    engine_cache: Path
    applied: Applied
    # Deployment env values that look like secrets are replaced by their names here.
    secret_names: tuple[str, ...] = ()


Phase = Literal["queued", "starting", "running", "exited", "failed", "gone"]


class Observed(BaseModel):
    """One look at a submitted run."""

    model_config = ConfigDict(frozen=True)

    phase: Phase
    reason: str = ""  # Slurm's pending reason, an exit code, ...
    base_url: str | None = None  # once the target knows where the server listens
    handle: dict[str, Any] | None = None  # an updated handle (node list once allocated)


class Stopped(BaseModel):
    model_config = ConfigDict(frozen=True)

    signalled: int  # processes / jobs signalled
    forced: bool  # SIGKILL or a second scancel was needed
    detail: str = ""


class Target(Protocol):
    kind: str

    def render(self, d: Deployment, ctx: RenderContext) -> Rendered: ...

    def submit(
        self, rendered: Rendered, ctx: RenderContext, env: dict[str, str]
    ) -> dict[str, Any]: ...

    def status(self, handle: dict[str, Any], run_dir: Path) -> Observed: ...

    def logs(self, handle: dict[str, Any], run_dir: Path) -> list[Path]: ...

    def stop(self, handle: dict[str, Any], run_dir: Path, grace_s: float) -> Stopped: ...
