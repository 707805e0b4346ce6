"""One SQLite database under the state dir; its schema is migrated on open (store/schema.py)."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

from hangar.errors import InputError
from hangar.paths import state_dir
from hangar.store.schema import migrate

DB_NAME = "hangar.sqlite3"


def db_path() -> Path:
    return state_dir() / DB_NAME


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open the store (created on first use) with WAL so readers never block a writer."""
    target = path or db_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not target.exists():  # run records name paths and commands: private to the user
            target.touch(mode=0o600)
        conn = sqlite3.connect(target, timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        _migrate_locked(conn, target)
    except (OSError, sqlite3.DatabaseError) as exc:
        read_only = _read_only_dir(target)
        if read_only is not None:  # moving the file aside cannot help there
            raise InputError(
                f"cannot open Hangar's store: {read_only} is read-only (HANGAR_HOME or the "
                "state dir must be writable)",
                source=str(target),
                hint="set HANGAR_HOME=DIR to a writable directory",
            ) from exc
        # A file that is not SQLite (or a directory, or no permission) in Hangar's place.
        raise InputError(
            f"cannot open Hangar's store: {exc}",
            source=str(target),
            hint=f"move {target} aside (Hangar creates a new one), or set HANGAR_HOME",
        ) from exc
    return conn


def _read_only_dir(target: Path) -> Path | None:
    """The store's directory (or its nearest existing parent) when it cannot be written:
    a read-only mount (even for root) or no write permission."""
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        mounted_ro = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    return folder if mounted_ro or not os.access(folder, os.W_OK) else None


def _migrate_locked(conn: sqlite3.Connection, target: Path) -> None:
    # Two Hangar processes opening a new store at once would both read user_version 0 and
    # run the same steps twice (the second fails half-way): one migrates, the other waits.
    lock = target.with_name(target.name + ".migrate.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # Switching to WAL takes an exclusive lock and SQLite answers "database is locked" at
        # once, without its busy timeout, while another process reads the new file (two
        # launches at the same moment): switch under the same lock. WAL then persists.
        conn.execute("PRAGMA journal_mode=WAL")
        migrate(conn, str(target))
    finally:
        os.close(fd)
