"""Surface forms of the host, limits, access and toolchain causes, written from the emitting
sources (each signature's `sources` names file and version): the format string with its
variables filled in, never a line copied from a report. `NEAR_MISSES` are lines from the same
code paths that are not failures (or not this failure) and must not name the cause."""

from __future__ import annotations

import pytest
from support.sources import known_causes

from hangar.diagnose import diagnose_text

SO = "/opt/venv/lib/python3.12/site-packages"

CASES = [
    # extension_abi_mismatch: glibc, CPython, pybind11, NumPy, Cython, torchvision, xFormers, CUDA
    (
        f"ImportError: {SO}/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEa",
        "extension_abi_mismatch",
    ),
    (
        (
            "ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not "
            f"found (required by {SO}/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so)"
        ),
        "extension_abi_mismatch",
    ),
    (
        "ImportError: dynamic module does not define module export function (PyInit__C)",
        "extension_abi_mismatch",
    ),
    (
        (
            "ImportError: Python version mismatch: module was compiled for Python 3.10, but the "
            "interpreter version is incompatible: 3.12.3 (main, Nov  6 2024, 18:32:19)."
        ),
        "extension_abi_mismatch",
    ),
    (
        "A module that was compiled using NumPy 1.x cannot be run in",
        "dependency_mismatch",
    ),
    (
        "RuntimeError: module compiled against ABI version 0x1000009 but this version of numpy is 0x2000000",
        "extension_abi_mismatch",
    ),
    (
        (
            "ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 "
            "from C header, got 88 from PyObject"
        ),
        "extension_abi_mismatch",
    ),
    ("RuntimeError: operator torchvision::nms does not exist", "extension_abi_mismatch"),
    (
        (
            "RuntimeError: Couldn't load custom C++ ops. This can happen if your PyTorch and "
            "torchvision versions are incompatible, or if you had errors while compiling "
            "torchvision from source."
        ),
        "extension_abi_mismatch",
    ),
    (
        (
            "RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA "
            "major versions. PyTorch has CUDA Version=12.4 and torchvision has CUDA Version=11.8."
        ),
        "extension_abi_mismatch",
    ),
    (
        (
            "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
            "NotImplementedError: No operator found for `memory_efficient_attention_forward` with "
            "inputs:"
        ),
        "extension_abi_mismatch",
    ),
    (
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'",
        "extension_abi_mismatch",
    ),
    ("ModuleNotFoundError: No module named 'vllm._C'", "extension_abi_mismatch"),
    (
        (
            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on "
            "the device"
        ),
        "extension_abi_mismatch",
    ),
    (
        (
            "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
            "the current PyTorch installation."
        ),
        "extension_abi_mismatch",
    ),
    # bad_cli_flag: CPython argparse templates (3.8-3.14 wording), click
    ("vllm serve: error: unrecognized arguments: --tool-server demo", "bad_cli_flag"),
    (
        (
            "vllm serve: error: argument --dtype: invalid choice: 'bf16' (choose from auto, half, "
            "float16, bfloat16, float, float32)"
        ),
        "bad_cli_flag",
    ),
    (
        "api_server.py: error: argument --max-num-seqs: invalid int value: '128k'",
        "bad_cli_flag",
    ),
    ("vllm: error: argument --tensor-parallel-size/-tp: expected one argument", "bad_cli_flag"),
    (
        "vllm serve: error: ambiguous option: --max could match --max-model-len, --max-num-seqs",
        "bad_cli_flag",
    ),
    ("Error: No such option: --gpu-count Did you mean --gpus?", "bad_cli_flag"),
    ("Error: No such option '--nodes'.", "bad_cli_flag"),
    ("Error: Got unexpected extra argument (Qwen/Qwen3-8B)", "bad_cli_flag"),
    ("sbatch: unrecognized option '--gpus-per-task=1'", "bad_cli_flag"),
    ("srun: option '--gres' requires an argument", "bad_cli_flag"),
    (
        (
            "ERROR 05-10 15:51:00 [argparse_utils.py:610] Unable to read the config file at "
            "serve.yaml. Check path correctness"
        ),
        "bad_cli_flag",
    ),
    # hf_access: huggingface_hub and Transformers
    (
        (
            "huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-6a) "
            "Cannot access gated repo for url https://huggingface.co/org/model/resolve/main/config.json."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: You are trying to access a gated repo. Make sure to have access to it at "
            "https://huggingface.co/org/model."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: /models/llama-3-8b is not a local folder and is not a valid model identifier "
            "listed on 'https://huggingface.co/models'"
        ),
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
            "'namespace/repo_name': '/mnt/models/a/b'. Use `repo_type` argument if needed."
        ),
        "hf_access",
    ),
    (
        "Revision Not Found for url: https://huggingface.co/api/models/org/model/revision/v2.",
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in "
            "the disk cache and outgoing traffic has been disabled. To enable hf.co look-ups and "
            "downloads online, set 'local_files_only' to False."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and "
            "couldn't find them in the cached files."
        ),
        "hf_access",
    ),
    (
        "ValueError: Invalid repository ID or local directory specified: '/data/qwen'.",
        "hf_access",
    ),
    # ulimit_nofile: boost error_code in Ray's raylet, Go/libuv, CPython, glog
    (
        "worker_pool.cc:364] Failed to start worker with return value system:24: Too many open files",
        "ulimit_nofile",
    ),
    ("Error: EMFILE: too many open files, open '/root/.cache/x.json'", "ulimit_nofile"),
    ("RuntimeError: received 0 items of ancdata", "ulimit_nofile"),
    ("Could not create logging file: Too many open files", "ulimit_nofile"),
    ("zmq.error.ZMQError: Too many open files", "ulimit_nofile"),
    ("ERROR:asyncio:socket.accept() out of system resource", "ulimit_nofile"),
    (
        "E0101 00:00:00.000000 1 posix_engine_listener.cc:1] File descriptor limit reached. Retrying.",
        "ulimit_nofile",
    ),
    (
        (
            "worker_pool.cc:512: Too many workers, failed to create a file. Try setting `ulimit -n "
            "<num_files>` then restart Ray."
        ),
        "ulimit_nofile",
    ),
    # ulimit_nproc: bash make_child, libomp, Go runtime, cgroup pids, OpenBLAS
    ("-bash: fork: retry: Resource temporarily unavailable", "ulimit_nproc"),
    ("/bin/sh: fork: Resource temporarily unavailable", "ulimit_nproc"),
    (
        "OMP: Error #34: System unable to allocate necessary resources for OMP thread:",
        "ulimit_nproc",
    ),
    (
        "runtime: failed to create new OS thread (have 7 already; errno=11)",
        "ulimit_nproc",
    ),
    ("cgroup: fork rejected by pids controller in /system.slice/vllm.service", "ulimit_nproc"),
    (
        (
            "OpenBLAS blas_thread_init: pthread_create failed for thread 31 of 64: Resource "
            "temporarily unavailable"
        ),
        "ulimit_nproc",
    ),
    # ulimit_mmap with the limit in context (bash ulimit -a, /proc/self/limits, SGE, Hangar)
    (
        (
            "virtual memory          (kbytes, -v) 16777216\n"
            "OpenBLAS : Memory allocation still failed after 10 retries, giving up."
        ),
        "ulimit_mmap",
    ),
    (
        (
            "Max address space         34359738368          34359738368          bytes\n"
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
            "run some cuda functions before calling NumCudaDevices() that might have already set an "
            "error? Error 2: out of memory"
        ),
        "ulimit_mmap",
    ),
    (
        (
            "#$ -l h_vmem=8G\nOSError: libcudart.so.12: cannot open shared object file: Cannot "
            "allocate memory"
        ),
        "ulimit_mmap",
    ),
    (
        (
            "hangar: ulimit -v 4194304 -n 1024 on gpu-node-3\n"
            "E0710 15:24:06.605366 2474524 thd.cc:157] pthread_create failed: Resource temporarily "
            "unavailable"
        ),
        "ulimit_mmap",
    ),
    (
        "+ ulimit -v 50000000\nRuntimeError: HIP error: hipErrorOutOfMemory",
        "ulimit_mmap",
    ),
    (
        "virtual memory          (kbytes, -v) 8000000\nMemoryError",
        "ulimit_mmap",
    ),
    (
        (
            "ImportError: libgomp.so.1: failed to map segment from shared object: Cannot allocate "
            "memory"
        ),
        "ulimit_mmap",
    ),
    (
        (
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you "
            "run some cuda functions before calling NumCudaDevices() that might have already set an\n"
            "error? Error 2: out of memory (Triggered internally at c10/cuda/CUDAFunctions.cpp:108.)"
        ),
        "ulimit_mmap",
    ),
    (
        "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.",
        "ulimit_mmap",
    ),
    ("ImportError: /opt/venv/lib/libtorch_cuda.so: cannot map zero-fill pages", "ulimit_mmap"),
    (
        (
            "slurmstepd: error: StepId=4242.0 exceeded virtual memory limit (96636764160 > "
            "85899345920), being killed"
        ),
        "ulimit_mmap",
    ),
    ("=>> PBS: job killed: vmem 17223929856 exceeded limit 17179869184", "ulimit_mmap"),
    # host_oom
    ("Memory cgroup out of memory: Killed process 4242 (python3)", "host_oom"),
    (
        "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.",
        "host_oom",
    ),
    (
        (
            "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't "
            "allocate memory: you tried to allocate 34359738368 bytes. Error code 12 (Cannot "
            "allocate memory)"
        ),
        "host_oom",
    ),
    (
        (
            "(raylet) node_manager.cc:3007: 2 Workers (tasks /\n actors) killed due to memory pressure "
            "(OOM), 0 Workers crashed due to other reasons at node (ID: 7f, IP: 10.0.0.2)"
        ),
        "host_oom",
    ),
    (
        (
            "open files                      (-n) 1024\nrocblaslt error: Could not load "
            "/opt/venv/lib/python3.11/site-packages/torch/lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat"
        ),
        "ulimit_nofile",
    ),
    ("g++: fatal error: Killed signal terminated program cc1plus", "host_oom"),
    # other: Triton's resource check, a compiler crash
    (
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 81920, "
            "Hardware limit: 65536. Reducing block sizes or `num_stages` may help."
        ),
        "other",
    ),
    (
        (
            "RuntimeError: Failed to compile /tmp/x/main.c, error: gcc: internal compiler error: "
            "Segmentation fault signal terminated program cc1"
        ),
        "other",
    ),
    (
        "slurmstepd: error: Job 4242 exceeded memory limit (9123456 > 8388608), being killed",
        "host_oom",
    ),
    ("=>> PBS: job killed: mem 67108864kb exceeded limit 33554432kb", "host_oom"),
    ("=>> PBS: job killed: mem job total 4323312 kb exceeded limit 3145728 kb", "host_oom"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.", "host_oom"),
    # tmp_shared: any quoting of a /tmp path, Ray's session dir, the HF cache lock
    ("Permission denied: /tmp/tvm-debug-mode-tempdirs/0001", "tmp_shared"),
    ("mkdir: cannot create directory '/tmp/ray/session_2025': Permission denied", "tmp_shared"),
    (
        (
            "PermissionError: [Errno 13] Permission denied: '/tmp/ray'\n"
            '  File "/opt/venv/lib/python3.10/site-packages/ray/_private/node.py", line 91'
        ),
        "tmp_shared",
    ),
    (
        (
            "OSError: PermissionError at /data/hf/hub/.locks/x.lock when downloading Qwen/Qwen3-8B. "
            "Check cache directory permissions."
        ),
        "tmp_shared",
    ),
    (
        "PermissionError: [Errno 13] Permission denied: '/root/.cache/vllm/torch_compile_cache'",
        "tmp_shared",
    ),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL",
        "host_oom",
    ),
    ("    error_file: <N/A>\n    msg: Signal 9 (SIGKILL) received by PID 4242", "host_oom"),
    (
        (
            "data seg size           (kbytes, -d) 4000000\nOpenBLAS error: Memory allocation still "
            "failed after 10 retries, giving up."
        ),
        "ulimit_mmap",
    ),
    (
        (
            "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
            'port=443): Max retries exceeded with url: /api/models/org/model/revision/main"))'
        ),
        "hf_access",
    ),
    (
        (
            "huggingface_hub.errors.LocalTokenNotFoundError: Token is required (`token=True`), but no "
            "token found. You need to provide a token or be logged in to Hugging Face."
        ),
        "hf_access",
    ),
    (
        (
            "OSError: org/model-GGUF does not appear to have a file named config.json. Checkout "
            "'https://huggingface.co/org/model-GGUF/tree/main' for available files."
        ),
        "hf_access",
    ),
    (
        "NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend.",
        "extension_abi_mismatch",
    ),
    (
        "ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory",
        "extension_abi_mismatch",
    ),
    ("zmq.error.ZMQError: Permission denied (addr='ipc:///tmp/7d0c1e52-9a')", "tmp_shared"),
    (
        (
            "huggingface_hub.errors.HfHubHTTPError: 429 Client Error: Too Many Requests for url: "
            "https://huggingface.co/api/models/org/model"
        ),
        "hf_access",
    ),
    ("RepositoryNotFoundError: 404 Client Error. (Request ID: Root=1-6a)", "hf_access"),
    (
        (
            "OSError: Can't load tokenizer for 'models/llama'. If you were trying to load it from "
            "'https://huggingface.co/models', make sure you don't have a local directory with the same name."
        ),
        "hf_access",
    ),
    ("huggingface_hub.utils._errors.GatedRepoError: 401 Client Error.", "hf_access"),
    ("sqlite3.OperationalError: attempt to write a readonly database", "tmp_shared"),
    # tmp_disk_full: Go, SQLite, Ray
    (
        "failed to register layer: write /var/lib/docker/overlay2/x/y: no space left on device",
        "tmp_disk_full",
    ),
    ("sqlite3.OperationalError: database or disk is full", "tmp_disk_full"),
    (
        (
            "RuntimeError: [enforce fail at inline_container.cc:626] . PytorchStreamWriter failed "
            "writing file data/12: file write failed"
        ),
        "tmp_disk_full",
    ),
    ("OSError: [Errno 122] Disk quota exceeded: '/home/u/.cache/vllm'", "tmp_disk_full"),
]

NEAR_MISSES = [
    # CPython 3.12 Lib/threading.py: a thread started during shutdown, not a limit
    "RuntimeError: can't create new thread at interpreter shutdown",
    # printed by healthy runs that never call xFormers
    "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
    # platforms without the extension warn like this on a healthy start
    (
        "WARNING 03-02 10:11:12 [interface.py:371] Failed to import from vllm._C: "
        "ModuleNotFoundError(\"No module named 'vllm._C'\")"
    ),
    # a missing Tensile file without a small open-file limit is an install/arch problem
    "rocblaslt error: Cannot read /opt/rocm/lib/TensileLibrary_lazy_gfx1100.dat: No such file or directory",
    # `ulimit -a` of a healthy job names no cause by itself
    "virtual memory          (kbytes, -v) 67108864",
    "Max address space         unlimited            unlimited            bytes",
    # vLLM's start-up note quotes EMFILE as an example
    (
        "WARNING 11-29 18:02:24 [system_utils.py:255] Found ulimit of 1024 and failed to "
        "automatically increase with error x. This can cause fd limit errors like `OSError: "
        "[Errno 24] Too many open files`. Consider increasing with ulimit -n"
    ),
    # vLLM's own deprecation notes are warnings, not a rejected flag
    "WARNING 05-10 15:51:00 [argparse_utils.py:169] argument 'disable_log_requests' is deprecated",
    (
        "WARNING 05-10 15:51:00 [argparse_utils.py:293] With `vllm serve`, you should provide the "
        "model as a positional argument or in a config file instead of via the `--model` option."
    ),
    # a 401 of the OpenAI-compatible server (its --api-key), not of the Hub
    'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 401 Unauthorized',
]


@pytest.mark.parametrize(("line", "cause"), CASES)
def test_source_surface_form_names_its_cause(line: str, cause: str) -> None:
    causes = diagnose_text(line).causes
    assert causes and causes[0].cause == cause, [(f.cause, f.signature) for f in causes]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_miss_names_no_cause(line: str) -> None:
    assert known_causes(line) == (), known_causes(line)


def test_static_tls_is_not_the_address_space() -> None:
    # glibc's static TLS exhaustion (elf/dl-reloc.c) is no memory limit despite its wording
    log = (
        "virtual memory          (kbytes, -v) 8000000\n"
        "ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static "
        "TLS block\n"
    )
    assert diagnose_text(log).causes[0].cause == "other"


def test_thread_failure_with_unlimited_address_space_is_the_process_limit() -> None:
    log = (
        "virtual memory          (kbytes, -v) unlimited\n"
        "max user processes              (-u) 4096\n"
        "RuntimeError: can't start new thread\n"
    )
    causes = diagnose_text(log).causes
    assert causes[0].cause == "ulimit_nproc" and causes[0].confidence >= 0.9


def test_thread_failure_without_limits_names_both_suspects() -> None:
    causes = [c.cause for c in diagnose_text("RuntimeError: can't start new thread\n").causes]
    assert causes[:2] == ["ulimit_nproc", "ulimit_mmap"]


def test_noexec_mount_is_not_the_address_space() -> None:
    log = (
        "virtual memory          (kbytes, -v) 8000000\n"
        "ImportError: /tmp/x/_C.so: failed to map segment from shared object: Operation not "
        "permitted\n"
    )
    assert all(c.cause != "ulimit_mmap" for c in diagnose_text(log).causes)


def test_bare_enomem_is_a_low_guess_with_both_suspects() -> None:
    causes = diagnose_text("OSError: [Errno 12] Cannot allocate memory\n").causes
    assert [c.cause for c in causes] == ["host_oom", "ulimit_mmap"]
    assert causes[0].confidence < 0.5


def test_a_bare_failed_allocation_suspects_a_limit_first() -> None:
    # Linux overcommits: exhausted RAM shows as the OOM killer, a failed malloc as a limit
    log = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
    causes = diagnose_text(log).causes
    assert [c.cause for c in causes] == ["ulimit_mmap", "host_oom"]
    assert causes[0].confidence < 0.5


def test_an_optional_file_skipped_by_vllm_is_not_a_hub_failure() -> None:
    log = (
        "WARNING 03-02 10:11:12 [repo_utils.py:410] Cannot connect to Hugging Face Hub. Skipping "
        "file download for 'generation_config.json':\n"
        "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co', "
        'port=443): Max retries exceeded"))\n'
    )
    assert known_causes(log) == ()
