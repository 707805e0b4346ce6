"""Launch failures (subclasses of HangarError; the CLI renders them in one line)."""

from __future__ import annotations

from hangar.errors import HangarError


class PreflightFailed(HangarError):
    """Preflight found errors; nothing was started."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(
            f"preflight found {len(errors)} error(s), nothing was started: {errors[0]}",
            hint="hangar preflight FILE   (details), or --force to launch anyway",
        )
        self.errors = errors


class LaunchFailed(HangarError):
    """The server did not become ready; the log is kept and the run marked failed."""

    def __init__(
        self,
        run_id: str,
        stage: str,
        reason: str,
        log_path: str,
        error_block: str = "",
        diagnosis: str | None = None,
    ) -> None:
        super().__init__(
            f"run {run_id} failed while waiting for {stage}: {reason} (log: {log_path})",
            hint=f"hangar logs {run_id}   or   hangar doctor {run_id}",
        )
        self.run_id = run_id
        self.stage = stage
        self.reason = reason
        self.log_path = log_path
        self.error_block = error_block
        self.diagnosis = diagnosis


class RunNotLive(HangarError):
    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id} is not running (status {status})", hint="hangar status")
        self.run_id = run_id
        self.status = status
