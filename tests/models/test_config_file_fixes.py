"""Issue 13 review: config.json errors that name a real fix."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from hangar.errors import InputError
from hangar.models.config_file import read_fix
from hangar.models.sources import load_model


@pytest.mark.parametrize(
    ("text", "kind"), [("[1, 2, 3]", "list"), ('"x"', "string"), ("7", "number")]
)
def test_a_config_that_is_no_object_has_a_fix(tmp_path: Path, text: str, kind: str) -> None:
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_model(str(tmp_path))
    assert f"top level must be a JSON object, not a {kind}" in str(err.value)
    assert err.value.hint and "config.json" in err.value.hint


def test_a_config_json_that_is_a_directory_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "m" / "config.json"
    folder.mkdir(parents=True)
    with pytest.raises(InputError) as err:
        load_model(str(folder))
    assert "is a directory, not a JSON file" in str(err.value)
    assert "no config.json in this directory" not in str(err.value)
    assert err.value.hint and str(tmp_path / "m") in err.value.hint


def test_read_fix_by_errno(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    assert read_fix(path, OSError(errno.EACCES, "denied")).startswith(f"chmod u+r {path}")
    assert "is a directory" in read_fix(path, OSError(errno.EISDIR, "dir"))
