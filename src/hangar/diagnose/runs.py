"""Turn `hangar doctor` arguments into log paths: files, directories, or launch run ids."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hangar.diagnose.reader import UnreadableLog
from hangar.store.db import db_path


def resolve(arg: str, database: Path | None = None) -> Path:
    """A path as given when it exists; otherwise the log of the `hangar launch` run ``arg``."""
    path = Path(arg)
    if path.exists():
        return path
    log = run_log(arg, database or db_path())
    if log is None:
        raise UnreadableLog(
            "is neither a file nor a known run id",
            source=arg,
            hint="pass a log file, '-' for stdin, or a run id from `hangar launch`",
        )
    if not log.exists():
        raise UnreadableLog(f"the log of run '{arg}' is gone", source=str(log))
    return log


def run_log(run_id: str, database: Path) -> Path | None:
    """The ``log_path`` stored for ``run_id``, or None (no store, no runs table, no such run)."""
    if not database.exists():
        return None  # never create the store just to look something up
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)
    try:
        has_table = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'"
        ).fetchone()
        if not has_table:
            return None
        row = conn.execute("SELECT log_path FROM runs WHERE id = ?", (run_id,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return Path(row[0]) if row and row[0] else None
