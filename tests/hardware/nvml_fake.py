"""A behavioural stand-in for the pynvml module, for detection logic on GPU-less machines.

It keeps state (initialised or not, devices, processes) and fails the way NVML does, raising
pynvml's own exception classes, so `detect_local_gpus(nvml=...)` runs its real error
translation. Only the functions Hangar calls exist; anything else raises AttributeError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

MIB = 2**20


@dataclass
class FakeDevice:
    name: str
    uuid: str
    total_mib: int | None  # None: NVML answers NOT_SUPPORTED (GB10)
    capability: tuple[int, int]
    used_mib: int = 0
    processes: list[tuple[int, int | None]] = field(default_factory=list)


class FakeNvml:
    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVMLError_NoPermission = pynvml.NVMLError_NoPermission
    NVML_ERROR_LIBRARY_NOT_FOUND = pynvml.NVML_ERROR_LIBRARY_NOT_FOUND
    NVML_ERROR_DRIVER_NOT_LOADED = pynvml.NVML_ERROR_DRIVER_NOT_LOADED
    NVML_ERROR_NO_PERMISSION = pynvml.NVML_ERROR_NO_PERMISSION
    NVML_ERROR_GPU_IS_LOST = pynvml.NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_FUNCTION_NOT_FOUND = pynvml.NVML_ERROR_FUNCTION_NOT_FOUND

    def __init__(
        self, devices: list[FakeDevice], *, init_error: int | None = None, driver: str = "580.95.05"
    ) -> None:
        self.devices = devices
        self.init_error = init_error
        self.driver = driver
        self.initialized = False
        self.init_calls = 0

    def _require_init(self) -> None:
        if not self.initialized:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_UNINITIALIZED)

    def nvmlInit(self) -> None:
        self.init_calls += 1
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self._require_init()
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self._require_init()
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        self._require_init()
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeDevice:
        self._require_init()
        if not 0 <= index < len(self.devices):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return self.devices[index]

    def nvmlDeviceGetUUID(self, handle: FakeDevice) -> str:
        return handle.uuid

    def nvmlDeviceGetName(self, handle: FakeDevice) -> bytes:
        return handle.name.encode()  # old nvidia-ml-py returned bytes; Hangar accepts both

    def nvmlDeviceGetMemoryInfo(self, handle: FakeDevice) -> Any:
        if handle.total_mib is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        total, used = handle.total_mib * MIB, handle.used_mib * MIB
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetCudaComputeCapability(self, handle: FakeDevice) -> tuple[int, int]:
        return handle.capability

    def nvmlDeviceGetComputeRunningProcesses(self, handle: FakeDevice) -> list[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in handle.processes]


def h100(i: int, **kw: Any) -> FakeDevice:
    uuid = f"GPU-{i:08x}-aaaa-bbbb-cccc-0000000000{i:02d}"
    return FakeDevice("NVIDIA H100 80GB HBM3", uuid, 81559, (9, 0), **kw)
