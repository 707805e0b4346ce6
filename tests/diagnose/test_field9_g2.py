"""Surface forms of installers, package managers and the OS plumbing under them (installers.yaml),
written from the emitting sources (file and version in each signature's `sources`): conda's
UnsatisfiableError classes, pip's resolver and finder, OpenMMLab's import-time version guard,
cuda-python's dlopen of libcuda, NVML's operating-system error and warp's driver entry points.
Every log below is the source's format string with its variables filled in, not a line copied
from a report. Near misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes

from hangar.diagnose import diagnose_text

CONDA_PYTHON = (
    "UnsatisfiableError: The following specifications were found\n"
    "to be incompatible with the existing python installation in your environment:\n\n"
    "Specifications:\n\n  - somepkg -> python[version='>=3.10,<3.11.0a0']\n\n"
    "Your python: python=3.9\n\n"
    "If python is on the left-most side of the chain, that's the version you've asked for.\n"
    "When python appears to the right, that indicates that the thing on the left is somehow\n"
    "not available for the python version you are constrained to. Note that conda will not\n"
    "change your python version to a different minor version unless you explicitly specify\n"
    "that.\n\n"
)
CONDA_VIRTUAL_48 = (
    "The following specifications were found to be incompatible with your CUDA driver:\n\n"
    "  - feature:/linux-64::__cuda==11.2=0\n"
    "  - feature:|@/linux-64::__cuda==11.2=0\n\n"
    "Your installed CUDA driver is: 11.2\n"
)
CONDA_VIRTUAL = (
    "UnsatisfiableError: The following specifications were found to be incompatible with each "
    "other:\n\nThe following specifications were found to be incompatible with your system:\n\n"
    "  - feature:/linux-64::__glibc==2.31=0\n"
    "  - pkg-a -> libgcc-ng[version='>=9.3.0'] -> __glibc[version='>=2.17']\n\n"
    "Your installed version is: 2.31\n"
)

CASES = [
    # conda 4.8-4.14 exceptions.py UnsatisfiableError 'python'; the virtual-package class below it
    # is not the conflict
    (CONDA_PYTHON, "dependency_mismatch"),
    (CONDA_PYTHON + CONDA_VIRTUAL_48, "dependency_mismatch"),
    # conda 4.9+ 'virtual_package' alone, and conda 4.8's 'CUDA driver' wording
    (CONDA_VIRTUAL, "other"),
    (CONDA_VIRTUAL_48, "other"),
    # pip 25-26 resolvelib factory: no candidates on an index that replaced PyPI
    (
        (
            "$ pip install --index-url https://download.example.org/whl/cpu torch\n"
            "ERROR: Cannot install torch==2.9.0+cpu because these package versions have "
            "conflicting dependencies.\n\nThe conflict is caused by:\n"
            "    torch 2.9.0+cpu depends on filelock\n\n"
            "Additionally, some packages in these conflicts have no matching distributions "
            "available for your environment:\n    filelock\n\n"
            "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/"
            "dependency-resolution/#dealing-with-dependency-conflicts\n"
        ),
        "other",
    ),
    (
        (
            "Looking in indexes: https://mirror.example.com/simple\n"
            "ERROR: Could not find a version that satisfies the requirement numpy>=2 "
            "(from versions: none)\nERROR: No matching distribution found for numpy>=2\n"
        ),
        "other",
    ),
    # pip factory _report_single_requirement_conflict: torch with no wheel for the interpreter
    (
        (
            "ERROR: Could not find a version that satisfies the requirement torch==2.1.0 "
            "(from versions: none)\nERROR: No matching distribution found for torch==2.1.0\n"
        ),
        "other",
    ),
    (
        (
            "Python 3.8.1 (tags/v3.8.1, Dec 18 2019) [MSC v.1916 32 bit (Intel)] on win32\n"
            "ERROR: Could not find a version that satisfies the requirement torch==1.7.0 "
            "(from versions: 0.1.2, 0.1.2.post1, 0.1.2.post2)\n"
            "ERROR: No matching distribution found for torch==1.7.0\n"
        ),
        "other",
    ),
    # mmdet / mmseg / mmpose __init__.py version assertion
    (
        (
            'File "/opt/mmseg/mmseg/__init__.py", line 61, in <module>\n'
            "AssertionError: MMCV==2.3.0 is used but incompatible. Please install "
            "mmcv>=2.0.0rc4, <2.3.0.\n"
        ),
        "dependency_mismatch",
    ),
    (
        (
            "AssertionError: MMEngine==0.7.0 is used but incompatible. Please install "
            "mmengine>=0.7.1, <1.0.0.\n"
        ),
        "dependency_mismatch",
    ),
    # cuda-python ccuda.pyx cuPythonInit
    ("RuntimeError: Failed to dlopen libcuda.so\n", "other"),
    (
        "Linux host 5.15.0-microsoft-standard-WSL2\nRuntimeError: Failed to dlopen libcuda.so.1\n",
        "other",
    ),
    # NVML_ERROR_OPERATING_SYSTEM through nvidia-smi and pynvml
    ("Failed to initialize NVML: GPU access blocked by the operating system\n", "other"),
    ("pynvml.NVMLError_OperatingSystem: GPU access blocked by the operating system\n", "other"),
    # warp cuda_util.cpp get_driver_entry_point with CUDA_ERROR_STUB_LIBRARY
    (
        (
            "Warp CUDA error: Failed to get driver entry point 'cuInit' (CUDA error 34)\n"
            "Warp CUDA warning: Unable to determine CUDA driver version\n"
        ),
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


def _named(log: str) -> list[tuple[str, float]]:
    return [(c.cause, c.confidence) for c in diagnose_text(log).causes]


NEAR_MISSES = [
    # pip's resolver conflict with the default index: two packages disagree
    (
        (
            "ERROR: Cannot install vllm==0.9.0 and torch==2.5.1 because these package versions "
            "have conflicting dependencies.\n\nThe conflict is caused by:\n    The user requested "
            "torch==2.5.1\n    vllm 0.9.0 depends on torch==2.7.0\n\nERROR: ResolutionImpossible: "
            "for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/\n"
        ),
        "other",
    ),
    # the wheel index added next to PyPI, not instead of it
    (
        (
            "$ pip install --index-url https://download.example.org/whl/cpu "
            "--extra-index-url https://pypi.org/simple torch\n"
            "ERROR: No matching distribution found for torch==9.9\n"
        ),
        "other",
    ),
    # a package pip finds no version of, no interpreter or index in view: below the floor
    (
        (
            "ERROR: Could not find a version that satisfies the requirement nosuchpkg "
            "(from versions: none)\nERROR: No matching distribution found for nosuchpkg\n"
        ),
        "other",
    ),
    # libfabric's CUDA probe warning on a CPU host (format 'Failed to dlopen libcuda.so\n')
    (
        (
            "libfabric:1234:1700000000::core:core:cuda_hmem_dl_init():394<warn> "
            "Failed to dlopen libcuda.so\n"
        ),
        "other",
    ),
    # warp's entry point failing with another CUDA error is not the stub
    ("Warp CUDA error: Failed to get driver entry point 'cuInit' (CUDA error 999)\n", "other"),
    # the python class names no virtual-package conflict
    (CONDA_PYTHON, "other"),
    # healthy install and serve
    (
        (
            "Successfully installed torch-2.7.0 vllm-0.9.0\n"
            "INFO:     Application startup complete.\n"
        ),
        "dependency_mismatch",
    ),
    ("Successfully installed mmcv-2.1.0 mmdet-3.3.0\n", "dependency_mismatch"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    named = [(c.cause, c.confidence) for c in known_causes(log)]
    assert all(c != cause or conf < 0.3 for c, conf in named), named


def test_driver_too_old_forms_stay_with_cuda_driver_mismatch() -> None:
    """NVML's version-mismatch error is not the operating system blocking the GPU."""
    named = _named("Failed to initialize NVML: Driver/library version mismatch\n")
    assert named and named[0][0] == "cuda_driver_mismatch", named


def test_bare_virtual_package_report_stays_low() -> None:
    named = _named(CONDA_VIRTUAL)
    assert named[0][0] == "other" and named[0][1] < 0.5, named
