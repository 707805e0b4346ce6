"""Issue 13 review, defect 5: `hangar ui` suggests the token through the environment (argv
shows in ps), and exits 128 + the signal that stopped it (uvicorn's run returned 0)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hangar.cli.main import main


def test_off_loopback_hint_keeps_the_token_out_of_argv(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HANGAR_UI_TOKEN", raising=False)
    assert main(["ui", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert 'HANGAR_UI_TOKEN="$(openssl rand -hex 16)" hangar ui --host 0.0.0.0' in err
    assert "--token" not in err.split("Fix:")[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 60  # a wait bound, not a speed assert
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("hangar ui did not listen")


# A real `hangar ui` process (about 10 s each on 2 cores: the dashboard's warm-up): uvicorn's
# own signal handling is what is under test, so it is not replaced.
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_ui_exits_with_the_signal_code(signum: int, code: int, tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "HANGAR_UI_TOKEN"}
    log = tmp_path / "ui.log"
    hangar = Path(sys.executable).parent / "hangar"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(hangar), "ui", "--port", str(port)], stdout=out, stderr=out, env=env, cwd=tmp_path
        )
    try:
        _wait_listening(proc, port, log)
        proc.send_signal(signum)  # the process this test started, by its pid
        assert proc.wait(timeout=60) == code
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
