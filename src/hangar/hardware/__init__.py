"""Hardware facts: the GPU catalog (data), forgiving name lookup and NVML detection.

``pynvml`` is imported only inside ``detect_local_gpus``; importing this package loads the
catalog code (pydantic, PyYAML) but reads the data file only on first use.
"""

from hangar.hardware.catalog import (
    Catalog,
    default_catalog,
    from_nvml_name,
    list_gpus,
    load_catalog,
    lookup,
    normalize_gpu_name,
    suggestions,
)
from hangar.hardware.detect import (
    DetectedGpu,
    GpuProcess,
    detect_local_gpus,
    hardware_from_args,
    parse_cuda_visible_devices,
    select_visible,
)
from hangar.hardware.spec import GpuSpec, Hardware

__all__ = [
    "Catalog",
    "DetectedGpu",
    "GpuProcess",
    "GpuSpec",
    "Hardware",
    "default_catalog",
    "detect_local_gpus",
    "from_nvml_name",
    "hardware_from_args",
    "list_gpus",
    "load_catalog",
    "lookup",
    "normalize_gpu_name",
    "parse_cuda_visible_devices",
    "select_visible",
    "suggestions",
]
