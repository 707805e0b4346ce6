"""Surface forms of a CUDA extension built from source (pip / uv install of flash-attn,
causal-conv1d, mamba-ssm, FlashInfer, vLLM; torch.utils.cpp_extension, setuptools, CMake),
written from the emitting sources (file and version in each signature's `sources`, data file
builds.yaml): every log below is the source's format string with its variables filled in, not a
line copied from a report. Near misses share words with a signature but must not name its
cause: healthy build lines, warnings that a working build prints, and look-alikes of other
causes."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/usr/lib/python3.12/site-packages"
CPP_EXT = f"{SITE}/torch/utils/cpp_extension.py"

# pip 23.2 exceptions.py InstallationSubprocessError / distributions/sdist.py, as pip prints a
# failed build step that runs the package's setup.py in an isolated environment
PIP_GET_REQUIRES = (
    "  Getting requirements to build wheel: started\n"
    "  Getting requirements to build wheel: finished with status 'error'\n"
    "  error: subprocess-exited-with-error\n"
    "  \n"
    "  × Getting requirements to build wheel did not run successfully.\n"
    "  │ exit code: 1\n"
    "  ╰─> [20 lines of output]\n"
    "      Traceback (most recent call last):\n"
    '        File "<string>", line 22, in <module>\n'
)
PIP_END = "      [end of output]\n"
# uv 0.9 crates/uv-build-frontend (lib.rs "Call to `{}.build_{}` failed", error.rs)
UV_BUILD_FAILED = (
    "  × Failed to build `flash-attn==2.7.4.post1`\n"
    "  ├─▶ The build backend returned an error\n"
    "  ╰─▶ Call to `setuptools.build_meta:__legacy__.build_wheel` failed (exit status: 1)\n"
    "\n"
    "      [stderr]\n"
)

CASES = [
    # --- flashinfer_jit_nvcc: the CUDA toolkit missing or too old ---
    # torch cpp_extension CUDA_NOT_FOUND_MESSAGE, the older two-line form and the one-line form
    (
        (
            "RuntimeError: \nCUDA was not found on the system, please set the CUDA_HOME or the "
            "CUDA_PATH\nenvironment variable or add NVCC to your system PATH. The extension "
            "compilation will fail.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "RuntimeError: CUDA was not found on the system, please set the CUDA_HOME or the "
            "CUDA_PATHenvironment variable or add NVCC to your system PATH. The extension "
            "compilation will fail.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # torch cpp_extension _check_cuda_version: CUDA_HOME without bin/nvcc
    (
        (
            "FileNotFoundError: nvcc not found at '/opt/cuda/bin/nvcc'. Ensure CUDA path "
            "'/opt/cuda' is correct.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # flash-attn / causal-conv1d setup.py check_if_cuda_home_none, then the build fails
    (
        (
            "  /tmp/pip-install-abc/flash-attn_1/setup.py:106: UserWarning: flash_attn was "
            "requested, but nvcc was not found.  Are you sure your environment has nvcc available?  "
            "If you're installing within a container from https://hub.docker.com/r/pytorch/pytorch, "
            "only images whose names contain 'devel' will provide nvcc.\n"
            "  Precompiled wheel not found. Building from source...\n"
            "  error: subprocess-exited-with-error\n"
            "  ERROR: Failed building wheel for flash-attn\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "  UserWarning: causal_conv1d was requested, but nvcc was not found.  Are you sure your "
            "environment has nvcc available?\n"
            "ERROR: Failed to build installable wheels for some pyproject.toml based projects "
            "(causal-conv1d)\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # flash-attn setup.py, hopper/setup.py, causal-conv1d setup.py: nvcc too old
    (
        (
            "      RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note: make "
            "sure nvcc has a supported version by running nvcc -V.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "RuntimeError: FlashAttention-3 is only supported on CUDA 12.3 and above\n",
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "RuntimeError: causal_conv1d is only supported on CUDA 11.6 and above.  Note: make sure "
            "nvcc has a supported version by running nvcc -V.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # vLLM setup.py get_nvcc_cuda_version / build_extensions
    (
        _traceback(
            [("/src/vllm/setup.py", 150, "get_nvcc_cuda_version")],
            "AssertionError: CUDA_HOME is not set",
        ),
        "flashinfer_jit_nvcc",
    ),
    # the same inside pip's indented subprocess output
    (
        PIP_GET_REQUIRES + '        File "/tmp/pip-req-build-x/setup.py", line 150, in '
        "get_nvcc_cuda_version\n      AssertionError: CUDA_HOME is not set\n" + PIP_END,
        "flashinfer_jit_nvcc",
    ),
    ("RuntimeError: Cannot find CMake executable\n", "flashinfer_jit_nvcc"),
    # CMake CMakeCUDAFindToolkit.cmake (3.28) and cmGlobalGenerator.cxx
    (
        (
            "CMake Error at /usr/share/cmake-3.28/Modules/Internal/CMakeCUDAFindToolkit.cmake:104 "
            "(message):\n  Failed to find nvcc.\n\n  Compiler NVIDIA requires the CUDA toolkit.  "
            "Please set the CUDAToolkit_ROOT\n  variable.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "CMake Error at CMakeLists.txt:4 (project):\n  No CMAKE_CUDA_COMPILER could be found.\n",
        "flashinfer_jit_nvcc",
    ),
    # torch's cuda.cmake warning, then vLLM CMakeLists.txt's FATAL_ERROR
    (
        (
            "CMake Warning at /venv/lib/python3.12/site-packages/torch/share/cmake/Caffe2/public/"
            "cuda.cmake:40 (message):\n  PyTorch: CUDA cannot be found.  Depending on whether you are "
            "building\n  PyTorch or a PyTorch dependent library, the next warning / error will give\n"
            "  you more info.\nCMake Error at CMakeLists.txt:183 (message):\n"
            "  Can't find CUDA or HIP installation.\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # torch cuda.cmake with USE_CUDA=1
    (
        (
            "CMake Error at cuda.cmake:33 (message):\n  PyTorch: CUDA was explicitly requested "
            "(USE_CUDA=1) but cannot be found. Please check your CUDA installation\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # vLLM CMakeLists.txt: nvcc not on PATH
    (
        (
            "CMake Error at CMakeLists.txt:87 (message):\n  nvcc not found\n\n\n"
            "-- Configuring incomplete, errors occurred!\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # torch cuda.cmake: two toolkits, headers vs nvcc, too old
    (
        (
            "CMake Error at cuda.cmake:65 (message):\n  Found two conflicting CUDA versions:\n\n"
            "  V12.8.93 in '/usr/local/cuda/include' and\n\n  V12.4.131 in "
            "'/usr/local/cuda-12.4/include'\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "  FindCUDA says CUDA version is 12.1 (usually determined by nvcc), but the CUDA headers "
            "say the version is 12.4.  This often occurs when you set both CUDA_HOME and\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "CMake Error at cuda.cmake:74 (message):\n  PyTorch requires CUDA 12.1 or above.\n",
        "flashinfer_jit_nvcc",
    ),
    # --- flashinfer_jit_nvcc: host compiler, CMake ---
    # torch cpp_extension _check_cuda_version against CUDA_GCC_VERSIONS
    (
        (
            "RuntimeError: The current installed version of g++ (14.2.0) is greater than the maximum "
            "required version by CUDA 12.4. Please make sure to use an adequate version of g++ "
            "(>=6.0.0, <14.0).\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "RuntimeError: The current installed version of g++ (5.4.0) is less than the minimum "
            "required version by CUDA 12.1 (6.0.0). Please make sure to use an adequate version of "
            "g++ (>=6.0.0, <13.0).\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # CMake cmGlobalGenerator.cxx, cmCMakeMinimumRequired.cxx
    (
        "CMake Error at CMakeLists.txt:13 (project):\n  No CMAKE_CXX_COMPILER could be found.\n",
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "CMake Error at CMakeLists.txt:1 (cmake_minimum_required):\n  CMake 3.26 or higher is "
            "required.  You are running version 3.22.1\n"
        ),
        "flashinfer_jit_nvcc",
    ),
    # CPython subprocess, the shell
    (
        _traceback(
            [(f"{SITE}/subprocess.py", 1955, "_execute_child")],
            "FileNotFoundError: [Errno 2] No such file or directory: 'cmake'",
        ),
        "flashinfer_jit_nvcc",
    ),
    ("/bin/sh: 1: cmake: not found\n", "flashinfer_jit_nvcc"),
    # --- host_oom: the compiler killed during a parallel build ---
    # nvcc driver
    (
        (
            "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n"
            "ninja: build stopped: subcommand failed.\n"
        ),
        "host_oom",
    ),
    ("nvcc error   : 'ptxas' died due to signal 9 (Kill signal)\n", "host_oom"),
    # GCC <= 7 gcc.c
    (
        (
            "c++: internal compiler error: Killed (program cc1plus)\nPlease submit a full bug "
            "report,\nwith preprocessed source if appropriate.\n"
        ),
        "host_oom",
    ),
    # CPython CalledProcessError from torch cpp_extension _run_ninja_build / vLLM setup.py
    (
        (
            "Allowing ninja to set a default number of workers... (overridable by setting the "
            "environment variable MAX_JOBS=N)\n"
            "subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '64']' died with "
            "<Signals.SIGKILL: 9>.\n"
        ),
        "host_oom",
    ),
    (
        (
            "subprocess.CalledProcessError: Command '['cmake', '--build', '.', '-j=96', "
            "'--target=_moe_C', '--target=_C']' died with <Signals.SIGKILL: 9>.\n"
        ),
        "host_oom",
    ),
    # --- dependency_mismatch: the build environment lacks a build dependency ---
    # pip build isolation hides torch
    (
        PIP_GET_REQUIRES + "      ModuleNotFoundError: No module named 'torch'\n" + PIP_END,
        "dependency_mismatch",
    ),
    (
        (
            "  Preparing metadata (setup.py) ... error\n  error: subprocess-exited-with-error\n"
            "      ModuleNotFoundError: No module named 'torch'\n"
        ),
        "dependency_mismatch",
    ),
    # uv: the build backend call, then its hint (0.9 wording)
    (
        UV_BUILD_FAILED + "      ModuleNotFoundError: No module named 'torch'\n\n"
        "      hint: This error likely indicates that `flash-attn@2.7.4.post1` depends on "
        "`torch`, but doesn't declare it as a build dependency. If `flash-attn` is a "
        "first-party package, consider adding `torch` to its `build-system.requires`.\n",
        "dependency_mismatch",
    ),
    (
        UV_BUILD_FAILED + "      ModuleNotFoundError: No module named 'torch'\n",
        "dependency_mismatch",
    ),
    # uv 0.5 wording of the hint
    (
        (
            "hint: This error likely indicates that mamba-ssm@2.2.4 depends on torch, but doesn't "
            "declare it as a build dependency.\n"
        ),
        "dependency_mismatch",
    ),
    # setuptools < 70.1 without wheel
    (
        (
            "usage: setup.py [global_opts] cmd1 [cmd1_opts] [cmd2 [cmd2_opts] ...]\n"
            "   or: setup.py --help [cmd1 cmd2 ...]\n\nerror: invalid command 'bdist_wheel'\n"
        ),
        "dependency_mismatch",
    ),
    # Python 3.12 venv without setuptools / distutils, a --no-build-isolation build
    (
        PIP_GET_REQUIRES + "      ModuleNotFoundError: No module named 'setuptools'\n" + PIP_END,
        "dependency_mismatch",
    ),
    (
        PIP_GET_REQUIRES + "      ModuleNotFoundError: No module named 'distutils'\n" + PIP_END,
        "dependency_mismatch",
    ),
    (
        _traceback(
            [("/src/flash-attention/setup.py", 12, "<module>")],
            "ModuleNotFoundError: No module named 'packaging'",
        ),
        "dependency_mismatch",
    ),
    # --- other: the package's own build setup, the arch list the environment sets ---
    # CUDA 13 CCCL headers under include/cccl
    (
        (
            "Cuda compilation tools, release 13.0, V13.0.48\n"
            "third-party/cutlass/include/cutlass/cutlass.h:43:35: fatal error: cuda/std/utility: "
            "No such file or directory\n"
        ),
        "other",
    ),
    (
        (
            "/usr/local/cuda-13.0/bin/nvcc -c csrc/a.cu\n"
            "csrc/x.cpp:3:10: fatal error: nv/target: No such file or directory\n"
        ),
        "other",
    ),
    (
        (
            "third-party/cutlass/include/cutlass/cutlass.h:43:35: fatal error: cuda/std/utility: "
            "No such file or directory\n"
        ),
        "other",
    ),
    ("csrc/k.cpp:9:10: fatal error: 'cub/cub.cuh' file not found\n", "other"),
    # torch cpp_extension _get_cuda_arch_flags
    (
        _traceback(
            [(CPP_EXT, 2400, "_get_cuda_arch_flags")],
            "ValueError: Unknown CUDA arch (12.0) or GPU not supported",
        ),
        "other",
    ),
    (
        "No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n"
        + _traceback(
            [
                (f"{SITE}/setuptools/command/build_ext.py", 88, "run"),
                (CPP_EXT, 2111, "_get_cuda_arch_flags"),
            ],
            "IndexError: list index out of range",
        ),
        "other",
    ),
    # FlashInfer setup.py check_cuda_arch
    ("      RuntimeError: FlashInfer requires sm75+\n", "other"),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


NEAR_MISSES = [
    # cpp_extension's warnings on a working build (no GPU on the build host, arch list unset,
    # a minor CUDA difference, ninja falling back to distutils)
    ("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'\n", None),
    (
        (
            "UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included "
            "for compilation. \nIf this is not desired, please set os.environ['TORCH_CUDA_ARCH_LIST'].\n"
        ),
        None,
    ),
    (
        (
            "TORCH_CUDA_ARCH_LIST is not set, using TORCH_CUDA_ARCH_LIST='9.0+PTX' for visible GPU "
            "architectures. Set os.environ['TORCH_CUDA_ARCH_LIST'] to override.\n"
        ),
        None,
    ),
    (
        (
            "UserWarning: The detected CUDA version (12.1) has a minor version mismatch with the "
            "version that was used to compile PyTorch (12.4). Most likely this shouldn't be a "
            "problem.\n"
        ),
        None,
    ),
    (
        (
            "UserWarning: Attempted to use ninja as the BuildExtension backend but we could not find "
            "ninja.. Falling back to using the slow distutils backend.\n"
        ),
        None,
    ),
    ("There are no g++ version bounds defined for CUDA version 12.9\n", None),
    # flash-attn's nvcc warning, then its prebuilt wheel installs
    (
        (
            "  UserWarning: flash_attn was requested, but nvcc was not found.  Are you sure your "
            "environment has nvcc available?\n  Guessing wheel URL:  https://github.com/x.whl\n"
            "Successfully installed flash-attn-2.7.4.post1\n"
        ),
        None,
    ),
    (
        (
            "Auto set MAX_JOBS to `8`, NVCC_THREADS to `4`. If you see memory pressure, please use a "
            "lower `MAX_JOBS=N` or `NVCC_THREADS=N` value.\nSuccessfully built flash-attn\n"
        ),
        None,
    ),
    # torch's CMake warning on a configure that went on
    (
        (
            "CMake Warning at cuda.cmake:40 (message):\n  PyTorch: CUDA cannot be found.  Depending "
            "on whether you are building\n-- Build files have been written to: /build\n"
        ),
        None,
    ),
    # a script printing the same words as vLLM's assertion
    ("[WARN] CUDA_HOME is not set\n", None),
    # a runtime import of torch outside any build: not build isolation
    (
        _traceback(
            [("/home/u/app.py", 1, "<module>")], "ModuleNotFoundError: No module named 'torch'"
        ),
        "dependency_mismatch",
    ),
    # pip installed the build dependencies, and later a script runs under another Python
    (
        "  Installing build dependencies: finished with status 'done'\nSuccessfully installed "
        "vllm-0.9.0\n"
        + _traceback(
            [("/home/u/serve.py", 1, "<module>")], "ModuleNotFoundError: No module named 'torch'"
        ),
        "dependency_mismatch",
    ),
    # a CUDA 13 toolkit whose build passes include/cccl and still misses the header is not
    # the moved-headers case (no CUDA 13 evidence but the include path itself)
    (
        (
            "g++ -I/usr/local/cuda/include/cccl -c a.cpp\n"
            "a.cpp:1:10: fatal error: nv/target: No such file or directory\n"
        ),
        "other",
    ),
    # the user's own IndexError, not torch's arch list
    (_traceback([("/home/u/app.py", 3, "<module>")], "IndexError: list index out of range"), None),
    # ptxas crashing (a segfault), not killed
    ("nvcc error   : 'ptxas' died due to signal 11 (Invalid memory reference)\n", "host_oom"),
    # a compiler bug: GCC's ICE that is not a kill
    (
        "c++: internal compiler error: Segmentation fault signal terminated program cc1plus\n",
        "host_oom",
    ),
    # a CCCL header missing with no toolkit headers at all: the toolkit, not the package's setup
    (
        (
            "csrc/a.cpp:1:10: fatal error: cuda_runtime.h: No such file or directory\n"
            "csrc/b.cpp:2:10: fatal error: cuda/std/utility: No such file or directory\n"
        ),
        "other",
    ),
    # an unrelated "only supported on CUDA devices" message (config.yaml's, not nvcc's version)
    (
        (
            "RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute "
            "capability >= 9.0 or 8.9, or ROCm MI300+\n"
        ),
        "flashinfer_jit_nvcc",
    ),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str | None) -> None:
    """``cause`` None: the log names nothing at all (a healthy build line)."""
    causes = known_causes(log)
    ranked = [(c.cause, c.signature, c.confidence) for c in causes]
    if cause is None:
        assert not causes, ranked
    else:
        assert all(c.cause != cause for c in causes), ranked


def test_the_nvcc_warning_alone_names_nothing_but_a_failed_build_names_the_toolkit() -> None:
    warning = (
        "  UserWarning: flash_attn was requested, but nvcc was not found.  Are you sure your "
        "environment has nvcc available?\n"
    )
    assert not diagnose_text(warning).causes
    failed = diagnose_text(warning + "  ERROR: Failed building wheel for flash-attn\n").causes
    assert failed[0].cause == "flashinfer_jit_nvcc"
    assert failed[0].signature == "kernel_setup_nvcc_not_found"


def test_cuda13_evidence_turns_a_missing_cccl_header_from_a_guess_into_a_diagnosis() -> None:
    line = (
        "third-party/cutlass/include/cutlass/cutlass.h:43:35: fatal error: cuda/std/utility: "
        "No such file or directory\n"
    )
    plain = diagnose_text(line).causes[0]
    cuda13 = diagnose_text("Cuda compilation tools, release 13.0, V13.0.48\n" + line).causes[0]
    assert plain.cause == cuda13.cause == "other"
    assert plain.confidence < 0.5 < cuda13.confidence


def test_a_killed_nvcc_stage_outranks_the_failed_build_it_causes() -> None:
    log = (
        "FAILED: /tmp/build/flash_fwd_hdim128_bf16_sm80.o\n"
        "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n"
        "ninja: build stopped: subcommand failed.\n"
        "RuntimeError: Error compiling objects for extension\n"
    )
    causes = diagnose_text(log).causes
    assert causes[0].cause == "host_oom"
    assert all(c.confidence < causes[0].confidence for c in causes[1:])
