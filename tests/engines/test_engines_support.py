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
