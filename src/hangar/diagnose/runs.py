"""Turn `hangar doctor` arguments into log paths: files, directories, or launch run ids."""

from __future__ import annotations

from pathlib import Path

from hangar.diagnose.reader import UnreadableLog
from hangar.store.db import db_path
from hangar.store.runs import find_run


def resolve(arg: str, database: Path | None = None) -> Path:
    """A path as given when it exists; otherwise the logs of the `hangar launch` run ``arg``
    (its run dir: the Slurm job log and every node's log, or the server log)."""
    path = Path(arg)
    if path.exists():
        return path
    run = find_run(arg, database or db_path())
    if run is None:
        raise UnreadableLog(
            "is neither a file nor a known run id",
            source=arg,
            hint="pass a log file, '-' for stdin, or a run id from `hangar launch`",
        )
    log = Path(run.log_path)
    if run.target != "local" and Path(run.run_dir).is_dir():
        return Path(run.run_dir)  # every node's log, read as a directory
    if not log.exists():
        raise UnreadableLog(f"the log of run '{arg}' is gone", source=str(log))
    return log


def run_log(run_id: str, database: Path) -> Path | None:
    """The log recorded for ``run_id``, or None (no store, no such run)."""
    run = find_run(run_id, database)
    return Path(run.log_path) if run and run.log_path else None
