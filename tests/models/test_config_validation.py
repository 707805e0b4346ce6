"""Impossible config values are refused with one line naming the file and the real field."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from hangar.errors import InputError
from hangar.models.config import parse_config

QWEN3 = json.loads(
    (Path(__file__).parents[2] / "src/hangar/models/catalog/Qwen__Qwen3-8B/config.json").read_text()
)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_hidden_layers", -32),
        ("num_key_value_heads", 0),
        ("architectures", []),
        ("torch_dtype", "int7"),
        ("hidden_size", -4096),
        ("num_attention_heads", 0),
        ("vocab_size", 0),
        ("intermediate_size", -1),
    ],
)
def test_garbage_field_is_blamed_by_name(field: str, value: object) -> None:
    cfg = copy.deepcopy(QWEN3)
    cfg[field] = value
    with pytest.raises(InputError) as err:
        parse_config(cfg, model_id="t", source="local", path="/m/config.json")
    line = err.value.one_line()
    assert f"field '{field}'" in line and "/m/config.json" in line and "\n" not in line


def test_non_numeric_rope_factor_is_an_input_error() -> None:
    cfg = copy.deepcopy(QWEN3)
    cfg["rope_scaling"] = {"rope_type": "yarn", "factor": "four",
                           "original_max_position_embeddings": 32768}
    with pytest.raises(InputError, match=r"rope_scaling\.factor"):
        parse_config(cfg, model_id="t", source="local")
