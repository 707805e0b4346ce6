"""TARGET resolution: URL, deployment file, run id from the launch table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_server import FakeServer

from hangar.errors import InputError
from hangar.evaluation.target import resolve_target
from hangar.store.db import connect


def test_url_is_normalised_and_key_comes_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANGAR_API_KEY", "sk-secret")
    target = resolve_target("http://127.0.0.1:8000/v1/")
    assert target.root_url == "http://127.0.0.1:8000"
    assert target.openai_base_url == "http://127.0.0.1:8000/v1"
    assert target.api_key is not None and "sk-secret" not in repr(target)


def test_deployment_file_declares_the_port_and_served_name(tmp_path: Path) -> None:
    """Issue 13: `hangar eval hangar.toml` probed :8000 with the model id, ignoring
    [target.local] port and [model] served_name."""
    path = tmp_path / "hangar.toml"
    path.write_text(
        '[model]\nid = "Qwen/Qwen3-8B"\nserved_name = "qwen"\n'
        '[serve]\ntool_call_parser = "hermes"\nreasoning_parser = "qwen3"\n'
        'enforce_eager = true\n[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\n'
        '[target]\nkind = "local"\n[target.local]\nhost = "0.0.0.0"\nport = 9001\n'
    )
    target = resolve_target(str(path))
    assert target.root_url == "http://127.0.0.1:9001"
    assert (target.tool_call_parser, target.reasoning_parser, target.model) == (
        "hermes",
        "qwen3",
        "qwen",
    )
    assert "--enforce-eager" in target.flags and target.env == {"VLLM_CPU_KVCACHE_SPACE": "1"}


def test_deployment_file_errors_name_the_field(tmp_path: Path) -> None:
    path = tmp_path / "hangar.toml"
    path.write_text('[model]\nid = "m"\n[target.local]\nport = "eighty"\n')
    with pytest.raises(InputError, match="field 'target.local.port'"):
        resolve_target(str(path))


def test_serve_host_port_keys_are_refused_as_the_schema_does(tmp_path: Path) -> None:
    """docs/eval.md once documented [serve] host/port: the schema rejects them, so does eval."""
    path = tmp_path / "hangar.toml"
    path.write_text('[model]\nid = "m"\n[serve]\nport = 9001\n')
    with pytest.raises(InputError, match="serve.port"):
        resolve_target(str(path))


def test_slurm_deployment_file_points_at_the_run_id(tmp_path: Path) -> None:
    path = tmp_path / "hangar.toml"
    path.write_text('[model]\nid = "m"\n[target]\nkind = "slurm"\n')
    with pytest.raises(InputError, match="run id") as info:
        resolve_target(str(path))
    assert "hangar status" in info.value.one_line()


def test_run_id_from_the_launch_table(hangar_home: Path) -> None:
    from hangar.store import runs as store

    deployment = {
        "model": "m",
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
        "gpus": ["H100"],
    }
    conn = connect()
    store.insert_run(
        conn,
        store.RunRecord(
            id="run-1",
            label="m",
            base_url="http://127.0.0.1:8100",
            log_path="/tmp/x.log",
            run_dir=str(hangar_home / "no-such-run-dir"),
            deployment_json=json.dumps(deployment),
            engine="default",
            argv_json=json.dumps(["vllm", "serve", "m", "--tool-call-parser", "hermes"]),
            workarounds_json=json.dumps(["w1"]),
            status="ready",
            started_at=1.0,
        ),
    )
    conn.close()
    target = resolve_target("run-1", reasoning_parser="qwen3")
    assert resolve_target("run-").run_id == "run-1"  # a unique prefix, as stop/logs take
    assert target.root_url == "http://127.0.0.1:8100" and target.run_id == "run-1"
    assert (target.tool_call_parser, target.reasoning_parser) == ("hermes", "qwen3")
    assert (
        target.gpus == ["H100"]
        and target.workarounds == ["w1"]
        and target.log_path == Path("/tmp/x.log")
    )


def test_unknown_run_id() -> None:
    with pytest.raises(InputError, match="run id is unknown"):
        resolve_target("run-nope")


def test_eval_of_a_deployment_file_reaches_its_port_and_served_name(
    fake: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Acceptance (issue 13): `hangar eval hangar.toml` talks to the declared server."""
    from fake_server import MODEL

    from hangar.cli.main import main

    port = fake.server_address[1]
    path = tmp_path / "hangar.toml"
    path.write_text(
        f'[model]\nid = "org/some-model"\nserved_name = "{MODEL}"\n'
        f"[target.local]\nport = {port}\n"
    )
    assert main(["eval", str(path), "--suite", "smoke", "--json", "--no-store"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["suites"]["smoke"]["status"] == "pass"
    assert doc["snapshot"]["model"] == MODEL and f":{port}" in doc["snapshot"]["base_url"]
