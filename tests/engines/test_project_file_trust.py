"""Issue 13 review, defects 1 and 5: ./hangar-engines.toml is outside text (a cloned
repository). It is read statically, cannot redirect a registered name, and its
interpreters run only when named; `engines history NAME` and a bad NAME exit like the
other subcommands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.engines import manage, registry, support

from .test_engines_support import _CONFIG


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _trap(tmp_path: Path) -> tuple[Path, Path]:
    """An "interpreter" that leaves a marker file when anything runs it."""
    marker = tmp_path / "ran"
    script = tmp_path / "trap" / "python"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    return script, marker


def _project_file(python: Path, *names: str) -> None:
    Path("hangar-engines.toml").write_text(
        "".join(
            f'[engines.{n}]\nkind = "python"\npython = {json.dumps(str(python))}\n'
            'created = "2026-01-01T00:00:00Z"\nupdated = "2026-01-01T00:00:00Z"\n'
            for n in names
        )
    )


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **_CONFIG}
    (model / "config.json").write_text(json.dumps(config))
    return model


def test_project_entry_cannot_shadow_a_registered_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manage.add_image("stable", "vllm/vllm-openai:v0.21.0")
    trap, marker = _trap(tmp_path)
    _project_file(trap, "stable", "extra")
    capsys.readouterr()
    code, out, err = _run(capsys, "engines", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["stable"]["kind"] == "image" and rows["stable"]["source"] == "user"
    assert rows["stable"]["shadows"] == str(Path.cwd() / "hangar-engines.toml")
    assert rows["extra"]["source"] == "project"
    assert "defines engine 'stable' too" in err
    assert registry.load().get("stable").kind == "image"
    code, out, _ = _run(capsys, "engines", "list")
    assert code == 0 and "defined in" in out and "user" in out
    assert not marker.exists()


def test_support_over_every_engine_never_runs_a_project_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trap, marker = _trap(tmp_path)
    _project_file(trap, "evil")
    model = _model(tmp_path)
    report = support.support(str(model))
    assert not marker.exists()
    (row,) = report.engines
    assert row.engine == "evil" and row.recommendation == "unknown"
    assert row.next_step is not None and "--engine evil" in row.next_step
    capsys.readouterr()
    # Named, it is the user's choice: it runs, with a warning naming the file.
    support.support(str(model), ["evil"])
    assert marker.exists()
    assert "hangar-engines.toml" in capsys.readouterr().err


def test_history_of_an_unknown_engine_and_a_bad_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "engines", "history", "nope")
    assert code == 1 and "no engine named 'nope'" in err
    code, _, err = _run(capsys, "engines", "add", "bad name", "--image", "vllm/vllm-openai:v1")
    assert code == 2 and "not a valid engine name" in err


def test_the_dashboard_never_runs_a_project_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hangar.web import data

    monkeypatch.chdir(tmp_path)
    trap, marker = _trap(tmp_path)
    _project_file(trap, "cloned")
    rows = {row["name"]: row for row in data.engines()}
    assert "not run unless named" in rows["cloned"]["inspection"]["error"]
    assert not marker.exists()
