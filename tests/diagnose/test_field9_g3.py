"""Surface forms of field set 9's GPU-not-in-container, Hub-outage and TensorFlow file-handle
cases, written from the emitting sources (file and version in each signature's `sources`):
every log below is the source's format string with its variables filled in, not a line copied
from a report. Near misses share words with a signature but must not name its reading."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text

INSUFFICIENT = "CUDA driver version is insufficient for CUDA runtime version"
TF_IO = "/usr/lib/python2.7/site-packages/tensorflow/python/lib/io/file_io.py"
TF_ERRORS = "/usr/lib/python2.7/site-packages/tensorflow/python/framework/errors.py"


def _tf_read(message: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "prep.py", line 20, in <module>\n'
        "    data = f.read()\n"
        f'  File "{TF_IO}", line 102, in read\n'
        f'  File "{TF_IO}", line 72, in _preread_check\n'
        f'  File "{TF_ERRORS}", line 463, in raise_exception_on_not_ok_status\n'
        f"{message}\n"
    )


CASES = [
    # CUDA runtime cudaErrorInsufficientDriver in a container, host driver new enough
    (
        (
            f"RuntimeError: CUDA error: {INSUFFICIENT}\n"
            "running in a docker container on the host\n"
            "| NVIDIA-SMI 570.124.06   Driver Version: 570.124.06   CUDA Version: 12.8 |\n"
        ),
        "other",
    ),
    (
        (
            f"RuntimeError: CUDA failed with error {INSUFFICIENT}\n"
            "Driver Version: 550.54.15\nNVIDIA_VISIBLE_DEVICES is not set for the pod\n"
        ),
        "other",
    ),
    # requests raise_for_status, 5xx from the Hub (hf_raise_for_status re-raises it)
    (
        (
            "huggingface_hub.utils._errors.HfHubHTTPError: 500 Server Error: Internal Server Error "
            "for url: https://huggingface.co/api/models/org/model/revision/main\n"
        ),
        "other",
    ),
    (
        (
            "requests.exceptions.HTTPError: 504 Server Error: Gateway Time-out for url: "
            "https://cdn-lfs.huggingface.co/repos/ab/cd/0123\n"
        ),
        "other",
    ),
    # httpx raise_for_status (huggingface_hub 1.x)
    (
        (
            "huggingface_hub.errors.HfHubHTTPError: Server error '503 Service Unavailable' for url "
            "'https://huggingface.co/api/models/org/model/revision/main'\n"
        ),
        "other",
    ),
    # huggingface_hub http_backoff warnings
    (
        (
            "HTTP Error 502 thrown while requesting HEAD https://huggingface.co/org/model/resolve/"
            "main/config.json\nRetrying in 1s [Retry 1/5].\n"
        ),
        "other",
    ),
    # a 404 without the Hub's X-Error-Code on the repo API
    (
        (
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
            "https://huggingface.co/api/models/org/model/revision/main\n"
        ),
        "other",
    ),
    (
        (
            "huggingface_hub.errors.HfHubHTTPError: Client error '404 Not Found' for url "
            "'https://huggingface.co/api/datasets/org/data/revision/main'\n"
        ),
        "other",
    ),
    # TF 0.10 posix IOError: RESOURCE_EXHAUSTED with the bare path as its message
    (_tf_read("ResourceExhaustedError: /data/images/img_0001.jpg"), "other"),
    (
        _tf_read(
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: /data/x/y.tfrecord"
        ),
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


def test_insufficient_driver_with_the_gpu_in_the_container_stays_a_driver_mismatch() -> None:
    # an old host driver (470: CUDA 11.4) really is insufficient for a CUDA 12 wheel
    log = f"RuntimeError: {INSUFFICIENT}\ndocker run --gpus all ...\nDriver Version: 470.82.01\n"
    assert_names_first(log, "cuda_driver_mismatch")
    # no container and no driver version: the plain reading
    assert_names_first(f"RuntimeError: {INSUFFICIENT}\n", "cuda_driver_mismatch")


NEAR_MISSES = [
    # the Hub's own answers for a wrong id / gated repo / missing revision
    (
        (
            "huggingface_hub.utils._errors.RepositoryNotFoundError: 404 Client Error. (Request ID: "
            "Root=1-abc)\n\nRepository Not Found for url: "
            "https://huggingface.co/api/models/org/typo/revision/main.\n"
        ),
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: x)\n\n"
            "Revision Not Found for url: https://huggingface.co/api/models/org/model/revision/v9.\n"
        ),
        "hf_access",
    ),
    # a missing file on resolve/ is not the repo API
    (
        (
            "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: "
            "https://huggingface.co/org/model/resolve/main/tokenizer.model\n"
        ),
        None,
    ),
    # a 5xx from another server (an OpenAI-compatible endpoint), not the Hub
    (
        (
            "requests.exceptions.HTTPError: 503 Server Error: Service Unavailable for url: "
            "http://localhost:8000/v1/completions\n"
        ),
        None,
    ),
    # TF: the newer form says why (limits.yaml reads 'Too many open files')
    (_tf_read("ResourceExhaustedError: /data/a.jpg; Too many open files"), "ulimit_nofile"),
    # TF: a GPU OOM is a ResourceExhaustedError too, not from file_io
    (
        (
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
            "tensor with shape[1024,1024,64] and type float on /job:localhost/replica:0/task:0/"
            "device:GPU:0 by allocator GPU_0_bfc\n"
        ),
        None,
    ),
]


@pytest.mark.parametrize(("log", "expected"), NEAR_MISSES)
def test_near_miss_does_not_read_as_an_outage_or_a_leak(log: str, expected: str | None) -> None:
    causes = diagnose_text(log).causes
    signatures = {c.signature for c in causes}
    assert not signatures & {
        "hub_server_error",
        "hub_404_without_error_code",
        "tf_file_io_resource_exhausted_handle_leak",
        "driver_insufficient_gpu_not_in_container",
    }, [(c.cause, c.signature, c.confidence) for c in causes]
    if expected is not None:
        assert causes and causes[0].cause == expected, [(c.cause, c.signature) for c in causes]


def test_a_healthy_container_start_names_nothing() -> None:
    log = (
        "| NVIDIA-SMI 570.124.06   Driver Version: 570.124.06   CUDA Version: 12.8 |\n"
        "docker run --gpus all -e NVIDIA_VISIBLE_DEVICES=all image\n"
        "INFO: CUDA available, 1 device(s)\n"
    )
    assert diagnose_text(log).causes == () or all(
        c.confidence < 0.3 for c in diagnose_text(log).causes
    )
