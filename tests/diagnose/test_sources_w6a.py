"""Root causes outside the taxonomy (cause `other`, data/outside.yaml), written from the emitting
sources (file and version in each signature's `sources`): every log below is the source's format
string with its variables filled in, not a line copied from a report. Near misses share words
with a signature but must not name it: healthy lines, and look-alikes that another cause owns."""

from __future__ import annotations

import pytest
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/usr/local/lib/python3.12/dist-packages"


def _ray(level: str, where: str, message: str) -> str:
    # Ray src/ray/util/logging.cc: spdlog '[%Y-%m-%d %H:%M:%S,%e %L %P %t] ' + '<file>:<line>: '
    return f"[2025-03-01 10:00:00,123 {level} 4321 4400] {where}: {message}\n"


def _xid(xid: int, message: str, where: str = "PCI:0000:2b:00") -> str:
    # kernel_rc.c krcReportXid, as dmesg/journalctl show it
    return f"[171657.328] NVRM: Xid ({where}): {xid}, pid=4105, name=python3, {message}\n"


CASES = [
    # PyTorch c10/util/Exception.h TORCH_INTERNAL_ASSERT
    (
        (
            'RuntimeError: !handles_.empty() INTERNAL ASSERT FAILED at "/pytorch/aten/src/ATen/cuda/'
            'CUDAGraph.cpp":172, please report a bug to PyTorch. Expected a capture\n'
        ),
        "torch_internal_assert_failed",
    ),
    (
        (
            'RuntimeError: block->stream == stream INTERNAL ASSERT FAILED at "/pytorch/c10/cuda/'
            'CUDACachingAllocator.cpp":1120, please report a bug to PyTorch. \n'
        ),
        "torch_internal_assert_failed",
    ),
    # Ray 2.54 logging.h RAY_CHECK_WITH_DISPLAY
    (
        _ray(
            "C",
            "core_worker.cc:812",
            " Congratulations! This means you discovered a bug in Ray that made the system "
            "behave in an unexpected way. Please report this issue at https://github.com/"
            "ray-project/ray/issues for extra credit points and it'll get fixed ASAP! Check "
            "failed: status.ok() Bad status: IOError",
        ),
        "ray_check_failed",
    ),
    # older RAY_CHECK: " Check failed: " #condition " ", in a raylet's log
    (
        "(raylet) "
        + _ray("C", "node_manager.cc:1234", " Check failed: it != leased_workers_.end() ")
        + "*** StackTrace Information ***\n",
        "ray_check_failed",
    ),
    # torch 2.7+ InductorError, torch 2.6 BackendCompilerFailed + LoweringException
    (
        (
            "torch._inductor.exc.InductorError: LoweringException: AssertionError: \n"
            "  target: aten.index_put_.default\n  args[0]: TensorBox(StorageBox(...))\n"
        ),
        "inductor_compile_failed",
    ),
    (
        (
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "LoweringException: AssertionError: \n  target: aten.mm.default\n"
        ),
        "inductor_compile_failed",
    ),
    # NVIDIA kernel driver Xid lines whose resolution is a GPU reset or service
    (_xid(79, "GPU has fallen off the bus."), "nvrm_xid_hardware_fault"),
    (
        _xid(
            48,
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.",
        ),
        "nvrm_xid_hardware_fault",
    ),
    (
        _xid(94, "Contained: SM (0x1). RST: No, D-RST: No", "PCI:0000:3b:00 GPU-I:01 GPU-CI:00"),
        "nvrm_xid_hardware_fault",
    ),
    (
        _xid(119, "Timeout after 6s of waiting for RPC response from GPU0 GSP!"),
        "nvrm_xid_hardware_fault",
    ),
    # old drivers: no "PCI:" in the parenthesis; the separate bus line
    ("NVRM: Xid (0000:01:00): 79, GPU has fallen off the bus.\n", "nvrm_xid_hardware_fault"),
    ("NVRM: GPU at 0000:01:00.0 has fallen off the bus.\n", "nvrm_xid_hardware_fault"),
    # the Xid with what the processes print after it
    (
        _xid(79, "GPU has fallen off the bus.")
        + "RuntimeError: CUDA error: unknown error\n"
        + "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
        "c10d/NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
        "NCCL version 2.21.5\n",
        "nvrm_xid_hardware_fault",
    ),
    # CUDA cudaErrorECCUncorrectable (torch C10_CUDA_CHECK, Triton's driver, the driver enum)
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered\n", "gpu_uncorrectable_ecc"),
    (
        (
            "torch.AcceleratorError: CUDA error: uncorrectable ECC error encountered\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n"
        ),
        "gpu_uncorrectable_ecc",
    ),
    (
        "RuntimeError: Triton Error [CUDA]: uncorrectable ECC error encountered\n",
        "gpu_uncorrectable_ecc",
    ),
    ("cuLaunchKernel failed: CUDA_ERROR_ECC_UNCORRECTABLE\n", "gpu_uncorrectable_ecc"),
    # NVML_ERROR_GPU_IS_LOST (pynvml class, nvidia-smi's device-handle line)
    ("pynvml.NVMLError_GpuIsLost: GPU is lost\n", "nvml_gpu_is_lost"),
    (
        "Unable to determine the device handle for GPU0000:25:00.0: Unknown Error\n",
        "nvml_gpu_is_lost",
    ),
    (
        "Unable to determine the device handle for GPU3: 0000:5F:00.0: Unknown Error\n",
        "nvml_gpu_is_lost",
    ),
    # Xid 13/31/43: the application's kernel faulted
    (
        _xid(
            31,
            "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted "
            "@ 0x7f12_34560000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
        )
        + "RuntimeError: CUDA error: an illegal memory access was encountered\n",
        "nvrm_xid_application_fault",
    ),
    (
        _xid(13, "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address"),
        "nvrm_xid_application_fault",
    ),
    # ROCR runtime.cc VMFaultHandler; CLR rocdevice.cpp callbackQueue
    (
        (
            "Memory access fault by GPU node-2 (Agent handle: 0x55d1c2f0a8e0) on address "
            "0x7f4067e00000. Reason: Page not present or supervisor privilege.\n"
        ),
        "rocm_gpu_memory_fault",
    ),
    (
        (
            ":0:rocdevice.cpp            :2984: 2787027630305 us: [pid:688936 tid:0x7dfc4e600640] "
            "Callback: Queue 0x7dfbe0300000 aborting with error : "
            "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
            "beyond the largest legal address. code: 0x29\n"
        ),
        "rocm_gpu_memory_fault",
    ),
    (
        (
            "Callback: Queue 0x7f00 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL "
            "operation resulted in a hardware exception. code: 0x1016\n"
        ),
        "rocm_gpu_memory_fault",
    ),
    # CPython pwdmodule.c through getpass.getuser (3.12), and 3.13's OSError
    (
        _traceback(
            [
                (f"{SITE}/torch/_inductor/runtime/cache_dir_utils.py", 23, "default_cache_dir"),
                ("/usr/lib/python3.12/getpass.py", 169, "getuser"),
            ],
            "KeyError: 'getpwuid(): uid not found: 1000680000'",
        ),
        "uid_without_passwd_entry",
    ),
    (
        _traceback(
            [
                (f"{SITE}/triton/runtime/cache.py", 40, "default_cache_dir"),
                ("/usr/lib/python3.13/getpass.py", 173, "getuser"),
            ],
            "OSError: No username set in the environment",
        ),
        "uid_without_passwd_entry",
    ),
    # EROFS through CPython, Rust's io::Error, coreutils
    (
        "OSError: [Errno 30] Read-only file system: '/root/.cache/huggingface/hub'\n",
        "cache_on_read_only_file_system",
    ),
    (
        "PermissionError: [Errno 30] Read-only file system: '/models/llama/.locks'\n",
        "cache_on_read_only_file_system",
    ),
    (
        "Exception: Read-only file system (os error 30)\n",
        "cache_on_read_only_file_system",
    ),
    (
        "mkdir: cannot create directory '/home/vllm/.triton': Read-only file system\n",
        "cache_on_read_only_file_system",
    ),
]


@pytest.mark.parametrize(("log", "signature"), CASES)
def test_source_form_names_its_signature(log: str, signature: str) -> None:
    causes = diagnose_text(log).causes
    assert causes, log
    assert causes[0].signature == signature, (log, [(c.signature, c.confidence) for c in causes])
    assert causes[0].confidence >= 0.3


NVLINK_CASES = [
    "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\n",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE: uncorrectable NVLink error detected during the execution\n",
    _xid(74, "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
]


@pytest.mark.parametrize("log", NVLINK_CASES)
def test_an_nvlink_fault_is_a_single_node_collective_cause(log: str) -> None:
    top = diagnose_text(log).top
    assert top is not None
    assert (top.cause, top.signature) == ("nccl_p2p", "nvlink_uncorrectable_error")


def test_hardware_faults_are_confident_and_self_checks_are_not() -> None:
    hw = diagnose_text(_xid(95, "Uncontained: FBHUB. RST: Yes, D-RST: No")).top
    assert hw is not None and hw.confidence >= 0.8
    check = diagnose_text(CASES[0][0]).top
    assert check is not None and 0.3 <= check.confidence < 0.5


def test_a_read_only_cache_is_surer_than_another_read_only_path() -> None:
    cache = diagnose_text(CASES[-4][0]).top
    model = diagnose_text(CASES[-3][0]).top
    assert cache is not None and model is not None
    assert cache.confidence > model.confidence >= 0.5


# (log, signature it must not be named by)
NEAR_MISSES = [
    # libdrm amdgpu_asic_id.c: a missing marketing-name table, harmless
    ("/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n", None),
    # healthy driver lines
    ("NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  550.54.15\n", None),
    (
        (
            "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on "
            "http://0.0.0.0:8000\nINFO:     Application startup complete.\n"
        ),
        None,
    ),
    # Xid 63: a row-remapping event, informational on its own
    (
        _xid(63, "Row Remapper: New row (0x3a1f) marked for remapping, reset gpu to activate."),
        "nvrm_xid_hardware_fault",
    ),
    # nvidia-smi "Not Found": a passthrough or driver question, not a lost GPU
    (
        "Unable to determine the device handle for GPU 0000:01:00.0: Not Found\n",
        "nvml_gpu_is_lost",
    ),
    # glog's CHECK (another library), not Ray's
    (
        "F1202 10:00:00.000000  1234 tensor_util.cc:12] Check failed: a.size() == b.size()\n",
        "ray_check_failed",
    ),
    # a Ray INFO line of the same file
    (_ray("I", "core_worker.cc:500", "Constructing CoreWorker. worker_id: 01"), None),
    # a kernel remount message, not a write that failed
    ("EXT4-fs (nvme0n1p1): Remounting filesystem read-only\n", "cache_on_read_only_file_system"),
    # the address-space limit's form of an HSA failure
    (
        (
            "Callback: Queue 0x7f00 aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The "
            "runtime failed to allocate the necessary resources. code: 0x1008\n"
        ),
        "rocm_gpu_memory_fault",
    ),
]


@pytest.mark.parametrize(("log", "signature"), NEAR_MISSES)
def test_near_miss_is_not_named_by_the_signature(log: str, signature: str | None) -> None:
    causes = diagnose_text(log).causes
    if signature is None:
        assert causes == (), [(c.signature, c.confidence) for c in causes]
    else:
        assert all(c.signature != signature for c in causes), [
            (c.signature, c.confidence) for c in causes
        ]


# a look-alike that a taxonomy cause owns: that cause comes first
OWNED = [
    (
        (
            "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
            '"/pytorch/aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. '
            "device=1, num_gpus=1\n"
        ),
        "world_size_gpus",
    ),
    (
        (
            "PermissionError: [Errno 13] Permission denied: '/home/shared/.cache/huggingface/hub/"
            ".locks/models--Qwen--Qwen2.5-7B/abc.lock'\n"
        ),
        "tmp_shared",
    ),
    (
        (
            "torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler found "
            "in torch._inductor.config.cpp.cxx: (None, 'g++')\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "torch._inductor.exc.InductorError: OSError: [Errno 28] No space left on device\n",
        "tmp_disk_full",
    ),
]


@pytest.mark.parametrize(("log", "cause"), OWNED)
def test_a_form_another_cause_owns_keeps_that_cause(log: str, cause: str) -> None:
    top = diagnose_text(log).top
    assert top is not None
    assert top.cause == cause, [
        (c.cause, c.signature, c.confidence) for c in diagnose_text(log).causes
    ]
