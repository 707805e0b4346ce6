"""`hangar eval RUN` of a run that was stopped or has ended (issue 13, fixB.3): the run's
port may now answer for another server, so nothing is asked, nothing stored, exit 1."""

from __future__ import annotations

import pytest
from fake_server import FakeServer

from hangar.cli.main import main
from hangar.store import runs as store
from hangar.store.db import connect
from hangar.store.evals import list_evals


@pytest.mark.parametrize("status", ["stopped", "exited", "failed"])
def test_eval_of_an_ended_run_is_refused(
    status: store.RunStatus, fake: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    conn = connect()
    store.insert_run(
        conn,
        store.RunRecord(
            id="ended001",
            label="m",
            # Another server now answers on the ended run's port: it must not be evaluated.
            base_url=f"http://127.0.0.1:{fake.server_address[1]}",
            log_path="/nonexistent/server.log",
            run_dir="/nonexistent",
            deployment_json="{}",
            engine="default",
            status=status,
            started_at=1.0,
        ),
    )
    conn.close()
    assert main(["eval", "ended0", "--suite", "smoke"]) == 1
    err = capsys.readouterr().err
    assert f"run ended001 is stopped (status {status})" in err and "hangar status --all" in err
    assert list_evals() == []
