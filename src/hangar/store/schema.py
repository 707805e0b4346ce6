"""The store's schema as numbered migrations, applied in order on open (``PRAGMA user_version``).

Version 1 is the schema written before migrations existed (runs with pid/pgid, evals), so
a ``hangar.sqlite3`` from that code is upgraded in place. Add a step; never edit one.
"""

from __future__ import annotations

import sqlite3

from hangar.errors import InputError

_V1 = """
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
);
CREATE TABLE IF NOT EXISTS evals (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    target TEXT NOT NULL,
    run_id TEXT,
    model TEXT,
    status TEXT NOT NULL,
    result_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS evals_run_id ON evals (run_id, created_at);
"""

# Version 2: a per-target handle (JSON) replaces pid/pgid, and launch events get a table.
_V2 = """
CREATE TABLE runs_v2 (
    id TEXT PRIMARY KEY,
    label TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT 'local',
    base_url TEXT NOT NULL DEFAULT '',
    log_path TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    deployment_json TEXT NOT NULL,
    engine TEXT NOT NULL,
    engine_python TEXT NOT NULL DEFAULT '',
    vllm_version TEXT,
    workarounds_json TEXT NOT NULL DEFAULT '[]',
    argv_json TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL,
    handle_json TEXT NOT NULL DEFAULT '{}',
    started_at REAL NOT NULL,
    ended_at REAL,
    timings_json TEXT NOT NULL DEFAULT '{}',
    error TEXT
);
INSERT INTO runs_v2 SELECT id, label, target, base_url, log_path, run_dir, deployment_json,
    engine, engine_python, vllm_version, workarounds_json, argv_json, status,
    CASE WHEN pid IS NULL THEN '{}'
         ELSE json_object('run_id', id, 'pid', pid, 'pgid', pgid) END,
    started_at, ended_at, timings_json, error
    FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE TABLE run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    stage TEXT NOT NULL,
    at REAL NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, seq)
);
"""

# Version 3: who launched the run (PID, start time, boot id) and whether it was handed over
# (--detach), so `hangar status` can tell a live launch from an orphan after a kill -9.
_V3 = """
ALTER TABLE runs ADD COLUMN launcher_json TEXT NOT NULL DEFAULT '{}';
"""

MIGRATIONS: tuple[tuple[int, str], ...] = ((1, _V1), (2, _V2), (3, _V3))
LATEST = MIGRATIONS[-1][0]


def migrate(conn: sqlite3.Connection, source: str) -> None:
    """Bring the database to ``LATEST``; each step in its own transaction."""
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if current > LATEST:
        raise InputError(
            f"the store has schema version {current}, newer than this Hangar's {LATEST}",
            source=source,
            hint="upgrade Hangar (pip install -U hangar), or set HANGAR_HOME to another dir",
        )
    for version, script in MIGRATIONS:
        if version > current:
            # executescript commits first; BEGIN..COMMIT keeps each step all-or-nothing.
            conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {version};\nCOMMIT;")
