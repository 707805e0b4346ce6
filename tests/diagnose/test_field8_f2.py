"""Surface forms of host resources as local runtimes and launchers print them (Ollama's Go server,
ggml/llama.cpp, bash's ulimit, df, CPython on Windows), written from the emitting sources (file
and version in each signature's `sources`): every log below is the source's format string with
its variables filled in, not a line copied from a report. Near misses share words with a
signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first, known_causes

from hangar.diagnose import diagnose_text

DF_HEADER = "Filesystem      Size  Used Avail Use% Mounted on\n"
ULIMIT_A = (
    "core file size          (blocks, -c) 0\n"
    "open files                      (-n) 1024\n"
    "max user processes              (-u) {nproc}\n"
    "virtual memory          (kbytes, -v) {vmem}\n"
)

CASES = [
    # Ollama llm/server.go NewLlamaServer
    (
        "Error: model requires more system memory (42.7 GiB) than is available (11.2 GiB)\n",
        "host_oom",
    ),
    (
        (
            'time=2025-03-01T10:00:00.000Z level=ERROR source=sched.go:455 msg="error loading llama '
            'server" error="model requires more system memory (7.9 GiB) than is available (5.1 GiB)"\n'
        ),
        "host_oom",
    ),
    # Ollama llm/server.go WaitUntilRunning + os/exec ProcessState.String
    (
        (
            'time=2025-03-01T10:00:00.000Z level=ERROR source=sched.go:455 msg="error loading llama '
            'server" error="llama runner process has terminated: signal: killed"\n'
        ),
        "host_oom",
    ),
    # Ollama 0.1.3x getServerStatus: the Warn line with the process state
    (
        (
            'time=2024-05-01T10:00:00.000Z level=WARN source=server.go:500 msg="llama runner process '
            'no longer running" sys=137 string="signal: killed"\n'
        ),
        "host_oom",
    ),
    # Ollama gpu/amd_linux.go AMDGetGPUInfo / verifyKFDDriverAccess
    (
        (
            'time=2024-09-10T10:00:00.000Z level=ERROR source=amd_linux.go:364 msg="amdgpu devices '
            'detected but permission problems block access" error="permissions not set up properly.  '
            "Either run ollama as root, or add you user account to the render group. open /dev/kfd: "
            'permission denied"\n'
        ),
        "other",
    ),
    # ggml-cuda.cu ggml_cuda_error with cudaErrorInvalidKernelImage
    (
        (
            "CUDA error: device kernel image is invalid\n"
            "  current device: 1, in function ggml_cuda_op_mul_mat at /src/ggml/src/ggml-cuda/"
            "ggml-cuda.cu:1620\n"
        ),
        "cuda_driver_mismatch",
    ),
    # llama.cpp llama_mlock::raw_lock (Linux and macOS suggestions)
    (
        (
            "warning: failed to mlock 4194304000-byte buffer (after previously locking 0 bytes): "
            "Cannot allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).\n"
        ),
        "other",
    ),
    (
        (
            "warning: failed to mlock 1073741824-byte buffer (after previously locking 65536 bytes): "
            "Resource temporarily unavailable\nTry increasing the sysctl values 'vm.user_wire_limit' "
            "and 'vm.global_user_wire_limit' and/or decreasing 'vm.global_no_user_wire_amount'.  Also "
            "try increasing RLIMIT_MLOCK (ulimit -l).\n"
        ),
        "other",
    ),
    # Ollama initializeKeypair: os.MkdirAll's PathError wrapped
    (
        (
            "Couldn't find '/srv/llm/.ollama/id_ed25519'. Generating new private key.\n"
            "Error: could not create directory mkdir /srv/llm: permission denied\n"
        ),
        "other",
    ),
    # CPython asyncio create_server on Windows (Winsock errno kept, strerror localized)
    (
        (
            "OSError: [Errno 10048] error while attempting to bind on address ('0.0.0.0', 7860): "
            "only one usage of each socket address (protocol/network address/port) is normally "
            "permitted\n"
        ),
        "port_in_use",
    ),
    (
        (
            "OSError: [Errno 10048] error while attempting to bind on address ('127.0.0.1', 8000): "
            "ein socket-adresse darf nur einmal verwendet werden.\n"
        ),
        "port_in_use",
    ),
    # Go's lowercase ENOSPC with a df table that lists /dev/shm as a mount point
    (
        "Error: write /data/models/blobs/sha256-0123abcd-partial: no space left on device\n"
        + DF_HEADER
        + "/dev/sda1        50G   50G     0 100% /data\n"
        + "tmpfs           7.5G     0  7.5G   0% /dev/shm\n",
        "tmp_disk_full",
    ),
    # coreutils df: a data filesystem at 100%
    (
        DF_HEADER
        + "/dev/root        194G  194G     0 100% /\n"
        + "tmpfs            16G   12K   16G   1% /dev/shm\n",
        "tmp_disk_full",
    ),
    (
        DF_HEADER + "/dev/nvme1n1     1.8T  1.8T  120M 100% /scratch\n",
        "tmp_disk_full",
    ),
    # glibc EAGAIN with bash's `ulimit -a` showing a small -u and unlimited -v
    (
        "stderr: Resource temporarily unavailable\n" + ULIMIT_A.format(nproc=256, vmem="unlimited"),
        "ulimit_nproc",
    ),
    # bash builtins/ulimit.def set_limit failure
    (
        (
            "+ ulimit -Sn 131072\n"
            "/var/spool/slurmd/job123/slurm_script: line 40: ulimit: open files: cannot modify limit: "
            "Invalid argument\n"
        ),
        "other",
    ),
    (
        "bash: ulimit: max user processes: cannot modify limit: Operation not permitted\n",
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


# (log, cause it must not name)
NEAR_MISSES = [
    # the runner exited on its own (a crash, not a kill): no host_oom
    (
        (
            'msg="error loading llama server" error="llama runner process has terminated: exit '
            'status 2"\n'
        ),
        "host_oom",
    ),
    # a healthy Ollama start on CPU
    (
        (
            'time=2024-09-10T10:00:00.000Z level=INFO source=gpu.go:347 msg="no compatible GPUs were '
            'discovered"\n'
        ),
        "other",
    ),
    # a missing architecture is not a driver too old for the image
    (
        "CUDA error: no kernel image is available for execution on the device\n",
        "cuda_driver_mismatch",
    ),
    # mlock succeeded: llama.cpp's healthy load lines
    ("llm_load_tensors:        CPU buffer size =  3891.24 MiB\n", "other"),
    # a Go mkdir refused under a shared /tmp is not this signature's
    ("Error: mkdir /tmp/ollama123: permission denied\n", "other"),
    # a df table with only snap images and /boot at 100%
    (
        DF_HEADER
        + "/dev/loop0       56M   56M     0 100% /snap/core18/2128\n"
        + "/dev/sda15      105M  105M     0 100% /boot/efi\n"
        + "/dev/sda1        97G   40G   57G  42% /\n",
        "tmp_disk_full",
    ),
    # a 100% row without a df header
    ("progress 100% /\n", "tmp_disk_full"),
    # EAGAIN with a large process limit: no evidence for ulimit_nproc
    (
        "stderr: Resource temporarily unavailable\n"
        + ULIMIT_A.format(nproc=1031202, vmem="unlimited"),
        "ulimit_nproc",
    ),
    # a bare EAGAIN
    ("read: Resource temporarily unavailable\n", "ulimit_nproc"),
    # a successful ulimit in a script
    ("+ ulimit -Sn 65535\n+ ray start --head\n", "other"),
    # the port is free: a healthy bind
    ("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n", "port_in_use"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = known_causes(log)
    assert all(c.cause != cause for c in causes), [(c.cause, c.confidence) for c in causes]


def test_mlock_failure_is_not_the_address_space_limit() -> None:
    log = (
        "warning: failed to mlock 73728000-byte buffer (after previously locking 0 bytes): "
        "Cannot allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).\n"
    )
    causes = diagnose_text(log).causes
    assert causes[0].cause == "other"
    assert all(c.cause not in ("ulimit_mmap", "host_oom") for c in causes)


def test_ulimit_refused_then_open_files_exhausted_names_nofile() -> None:
    log = (
        "bash: ulimit: open files: cannot modify limit: Invalid argument\n"
        "OSError: [Errno 24] Too many open files\n"
    )
    assert_names_first(log, "ulimit_nofile")


def test_eagain_under_a_finite_address_space_is_not_nproc() -> None:
    log = "Resource temporarily unavailable\n" + ULIMIT_A.format(nproc=512, vmem=67108864)
    causes = diagnose_text(log).causes
    assert all(c.cause != "ulimit_nproc" for c in causes), [(c.cause, c.confidence) for c in causes]
