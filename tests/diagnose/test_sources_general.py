"""General forms added after field set 6's one measurement (its misses, read afterwards, showed
which emitters were missing): each log is the emitting source's format string filled in (cited
in the signature), with near misses that must not name the cause."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

SITE = "/usr/lib/python3/dist-packages"


def _top(log: str) -> tuple[str, str] | None:
    top = diagnose_text(log).top
    return None if top is None else (top.cause, top.signature)


@pytest.mark.parametrize(
    "log",
    [
        "Killed\n",
        "Loading checkpoint shards:  56%|█████▌    | 5/9 [00:04<00:03,  1.01it/s]Killed\n",
        "./serve.sh: line 12: 48213 Killed                  python -m vllm.entrypoints.cli.main\n",
    ],
)
def test_a_sigkill_reported_by_the_shell_reads_as_the_oom_killer(log: str) -> None:
    top = diagnose_text(log).top
    assert top is not None and top.signature == "process_killed_by_sigkill"
    assert top.confidence < 0.6  # a guess with the check to run, not a certainty


def test_the_kernels_own_oom_line_outranks_the_shells_killed() -> None:
    log = "Out of memory: Killed process 4242 (python3) total-vm:81234567kB\nKilled\n"
    assert _top(log) == ("host_oom", "kernel_oom_killer")


@pytest.mark.parametrize("line", ["Killed 3 stale workers before restart", "not Killed\tyet"])
def test_killed_inside_a_sentence_names_nothing(line: str) -> None:
    assert diagnose_text(line + "\n").causes == ()


def test_enospc_on_a_shared_memory_region_is_shm_not_the_disk() -> None:
    line = (
        "UNAVAILABLE: Internal: Unable to initialize shared memory key "
        "'triton_python_backend_shm_region_1' to requested size (67108864 bytes). If you are "
        "running Triton inside docker, use '--shm-size' flag to control the shared memory region "
        "size. Error: No space left on device\n"
    )
    assert _top(line) == ("shm_ipc", "shared_memory_region_enospc")
    assert _top("OSError: [Errno 28] No space left on device: '/tmp/x'\n") == (
        "tmp_disk_full",
        "enospc",
    )


def test_kubelet_ephemeral_storage_eviction() -> None:
    line = (
        "  Warning  Evicted  2m  kubelet  Pod ephemeral local storage usage exceeds the total "
        "limit of containers 8Gi.\n"
    )
    assert _top(line) == ("tmp_disk_full", "kubelet_ephemeral_storage_eviction")


def test_contradicting_slurm_options() -> None:
    line = "srun: fatal: --gpus-per-task is mutually exclusive with --ntasks-per-gpu\n"
    assert _top(line) == ("slurm_resources", "slurm_options_mutually_exclusive")


def _traceback(frame: str, error: str) -> str:
    return f'Traceback (most recent call last):\n  File "{frame}", line 7, in <module>\n    import x\n{error}\n'


def test_a_submodule_missing_from_another_installed_package() -> None:
    log = _traceback(
        f"{SITE}/ray/dashboard/optional_deps.py",
        "ModuleNotFoundError: No module named 'aiohttp.signals'",
    )
    assert _top(log) == ("dependency_mismatch", "submodule_missing_from_installed_package")


@pytest.mark.parametrize(
    ("frame", "module"),
    [
        ("/home/me/train.py", "myproject.utils"),  # the user's own code
        (f"{SITE}/vllm/model_executor/models/registry.py", "transformers.models.qwen9"),
        (f"{SITE}/vllm/platforms/cuda.py", "vllm._C"),
    ],
)
def test_submodules_that_are_other_causes_are_not_a_package_pair(frame: str, module: str) -> None:
    log = _traceback(frame, f"ModuleNotFoundError: No module named '{module}'")
    causes = diagnose_text(log).causes
    assert all(c.signature != "submodule_missing_from_installed_package" for c in causes)
