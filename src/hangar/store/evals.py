"""Eval results in the shared SQLite store (table ``evals``; owned by this module).

Each row keeps the full EvalResult JSON (with its snapshot; the evaluation stage turns it
into its model, see ``hangar.evaluation.history``) plus a few columns to look results up
by id, run id or time. API keys are never part of
a result, so never stored.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.errors import InputError
from hangar.store.db import connect


def _open(db_path: Path | None) -> sqlite3.Connection:
    return connect(db_path)  # the evals table is created by the store's migrations


class EvalRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    created_at: str
    target: str
    run_id: str | None
    model: str | None
    status: str  # pass | fail
    result_json: str


def save_eval(row: EvalRow, db_path: Path | None = None) -> None:
    conn = _open(db_path)
    try:
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO evals VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    row.id,
                    row.created_at,
                    row.target,
                    row.run_id,
                    row.model,
                    row.status,
                    row.result_json,
                ),
            )
    finally:
        conn.close()


def load_eval_json(ref: str, db_path: Path | None = None) -> str:
    """An eval by id, unique id prefix, launch run id (its latest eval) or ``latest``."""
    conn = _open(db_path)
    try:
        row = _find(conn, ref)
    finally:
        conn.close()
    if row is None:
        raise InputError(
            f"no stored eval matches '{ref}'",
            hint="hangar eval TARGET first; ids look like ev-20260101-120000-abcd",
        )
    return str(row["result_json"])


def _find(conn: sqlite3.Connection, ref: str) -> sqlite3.Row | None:
    if not ref.strip():
        raise InputError(
            "the eval id is empty", hint="hangar compare latest ID (ids from hangar eval)"
        )
    if ref == "latest":
        row: sqlite3.Row | None = conn.execute(
            "SELECT result_json FROM evals ORDER BY created_at DESC, rowid DESC LIMIT 1"
        ).fetchone()
        return row
    exact: sqlite3.Row | None = conn.execute(
        "SELECT result_json FROM evals WHERE id = ?", (ref,)
    ).fetchone()
    if exact is not None:
        return exact
    prefixed = conn.execute(
        "SELECT result_json FROM evals WHERE id LIKE ? ESCAPE '\\' LIMIT 2", (_like_prefix(ref),)
    ).fetchall()
    if len(prefixed) > 1:
        raise InputError(f"'{ref}' matches several stored evals", hint="give more of the eval id")
    if prefixed:
        first: sqlite3.Row = prefixed[0]
        return first
    by_run: sqlite3.Row | None = conn.execute(
        "SELECT result_json FROM evals WHERE run_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
        (ref,),
    ).fetchone()
    return by_run


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def list_evals(limit: int = 50, db_path: Path | None = None) -> list[sqlite3.Row]:
    """Newest first: id, created_at, target, run_id, model, status."""
    conn = _open(db_path)
    try:
        return list(
            conn.execute(
                "SELECT id, created_at, target, run_id, model, status FROM evals "
                "ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (limit,),
            )
        )
    finally:
        conn.close()
