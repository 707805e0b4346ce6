"""hangar.toml: schema, TOML round trip, errors naming file and field, init from flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.deploy import (
    Deployment,
    deployment_from_data,
    json_schema,
    load_deployment,
    render_toml,
    write_deployment,
)
from hangar.deploy.init import deployment_for_cli
from hangar.errors import InputError, UsageError


def _full() -> Deployment:
    return Deployment.model_validate(
        {
            "name": 'qwen "prod"',
            "model": {"id": "Qwen/Qwen3-8B", "served_name": "qwen"},
            "engine": "vllm-0.33",
            "resources": {"gpu": "H100", "gpus": 2},
            "parallel": {"tensor": 2},
            "serve": {
                "max_model_len": 32768,
                "gpu_memory_utilization": 0.85,
                "tool_call_parser": "hermes",
                "extra_args": ["--seed", "1", "--max-num-batched-tokens=8192"],
            },
            "env": {"HF_TOKEN": "hf_x", "VLLM_LOGGING_LEVEL": "DEBUG"},
            "target": {"local": {"port": 8123}},
        }
    )


def test_toml_round_trip(tmp_path: Path) -> None:
    d = _full()
    write_deployment(d, tmp_path / "hangar.toml")
    assert load_deployment(tmp_path / "hangar.toml") == d
    assert (tmp_path / "hangar.toml").stat().st_mode & 0o077 == 0  # may hold a token


def test_errors_name_the_file_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\nid = "x"\n[parallel]\ntensor = 0\n')
    with pytest.raises(InputError, match=r"bad.toml: field 'parallel.tensor'"):
        load_deployment(bad)
    bad.write_text('version = 2\n[model]\nid = "x"\n')
    with pytest.raises(InputError, match="field 'version'"):
        load_deployment(bad)
    bad.write_text('[model]\nid = "x"\nunknown = 1\n')
    with pytest.raises(InputError, match="model.unknown"):
        load_deployment(bad)
    with pytest.raises(InputError, match="not valid TOML"):
        bad.write_text("[model")
        load_deployment(bad)


def test_layout_must_fit_the_resources() -> None:
    with pytest.raises(InputError, match="needs 4 GPUs"):
        deployment_from_data(
            {
                "model": {"id": "m"},
                "resources": {"gpu": "H100", "gpus": 2},
                "parallel": {"tensor": 4},
            }
        )


def test_secrets_are_masked_in_repr_and_snapshot() -> None:
    d = _full()
    assert "hf_x" not in repr(d) and "hf_x" not in json.dumps(d.snapshot())
    assert d.snapshot()["env"] == {"HF_TOKEN": "***", "VLLM_LOGGING_LEVEL": "DEBUG"}


def test_json_schema_lists_every_section() -> None:
    schema = json_schema()
    assert {"model", "engine", "resources", "parallel", "serve", "env", "target"} <= set(
        schema["properties"]
    )


def test_cli_flags_override_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_deployment(_full(), tmp_path / "hangar.toml")
    monkeypatch.chdir(tmp_path)
    d = deployment_for_cli(
        None, {"port": 9000, "tp": 1, "engine": "/opt/venv/bin/python", "gpu": None}
    )
    assert (d.target.local.port, d.parallel.tensor, d.engine, d.resources.gpu) == (
        9000,
        1,
        "/opt/venv/bin/python",
        "H100",
    )
    from_model = deployment_for_cli("Qwen/Qwen3-8B", {"gpu": "H100", "gpus": 2})
    assert from_model.serve.tool_call_parser == "hermes"  # from the embedded catalog
    monkeypatch.chdir(tmp_path / "..")
    with pytest.raises(UsageError):
        deployment_for_cli(None, {})


def test_init_writes_a_valid_file_with_the_plans_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hangar.toml"
    code = main(
        [
            "init",
            "--no-input",
            "--model",
            "Qwen/Qwen3-32B",
            "--gpu",
            "H100",
            "--gpus",
            "4",
            "--engine",
            "vllm-0.33",
            "--target",
            "local",
            "--port",
            "8100",
            "-o",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    d = load_deployment(out)
    assert d.parallel.tensor * d.parallel.pipeline * d.parallel.data <= 4
    assert "plan recommends" in capsys.readouterr().out
    assert main(["init", "--no-input", "--model", "x", "-o", str(out)]) == 2  # exists, no --force
    assert (
        main(
            [
                "init",
                "--no-input",
                "--model",
                "Qwen/Qwen3-8B",
                "--tp",
                "2",
                "--gpu",
                "H100",
                "--gpus",
                "2",
                "--force",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert load_deployment(out).parallel.tensor == 2
    capsys.readouterr()
    assert main(["init", "--schema"]) == 0
    assert "properties" in json.loads(capsys.readouterr().out)


def test_render_quotes_every_string() -> None:
    text = render_toml(_full())
    assert 'name = "qwen \\"prod\\""' in text
    assert 'extra_args = ["--seed", "1", "--max-num-batched-tokens=8192"]' in text


def test_rewriting_a_deployment_keeps_the_users_comments_and_key_order(tmp_path: Path) -> None:
    """write_deployment over a file the user edited (`hangar init --force`, a test helper
    merging sections) edits it in place: comments, key order and untouched values stay."""
    path = tmp_path / "hangar.toml"
    write_deployment(_full(), path)
    text = path.read_text().replace("[serve]\n", "# tuned on the H100 box\n[serve]\n")
    text = text.replace("max_model_len = 32768\n", "")
    text = text.replace("enforce_eager = false\n", "enforce_eager = false\nmax_model_len = 32768  # 32K\n")
    path.write_text("# prod deployment, owner: infra\n" + text)

    changed = _full().model_copy(
        update={"serve": _full().serve.model_copy(update={"max_model_len": 16384})}
    )
    write_deployment(changed, path)

    text = path.read_text()
    assert text.startswith("# prod deployment, owner: infra\n")
    assert "# tuned on the H100 box\n[serve]\n" in text
    serve = text.split("[serve]\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(" = ")[0] for line in serve] == [
        "gpu_memory_utilization", "tool_call_parser", "enforce_eager", "max_model_len", "extra_args"
    ]
    assert "max_model_len = 16384  # 32K" in serve  # the new value, the user's comment
    assert load_deployment(path) == changed


def test_init_force_keeps_the_comments_of_the_file_it_replaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hangar.toml"
    argv = ["init", "--no-input", "--model", "Qwen/Qwen3-8B", "--gpu", "H100", "-o", str(out)]
    assert main([*argv, "--tp", "1"]) == 0
    out.write_text("# ours: do not delete\n" + out.read_text().replace(
        "[model]\n", "[model]  # the model we serve\n"))
    assert main([*argv, "--gpus", "2", "--tp", "2", "--force"]) == 0
    capsys.readouterr()
    text = out.read_text()
    assert text.startswith("# ours: do not delete\n") and "[model]  # the model we serve\n" in text
    assert load_deployment(out).parallel.tensor == 2
