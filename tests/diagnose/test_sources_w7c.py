"""Surface forms of the non-CUDA platforms (data/platforms.yaml): ROCm (HIP, rocBLAS/hipBLASLt,
RCCL), Ascend (torch_npu, CANN, HCCL), Intel XPU (IPEX, oneAPI), TPU (torch_xla, libtpu, JAX) and
AWS Neuron (NRT), written from the emitting sources (file and version in each signature's
`sources`): every log below is the source's format string with its variables filled in, not a
line copied from a report. Near misses share words with a signature but must not name its cause
(healthy starts on those platforms, look-alikes that belong to another cause)."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/usr/lib/python3.10/site-packages"
ASCEND_ERR = (
    "[ERROR] 2026-12-02-01:10:11 (PID:4242, Device:0, RankID:-1) ERR00100 PTA call acl api failed"
)


def _nrt(level: str, where: str, msg: str) -> str:
    # Neuron runtime console format: "<date time> <pid>:<tid> <LEVEL>  <MOD>:<function>  <msg>"
    return f"2026-Dec-02 01:10:11.0323 28078:28078 {level}   {where:<40}{msg}\n"


CASES = [
    # --- ROCm ------------------------------------------------------------------------------------
    # CLR hip_code_object.cpp: no code object for the device's ISA (AMD_LOG_LEVEL >= 1)
    (
        (
            ":1:hip_code_object.cpp       :624 : 0012345678 us: hipErrorNoBinaryForGpu: Unable to find "
            "code object for all current devices!\n"
            ":1:hip_code_object.cpp       :626 : 0012345678 us:   Devices:\n"
            ":1:hip_code_object.cpp       :629 : 0012345678 us:     amdgcn-amd-amdhsa--gfx1032 - [Not Found]\n"
        ),
        "other",
    ),
    # torch's hipified check on a gfx1031 card (rocminfo's ISA name in the same paste)
    (
        (
            "  Name:                    gfx1031\n"
            "RuntimeError: HIP error: invalid device function\n"
            "HIP kernel errors might be asynchronously reported at some other API call, so the "
            "stacktrace below might be incorrect.\n"
        ),
        "other",
    ),
    # hip_fatbin.cpp: the bundle has no code object for this ISA
    (
        (
            ":1:hip_fatbin.cpp            :267 : 0000123456 us: Cannot find CO in the bundle "
            "/opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_hip.so for ISA: "
            "amdgcn-amd-amdhsa--gfx1103\n"
        ),
        "other",
    ),
    # rocALUTION-style CHECK: "HIP error: %s" with no ISA in view
    (
        "HIP error: invalid device function\nFile: /src/base/hip/hip_vector.cpp; line: 845\n",
        "other",
    ),
    # torch c10/hip/HIPFunctions.cpp device_count_impl warning
    (
        (
            "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: HIP "
            "initialization: Unexpected error from hipGetDeviceCount(). Did you run some cuda functions "
            "before calling NumHipDevices() that might have already set an error? Error 101: "
            "hipErrorInvalidDevice (Triggered internally at ../c10/hip/HIPFunctions.cpp:110.)\n"
        ),
        "other",
    ),
    # rocBLAS tensile_host.cpp, separate-arch build
    (
        (
            "\nrocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such "
            "file or directory for GPU arch : gfx1031\n List of available TensileLibrary Files : \n"
            '"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat"\n'
        ),
        "other",
    ),
    # hipBLASLt tensile_host.cpp
    (
        (
            "\nrocblaslt error: Cannot read /opt/venv/lib/python3.10/site-packages/torch/lib/hipblaslt/"
            "library/TensileLibrary_lazy_gfx1151.dat: No such file or directory\n"
        ),
        "other",
    ),
    # rocBLAS GetDeviceCount
    (
        "\nrocBLAS error: Could not initialize Tensile host: No devices found\n",
        "vllm_platform",
    ),
    # RCCL checkHsaEnvSetting, fatal form, and the engine that dies after it
    (
        (
            "[FATAL ERROR]: HSA_NO_SCRATCH_RECLAIM=1 must be set to avoid performance\n"
            "degradation with the current HIP configuration.\n"
            "(Runtime version:70253211, GPU Firmware version:14)\n"
            "[FATAL ERROR]: Please set HSA_NO_SCRATCH_RECLAIM=1 and rerun.\n"
            "RuntimeError: Engine core initialization failed. See root cause above.\n"
        ),
        "other",
    ),
    # --- Ascend ----------------------------------------------------------------------------------
    # glibc's loader on the driver library (set_env.sh not sourced)
    (
        _traceback(
            [(f"{SITE}/torch_npu/__init__.py", 42, "<module>")],
            "ImportError: libascend_hal.so: cannot open shared object file: No such file or directory",
        ),
        "other",
    ),
    # torch_npu/__init__.py appended hint for libhccl.so
    (
        _traceback(
            [(f"{SITE}/torch_npu/__init__.py", 42, "<module>")],
            "ImportError: libhccl.so: cannot open shared object file: No such file or directory. "
            "Please check that the cann package is installed. Please run 'source set_env.sh' in "
            "the CANN installation path.",
        ),
        "other",
    ),
    # torch_npu imported from its source checkout
    (
        _traceback(
            [
                ("/home/u/src/pytorch/torch_npu/__init__.py", 14, "<module>"),
                ("/home/u/src/pytorch/torch_npu/npu/utils.py", 11, "<module>"),
            ],
            "ModuleNotFoundError: No module named 'torch_npu._C'",
        ),
        "other",
    ),
    # NPU_CHECK_ERROR: 500001 right after NumPy 2 was installed
    (
        "Successfully installed numpy-2.1.3\n"
        + _traceback(
            [(f"{SITE}/torch_npu/npu/utils.py", 64, "set_device")],
            "RuntimeError: SetPrecisionMode:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:155 "
            "NPU function error: at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, "
            "precision_mode), error code is 500001",
        )
        + ASCEND_ERR
        + "\n[Error]: The internal ACL of the system is incorrect.\n",
        "dependency_mismatch",
    ),
    # the same internal error with no NumPy 2 in view
    (
        "RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:217 NPU "
        "function error: at_npu::native::AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, "
        "precision_mode), error code is 500001\n" + ASCEND_ERR + "\n"
        "[Error]: The internal ACL of the system is incorrect.\n",
        "other",
    ),
    # CANN's error manager: environment init failure at the first op
    (
        (
            "EH9999: Inner Error!\n"
            "EH9999  [Init][Env]init env failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]\n"
            "        TraceBack (most recent call last):\n"
            "        build op model failed, result = 500001[FUNC:ReportInnerError][FILE:log_inner.cpp]"
            "[LINE:145]\n"
        ),
        "other",
    ),
    # NPUErrorCodes.h 507033
    (
        "RuntimeError: SetDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:67 NPU function "
        "error: aclrtSetDevice(device_id), error code is 507033\n" + ASCEND_ERR + "\n"
        "[Error]: Failed to start the device. \n",
        "other",
    ),
    # torch_npu/__init__.py next to a CUDA torch
    (
        (
            "RuntimeError: Two accelerators cannot be used at the same time in PyTorch: npu and cuda. "
            "You can install the cpu version of PyTorch to use your npu device, or use the cuda device "
            "with 'export TORCH_DEVICE_BACKEND_AUTOLOAD=0'.\n"
        ),
        "vllm_platform",
    ),
    # a vllm-ascend call into a torch_npu op that build lacks
    (
        _traceback(
            [(f"{SITE}/vllm_ascend/attention/attention_v1.py", 300, "forward")],
            "AttributeError: module 'torch_npu' has no attribute 'npu_fused_infer_attention_score'",
        ),
        "extension_abi_mismatch",
    ),
    # HCCLUtils.hpp HCCL_CHECK_ERROR, HCCL_E_TIMEOUT at communicator init
    (
        (
            "RuntimeError: createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:2211 HCCL "
            "function error: hcclCommInitRootInfoConfig(numRanks, &hcclID, rank, config, &(comm->hcclComm_)), "
            "error code is 9\n[ERROR] 2026-12-02-01:10:11 (PID:4242, Device:0, RankID:1) ERR02200 DIST "
            "call hccl api failed.\n"
        ),
        "nccl_network",
    ),
    # --- Intel XPU -------------------------------------------------------------------------------
    (
        (
            "ERROR! Intel® Extension for PyTorch* needs to work with PyTorch 2.6.*, but PyTorch 2.7.0+xpu "
            "is found. Please switch to the matching version and run again.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "WARNING 12-02 01:10:11 utils.py:218] Import Error for IPEX: libmkl_intel_lp64.so.2: cannot "
            "open shared object file: No such file or directory\n"
        ),
        "other",
    ),
    (
        "ImportError: libsycl.so.8: cannot open shared object file: No such file or directory\n",
        "other",
    ),
    (
        (
            "INTEL MKL ERROR: /opt/conda/lib/libmkl_vml_avx512.so.2: undefined symbol: mkl_lapack_dspevd.\n"
            "Intel MKL FATAL ERROR: cannot load libmkl_vml_avx512.so.2 or libmkl_vml_def.so.2.\n"
        ),
        "other",
    ),
    (
        "RuntimeError: No XPU devices are available.\n",
        "vllm_platform",
    ),
    (
        (
            "RuntimeError: Can't add devices across platforms to a single context. -33 "
            "(PI_ERROR_INVALID_DEVICE)\n"
        ),
        "other",
    ),
    (
        (
            "torch._inductor.exc.LoweringException: ImportError: cannot import name 'intel' from "
            "'triton._C.libtriton'\n"
        ),
        "dependency_mismatch",
    ),
    # --- TPU -------------------------------------------------------------------------------------
    (
        (
            "RuntimeError: tensorflow/compiler/xla/xla_client/computation_client.cc:234 : Missing XLA "
            "configuration\n"
        ),
        "other",
    ),
    (
        "RuntimeError: Bad StatusOr access: FAILED_PRECONDITION: $PJRT_DEVICE is not set.\n",
        "other",
    ),
    (
        (
            "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by "
            "process with pid 27846. Not attempting to load libtpu.so in this process. (set "
            "JAX_PLATFORMS='' to automatically choose an available backend)\n"
        ),
        "tmp_shared",
    ),
    (
        (
            "RuntimeError: Unable to initialize backend 'tpu': INTERNAL: TPU initialization failed: "
            "open(/dev/accel0): Device or resource busy: Device or resource busy; Couldn't open "
            "device: /dev/accel0\n"
        ),
        "tmp_shared",
    ),
    (
        (
            "RuntimeError: TPU initialization failed: TPU_RET_CHECK failure "
            "GetChip(i)->location().index_on_host() == i (0 vs. 1)\n"
        ),
        "other",
    ),
    # --- AWS Neuron ------------------------------------------------------------------------------
    (
        _nrt(
            "ERROR",
            "NRT:nrt_allocate_neuron_cores",
            "NeuronCore(s) not available - Requested:nc1-nc1 Available:0",
        ),
        "other",
    ),
    (
        _nrt(
            "ERROR",
            "NRT:nrt_allocate_neuron_cores",
            "Logical Neuron Core(s) not available - Requested:lnc0-lnc7 Available:4",
        ),
        "world_size_gpus",
    ),
    (
        _nrt(
            "ERROR",
            "NRT:nrt_init",
            "Unable to determine Neuron Driver version. Please check aws-neuronx-dkms package is "
            "installed.",
        ),
        "other",
    ),
    (
        _nrt(
            "ERROR",
            "NRT:nrt_init",
            "This runtime requires Neuron Driver version 2.19 or greater. Please upgrade "
            "aws-neuronx-dkms package.",
        ),
        "cuda_driver_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


ROCM_HEALTHY = (
    "/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n"
    "INFO 12-02 01:10:11 [__init__.py:239] Automatically detected platform rocm.\n"
    "INFO 12-02 01:10:30 [gpu_model_runner.py:1164] Starting to load model Qwen/Qwen3-8B...\n"
    "INFO:     Application startup complete.\n"
)

# (log, the cause it must not be named as)
NEAR_MISSES = [
    # a healthy ROCm start: libdrm's amdgpu.ids warning is harmless
    (ROCM_HEALTHY, "other"),
    (ROCM_HEALTHY, "vllm_platform"),
    # a healthy Ascend start with torch_npu's interactive warning
    (
        (
            f"{SITE}/torch_npu/__init__.py:305: UserWarning: On the interactive interface, the value of "
            "TASK_QUEUE_ENABLE is set to 0 by default.\n"
            "INFO 12-02 01:10:11 [__init__.py:239] Automatically detected platform npu.\n"
            "INFO:     Application startup complete.\n"
        ),
        "other",
    ),
    # rocBLAS could load its library but then failed (a supported ISA: the open-file limit's
    # form, not a missing arch)
    (
        (
            "rocblaslt error: Could not load /opt/venv/lib/python3.10/site-packages/torch/lib/hipblaslt/"
            "library/TensileLibrary_lazy_gfx942.dat\n"
        ),
        "other",
    ),
    # a Tensile file missing for a supported ISA is a broken install, not an unsupported GPU
    (
        (
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx942.dat: "
            "No such file or directory\n"
        ),
        "other",
    ),
    # an invalid device function on a supported ISA is not the unsupported-ISA signature's
    # confident answer
    ("  Name:                    gfx942\nRuntimeError: HIP error: invalid device function\n", ""),
    # hipErrorNoDevice at init is "no GPU visible" (runtime.yaml), not an unusable GPU
    (
        (
            "UserWarning: HIP initialization: Unexpected error from hipGetDeviceCount(). Did you run "
            "some cuda functions before calling NumHipDevices() that might have already set an error? "
            "Error 100: hipErrorNoDevice\n"
        ),
        "other",
    ),
    # NumPy 2 installed, no ACL error: nothing about CANN
    ("Successfully installed numpy-2.1.3\n", "dependency_mismatch"),
    # torch_npu._C missing inside site-packages: a broken install, not the source-tree case
    (
        _traceback(
            [(f"{SITE}/torch_npu/npu/utils.py", 11, "<module>")],
            "ModuleNotFoundError: No module named 'torch_npu._C'",
        ),
        "other",
    ),
    # JAX falling back quietly (INFO) is not a failure
    (
        (
            "INFO:2026-12-02 01:10:11,123:jax._src.xla_bridge:927: Unable to initialize backend "
            "'tpu': INTERNAL: Failed to open libtpu.so\nINFO:     Application startup complete.\n"
        ),
        "tmp_shared",
    ),
    # the torch_xla default-device warning alone is not a failure
    ("WARNING:root:Defaulting to PJRT_DEVICE=CPU\n", "other"),
    # a CUDA library missing is extension_abi_mismatch's, not oneAPI's
    (
        "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n",
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_platform_cause(log: str, cause: str) -> None:
    causes = known_causes(log)
    if not cause:
        # no confident platform answer: the ISA-less form stays below 0.5
        assert all(c.signature != "rocm_gfx_not_in_build" for c in causes), causes
        assert not causes or causes[0].confidence < 0.5, causes
        return
    assert all(c.cause != cause for c in causes), [(c.cause, c.signature) for c in causes]


def test_unsupported_isa_outranks_the_no_kernel_image_reading() -> None:
    # hipErrorNoBinaryForGpu alone reads as a build for another GPU (toolchain.yaml); with a
    # Radeon ISA the build leaves out, the HSA_OVERRIDE_GFX_VERSION reading leads
    bare = diagnose_text("RuntimeError: hipErrorNoBinaryForGpu\n").causes
    assert bare and bare[0].cause == "extension_abi_mismatch"
    with_isa = diagnose_text(
        "    amdgcn-amd-amdhsa--gfx1035 - [Not Found]\nRuntimeError: HIP error: no kernel image is "
        "available for execution on the device\n"
    ).causes
    assert with_isa[0].signature == "rocm_gfx_not_in_build"
    assert "HSA_OVERRIDE_GFX_VERSION" in with_isa[0].fix
