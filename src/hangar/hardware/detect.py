"""Local GPU detection through NVML (nvidia-ml-py), seen the way a CUDA process would see it.

vLLM reads device count, name, capability and total memory from NVML without initialising
CUDA, honouring CUDA_VISIBLE_DEVICES (vllm/platforms/cuda.py, NvmlCudaPlatform; the count comes from
torch.cuda._device_count_nvml). We do the same, so a plan made on this host describes what
`vllm serve` will find here. NVML failures are translated to NoGpuDetected in exactly one place
(`detect_local_gpus`). ``pynvml`` is imported only when detecting.

CUDA orders devices fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, while NVML uses PCI
order; on the homogeneous nodes vLLM targets the two agree, and vLLM itself warns to set
PCI_BUS_ID when they might not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar.errors import NoGpuDetected, UsageError
from hangar.hardware.catalog import from_nvml_name, lookup
from hangar.hardware.spec import Hardware

VisibleDevices = tuple[int, ...] | tuple[str, ...] | None

# NVML return codes -> the reason shown to the user. Names are pynvml constants.
_NVML_REASONS = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "NVML library not found: no NVIDIA driver on this machine",
    "NVML_ERROR_DRIVER_NOT_LOADED": "NVIDIA driver not loaded (is the nvidia kernel module up?)",
    "NVML_ERROR_NO_PERMISSION": "no permission to query the NVIDIA driver through NVML",
    "NVML_ERROR_GPU_IS_LOST": "a GPU has fallen off the bus (see dmesg for Xid 79)",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "the NVML library is older than nvidia-ml-py expects",
}


class GpuProcess(BaseModel):
    """A process holding memory on a GPU; ``used_bytes`` is None when NVML cannot tell."""

    model_config = ConfigDict(frozen=True)

    pid: int
    used_bytes: int | None


class DetectedGpu(BaseModel):
    """One GPU as this process would see it; memory is None where NVML cannot report it (GB10)."""

    model_config = ConfigDict(frozen=True)

    index: int  # CUDA ordinal after CUDA_VISIBLE_DEVICES
    nvml_index: int  # physical NVML index
    uuid: str
    name: str
    memory_total_bytes: int | None
    memory_used_bytes: int | None
    memory_free_bytes: int | None
    compute_capability: tuple[int, int]
    driver_version: str
    processes: tuple[GpuProcess, ...] = ()


# ---------------------------------------------------------------- CUDA_VISIBLE_DEVICES


def parse_cuda_visible_devices(value: str | None) -> VisibleDevices:
    """Parse CUDA_VISIBLE_DEVICES as the CUDA runtime does; None means "all devices".

    Mirrors torch.cuda._parse_visible_devices: entries are ordinals (strtoul-like, so
    ``1gpu`` reads as 1), or ``GPU-``/``MIG-`` UUID prefixes when the value starts with one;
    the list stops at the first invalid or negative entry, and a repeated entry hides every
    device. An empty string hides every device.
    """
    if value is None:
        return None
    for prefix in ("GPU-", "MIG-"):
        if value.startswith(prefix):
            return _parse_uuid_list(value, prefix)
    return _parse_ordinal_list(value)


def _parse_uuid_list(value: str, prefix: str) -> tuple[str, ...]:
    found: list[str] = []
    for elem in value.split(","):
        elem = elem.strip()
        if elem in found:
            return ()
        if not elem.startswith(prefix):
            break
        found.append(elem)
    return tuple(found)


def _parse_ordinal_list(value: str) -> tuple[int, ...]:
    found: list[int] = []
    for elem in value.split(","):
        ordinal = _leading_int(elem.strip())
        if ordinal in found:
            return ()
        if ordinal < 0:
            break
        found.append(ordinal)
    return tuple(found)


def _leading_int(text: str) -> int:
    """The integer ``text`` starts with (like C strtoul), or -1 when it starts with none."""
    sign, rest = (text[:1], text[1:]) if text[:1] in ("+", "-") else ("", text)
    count = len(rest) - len(rest.lstrip("0123456789"))
    return int(sign + rest[:count]) if count else -1


def select_visible(visible: VisibleDevices, uuids: Sequence[str]) -> list[int]:
    """NVML indices of the devices a CUDA process sees, in CUDA ordinal order.

    ``uuids`` are all NVML devices' UUIDs in NVML order. Ordinals past the last device end
    the list, as do UUID prefixes matching no device or several (torch._device_count_nvml).
    """
    if visible is None:
        return list(range(len(uuids)))
    picked: list[int] = []
    for entry in visible:
        match = _match_entry(entry, uuids)
        if match is None:
            break
        picked.append(match)
    return picked


def _match_entry(entry: int | str, uuids: Sequence[str]) -> int | None:
    if isinstance(entry, int):
        return entry if entry < len(uuids) else None
    if entry.startswith("MIG-"):
        raise NoGpuDetected(
            "CUDA_VISIBLE_DEVICES names MIG instances; Hangar cannot size MIG slices, "
            "so pass the slice's memory via --gpu"
        )
    hits = [i for i, uuid in enumerate(uuids) if uuid.startswith(entry)]
    return hits[0] if len(hits) == 1 else None


# ---------------------------------------------------------------- NVML


def detect_local_gpus(
    environ: Mapping[str, str] | None = None, nvml: Any | None = None
) -> list[DetectedGpu]:
    """The GPUs visible to a CUDA process started with ``environ`` (default: os.environ).

    ``nvml`` is the pynvml module, or an object with the same functions (a test seam);
    by default ``pynvml`` is imported here. Raises NoGpuDetected with the reason.
    """
    env = os.environ if environ is None else environ
    visible = parse_cuda_visible_devices(env.get("CUDA_VISIBLE_DEVICES"))
    module = nvml if nvml is not None else _import_pynvml()
    try:
        with _nvml_session(module):
            gpus = _read_visible(module, visible)
    except module.NVMLError as exc:  # the one translation point for NVML failures
        raise NoGpuDetected(_nvml_reason(module, exc)) from exc
    if not gpus:
        raise NoGpuDetected(_nothing_visible_reason(env.get("CUDA_VISIBLE_DEVICES")))
    return gpus


def _import_pynvml() -> Any:
    try:
        import pynvml  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise NoGpuDetected("nvidia-ml-py (pynvml) is not installed") from exc
    return pynvml


@contextmanager
def _nvml_session(nvml: Any) -> Iterator[None]:
    nvml.nvmlInit()
    try:
        yield
    finally:
        nvml.nvmlShutdown()


def _nvml_reason(nvml: Any, exc: Any) -> str:
    for constant, reason in _NVML_REASONS.items():
        if getattr(exc, "value", None) == getattr(nvml, constant, object()):
            return reason
    return f"NVML error: {exc}"


def _nothing_visible_reason(cuda_visible: str | None) -> str:
    if cuda_visible is None:
        return "NVML reports no NVIDIA GPU"
    return f"CUDA_VISIBLE_DEVICES={cuda_visible!r} leaves no GPU visible"


def _read_visible(nvml: Any, visible: VisibleDevices) -> list[DetectedGpu]:
    count = nvml.nvmlDeviceGetCount()
    uuids = [nvml_text(nvml.nvmlDeviceGetUUID(_handle(nvml, i))) for i in range(count)]
    driver = nvml_text(nvml.nvmlSystemGetDriverVersion())
    picked = select_visible(visible, uuids)
    return [
        _read_device(nvml, physical, ordinal, driver) for ordinal, physical in enumerate(picked)
    ]


def _handle(nvml: Any, nvml_index: int) -> Any:
    return nvml.nvmlDeviceGetHandleByIndex(nvml_index)


def _read_device(nvml: Any, nvml_index: int, ordinal: int, driver: str) -> DetectedGpu:
    handle = _handle(nvml, nvml_index)
    memory = _optional(nvml, lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    return DetectedGpu(
        index=ordinal,
        nvml_index=nvml_index,
        uuid=nvml_text(nvml.nvmlDeviceGetUUID(handle)),
        name=nvml_text(nvml.nvmlDeviceGetName(handle)),
        memory_total_bytes=getattr(memory, "total", None),
        memory_used_bytes=getattr(memory, "used", None),
        memory_free_bytes=getattr(memory, "free", None),
        compute_capability=(int(major), int(minor)),
        driver_version=driver,
        processes=_processes(nvml, handle),
    )


def _processes(nvml: Any, handle: Any) -> tuple[GpuProcess, ...]:
    # Processes in other PID namespaces (containers) are invisible; that is not an error.
    found = _optional(nvml, lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle)) or []
    return tuple(GpuProcess(pid=p.pid, used_bytes=_used_bytes(p)) for p in found)


def _used_bytes(process: Any) -> int | None:
    used = getattr(process, "usedGpuMemory", None)
    return int(used) if isinstance(used, int) else None


def _optional(nvml: Any, read: Any) -> Any:
    """A per-device fact NVML may not offer (GB10 memory, process lists without permission)."""
    try:
        return read()
    except (nvml.NVMLError_NotSupported, nvml.NVMLError_NoPermission):
        return None


def nvml_text(value: str | bytes) -> str:
    # nvidia-ml-py < 11.5 returned bytes; newer versions return str.
    return value.decode() if isinstance(value, bytes) else value


# ---------------------------------------------------------------- --gpu / --gpus / --nodes


def hardware_from_args(
    gpu: str | None,
    gpus: int | None,
    nodes: int = 1,
    environ: Mapping[str, str] | None = None,
    nvml: Any | None = None,
    gpu_memory: int | None = None,
    compute_capability: tuple[int, int] | None = None,
) -> Hardware:
    """The target hardware from CLI flags: the catalog when --gpu is given, else this host.

    ``--gpu`` without ``--gpus`` means one GPU per node. Without ``--gpu`` the local GPUs are
    detected (device 0's kind, as vLLM reads device 0) and ``--gpus`` may use fewer of them.
    Raises NoGpuDetected (pass --gpu/--gpus) or UsageError.
    """
    _check_counts(gpus, nodes)
    if gpu_memory is not None or compute_capability is not None:
        return _custom_hardware(gpu, gpus, nodes, gpu_memory, compute_capability)
    if gpu is not None:
        return Hardware(gpu=lookup(gpu), gpus_per_node=gpus or 1, nodes=nodes)
    detected = detect_local_gpus(environ, nvml)
    first = detected[0]
    spec = from_nvml_name(first.name, first.memory_total_bytes, first.compute_capability)
    if gpus is not None and gpus > len(detected):
        raise UsageError(
            f"--gpus {gpus} but only {len(detected)} GPU(s) are visible here",
            hint=f"pass --gpu {spec.id} --gpus {gpus} to plan for another host",
        )
    return Hardware(gpu=spec, gpus_per_node=gpus or len(detected), nodes=nodes, origin="detected")


def _custom_hardware(
    gpu: str | None,
    gpus: int | None,
    nodes: int,
    memory: int | None,
    capability: tuple[int, int] | None,
) -> Hardware:
    """A GPU the catalog lacks: both facts, or a catalog entry with one of them replaced."""
    from hangar.hardware.catalog import custom_gpu

    base = lookup(gpu) if gpu is not None else None
    if base is None and (memory is None or capability is None):
        raise UsageError(
            "a GPU outside the catalog needs both --gpu-memory and --compute-capability",
            hint="--gpu-memory 80GiB --compute-capability 9.0 --gpus 8 (or add it to gpus.toml)",
        )
    spec = custom_gpu(
        memory or (base.memory_bytes if base else 0),
        capability or (base.compute_capability if base else (0, 0)),
        base,
    )
    return Hardware(gpu=spec, gpus_per_node=gpus or 1, nodes=nodes)


def _check_counts(gpus: int | None, nodes: int) -> None:
    if gpus is not None and gpus < 1:
        raise UsageError(f"--gpus must be at least 1, got {gpus}", hint="--gpus 8")
    if nodes < 1:
        raise UsageError(f"--nodes must be at least 1, got {nodes}", hint="--nodes 2")
