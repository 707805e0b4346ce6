"""Issue 13 review: a bad --hf-overrides / --rope-scaling value is blamed on the option
(exit 2), not on the packaged catalog's config.json (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.cli.main import main
from hangar.errors import BadValue, InputError
from hangar.models.sources import load_model


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"num_attention_heads": -1}, "num_attention_heads"),
        ({"rope_scaling": {"rope_type": "yarn", "factor": -1}}, "rope_scaling.factor"),
        ({"torch_dtype": "int3"}, "torch_dtype"),
    ],
)
def test_a_bad_override_names_the_option(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(BadValue) as err:
        load_model("Qwen/Qwen3-8B", overrides)
    text = err.value.one_line()
    assert f"--hf-overrides.{field}" in text
    assert "config.json" not in text
    assert err.value.exit_code == 2


def test_an_error_of_the_file_itself_still_names_the_file(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    with pytest.raises(InputError) as err:
        load_model(str(model), {"num_attention_heads": 8})
    assert not isinstance(err.value, BadValue)
    assert "config.json" in str(err.value)


@pytest.mark.parametrize(
    "option",
    [
        ["--hf-overrides", '{"num_attention_heads": -1}'],
        ["--rope-scaling", '{"rope_type": "yarn", "factor": -1}'],
    ],
)
def test_plan_exits_2_on_a_bad_override(
    option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpus", "1", *option])
    assert code == 2
    err = capsys.readouterr().err
    assert "--hf-overrides." in err
    assert "catalog" not in err
