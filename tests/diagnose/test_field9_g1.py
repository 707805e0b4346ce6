"""Surface forms of accelerator libraries as other ML runtimes load them (ml_runtimes.yaml):
XLA/TensorFlow's cuDNN version check, JAX's CUDA component check and jaxlib version check, XLA's
libdevice search, jax.distributed's coordination service, cuDNN's sub-library loader, ONNX Runtime's
CUDA provider and TEI's compute-capability check. Every log below is the source's format string with
its variables filled in (file and version in each signature's `sources`), not a line copied from a
report. Near misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text

XLA_DNN = "E external/xla/xla/stream_executor/cuda/cuda_dnn.cc:535] "
TF_DNN = "E tensorflow/stream_executor/cuda/cuda_dnn.cc:363] "

CASES = [
    # XLA stream_executor/cuda/cuda_dnn.cc CudnnSupport::Init (jaxlib)
    (
        XLA_DNN + "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.  "
        "CuDNN library needs to have matching major version and equal or higher minor version. "
        "If using a binary install, upgrade your CuDNN library.\n",
        "cuda_driver_mismatch",
    ),
    # TensorFlow <= 2.4 wording
    (
        TF_DNN + "Loaded runtime CuDNN library: 7.0.4 but source was compiled with: 7.2.1.  CuDNN "
        "library major and minor version needs to match or have higher minor version in case of "
        "CuDNN 7.0 or later version.\n",
        "cuda_driver_mismatch",
    ),
    # jax_plugins xla_cuda12 _check_cuda_versions
    (
        (
            "CUDA backend failed to initialize: Unable to use CUDA because of the following issues "
            "with CUDA components:\nOutdated cuBLAS installation found.\nVersion JAX was built "
            "against: 120500\nMinimum supported: 120100\nInstalled version: 120003\nThe local "
            "installation version must be no lower than 120100..(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun "
            "for more info.)\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\n"
            "Outdated cuDNN installation found.\nVersion JAX was built against: 90100\n"
            "Minimum supported: 90100\nInstalled version: 8906\n"
        ),
        "dependency_mismatch",
    ),
    # jax/_src/lib/__init__.py check_jaxlib_version (both directions, old and new wording)
    (
        "ValueError: jaxlib is version 0.1.60, but this version of jax requires version 0.1.65.\n",
        "dependency_mismatch",
    ),
    (
        "RuntimeError: jaxlib is version 0.4.7, but this version of jax requires version >= 0.4.14.\n",
        "dependency_mismatch",
    ),
    (
        (
            "RuntimeError: jaxlib version 0.4.30 is newer than and incompatible with jax version "
            "0.4.26. Please update your jax and/or jaxlib packages.\n"
        ),
        "dependency_mismatch",
    ),
    # XLA gpu_backend_lib.cc LinkLibdeviceIfNecessary / nvptx_compiler.cc GetLibdeviceDir
    (
        (
            "W external/xla/xla/service/gpu/nvptx_compiler.cc:742] Can't find libdevice directory "
            "${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the "
            "program we try to run uses routines from libdevice.\n"
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: libdevice not found at ./libdevice.10.bc\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "tensorflow.python.framework.errors_impl.InternalError: libdevice not found at "
            "./libdevice.10.bc [Op:__inference_train_step_1234]\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # TSL coordination service error trimming + gRPC status (jax.distributed.initialize)
    (
        (
            "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Deadline Exceeded\n"
            "RPC: /tensorflow.CoordinationService/RegisterTask\n"
        ),
        "nccl_network",
    ),
    (
        (
            "UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.2:1234: "
            "Failed to connect to remote host: Connection refused\n"
            "RPC: /tensorflow.CoordinationService/RegisterTask\n"
        ),
        "nccl_network",
    ),
    # cuDNN 8 sub-library loader (Linux, Windows) and cuDNN 9's
    (
        (
            "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot "
            "open shared object file: No such file or directory\n"
        ),
        "other",
    ),
    (
        "Could not locate cudnn_ops_infer64_8.dll. Please make sure it is in your library path!\n",
        "other",
    ),
    (
        (
            "Unable to load any of {libcudnn_graph.so.9.2.1, libcudnn_graph.so.9.2, "
            "libcudnn_graph.so.9, libcudnn_graph.so}\n"
            "Invalid handle. Cannot load symbol cudnnBackendCreateDescriptor\n"
        ),
        "other",
    ),
    # ONNX Runtime posix env.cc LoadDynamicLibrary from provider_bridge_ort.cc
    (
        (
            "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeError: [ONNXRuntimeError] : 1 : FAIL :"
            " Failed to load library /opt/venv/lib/python3.10/site-packages/onnxruntime/capi/"
            "libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object "
            "file: No such file or directory\n"
        ),
        "other",
    ),
    (
        (
            "[E:onnxruntime:Default, provider_bridge_ort.cc:1862 TryGetProviderInfo_CUDA] "
            "onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL "
            ": Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: "
            "cannot open shared object file: No such file or directory\n"
            "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:993 CreateExecutionProviderInstance] "
            "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*. Please install "
            "all dependencies as mentioned in the GPU requirements page, make sure they're in the "
            "PATH, and that your GPU is supported.\n"
        ),
        "other",
    ),
    # text-embeddings-inference backends/candle CandleBackend::new
    (
        (
            "Error: Could not create backend\n\nCaused by:\n    Could not start backend: Runtime "
            "compute cap 89 is not compatible with compile time compute cap 80\n"
        ),
        "extension_abi_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # XLA's healthy cuDNN lines
    (
        "I external/xla/xla/stream_executor/cuda/cuda_dnn.cc:530] Loaded cuDNN version 90300\n",
        "cuda_driver_mismatch",
    ),
    # JAX's debug listing of components that passed (CUDA components status (debug))
    (
        (
            "CUDA components status (debug):\nPackage: cuDNN\nVersion JAX was built against: 90100\n"
            "Minimum supported: 90100\nInstalled version: 90300\n"
        ),
        "dependency_mismatch",
    ),
    # jax's healthy version print
    ("jax: 0.4.30\njaxlib: 0.4.30\nnumpy: 1.26.4\npython: 3.11.9\n", "dependency_mismatch"),
    # XLA's libdevice warning alone, run still healthy
    (
        (
            "W external/xla/xla/service/gpu/nvptx_compiler.cc:742] Can't find libdevice directory "
            "${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the "
            "program we try to run uses routines from libdevice.\n[1. 2. 3.]\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # another coordination RPC, no gRPC failure status in view
    ("RPC: /tensorflow.CoordinationService/RegisterTask\n", "nccl_network"),
    # cuDNN 9 loading its sub-library successfully (CUDNN_LOGINFO_DBG)
    ("I! CuDNN (v90100) function cudnnCreate() called:\ni!     handle: location=host\n", "other"),
    # ONNX Runtime falling back to CPU by design (no GPU package)
    (
        (
            "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider "
            "names.Available providers: 'AzureExecutionProvider, CPUExecutionProvider'\n"
        ),
        "other",
    ),
    # TEI starting on a matching GPU
    (
        (
            "INFO text_embeddings_backend_candle: backends/candle/src/lib.rs:240: Starting FlashBert "
            "model on Cuda(CudaDevice(DeviceId(1)))\n"
        ),
        "extension_abi_mismatch",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != cause for c in causes), [(c.cause, c.confidence) for c in causes]


def test_a_bare_cuda_library_load_failure_stays_an_extension_build_mismatch() -> None:
    # glibc's form without cuDNN's or ONNX Runtime's loader wording (toolchain.yaml)
    log = "OSError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
    assert diagnose_text(log).causes[0].cause == "extension_abi_mismatch"


def test_cudnn_loader_form_is_not_demoted_by_the_bare_glibc_form() -> None:
    log = (
        "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot "
        "open shared object file: No such file or directory\n"
    )
    top = diagnose_text(log).causes[0]
    assert top.cause == "other"
    assert top.signature == "cudnn_sublibrary_not_on_loader_path"
    assert top.confidence >= 0.5
