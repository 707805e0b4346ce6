"""`support MODEL`: native / Transformers backend / unsupported per engine, and method A or B."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.engines import manage
from hangar.engines.support import card_images, card_parsers, support

from .conftest import Indexes

_CONFIG = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_hidden_layers": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": True,
}
_SERVE_CARD = """# Tiny
```bash
vllm serve org/tiny --enable-auto-tool-choice \\
    --tool-call-parser hermes --reasoning-parser qwen3
```
"""
_IMAGE_CARD = """# Tiny 3.5
```bash
docker run --gpus all vllm/vllm-openai:qwen3_5 org/tiny35 --tool-call-parser qwen3_xml
```
"""


def _model(root: Path, arch: str, model_type: str, card: str | None) -> Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(
        json.dumps({"architectures": [arch], "model_type": model_type, **_CONFIG})
    )
    if card:
        (root / "README.md").write_text(card)
    return root


@pytest.fixture(scope="module")
def engines_home(
    indexes: Indexes, uv_cache: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Four engines built once for this module (building is the slow part)."""
    home = tmp_path_factory.mktemp("support-home")
    base = Path(sys.executable)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HANGAR_HOME", str(home))
        mp.setenv("UV_CACHE_DIR", str(uv_cache))
        mp.setenv("HANGAR_VLLM_NIGHTLY_INDEX", indexes.nightly)
        mp.delenv("HANGAR_FAKE_IMPORT_LOG", raising=False)
        manage.add_venv(
            "old", manage.source_for(vllm="0.10.0", index_url=indexes.stable), base_python=base
        )
        manage.add_venv(
            "new", manage.source_for(vllm="0.20.0", index_url=indexes.stable), base_python=base
        )
        manage.add_venv(
            "nightly", manage.source_for(nightly=True, index_url=indexes.stable), base_python=base
        )
        manage.add_image("img", "vllm/vllm-openai:v0.20.0")
    return home


@pytest.fixture
def engines(engines_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANGAR_HOME", str(engines_home))


def test_card_parsing() -> None:
    assert card_parsers(_SERVE_CARD) == {"tool_call_parser": "hermes", "reasoning_parser": "qwen3"}
    assert card_images(_IMAGE_CARD) == ("vllm/vllm-openai:qwen3_5",)
    assert card_parsers("pip install vllm --tool-call-parser nope") == {}  # not a serve line


def test_serve_only_card_points_to_method_a(engines: None, tmp_path: Path) -> None:
    model = _model(tmp_path / "tiny", "Qwen3ForCausalLM", "qwen3", _SERVE_CARD)
    report = support(str(model))
    rows = {r.engine: r for r in report.engines}
    assert rows["old"].architecture_supported is False and rows["old"].model_type_known is False
    assert rows["old"].recommendation == "A"
    assert rows["old"].parsers["reasoning_parser"].present is False
    assert rows["old"].next_step == "hangar engines add nightly --nightly"
    assert rows["new"].architecture_supported == "native" and rows["new"].recommendation == "stay"
    assert rows["img"].recommendation == "unknown" and rows["img"].architecture_supported is None
    assert report.best_engine in ("new", "nightly")


def test_image_card_points_to_method_b(engines: None, tmp_path: Path) -> None:
    model = _model(
        tmp_path / "tiny35", "Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe", _IMAGE_CARD
    )
    rows = {r.engine: r for r in support(str(model), ["old", "new", "nightly"]).engines}
    assert rows["old"].architecture_supported is False and rows["old"].recommendation == "B"
    assert rows["old"].next_step == "hangar engines add qwen3_5 --image vllm/vllm-openai:qwen3_5"
    # not in 0.20's registry, but its transformers knows qwen3_5_moe: Transformers backend
    assert rows["new"].architecture_supported == "transformers" and rows["new"].model_type_known
    assert (
        rows["new"].parsers["tool_call_parser"].present is False
        and rows["new"].recommendation == "B"
    )
    assert (
        rows["nightly"].architecture_supported == "native"
        and rows["nightly"].recommendation == "stay"
    )


def test_catalog_meta_parsers_and_cli_json(
    engines: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["support", "Qwen/Qwen3.5-35B-A3B", "--engine", "nightly", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["model"] == "Qwen/Qwen3.5-35B-A3B"
    assert data["recommended_parsers"] == {
        "tool_call_parser": "qwen3_coder",
        "reasoning_parser": "qwen3",
    }
    (row,) = data["engines"]
    assert set(row) >= {
        "engine",
        "vllm_version",
        "architecture_supported",
        "model_type_known",
        "parsers",
        "recommendation",
    }
    assert row["architecture_supported"] == "native" and row["recommendation"] == "stay"
    assert row["parsers"]["tool_call_parser"] == {"name": "qwen3_coder", "present": True}


def test_cli_table_runs(engines: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path / "tiny", "Qwen3ForCausalLM", "qwen3", _SERVE_CARD)
    assert main(["support", str(model)]) == 0
    out = capsys.readouterr().out
    assert "hangar engines add nightly --nightly" in out and "native" in out


# ---- what the card asks beyond the architecture (engines/card.py) ----

_CARD_TEMPLATE = """# Tiny
Released with vLLM support on day one.

```shell
{install}
```

```bash
vllm serve org/tiny \\
    --enable-auto-tool-choice --tool-call-parser {parser} {flags}
```
"""


def _card(install: str = "", parser: str = "hermes", flags: str = "") -> str:
    return _CARD_TEMPLATE.format(install=install, parser=parser, flags=flags)


def test_card_reading_keeps_to_commands() -> None:
    from hangar.engines.card import read_card

    text = (
        "Works since vllm>=0.1.0 (prose, not an install line).\n"
        "uv pip install -U 'vllm>=0.21.0' --pre --extra-index-url https://wheels.vllm.ai/nightly\n"
        'pip install "transformers>=4.57.0"\n'
        "docker run --gpus all --ipc=host -p 8000:8000 vllm/vllm-openai:v0.21.0 \\\n"
        "  --model org/tiny --chat-template ./tpl.jinja --async-scheduling\n"
        "apptainer exec --nv docker://nvcr.io/nvidia/vllm:25.09-py3 vllm serve org/tiny\n"
    )
    asks = read_card(text)
    assert asks.vllm_min == "0.21.0" and not asks.vllm_exact and asks.nightly
    assert asks.transformers_min == "4.57.0"
    assert "--async-scheduling" in asks.flags and "--chat-template" in asks.flags
    assert "--gpus" not in asks.flags and "--ipc" not in asks.flags
    assert asks.chat_template == "./tpl.jinja"
    assert asks.images == ("vllm/vllm-openai:v0.21.0", "nvcr.io/nvidia/vllm:25.09-py3")
    source = read_card("pip install git+https://github.com/vllm-project/vllm.git")
    assert source.vllm_from_source and source.vllm_min is None


def test_a_parser_the_stable_engine_lacks_never_runs_as_is(engines: None, tmp_path: Path) -> None:
    model = _model(tmp_path / "m", "Qwen3ForCausalLM", "qwen3", _card(parser="brand_new_xml"))
    row = support(str(model), ["new"]).engines[0]
    assert row.architecture_supported == "native"
    assert row.recommendation == "A" and row.verdict.startswith("needs a nightly")
    assert "tool_call_parser 'brand_new_xml'" in row.reasons


@pytest.mark.parametrize(
    ("install", "flags", "recommendation", "step", "reason"),
    [
        ('pip install "vllm>=0.21.0"', "", "A", "--vllm 0.21.0", "vllm>=0.21.0 (has 0.20.0)"),
        ("pip install git+https://github.com/vllm-project/vllm.git", "", "source", "git+", "git"),
        ("", "--some-flag-from-next-week", "A", "--nightly", "flag --some-flag-from-next-week"),
        (
            "uv pip install vllm --pre --extra-index-url https://wheels.vllm.ai/nightly",
            "",
            "A",
            "--nightly",
            "a nightly vLLM",
        ),
    ],
)
def test_card_requirements_decide_the_path(
    engines: None,
    tmp_path: Path,
    install: str,
    flags: str,
    recommendation: str,
    step: str,
    reason: str,
) -> None:
    model = _model(tmp_path / "m", "Qwen3ForCausalLM", "qwen3", _card(install, flags=flags))
    row = support(str(model), ["new"]).engines[0]
    assert row.recommendation == recommendation, row.reason
    assert row.next_step and step in row.next_step
    assert any(reason in r for r in row.reasons), row.reasons


def test_catalog_recipe_image_and_minimum_version(
    engines: None, capsys: pytest.CaptureFixture[str]
) -> None:
    # MiniMax-M2.5's vLLM recipe (meta.yaml cites recipes@8959cf6): parsers minimax_m2,
    # image vllm/vllm-openai:v0.20.2, min_vllm_version 0.20.2
    assert main(["support", "MiniMaxAI/MiniMax-M2.5", "--engine", "new", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["engines"]
    assert row["recommendation"] == "B" and row["verdict"] == "needs the image the card names"
    assert row["next_step"] == "hangar engines add v0.20.2 --image vllm/vllm-openai:v0.20.2"
    assert "vllm>=0.20.2 (has 0.20.0)" in row["reasons"]
    assert {"recommendation", "verdict", "reasons", "next_step", "parsers"} <= set(row)
