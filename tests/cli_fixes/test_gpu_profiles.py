"""Issue 13 review, defect 4: a gpus.toml profile is checked as strictly as the packaged
catalog (printable ids, real ranges), and `hangar gpus` prints every value sanitized."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.errors import InputError
from hangar.hardware import lookup
from hangar.hardware.catalog import load_catalog, merge_user_catalog

GOOD = (
    'id = "LAB-80"\nname = "NVIDIA Lab 80GB"\nmemory_gib = 80\n'
    'compute_capability = [9, 0]\ngeneration = "hopper"\ninterconnect = "pcie"\nsource = "smi"\n'
)


def _fails(tmp_path: Path, text: str) -> str:
    path = tmp_path / "gpus.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        merge_user_catalog(load_catalog(), path)
    return err.value.one_line()


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('id = "LAB-80"', 'id = "MY\\u001b]0;pwn\\u0007GPU"', "key 'id'"),
        ('id = "LAB-80"', 'id = "LAB 80"', "key 'id'"),
        ('name = "NVIDIA Lab 80GB"', 'name = "NVIDIA\\u001b[2J"', "key 'name'"),
        ("memory_gib = 80", "memory_gib = 1e30", "key 'memory_gib'"),
        ("memory_gib = 80", "memory_gib = 0.5", "key 'memory_gib'"),
        ("compute_capability = [9, 0]", "compute_capability = [99, 0]", "compute_capability"),
        ("compute_capability = [9, 0]", "compute_capability = [9, 42]", "compute_capability"),
    ],
)
def test_user_profile_values_are_checked(tmp_path: Path, old: str, new: str, key: str) -> None:
    line = _fails(tmp_path, "schema_version = 1\n[[gpus]]\n" + GOOD.replace(old, new))
    assert key in line and "\x1b" not in line


def test_missing_schema_version_says_what_to_add(tmp_path: Path) -> None:
    line = _fails(tmp_path, "[[gpus]]\n" + GOOD)
    assert "add schema_version = 1" in line
    assert "hangar gpus list" not in line  # it fails on this same file


def test_good_profile_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "gpus.toml"
    path.write_text("schema_version = 1\n[[gpus]]\n" + GOOD.replace("LAB-80", "lab_80.v2"))
    assert lookup("lab_80.v2", merge_user_catalog(load_catalog(), path)).memory_gib == 80


def test_gpus_table_and_details_are_sanitized(capsys: pytest.CaptureFixture[str]) -> None:
    from hangar.cli import gpus

    # a spec that skipped validation (as a future loader might): the printer is the last guard
    spec = lookup("H100").model_copy(
        update={"id": "MY\x1b]0;pwn\x07GPU", "name": "N\x1b[2J", "source": "[red]x"}
    )
    assert all("\x1b" not in cell for cell in gpus._row(spec))
    gpus._print_details(spec)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "MY\\x1b]0;pwn\\x07GPU" in out
