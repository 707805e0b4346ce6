"""`hangar launch --force` with an engine that does not exist (issue 13): refused, and the
hint names what fixes it instead of offering --force again."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.cli.main import main


@pytest.mark.parametrize("force", [["--force"], []])
def test_unknown_engine_is_not_forceable(
    tmp_path: Path, model_dir: Path, port: int, capsys: pytest.CaptureFixture[str], force: list[str]
) -> None:
    file = tmp_path / "hangar.toml"
    file.write_text(
        f'engine = "no-such-engine"\n[model]\nid = "{model_dir}"\n'
        f"[target.local]\nport = {port}\n"
    )
    assert main(["launch", str(file), *force]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("hangar: error: preflight found") and "host.engine.unknown" in err
    assert "--force" not in err and "hangar engines list" in err
