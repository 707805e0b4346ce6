"""AMD Instinct profiles, the user's gpus.toml, and --gpu-memory/--compute-capability."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.errors import InputError, UsageError
from hangar.hardware import lookup
from hangar.hardware.catalog import load_catalog, merge_user_catalog
from hangar.hardware.detect import hardware_from_args


@pytest.mark.parametrize(
    ("name", "gfx", "cap", "gib"),
    [("MI300X", "gfx942", (9, 4), 191.98), ("MI325X", "gfx942", (9, 4), 255.98),
     ("MI355X", "gfx950", (9, 5), 287.98), ("MI250X", "gfx90a", (9, 0), 63.98)],
)
def test_amd_profiles(name: str, gfx: str, cap: tuple[int, int], gib: float) -> None:
    gpu = lookup(name)
    assert gpu.rocm and gpu.gfx == gfx and gpu.compute_capability == cap
    assert gpu.memory_gib == pytest.approx(gib, abs=0.01)
    assert gpu.fp4 == (gfx == "gfx950")


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "gpus.toml"
    path.write_text("schema_version = 1\n[[gpus]]\n" + body)
    return path


GOOD = ('id = "LAB-80"\nname = "NVIDIA Lab 80GB"\nmemory_gib = 80\n'
        'compute_capability = [9, 0]\ngeneration = "hopper"\ninterconnect = "pcie"\nsource = "smi"\n')


def test_user_catalog_adds_a_gpu(tmp_path: Path) -> None:
    cat = merge_user_catalog(load_catalog(), _write(tmp_path, GOOD))
    gpu = lookup("lab-80", cat)
    assert gpu.memory_bytes == 80 * 2**30 and gpu.compute_capability == (9, 0)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (GOOD.replace("memory_gib = 80", "memory_gib = 0"), "memory_gib"),
        (GOOD.replace('"hopper"', '"hoper"'), "generation"),
        (GOOD.replace('id = "LAB-80"', 'id = "H100-SXM-80GB"'), "duplicate id"),
        ("id = [", "invalid TOML"),
    ],
)
def test_user_catalog_errors_name_file_and_key(tmp_path: Path, body: str, needle: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(InputError) as err:
        merge_user_catalog(load_catalog(), path)
    assert str(path) in err.value.one_line() and needle in err.value.one_line()


def test_user_catalog_is_read_from_the_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hangar.hardware import catalog

    (tmp_path / "config").mkdir()
    _write(tmp_path / "config", GOOD)
    monkeypatch.setenv("HANGAR_HOME", str(tmp_path))
    catalog.default_catalog.cache_clear()
    try:
        assert lookup("LAB-80").id == "LAB-80"
    finally:
        catalog.default_catalog.cache_clear()


def test_command_line_gpu_facts() -> None:
    hw = hardware_from_args(None, 8, gpu_memory=80 * 2**30, compute_capability=(9, 0))
    assert hw.gpu.memory_bytes == 80 * 2**30 and hw.gpu.fp8 and hw.gpus_per_node == 8
    replaced = hardware_from_args("H100", 1, gpu_memory=94 * 2**30)
    assert replaced.gpu.memory_bytes == 94 * 2**30 and replaced.gpu.compute_capability == (9, 0)
    with pytest.raises(UsageError, match="both"):
        hardware_from_args(None, 1, gpu_memory=80 * 2**30)


def test_rocm_refuses_a_method_its_platform_lacks() -> None:
    from hangar.planning.api import make_plan

    layout = make_plan("Qwen/Qwen3-8B", gpu="MI300X", gpus=1, quantization="gptq_marlin").layouts[0]
    found = [f for f in layout.findings if f.id == "quant_not_on_rocm"]
    assert found and found[0].message == "gptq_marlin quantization is currently not supported in rocm."
    fp8 = make_plan("Qwen/Qwen3-32B-FP8", gpu="MI300X", gpus=1, tp=1).layouts[0]
    assert "quant_not_on_rocm" not in {f.id for f in fp8.findings}
