"""A run row that holds what Hangar never writes (issue 13, fixB.1): listings go on and show
it as unreadable with its fix; commands aimed at it exit 1 naming the store, run and field;
`hangar clean` removes it. Nothing ever acts on a handle parsed from such a row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.store import runs as store
from hangar.store.db import connect, db_path


def _insert(run_id: str, started: float, status: store.RunStatus = "failed") -> None:
    conn = connect()
    store.insert_run(
        conn,
        store.RunRecord(
            id=run_id,
            label="tiny",
            base_url="http://127.0.0.1:9",
            log_path="/nonexistent/server.log",
            run_dir=str(db_path().parent / "runs" / run_id),
            deployment_json="{}",
            engine="default",
            status=status,
            started_at=started,
        ),
    )
    conn.close()


def _corrupt(run_id: str, **columns: str) -> None:
    conn = connect()
    sets = ", ".join(f"{k} = ?" for k in columns)
    with conn:
        conn.execute(f"UPDATE runs SET {sets} WHERE id = ?", (*columns.values(), run_id))
    conn.close()


BAD_ROWS = [
    {"status": "ready", "handle_json": json.dumps({"pgid": "abc", "pid": [1]})},
    {"handle_json": "not json"},
    {"status": "bogus"},
    {"handle_json": "[1, 2]"},
    {"launcher_json": json.dumps({"pid": True})},
    {"timings_json": "{"},
    {"handle_json": json.dumps({"job_id": "1 --all"})},
]


@pytest.mark.parametrize("columns", BAD_ROWS, ids=lambda c: ",".join(c))
def test_a_bad_row_is_listed_as_unreadable_and_others_still_show(
    columns: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _insert("good0001", 1.0)
    _insert("bad00001", 2.0)
    _corrupt("bad00001", **columns)
    for argv in (["status"], ["status", "--all"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        bad = next(line for line in out.splitlines() if line.startswith("bad00001"))
        assert "unreadable" in bad and str(db_path()) in bad and "hangar clean" in bad
        field = "status" if columns.get("status") == "bogus" else next(reversed(columns))
        assert f"field '{field}'" in bad
    assert "good0001" in out
    assert main(["stop", "bad00001"]) == 1
    err = capsys.readouterr().err
    assert "run bad00001" in err and str(db_path()) in err and "Traceback" not in err
    assert main(["clean"]) == 0
    assert "unreadable record of run bad00001" in capsys.readouterr().out
    assert [r.id for r in store.list_runs(connect())] == ["good0001"]


def test_a_bad_row_is_never_live(hangar_home: Path) -> None:
    """The stand-in a listing gets has no handle: no target can signal from it."""
    _insert("bad00002", 1.0, status="ready")
    _corrupt("bad00002", handle_json=json.dumps({"pid": 1, "pgid": 1, "start": "x"}))
    (record,) = store.list_runs(connect())
    assert record.unreadable and not record.live and record.handle == {}
    assert store.list_runs(connect(), live_only=True)[0].handle == {}
    with pytest.raises(store.UnreadableRun, match="'start'"):
        store.get_run(connect(), "bad00002")
