"""The store upgrades a database written by earlier Hangar code in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hangar.errors import InputError
from hangar.store import runs as store
from hangar.store.db import connect
from hangar.store.schema import LATEST

# The runs table exactly as the code before migrations created it (no user_version).
_PRE_MIGRATION = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, label TEXT NOT NULL, target TEXT NOT NULL DEFAULT 'local',
    base_url TEXT NOT NULL, log_path TEXT NOT NULL, run_dir TEXT NOT NULL,
    deployment_json TEXT NOT NULL, engine TEXT NOT NULL, engine_python TEXT NOT NULL DEFAULT '',
    vllm_version TEXT, workarounds_json TEXT NOT NULL DEFAULT '[]',
    argv_json TEXT NOT NULL DEFAULT '[]', status TEXT NOT NULL, pid INTEGER, pgid INTEGER,
    started_at REAL NOT NULL, ended_at REAL, timings_json TEXT NOT NULL DEFAULT '{}', error TEXT
);
CREATE TABLE IF NOT EXISTS evals (
    id TEXT PRIMARY KEY, created_at TEXT NOT NULL, target TEXT NOT NULL, run_id TEXT,
    model TEXT, status TEXT NOT NULL, result_json TEXT NOT NULL
);
INSERT INTO runs (id, label, base_url, log_path, run_dir, deployment_json, engine, status,
                  pid, pgid, started_at)
    VALUES ('abcd1234', 'tiny', 'http://127.0.0.1:8000', '/x/server.log', '/x', '{}',
            'default', 'ready', 4242, 4242, 1.5);
INSERT INTO evals VALUES ('ev-1', '2026-01-01', 'http://x', 'abcd1234', 'tiny', 'pass', '{}');
"""


def _old_db(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(_PRE_MIGRATION)
    return path


def test_an_existing_database_is_upgraded_in_place(tmp_path: Path) -> None:
    conn = connect(_old_db(tmp_path / "hangar.sqlite3"))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
    run = store.get_run(conn, "abcd")
    assert run.handle == {"run_id": "abcd1234", "pid": 4242, "pgid": 4242}
    assert (run.status, run.base_url, run.started_at) == ("ready", "http://127.0.0.1:8000", 1.5)
    assert conn.execute("SELECT COUNT(*) FROM evals").fetchone()[0] == 1  # untouched
    store.add_event(conn, run.id, "ready", 2.0, "http://127.0.0.1:8000")
    assert [e.stage for e in store.list_events(conn, run.id)] == ["ready"]
    conn.close()
    assert (
        connect(tmp_path / "hangar.sqlite3").execute("PRAGMA user_version").fetchone()[0] == LATEST
    )


def test_a_database_from_a_newer_hangar_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "hangar.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    with pytest.raises(InputError, match="newer than this Hangar"):
        connect(path)


def test_find_run_never_creates_the_store(tmp_path: Path) -> None:
    assert store.find_run("abcd", tmp_path / "none.sqlite3") is None
    assert not (tmp_path / "none.sqlite3").exists()
