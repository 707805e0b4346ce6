"""The ``runs`` table: one row per launch (deployment snapshot, engine, timings, state).

Other stages read id, base_url, log_path and deployment_json (eval, doctor).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hangar.errors import InputError

RunStatus = Literal["starting", "ready", "failed", "stopped", "exited"]
LIVE_STATUSES = ("starting", "ready")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT 'local',
    base_url TEXT NOT NULL,
    log_path TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    deployment_json TEXT NOT NULL,
    engine TEXT NOT NULL,
    engine_python TEXT NOT NULL DEFAULT '',
    vllm_version TEXT,
    workarounds_json TEXT NOT NULL DEFAULT '[]',
    argv_json TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL,
    pid INTEGER,
    pgid INTEGER,
    started_at REAL NOT NULL,
    ended_at REAL,
    timings_json TEXT NOT NULL DEFAULT '{}',
    error TEXT
)
"""


class RunRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    target: str = "local"
    base_url: str
    log_path: str
    run_dir: str
    deployment_json: str
    engine: str
    engine_python: str = ""
    vllm_version: str | None = None
    workarounds_json: str = "[]"
    argv_json: str = "[]"
    status: RunStatus
    pid: int | None = None
    pgid: int | None = None
    started_at: float
    ended_at: float | None = None
    timings_json: str = "{}"
    error: str | None = None

    @property
    def timings(self) -> dict[str, float]:
        data: dict[str, float] = json.loads(self.timings_json)
        return data

    @property
    def deployment(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.deployment_json)
        return data


def ensure_schema(conn: sqlite3.Connection) -> None:
    conn.execute(_SCHEMA)


def new_run_id(conn: sqlite3.Connection) -> str:
    while True:
        run_id = secrets.token_hex(4)
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return run_id


def insert_run(conn: sqlite3.Connection, record: RunRecord) -> None:
    data = record.model_dump()
    cols = ", ".join(data)
    marks = ", ".join("?" for _ in data)
    with conn:
        conn.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", tuple(data.values()))


_UPDATABLE = frozenset(
    {"status", "pid", "pgid", "ended_at", "timings_json", "error", "vllm_version"}
)


def update_run(conn: sqlite3.Connection, run_id: str, **fields: Any) -> None:
    unknown = set(fields) - _UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    sets = ", ".join(f"{k} = ?" for k in fields)
    with conn:
        conn.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*fields.values(), run_id))


def finish_run(
    conn: sqlite3.Connection, run_id: str, status: RunStatus, error: str | None = None
) -> None:
    update_run(conn, run_id, status=status, ended_at=time.time(), error=error)


def list_runs(conn: sqlite3.Connection, *, live_only: bool = False) -> list[RunRecord]:
    query = "SELECT * FROM runs"
    if live_only:
        query += " WHERE status IN ('starting', 'ready')"
    rows = conn.execute(query + " ORDER BY started_at DESC").fetchall()
    return [RunRecord.model_validate(dict(row)) for row in rows]


def get_run(conn: sqlite3.Connection, ref: str | None) -> RunRecord:
    """A run by id or unique id prefix; ``None`` means the most recent run."""
    if ref is None:
        row = conn.execute("SELECT * FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        if row is None:
            raise InputError("no runs recorded yet", hint="hangar launch")
        return RunRecord.model_validate(dict(row))
    if not ref.strip():
        raise InputError("the run id is empty", hint="hangar status   (lists runs)")
    # A plain prefix comparison, not LIKE: '%' or '_' in a user's ref must not match (and
    # stop) whatever run happens to be recorded.
    rows = conn.execute(
        "SELECT * FROM runs WHERE substr(id, 1, length(?)) = ? ORDER BY started_at DESC",
        (ref, ref),
    ).fetchall()
    if not rows:
        raise InputError(f"no run '{ref}'", hint="hangar status   (lists runs)")
    if len(rows) > 1:
        ids = ", ".join(r["id"] for r in rows)
        raise InputError(
            f"run prefix '{ref}' is ambiguous ({ids})", hint="give more characters of the id"
        )
    return RunRecord.model_validate(dict(rows[0]))


def delete_run(conn: sqlite3.Connection, run_id: str) -> None:
    with conn:
        conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
