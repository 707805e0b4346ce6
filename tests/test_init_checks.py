"""`hangar init` writes only files `hangar preflight` accepts (issue 13), through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.launch.conftest import make_fake_engine

from hangar.cli.main import main

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "torch_dtype": "bfloat16",
}


@pytest.fixture
def model(tmp_path: Path) -> Path:
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA))
    return folder


def test_init_nodes_2_gpus_8_then_preflight_passes(
    tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The shared --nodes default (1) overrode the file: "needs 16 GPUs ... resources give 8"."""
    engine = make_fake_engine(tmp_path / "engine")
    out = tmp_path / "my deploy" / "hangar.toml"
    out.parent.mkdir()
    args = ["--model", str(model), "--gpu", "H100", "--gpus", "8", "--nodes", "2"]
    assert (
        main(
            [
                "init",
                "--no-input",
                *args,
                "--target",
                "slurm",
                "--multinode",
                "mp",
                "--engine",
                str(engine),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    said = capsys.readouterr().out
    assert f"next: hangar preflight '{out}'" in said  # quoted: the path holds a space
    assert main(["preflight", str(out), "--json"]) == 0, capsys.readouterr()
    ids = {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert not any("layout" in i and "gpus" in i for i in ids), ids


def test_init_refuses_a_layout_vllm_rejects(
    tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hangar.toml"
    code = main(
        [
            "init",
            "--no-input",
            "--model",
            str(model),
            "--gpu",
            "H100",
            "--gpus",
            "4",
            "--tp",
            "3",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "divisible by tensor parallel size (3)" in err and "Fix:" in err


def test_init_refuses_an_unknown_gpu(
    tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hangar.toml"
    code = main(["init", "--no-input", "--model", str(model), "--gpu", "H999", "-o", str(out)])
    assert code == 2 and not out.exists()
    assert "unknown GPU 'H999'" in capsys.readouterr().err


def test_init_warns_about_a_model_no_source_knows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hangar.toml"
    code = main(
        [
            "init",
            "--no-input",
            "--model",
            "nobody/no-such-model-xyz",
            "--gpu",
            "H100",
            "-o",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0 and out.exists()
    assert err.startswith("warning: model 'nobody/no-such-model-xyz'"), err
