"""Surface forms of GPU runtime and platform initialisation failures (data/runtime.yaml, with
the older forms of runtime.yaml, host.yaml, platform.yaml and config.yaml they sit beside),
written from the emitting sources (file and version in each signature's `sources`): every log
below is the source's format string with its variables filled in, not a line copied from a
report. Near misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text


def _count_warning(error: int, text: str) -> str:
    # PyTorch 2.6-2.10 c10/cuda/CUDAFunctions.cpp device_count_impl default case, warned by
    # device_count() as "CUDA initialization: %s" through torch/cuda/__init__.py
    return (
        "/usr/lib/python3.12/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA "
        "initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error "
        f"{error}: {text} (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)\n"
        "  return torch._C._cuda_getDeviceCount() > 0\n"
    )


def _cuda_error(text: str, kind: str = "RuntimeError") -> str:
    # PyTorch c10/cuda/CUDAException.h C10_CUDA_CHECK ("CUDA error: %s" + the debug hint)
    return (
        f"{kind}: CUDA error: {text}\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.\n"
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    )


def _vllm_debug(line: int, msg: str) -> str:
    # vLLM 0.8.5-0.11 vllm/platforms/__init__.py, the logger's default format
    return f"DEBUG 12-02 01:10:11 [__init__.py:{line}] {msg}\n"


CASES = [
    # cudaErrorNoDevice (100) through C10_CUDA_CHECK, cupy and the driver API's name
    (_cuda_error("no CUDA-capable device is detected"), "vllm_platform"),
    (
        (
            "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable "
            "device is detected\n"
        ),
        "vllm_platform",
    ),
    ("triton.runtime.errors: CUDA_ERROR_NO_DEVICE\n", "vllm_platform"),
    # HIP hipErrorNoDevice (ROCm 6.x), torch's hipified check
    ("RuntimeError: HIP error: no ROCm-capable device is detected\n", "vllm_platform"),
    ("hipErrorNoDevice\n", "vllm_platform"),
    # cudaErrorDevicesUnavailable (46) with nvidia-smi's compute mode in view
    (
        "    Compute Mode                          : Exclusive_Process\n"
        + _cuda_error(
            "CUDA-capable device(s) is/are busy or unavailable", "torch.AcceleratorError"
        ),
        "world_size_gpus",
    ),
    (_cuda_error("CUDA-capable device(s) is/are busy or unavailable"), "world_size_gpus"),
    # torch's device-count warning for error 34 (stub libcuda) and 36 (API needs a newer driver)
    # a stub first on the loader path: no driver loaded at all, outside the taxonomy
    (_count_warning(34, "CUDA driver is a stub library"), "other"),
    ("CUDA_ERROR_STUB_LIBRARY\n", "other"),
    (
        _count_warning(36, "API call is not supported in the installed CUDA driver"),
        "cuda_driver_mismatch",
    ),
    (_cuda_error("API call is not supported in the installed CUDA driver"), "cuda_driver_mismatch"),
    # torch device_count_impl's own cases: 3 (initialisation error), 999 (unknown), 35 (too old,
    # no driver), and the 803 / 804 / 802 strings in the default case
    (
        "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n",
        "cuda_driver_mismatch",
    ),
    (
        (
            "/usr/lib/python3.12/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA "
            "initialization: CUDA unknown error - this may be due to an incorrectly set up "
            "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. "
            "Setting the available devices to be zero.\n"
        ),
        "cuda_driver_mismatch",
    ),
    (
        (
            "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
            "version 11040). Please update your GPU driver by downloading and installing a new "
            "version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
            "https://pytorch.org to install a PyTorch version that has been compiled with your "
            "version of the CUDA driver.\n"
        ),
        "cuda_driver_mismatch",
    ),
    (
        (
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
        ),
        "cuda_driver_mismatch",
    ),
    (
        _count_warning(803, "system has unsupported display driver / cuda driver combination"),
        "cuda_driver_mismatch",
    ),
    (
        _count_warning(804, "forward compatibility was attempted on non supported HW"),
        "cuda_driver_mismatch",
    ),
    (_count_warning(802, "system not yet initialized"), "fabric_manager"),
    # NVML (nvml.h nvmlErrorString through nvidia-smi, pynvml and libnvidia-container)
    ("Failed to initialize NVML: Driver/library version mismatch\n", "cuda_driver_mismatch"),
    ("NVML library version: 570.124\n", "cuda_driver_mismatch"),
    ("Failed to initialize NVML: Driver Not Loaded\n", "cuda_driver_mismatch"),
    ("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded\n", "cuda_driver_mismatch"),
    (
        (
            "docker: Error response from daemon: failed to create task for container: OCI runtime "
            "create failed: nvidia-container-cli: initialization error: nvml error: driver not "
            "loaded: unknown.\n"
        ),
        "cuda_driver_mismatch",
    ),
    ("Failed to initialize NVML: Unknown Error\n", "cuda_driver_mismatch"),
    ("Failed to initialize NVML: Insufficient Permissions\n", "cuda_driver_mismatch"),
    ("pynvml.NVMLError_NoPermission: Insufficient Permissions\n", "cuda_driver_mismatch"),
    # vLLM's platform probe logging NVML's error (DEBUG)
    (
        _vllm_debug(52, "Checking if CUDA platform is available.")
        + _vllm_debug(76, "Exception happens when checking CUDA platform: Driver Not Loaded")
        + _vllm_debug(93, "CUDA platform is not available because: Driver Not Loaded"),
        "cuda_driver_mismatch",
    ),
    (
        _vllm_debug(93, "CUDA platform is not available because: Driver/library version mismatch"),
        "cuda_driver_mismatch",
    ),
    # HIP hipErrorInsufficientDriver (35)
    (
        "RuntimeError: HIP error: driver version is insufficient for runtime version\n",
        "cuda_driver_mismatch",
    ),
    ("hipErrorInsufficientDriver\n", "cuda_driver_mismatch"),
    # vLLM's platform detection and device checks (platform.yaml, config.yaml)
    (
        (
            "INFO 12-02 01:10:11 [__init__.py:239] No platform detected, vLLM is running on "
            "UnspecifiedPlatform\n"
        ),
        "vllm_platform",
    ),
    ("RuntimeError: No CUDA GPUs are available\n", "vllm_platform"),
    (
        (
            "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
            "8.0. Your Tesla V100-SXM2-16GB GPU has compute capability 7.0. You can use float16 "
            "instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.\n"
        ),
        "dtype_unsupported",
    ),
    # vLLM 0.10-0.11 vllm/platforms/xpu.py check_if_supports_dtype
    (
        (
            "ValueError: Intel Arc A770 have bfloat16 accuracy known issue. You can use float16 "
            "instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.\n"
        ),
        "dtype_unsupported",
    ),
    (
        (
            "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
            "capability: 80. Current capability: 75.\n"
        ),
        "quant_unsupported_gpu",
    ),
    (_cuda_error("invalid device ordinal"), "world_size_gpus"),
    # PyTorch 1.x THC wording of the same error
    (
        (
            "THCudaCheck FAIL file=/pytorch/torch/csrc/cuda/Module.cpp line=33 error=10 : invalid "
            "device ordinal\nRuntimeError: cuda runtime error (10) : invalid device ordinal at "
            "/pytorch/torch/csrc/cuda/Module.cpp:33\n"
        ),
        "world_size_gpus",
    ),
    # CUDA 10.x wording of cudaErrorDevicesUnavailable
    (_cuda_error("all CUDA-capable devices are busy or unavailable"), "world_size_gpus"),
    # NVML through nvidia-docker 1.x, and NVML_ERROR_FUNCTION_NOT_FOUND
    (
        "nvidia-docker | 2017/12/21 05:04:46 Error: nvml: Driver/library version mismatch\n",
        "cuda_driver_mismatch",
    ),
    ("Failed to initialize NVML: Function Not Found\n", "cuda_driver_mismatch"),
    ("RuntimeError: HIP error: invalid device ordinal\n", "world_size_gpus"),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


HEALTHY_CUDA = (
    _vllm_debug(36, "Checking if TPU platform is available.")
    + _vllm_debug(55, "TPU platform is not available because: No module named 'libtpu'")
    + _vllm_debug(61, "Checking if CUDA platform is available.")
    + _vllm_debug(84, "Confirmed CUDA platform is available.")
    + _vllm_debug(112, "Checking if ROCm platform is available.")
    + _vllm_debug(126, "ROCm platform is not available because: No module named 'amdsmi'")
    + "INFO 12-02 01:10:11 [__init__.py:239] Automatically detected platform cuda.\n"
)

NEAR_MISSES = [
    # a healthy CUDA start: the ROCm and TPU probes fail on purpose
    (HEALTHY_CUDA, "vllm_platform"),
    (HEALTHY_CUDA, "cuda_driver_mismatch"),
    # a CPU host where vLLM's CUDA probe finds no GPU (DEBUG) and the CPU platform is chosen
    (
        _vllm_debug(61, "Checking if CUDA platform is available.")
        + _vllm_debug(79, "CUDA platform is not available because no GPU is found.")
        + "INFO 12-02 01:10:11 [__init__.py:239] Automatically detected platform cpu.\n",
        "cuda_driver_mismatch",
    ),
    # a forked child: torch's init error is the fork, not the driver
    (
        (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method\n"
            "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu.\n"
        ),
        "cuda_driver_mismatch",
    ),
    # torch's warning that NVML cannot start, without its error: not named
    ("UserWarning: Can't initialize NVML\n", "cuda_driver_mismatch"),
    # nvidia-smi's lost-GPU handle error is a hardware fault (outside.yaml), not NVML's init
    (
        "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n",
        "cuda_driver_mismatch",
    ),
    # an out-of-memory at CUDA init is the memory, not the device count
    (_count_warning(2, "out of memory"), "vllm_platform"),
    # 802 is the fabric manager, not the driver
    (_count_warning(802, "system not yet initialized"), "cuda_driver_mismatch"),
    # a GPU that merely has no kernel for its architecture is the build, not the driver
    (_cuda_error("no kernel image is available for execution on the device"), "vllm_platform"),
    # nvidia-smi's healthy listing of a compute mode
    (
        (
            "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n"
            "| N/A   31C    P0             69W / 700W |      4MiB / 81559MiB |      0%   E. Process |\n"
        ),
        "world_size_gpus",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != cause for c in causes[:1]), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_busy_device_needs_the_compute_mode_to_pass_one_half() -> None:
    bare = diagnose_text(_cuda_error("CUDA-capable device(s) is/are busy or unavailable"))
    with_mode = diagnose_text(
        "    Compute Mode                          : Exclusive_Process\n"
        + _cuda_error("CUDA-capable device(s) is/are busy or unavailable")
    )
    assert bare.causes[0].cause == with_mode.causes[0].cause == "world_size_gpus"
    assert 0.3 <= bare.causes[0].confidence < 0.5 < with_mode.causes[0].confidence


def test_unknown_cuda_error_stays_near_the_floor_without_driver_lines() -> None:
    warning = (
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
        "incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after "
        "program start. Setting the available devices to be zero.\n"
    )
    plain = diagnose_text(warning).causes[0]
    with_uvm = diagnose_text("modprobe: FATAL: Module nvidia_uvm not found.\n" + warning).causes[0]
    assert plain.cause == with_uvm.cause == "cuda_driver_mismatch"
    assert plain.confidence < 0.4 < with_uvm.confidence
