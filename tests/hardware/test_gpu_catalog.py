"""The packaged GPU catalog: contents, forgiving lookup, validation errors, NVML mapping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hangar.errors import DataError, UnknownGpu
from hangar.hardware.catalog import (
    DATA_FILE,
    default_catalog,
    from_nvml_name,
    list_gpus,
    load_catalog,
    lookup,
    normalize_gpu_name,
)

MIB = 2**20

ALIASES = [
    ("H100", "H100-SXM-80GB"),
    ("H100-80GB", "H100-SXM-80GB"),
    ("h100-80gb", "H100-SXM-80GB"),
    ("h100_sxm", "H100-SXM-80GB"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM-80GB"),
    ("H100 PCIe", "H100-PCIE-80GB"),
    ("h100 nvl", "H100-NVL-94GB"),
    ("H200", "H200-141GB"),
    ("h20", "H20-96GB"),
    ("GH200", "GH200-96GB"),
    ("NVIDIA GH200 480GB", "GH200-96GB"),
    ("NVIDIA GH200 144G HBM3e", "GH200-144GB"),
    ("A100", "A100-SXM-80GB"),
    ("a100-40gb", "A100-SXM-40GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"),
    ("A10", "A10"),
    ("a30", "A30"),
    ("L4", "L4"),
    ("l40s", "L40S"),
    ("L40", "L40"),
    ("V100", "V100-SXM2-32GB"),
    ("Tesla V100-SXM2-16GB", "V100-SXM2-16GB"),
    ("T4", "T4"),
    ("Tesla T4", "T4"),
    ("RTX-3090", "RTX-3090"),
    ("RTX-4090", "RTX-4090"),
    ("rtx4090", "RTX-4090"),
    ("NVIDIA GeForce RTX 4090", "RTX-4090"),
    ("rtx 5090", "RTX-5090"),
    ("RTX 6000 Ada", "RTX-6000-ADA"),
    ("rtx pro 6000", "RTX-PRO-6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000"),
    ("A6000", "RTX-A6000"),
    ("b200", "B200"),
    ("B300", "B300"),
    ("NVIDIA B300 SXM6 AC", "B300"),
    ("gb200", "GB200"),
    ("GB10", "GB10"),
    ("DGX Spark", "GB10"),
    ("spark", "GB10"),
]

REQUIRED_IDS = {gpu_id for _, gpu_id in ALIASES}


@pytest.mark.parametrize(("name", "expected"), ALIASES)
def test_alias_forms_resolve(name: str, expected: str) -> None:
    assert lookup(name).id == expected


def test_normalisation_drops_vendor_words_and_punctuation() -> None:
    assert normalize_gpu_name("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert normalize_gpu_name(" rtx_40-90 ") == "rtx4090"
    assert normalize_gpu_name("Tesla V100-SXM2-32GB") == "v100sxm232gb"


def test_catalog_holds_every_required_gpu() -> None:
    ids = {gpu.id for gpu in list_gpus()}
    assert REQUIRED_IDS <= ids


@pytest.mark.parametrize(
    ("gpu_id", "mib"),
    [
        ("H100-SXM-80GB", 81559),
        ("A100-SXM-80GB", 81920),
        ("H200-141GB", 143771),
        ("H100-NVL-94GB", 95830),
        ("L40S", 46068),
        ("T4", 15360),
        ("B200", 183359),
        ("RTX-4090", 24564),
    ],
)
def test_memory_is_the_nvml_total_not_marketing_gb(gpu_id: str, mib: int) -> None:
    assert lookup(gpu_id).memory_bytes == mib * MIB


def test_h100_total_matches_the_nvml_byte_count() -> None:
    assert lookup("H100").memory_bytes == 85520809984


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda gpu: gpu.id)
def test_every_entry_is_consistent(gpu: Any) -> None:
    assert gpu.memory_bytes % MIB == 0
    assert gpu.source.strip()
    assert lookup(gpu.name).id == gpu.id  # the NVML name itself resolves
    assert from_nvml_name(gpu.name, gpu.memory_bytes) == gpu


def test_capability_driven_flags() -> None:
    assert lookup("V100").bf16 is False
    assert lookup("T4").bf16 is False
    assert lookup("L4").fp8 and not lookup("L4").fp4
    assert lookup("A100").fp8 is False
    assert lookup("B200").fp4 and lookup("RTX PRO 6000").fp4
    assert lookup("GB10").compute_capability == (12, 1)
    assert lookup("B300").compute_capability == (10, 3)
    assert lookup("RTX PRO 6000").compute_capability == (12, 0)


def test_unified_memory_and_consumer_flags() -> None:
    assert {g.id for g in list_gpus() if g.unified_memory} == {
        "GH200-96GB",
        "GH200-144GB",
        "GB200",
        "GB10",
    }
    assert lookup("rtx4090").consumer and lookup("RTX PRO 6000").consumer
    assert not lookup("H100").consumer


def test_default_catalog_is_loaded_once() -> None:
    assert default_catalog() is default_catalog()


# ---------------------------------------------------------------- unknown and ambiguous names


@pytest.mark.parametrize(
    ("name", "suggested"),
    [("H1000", "H100-SXM-80GB"), ("rtx409", "RTX-4090"), ("a100-sxm-80", "A100-SXM-80GB")],
)
def test_unknown_name_is_one_line_with_a_suggestion(name: str, suggested: str) -> None:
    with pytest.raises(UnknownGpu) as info:
        lookup(name)
    line = info.value.one_line()
    assert "\n" not in line
    assert f"unknown GPU '{name}'" in line
    assert suggested in line
    assert "hangar gpus list" in line


def test_ambiguous_name_lists_the_candidates() -> None:
    with pytest.raises(UnknownGpu) as info:
        lookup("rtx")
    hint = info.value.hint or ""
    for gpu_id in ("RTX-3090", "RTX-4090", "RTX-5090", "RTX-PRO-6000"):
        assert gpu_id in hint


def test_unique_prefix_is_suggested_not_taken() -> None:
    with pytest.raises(UnknownGpu) as info:
        lookup("h100p")
    assert "H100-PCIE-80GB" in (info.value.hint or "")


def test_amd_gpu_is_known_as_rocm() -> None:
    assert lookup("MI300X").rocm and lookup("mi300x").gfx == "gfx942"


# ---------------------------------------------------------------- from_nvml_name


def test_from_nvml_name_uses_detected_total_when_it_differs() -> None:
    ecc_on = 46068 * MIB  # RTX 6000 Ada with ECC enabled
    spec = from_nvml_name("NVIDIA RTX 6000 Ada Generation", ecc_on)
    assert spec.id == "RTX-6000-ADA"
    assert spec.memory_bytes == ecc_on
    assert "Detected NVML total" in spec.source


def test_from_nvml_name_keeps_catalog_total_when_nvml_has_none() -> None:
    assert from_nvml_name("NVIDIA GB10", None).memory_bytes == lookup("GB10").memory_bytes


def test_from_nvml_name_never_guesses_a_family_default() -> None:
    spec = from_nvml_name("NVIDIA A100", 40960 * MIB, (8, 0))
    assert spec.id == "detected:NVIDIA A100"


def test_unknown_device_is_synthesised_from_nvml_facts() -> None:
    spec = from_nvml_name("NVIDIA A10G", 23028 * MIB, (8, 6))
    assert spec.id == "detected:NVIDIA A10G"
    assert (spec.generation, spec.interconnect, spec.bf16, spec.fp8) == (
        "ampere",
        "pcie",
        True,
        False,
    )
    blackwell = from_nvml_name("NVIDIA GeForce RTX 5080", 16303 * MIB, (12, 0))
    assert blackwell.generation == "blackwell" and blackwell.fp4 and blackwell.consumer


def test_unknown_device_without_capability_is_an_error() -> None:
    with pytest.raises(UnknownGpu):
        from_nvml_name("NVIDIA A10G", 23028 * MIB)


# ---------------------------------------------------------------- validation of the data file


def _packaged() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(DATA_FILE.read_text(encoding="utf-8"))
    return data


def _entry(data: dict[str, Any], gpu_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(e for e in data["gpus"] if e["id"] == gpu_id)
    return entry


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _load_error(tmp_path: Path, data: Any) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(DataError) as info:
        load_catalog(path)
    message = info.value.one_line()
    assert str(path) in message and "\n" not in message
    return message


def test_unmodified_copy_loads(tmp_path: Path) -> None:
    assert len(load_catalog(_write(tmp_path, _packaged())).gpus) == len(list_gpus())


def test_schema_version_is_checked_first(tmp_path: Path) -> None:
    data = _packaged()
    data["schema_version"] = 2
    data["gpus"] = "not even a list"
    assert "key 'schema_version': expected 1, got 2" in _load_error(tmp_path, data)


def test_missing_key_names_entry_and_key(tmp_path: Path) -> None:
    data = _packaged()
    del _entry(data, "L4")["memory_bytes"]
    message = _load_error(tmp_path, data)
    assert "entry 'L4': key 'memory_bytes'" in message


def test_misspelt_key_names_entry_and_key(tmp_path: Path) -> None:
    data = _packaged()
    _entry(data, "T4")["memroy_bytes"] = 1
    assert "entry 'T4': key 'memroy_bytes'" in _load_error(tmp_path, data)


def test_bad_value_names_entry_and_key(tmp_path: Path) -> None:
    data = _packaged()
    _entry(data, "B200")["compute_capability"] = [10, "x"]
    assert "entry 'B200': key 'compute_capability.1'" in _load_error(tmp_path, data)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("generation", "kepler", "key 'generation': must be one of"),
        ("interconnect", "infiniband", "key 'interconnect'"),
        ("fp8", True, "key 'fp8': fp8 needs capability >= 89"),
        ("bf16", True, "key 'bf16'"),
        ("source", " ", "key 'source'"),
    ],
)
def test_semantic_errors_name_entry_and_key(
    tmp_path: Path, key: str, value: Any, expected: str
) -> None:
    data = _packaged()
    _entry(data, "V100-SXM2-32GB")[key] = value
    message = _load_error(tmp_path, data)
    assert "entry 'V100-SXM2-32GB'" in message and expected in message


def test_nvlink_without_bandwidth_is_rejected(tmp_path: Path) -> None:
    data = _packaged()
    del _entry(data, "B300")["nvlink_gbps"]
    assert "entry 'B300': key 'nvlink_gbps'" in _load_error(tmp_path, data)


def test_alias_shared_by_two_entries_is_rejected(tmp_path: Path) -> None:
    data = _packaged()
    _entry(data, "L40")["aliases"].append("L40S")
    message = _load_error(tmp_path, data)
    assert "entry 'L40': key 'aliases'" in message and "entry 'L40S'" in message


def test_duplicate_id_is_rejected(tmp_path: Path) -> None:
    data = _packaged()
    data["gpus"].append(dict(_entry(data, "A10")))
    assert "entry 'A10': key 'id': duplicate id" in _load_error(tmp_path, data)


def test_family_default_to_unknown_entry_is_rejected(tmp_path: Path) -> None:
    data = _packaged()
    data["family_defaults"]["h100"] = "H100-SXM-96GB"
    assert "key 'family_defaults.h100': names unknown entry" in _load_error(tmp_path, data)


def test_entry_without_id_is_named_by_position(tmp_path: Path) -> None:
    data = _packaged()
    del data["gpus"][2]["id"]
    assert "entry #3: key 'id'" in _load_error(tmp_path, data)


def test_invalid_yaml_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "gpus.yaml"
    path.write_text("schema_version: 1\ngpus: [unclosed\n", encoding="utf-8")
    with pytest.raises(DataError, match="invalid YAML"):
        load_catalog(path)
    with pytest.raises(DataError, match="cannot read"):
        load_catalog(tmp_path / "absent.yaml")


def test_importing_the_package_does_not_import_pynvml() -> None:
    code = "import sys, hangar.hardware; hangar.hardware.lookup('H100'); print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
