"""Does an engine's torch CUDA build run on this host's NVIDIA driver?

NVML errors are translated here and nowhere else. A driver supports every CUDA
runtime up to the version ``nvmlSystemGetCudaDriverVersion`` reports; a newer
minor of the same major may still run through CUDA minor-version
compatibility (CUDA >= 11, without PTX JIT), a newer major never does.
"""

from __future__ import annotations

import functools
import re

from hangar.engines.model import DriverCompat, DriverInfo
from hangar.hardware.detect import nvml_text


def _cuda_string(encoded: int) -> str:
    # NVML encodes CUDA 12.4 as 12040.
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def _probe_nvml() -> DriverInfo:
    import pynvml  # type: ignore[import-untyped]  # lazy: only needed when a host is probed

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return DriverInfo(found=False, reason=f"no NVIDIA driver found ({exc})")
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = _cuda_string(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        names = tuple(nvml_text(pynvml.nvmlDeviceGetName(h)) for h in handles)
        caps = tuple("{}.{}".format(*pynvml.nvmlDeviceGetCudaComputeCapability(h)) for h in handles)
    except pynvml.NVMLError as exc:
        return DriverInfo(found=False, reason=f"NVML query failed ({exc})")
    finally:
        pynvml.nvmlShutdown()
    return DriverInfo(
        found=True,
        driver_version=nvml_text(driver),
        cuda_version=cuda,
        gpus=names,
        compute_capabilities=caps,
    )


@functools.lru_cache(maxsize=1)
def host_driver() -> DriverInfo:
    """The local driver, probed once per process."""
    return _probe_nvml()


def _major_minor(text: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


# Oldest CUDA toolkit that can build kernels for a GPU generation (NVIDIA CUDA release notes:
# sm_89/sm_90 arrived in 11.8, sm_100/sm_120 (Blackwell) in 12.8). A torch built with an older
# CUDA has no kernels for that GPU ("no kernel image is available for execution on the device").
_MIN_CUDA_FOR_CAPABILITY = ((10, (12, 8)), (9, (11, 8)), (8, (11, 0)))


def _gpu_misfit(built: tuple[int, int], capabilities: tuple[str, ...]) -> str | None:
    for cap in capabilities:
        parsed = _major_minor(cap)
        if parsed is None:
            continue
        needed = next(
            (need for major, need in _MIN_CUDA_FOR_CAPABILITY if parsed[0] >= major), None
        )
        if needed and built < needed:
            return (
                f"compute capability {cap} needs a torch built for CUDA >= {needed[0]}.{needed[1]}"
            )
    return None


def check(
    torch_cuda: str | None, driver: DriverInfo, torch_version: str | None = None
) -> DriverCompat:
    """Compare torch's CUDA build (``torch/version.py`` ``cuda``) with the driver and the GPUs."""
    if torch_version is None:
        return DriverCompat(status="unknown", message="torch is not installed in this engine")
    if not torch_cuda:
        return DriverCompat(
            status="cpu-build", message=f"torch {torch_version} has no CUDA build (CPU/ROCm)"
        )
    if not driver.found or not driver.cuda_version:
        return DriverCompat(
            status="no-driver",
            message=f"torch built for CUDA {torch_cuda}; no NVIDIA driver found on this host",
        )
    built, host = _major_minor(torch_cuda), _major_minor(driver.cuda_version)
    if built is None or host is None:
        return DriverCompat(
            status="unknown", message=f"cannot compare CUDA {torch_cuda} with {driver.cuda_version}"
        )
    where = f"torch built for CUDA {torch_cuda}, driver {driver.driver_version} supports up to {driver.cuda_version}"
    misfit = _gpu_misfit(built, driver.compute_capabilities)
    if misfit:
        return DriverCompat(status="incompatible", message=f"{where}, but {misfit}")
    if built <= host:
        return DriverCompat(status="ok", message=where)
    if built[0] == host[0]:
        return DriverCompat(
            status="minor-version",
            message=f"{where}: runs only through CUDA minor-version compatibility; "
            "upgrade the driver to be safe",
        )
    return DriverCompat(
        status="incompatible",
        message=f"{where}: upgrade the driver or pick a build for CUDA {host[0]}.x",
    )
