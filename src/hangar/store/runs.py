"""The runs API: one row per launch (deployment snapshot, engine, target handle, timings,
state) and its launch events. Every other stage (launch, eval, doctor, status) goes through
these functions; no SQL outside ``hangar.store``.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from hangar.errors import HangarError, InputError
from hangar.store.db import connect
from hangar.store.db import db_path as default_db_path

RunStatus = Literal["queued", "starting", "ready", "failed", "stopped", "exited"]
LIVE_STATUSES = ("queued", "starting", "ready")

# The store is a file the user (or another tool) can edit: every JSON column is checked
# once, when a row is read, so that no target ever signals a PID parsed from garbage.
_JSON_SHAPES: dict[str, type] = {
    "deployment_json": dict,
    "handle_json": dict,
    "launcher_json": dict,
    "timings_json": dict,
    "workarounds_json": list,
    "argv_json": list,
}
_INT = (int, type(None))
_STR = (str, type(None))
# The keys the targets put in a handle (local, slurm, container) and what each may hold.
_HANDLE_TYPES: dict[str, tuple[type, ...]] = {
    "run_id": _STR,
    "pid": _INT,
    "pgid": _INT,
    "start": _INT,
    "boot": _STR,
    "job_id": (str, int),
    "nodes": (list,),
    "head": _STR,
    "runtime": _STR,
    "container": _STR,
    "image": _STR,
}
_LAUNCHER_TYPES: dict[str, tuple[type, ...]] = {"pid": _INT, "start": _INT, "boot": _STR}


UNREADABLE_FIX = "hangar clean   (removes the record)   or move the store aside"


class UnreadableRun(HangarError):
    """A run row that does not hold what Hangar wrote (edited, or another version's)."""

    def __init__(self, db: str, run_id: str, field: str, why: str) -> None:
        super().__init__(
            f"{db}: run {run_id}: field '{field}' is unreadable ({why})", hint=UNREADABLE_FIX
        )
        self.run_id, self.field, self.why = run_id, field, why


def _bad_value(value: Any, allowed: tuple[type, ...]) -> bool:
    # bool is an int to isinstance: a PID of true is as wrong as one of "abc".
    return isinstance(value, bool) or not isinstance(value, allowed)


def _check_keys(column: str, data: dict[str, Any], types: dict[str, tuple[type, ...]]) -> None:
    for key, allowed in types.items():
        value = data.get(key)
        if key in data and _bad_value(value, allowed):
            raise ValueError(f"{column}: '{key}' is {_short(value)}, not {_names(allowed)}")
    if column != "handle_json":
        return
    nodes = data.get("nodes") or []
    if not all(isinstance(n, str) for n in nodes):
        raise ValueError(f"{column}: 'nodes' is {_short(nodes)}, not a list of host names")
    job = data.get("job_id")
    if job is not None and not str(job).isdigit():  # what sbatch printed (slurm.parse_job_id)
        raise ValueError(f"{column}: 'job_id' is {_short(job)}, not a Slurm job id")


def _short(value: Any) -> str:
    """An edited value as the message shows it: one line, bounded (it may be anything)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _names(allowed: tuple[type, ...]) -> str:
    names = {int: "an integer", str: "a string", list: "a list", type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in allowed)


class RunRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    target: str = "local"
    base_url: str = ""
    log_path: str
    run_dir: str
    deployment_json: str
    engine: str
    engine_python: str = ""
    vllm_version: str | None = None
    workarounds_json: str = "[]"
    argv_json: str = "[]"
    status: RunStatus
    handle_json: str = "{}"  # the target's own handle: pid/pgid, Slurm job id and nodes, ...
    started_at: float
    ended_at: float | None = None
    timings_json: str = "{}"
    error: str | None = None
    # The launching process: {"pid", "start", "boot"} and "detached" once it handed the
    # server over (so signals to Hangar no longer touch it).
    launcher_json: str = "{}"
    # Set only on a stand-in for a row that failed validation (not a column): why, one line.
    unreadable: str = ""

    @model_validator(mode="after")
    def _json_columns(self) -> RunRecord:
        for column, shape in _JSON_SHAPES.items():
            try:
                data = json.loads(getattr(self, column) or ("{}" if shape is dict else "[]"))
            except ValueError as exc:
                raise ValueError(f"{column}: not JSON ({exc})") from None
            if not isinstance(data, shape):  # pydantic reports ValueError, not TypeError
                raise ValueError(  # noqa: TRY004
                    f"{column}: {type(data).__name__}, not a JSON {shape.__name__}"
                )
        _check_keys("handle_json", self.handle, _HANDLE_TYPES)
        _check_keys("launcher_json", self.launcher, _LAUNCHER_TYPES)
        return self

    @property
    def launcher(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.launcher_json or "{}")
        return data

    @property
    def detached(self) -> bool:
        return bool(self.launcher.get("detached"))

    @property
    def timings(self) -> dict[str, float]:
        data: dict[str, float] = json.loads(self.timings_json)
        return data

    @property
    def handle(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.handle_json or "{}")
        return data

    @property
    def live(self) -> bool:
        return self.status in LIVE_STATUSES

    @property
    def deployment(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.deployment_json)
        return data


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Kept for callers that predate migrations: connect() already migrated the schema."""


def new_run_id(conn: sqlite3.Connection) -> str:
    while True:
        run_id = secrets.token_hex(4)
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            return run_id


def insert_run(conn: sqlite3.Connection, record: RunRecord) -> None:
    data = record.model_dump(exclude={"unreadable"})
    cols = ", ".join(data)
    marks = ", ".join("?" for _ in data)
    with conn:
        conn.execute(f"INSERT INTO runs ({cols}) VALUES ({marks})", tuple(data.values()))


_UPDATABLE = frozenset(
    {
        "status",
        "handle_json",
        "base_url",
        "log_path",
        "ended_at",
        "timings_json",
        "error",
        "vllm_version",
        "launcher_json",
    }
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
        query += f" WHERE status IN ({', '.join(repr(s) for s in LIVE_STATUSES)})"
    rows = conn.execute(query + " ORDER BY started_at DESC").fetchall()
    return [_listed(conn, row) for row in rows]


def _parse(conn: sqlite3.Connection, row: sqlite3.Row) -> RunRecord | UnreadableRun:
    try:
        return RunRecord.model_validate(dict(row))
    except ValidationError as exc:
        err = exc.errors()[0]
        if err["loc"]:  # a column's own type (e.g. a status no Hangar writes)
            field = ".".join(str(p) for p in err["loc"])
            why = f"{_short(err.get('input'))}: {err['msg']}"
        else:  # one of the JSON columns (_json_columns says which)
            field, _, why = str(err["msg"]).removeprefix("Value error, ").partition(": ")
        return UnreadableRun(_db_name(conn), str(row["id"]), field, why)


def _listed(conn: sqlite3.Connection, row: sqlite3.Row) -> RunRecord:
    parsed = _parse(conn, row)
    return parsed if isinstance(parsed, RunRecord) else _stand_in(row, parsed)


def _stand_in(row: sqlite3.Row, problem: UnreadableRun) -> RunRecord:
    """What a listing shows for an unreadable row: its id and plain text columns, and
    nothing a target could act on (no handle, no launcher, not live)."""

    def text(key: str) -> str:
        value = row[key]
        return value if isinstance(value, str) else ""

    started = row["started_at"]
    return RunRecord(
        id=str(row["id"]),
        label=text("label") or "?",
        target=text("target") or "local",
        base_url=text("base_url"),
        log_path=text("log_path"),
        run_dir=text("run_dir"),
        deployment_json="{}",
        engine=text("engine"),
        status="failed",
        started_at=float(started) if isinstance(started, float | int) else 0.0,
        error=problem.one_line(),
        unreadable=problem.message,
    )


def _db_name(conn: sqlite3.Connection) -> str:
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return str(file)
    return "Hangar's store"


def _record(conn: sqlite3.Connection, row: sqlite3.Row) -> RunRecord:
    record = _parse(conn, row)
    if isinstance(record, UnreadableRun):
        raise record
    return record


def get_run(conn: sqlite3.Connection, ref: str | None) -> RunRecord:
    """A run by id or unique id prefix; ``None`` means the most recent run."""
    if ref is None:
        row = conn.execute("SELECT * FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()
        if row is None:
            raise InputError("no runs recorded yet", hint="hangar launch")
        return _record(conn, row)
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
    return _record(conn, rows[0])


def delete_run(conn: sqlite3.Connection, run_id: str) -> None:
    with conn:
        conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))


def set_handle(conn: sqlite3.Connection, run_id: str, handle: dict[str, Any]) -> None:
    update_run(conn, run_id, handle_json=json.dumps(handle, sort_keys=True))


class EventRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    seq: int
    stage: str
    at: float
    detail: str = ""


def add_event(conn: sqlite3.Connection, run_id: str, stage: str, at: float, detail: str) -> None:
    with conn:
        conn.execute(
            "INSERT INTO run_events (run_id, seq, stage, at, detail) VALUES (?, "
            "(SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE run_id = ?), ?, ?, ?)",
            (run_id, run_id, stage, at, detail),
        )


def list_events(conn: sqlite3.Connection, run_id: str) -> list[EventRow]:
    rows = conn.execute(
        "SELECT * FROM run_events WHERE run_id = ? ORDER BY seq", (run_id,)
    ).fetchall()
    return [EventRow.model_validate(dict(row)) for row in rows]


def find_run(ref: str, db_path: Path | None = None) -> RunRecord | None:
    """A run by id or prefix for readers (eval, doctor): None when there is no store or no
    such run; never creates the store just to look."""
    path = db_path or default_db_path()
    if not path.exists():
        return None
    conn = connect(path)
    try:
        return get_run(conn, ref)
    except InputError:
        return None
    finally:
        conn.close()
