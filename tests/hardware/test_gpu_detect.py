"""NVML detection: the real GPU-less path, CUDA_VISIBLE_DEVICES semantics, --gpu/--gpus."""

from __future__ import annotations

import pynvml
import pytest
from nvml_fake import MIB, FakeDevice, FakeNvml, h100

from hangar.errors import NoGpuDetected, UnknownGpu, UsageError
from hangar.hardware.detect import (
    detect_local_gpus,
    hardware_from_args,
    parse_cuda_visible_devices,
    select_visible,
)


def _nvml_present() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


needs_no_nvml = pytest.mark.skipif(_nvml_present(), reason="this host has an NVIDIA driver")


# ---------------------------------------------------------------- the real thing, no GPU here


@needs_no_nvml
def test_real_detection_without_driver_names_the_reason() -> None:
    with pytest.raises(NoGpuDetected) as info:
        detect_local_gpus(environ={})
    line = info.value.one_line()
    assert "NVML library not found: no NVIDIA driver on this machine" in line
    assert "--gpu" in line and "\n" not in line
    assert isinstance(info.value.__cause__, pynvml.NVMLError_LibraryNotFound)


@needs_no_nvml
def test_hardware_without_gpu_flag_needs_detection() -> None:
    with pytest.raises(NoGpuDetected, match="NVML library not found") as info:
        hardware_from_args(None, 8, 1, environ={})
    assert info.value.hint == "pass the target hardware, e.g. --gpu H100 --gpus 8"


# ---------------------------------------------------------------- CUDA_VISIBLE_DEVICES parsing


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", ()),
        ("0", (0,)),
        ("2,0", (2, 0)),
        (" 1 , 3 ", (1, 3)),
        ("1gpu2,2ampere", (1, 2)),  # strtoul semantics, as CUDA and torch
        ("+2", (2,)),
        ("0,0", ()),  # a repeated ordinal hides every device
        ("3,-1,2", (3,)),  # a negative ordinal ends the list
        ("0,abc,1", (0,)),  # so does an invalid one
        ("abc", ()),
        ("GPU-8b60,GPU-42be", ("GPU-8b60", "GPU-42be")),
        ("GPU-8b60,1", ("GPU-8b60",)),
        ("GPU-8b60,GPU-8b60", ()),
        ("MIG-0f1e", ("MIG-0f1e",)),
    ],
)
def test_parse_cuda_visible_devices(value: str | None, expected: object) -> None:
    assert parse_cuda_visible_devices(value) == expected


UUIDS = ["GPU-aaaa1111", "GPU-aaaa2222", "GPU-bbbb3333", "GPU-cccc4444"]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        (None, [0, 1, 2, 3]),
        ((), []),
        ((3, 1), [3, 1]),
        ((1, 7, 2), [1]),  # an ordinal past the last device ends the list
        (("GPU-bbbb", "GPU-aaaa1"), [2, 0]),  # unique UUID prefixes
        (("GPU-cccc4444", "GPU-aaaa"), [3]),  # an ambiguous prefix ends the list
        (("GPU-ffff",), []),
    ],
)
def test_select_visible(visible: object, expected: list[int]) -> None:
    assert select_visible(visible, UUIDS) == expected  # type: ignore[arg-type]


def test_mig_instances_are_refused_with_a_reason() -> None:
    with pytest.raises(NoGpuDetected, match="MIG instances"):
        select_visible(("MIG-0f1e",), UUIDS)


# ---------------------------------------------------------------- detection logic, fake NVML


def test_detects_visible_devices_in_cuda_order() -> None:
    nvml = FakeNvml([h100(0), h100(1, used_mib=1024, processes=[(4242, 1024 * MIB), (7, None)])])
    gpus = detect_local_gpus({"CUDA_VISIBLE_DEVICES": "1"}, nvml)
    assert len(gpus) == 1
    gpu = gpus[0]
    assert (gpu.index, gpu.nvml_index, gpu.name) == (0, 1, "NVIDIA H100 80GB HBM3")
    assert gpu.memory_total_bytes == 81559 * MIB
    assert gpu.memory_free_bytes == (81559 - 1024) * MIB
    assert gpu.compute_capability == (9, 0) and gpu.driver_version == "580.95.05"
    assert [(p.pid, p.used_bytes) for p in gpu.processes] == [(4242, 1024 * MIB), (7, None)]
    assert not nvml.initialized  # the session was shut down


def test_uuid_prefixes_select_devices() -> None:
    nvml = FakeNvml([h100(0), h100(1), h100(2)])
    gpus = detect_local_gpus({"CUDA_VISIBLE_DEVICES": f"{h100(2).uuid[:12]},{h100(0).uuid}"}, nvml)
    assert [(g.index, g.nvml_index) for g in gpus] == [(0, 2), (1, 0)]


def test_empty_cuda_visible_devices_hides_everything() -> None:
    with pytest.raises(NoGpuDetected, match="CUDA_VISIBLE_DEVICES='' leaves no GPU visible"):
        detect_local_gpus({"CUDA_VISIBLE_DEVICES": ""}, FakeNvml([h100(0)]))


def test_no_devices_at_all() -> None:
    with pytest.raises(NoGpuDetected, match="NVML reports no NVIDIA GPU"):
        detect_local_gpus({}, FakeNvml([]))


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "NVML library not found: no NVIDIA driver"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "NVIDIA driver not loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "no permission"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML error: Unknown Error"),
    ],
)
def test_nvml_init_failures_become_no_gpu_detected(code: int, reason: str) -> None:
    nvml = FakeNvml([h100(0)], init_error=code)
    with pytest.raises(NoGpuDetected, match=reason):
        detect_local_gpus({}, nvml)
    assert nvml.init_calls == 1


def test_unified_memory_device_without_nvml_memory() -> None:
    spark = FakeDevice("NVIDIA GB10", "GPU-5a5a", None, (12, 1))
    gpu = detect_local_gpus({}, FakeNvml([spark]))[0]
    assert gpu.memory_total_bytes is None and gpu.memory_free_bytes is None
    hardware = hardware_from_args(None, None, 1, environ={}, nvml=FakeNvml([spark]))
    assert hardware.gpu.id == "GB10" and hardware.gpu.unified_memory


# ---------------------------------------------------------------- hardware_from_args


def test_catalog_hardware_from_flags() -> None:
    hardware = hardware_from_args("h100", 8, 2)
    assert (hardware.gpu.id, hardware.gpus_per_node, hardware.nodes) == ("H100-SXM-80GB", 8, 2)
    assert hardware.total_gpus == 16 and hardware.origin == "catalog"


def test_gpu_without_count_means_one() -> None:
    assert hardware_from_args("L4", None).total_gpus == 1


def test_unknown_gpu_flag() -> None:
    with pytest.raises(UnknownGpu):
        hardware_from_args("H1000", 1)


@pytest.mark.parametrize(("gpus", "nodes", "flag"), [(0, 1, "--gpus"), (1, 0, "--nodes")])
def test_counts_must_be_positive(gpus: int, nodes: int, flag: str) -> None:
    with pytest.raises(UsageError, match=flag):
        hardware_from_args("H100", gpus, nodes)


def test_detected_hardware_uses_all_visible_gpus() -> None:
    nvml = FakeNvml([h100(i) for i in range(4)])
    hardware = hardware_from_args(None, None, 1, environ={"CUDA_VISIBLE_DEVICES": "0,1"}, nvml=nvml)
    assert (hardware.gpu.id, hardware.gpus_per_node, hardware.origin) == (
        "H100-SXM-80GB",
        2,
        "detected",
    )


def test_detected_hardware_with_fewer_gpus_requested() -> None:
    hardware = hardware_from_args(
        None, 2, 1, environ={}, nvml=FakeNvml([h100(i) for i in range(4)])
    )
    assert hardware.gpus_per_node == 2


def test_detected_hardware_with_more_gpus_than_visible() -> None:
    with pytest.raises(UsageError, match="--gpus 8 but only 2 GPU") as info:
        hardware_from_args(None, 8, 1, environ={}, nvml=FakeNvml([h100(0), h100(1)]))
    assert "--gpu H100-SXM-80GB --gpus 8" in (info.value.hint or "")


def test_detected_unknown_gpu_is_synthesised() -> None:
    a10g = FakeDevice("NVIDIA A10G", "GPU-a10g", 23028, (8, 6))
    hardware = hardware_from_args(None, None, 1, environ={}, nvml=FakeNvml([a10g]))
    assert hardware.gpu.id == "detected:NVIDIA A10G"
    assert hardware.gpu.memory_bytes == 23028 * MIB
