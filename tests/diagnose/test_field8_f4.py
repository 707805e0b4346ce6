"""Surface forms of HPC-site, container and serving-wrapper failures (field set 8, fixer f4),
written from the emitting sources (file and version in each signature's `sources`): every log
below is the source's format string with its variables filled in, not a line copied from a
report. Near misses share words with a signature but must not fire it."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first
from support.sources import traceback as _traceback

from hangar.diagnose import diagnose_text

SITE = "/opt/venv/lib/python3.12/site-packages"

CASES = [
    # apptainer internal/pkg/build/build.go + Go os/exec LookPath
    (
        (
            "INFO:    Converting OCI blobs to SIF format\n"
            "FATAL:   While making image from oci registry: error fetching image to cache: while "
            'building SIF from layers: while searching for mksquashfs: exec: "mksquashfs": '
            "executable file not found in $PATH\n"
        ),
        "other",
        "apptainer_mksquashfs_not_found",
    ),
    (
        (
            'FATAL:   while searching for mksquashfs: exec: "mksquashfs": executable file not '
            "found in $PATH\n"
        ),
        "other",
        "apptainer_mksquashfs_not_found",
    ),
    # the image's /.singularity.d/actions/exec (`exec "$@"`) under dash and under bash
    (
        "/.singularity.d/actions/exec: 9: exec: --nv: not found\n",
        "other",
        "singularity_option_after_image",
    ),
    (
        "/.singularity.d/actions/run: line 21: exec: -B: not found\n",
        "other",
        "singularity_option_after_image",
    ),
    # apptainer >= 1: the embedded interpreter's LookPath error
    (
        '"--nv": executable file not found in $PATH\n',
        "other",
        "singularity_option_after_image",
    ),
    # yaksa YAKSURI_CUDAI_CUDA_ERR_CHECK (MPICH's GPU datatype engine)
    (
        (
            "CUDA Error (yaksuri_cuda_init_hook:src/backend/cuda/hooks/yaksuri_cuda_init_hooks.c,"
            "173): no CUDA-capable device is detected\n"
        ),
        "other",
        "mpi_gpu_layer_no_device",
    ),
    (
        (
            "HIP Error (yaksuri_hip_init_hook:src/backend/hip/hooks/yaksuri_hip_init_hooks.c,120): "
            "no ROCm-capable device is detected\n"
        ),
        "other",
        "mpi_gpu_layer_no_device",
    ),
    # HPE Cray MPICH GTL debug trace
    (
        "GTL_DEBUG: [3] cudaHostRegister: no CUDA-capable device is detected\n",
        "other",
        "mpi_gpu_layer_no_device",
    ),
    # ramalama/common.py find_in_cdi / check_nvidia
    (
        (
            "Device all does not have a CDI configuration\n"
            "No CDI configuration found for all\n"
            'You can use the "nvidia-ctk cdi generate" command from the \n'
            "nvidia-container-toolkit to generate a CDI configuration.\n"
            "See ramalama-cuda(7).\n"
            "Error: granite' is not a known shortname and no transport was specified.\n"
        ),
        "other",
        "ramalama_no_cdi_configuration",
    ),
    (
        (
            "No CDI configuration found for 0,all\n"
            "The nvidia-container-toolkit does not appear to be installed. Install \n"
        ),
        "other",
        "ramalama_no_cdi_configuration",
    ),
    # vLLM AutoWeightsLoader._load_module with a bare base-model checkpoint
    (
        (
            "INFO 03-02 10:00:00 [config.py:717] This model supports multiple tasks: {'embed', "
            "'generate', 'classify', 'score', 'reward'}. Defaulting to 'generate'.\n"
            "ValueError: There is no module or parameter named 'embed_tokens' in "
            "Qwen2ForCausalLM\n"
        ),
        "other",
        "pooling_checkpoint_as_causal_lm",
    ),
    (
        (
            "ValueError: There is no module or parameter named 'layers.0.mlp.gate_proj.weight' in "
            "LlamaForCausalLM\n"
        ),
        "other",
        "pooling_checkpoint_as_causal_lm",
    ),
    # vLLM minicpmv.py MiniCPMV.__new__, both wordings
    (
        _traceback(
            [(f"{SITE}/vllm/model_executor/models/minicpmv.py", 1500, "__new__")],
            "ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0, 4.5. "
            "Got version: (4, 6)",
        ),
        "unsupported_architecture",
        "vllm_model_version_dispatch_unknown",
    ),
    (
        "ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, and 2.6\n",
        "unsupported_architecture",
        "vllm_model_version_dispatch_unknown",
    ),
    # Slurm cred_munge.c / slurm_cred.c / req.c
    (
        (
            "srun: error: Application launch failed: Invalid job credential\n"
            "[2024-01-01T00:00:00.000] error: Credential signature check: Credential data mismatch\n"
            "[2024-01-01T00:00:00.000] error: Invalid job credential from 1000@10.0.0.1: Invalid "
            "job credential\n"
        ),
        "other",
        "slurm_cred_data_mismatch",
    ),
    (
        "error: Credential signature check: Credential data size mismatch\n",
        "other",
        "slurm_cred_data_mismatch",
    ),
    # Slurm gres.c _my_stat
    (
        (
            "slurmd[812]: slurmd: error: Waiting for gres.conf file /dev/nvidia1\n"
            "slurmd[812]: slurmd: fatal: can't stat gres.conf file /dev/nvidia1: No such file or "
            "directory\n"
            "systemd[1]: slurmd.service: Main process exited, code=exited, status=1/FAILURE\n"
        ),
        "other",
        "slurmd_gres_device_file_missing",
    ),
    (
        "slurmd: fatal: can't stat gres.conf file /dev/dri/renderD128: No such file or directory\n",
        "other",
        "slurmd_gres_device_file_missing",
    ),
]


@pytest.mark.parametrize(("log", "cause", "signature"), CASES)
def test_source_form_names_its_cause(log: str, cause: str, signature: str) -> None:
    assert_names_first(log, cause)
    assert diagnose_text(log).causes[0].signature == signature


NEAR_MISSES = [
    # a successful pull
    (
        (
            "INFO:    Converting OCI blobs to SIF format\n"
            "INFO:    Starting build...\nINFO:    Creating SIF file...\n"
        ),
        "apptainer_mksquashfs_not_found",
    ),
    # another program missing from PATH
    ('exec: "nvidia-smi": executable file not found in $PATH\n', "apptainer_mksquashfs_not_found"),
    # a real command missing inside the container (not an option)
    (
        "/.singularity.d/actions/exec: 9: exec: python3: not found\n",
        "singularity_option_after_image",
    ),
    # the bare CUDA runtime message, no MPI layer: runtime.yaml's vllm_platform reading
    (
        "RuntimeError: CUDA error: no CUDA-capable device is detected\n",
        "mpi_gpu_layer_no_device",
    ),
    # yaksa error that is not a missing device
    (
        "CUDA Error (yaksuri_cudai_init:src/backend/cuda/yaksuri_cudai_init.c,88): out of memory\n",
        "mpi_gpu_layer_no_device",
    ),
    # CDI itself (gpu_plumbing.yaml's reading), not RamaLama's check
    (
        "Error: crun: unresolvable CDI devices nvidia.com/gpu=all\n",
        "ramalama_no_cdi_configuration",
    ),
    # a quantised checkpoint's extra tensor, not a bare base model
    (
        (
            "ValueError: There is no module or parameter named 'lm_head.input_scale' in "
            "LlamaForCausalLM\n"
        ),
        "pooling_checkpoint_as_causal_lm",
    ),
    (
        "ValueError: There is no module or parameter named 'language_model' in Qwen3_5Model\n",
        "pooling_checkpoint_as_causal_lm",
    ),
    # a plain munge failure stays slurm_auth
    (
        (
            "error: Munge decode failed: Invalid credential\n"
            "srun: error: Application launch failed: Invalid job credential\n"
        ),
        "slurm_cred_data_mismatch",
    ),
    # the device appeared in time: slurmd goes on
    (
        (
            "slurmd: error: Waiting for gres.conf file /dev/nvidia0\n"
            "slurmd: gres.conf file /dev/nvidia0 now exists\n"
            "slurmd: slurmd started on Mon, 01 Jan 2024\n"
        ),
        "slurmd_gres_device_file_missing",
    ),
    # healthy vLLM start
    (
        (
            "INFO 05-10 15:51:07 [api_server.py:1090] Starting vLLM API server on "
            "http://0.0.0.0:8000\nINFO:     Application startup complete.\n"
        ),
        "vllm_model_version_dispatch_unknown",
    ),
]


@pytest.mark.parametrize(("log", "signature"), NEAR_MISSES)
def test_near_miss_does_not_fire(log: str, signature: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.signature != signature for c in causes), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_plain_munge_failure_is_still_slurm_auth() -> None:
    log = "error: Munge decode failed: Invalid credential\n"
    assert_names_first(log, "slurm_auth")


def test_credential_data_mismatch_silences_the_munge_reading() -> None:
    log = (
        "srun: error: Application launch failed: Invalid job credential\n"
        "error: Credential signature check: Credential data mismatch\n"
    )
    causes = diagnose_text(log).causes
    assert all(c.cause != "slurm_auth" for c in causes), causes
