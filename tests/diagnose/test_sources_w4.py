"""Surface forms of the memory, driver/platform, fabric-manager, Slurm and stage causes, written
from the emitting sources (file and version in each signature's `sources`): every log below is
the source's format string with its variables filled in, not a line copied from a report.
Near misses are lines that share words with a signature but must not name that cause."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

# torch >= 2.2 c10/cuda/CUDACachingAllocator.cpp, one process on the GPU (NVML lists itself).
OOM_ONE_PROCESS = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
    "capacity of 23.58 GiB of which 11.06 MiB is free. Process 4242 has 23.56 GiB memory in use. "
    "Of the allocated memory 17.91 GiB is allocated by PyTorch, and 5.21 GiB is reserved by "
    "PyTorch but unallocated."
)
V1_PREFIX = "(EngineCore_DP0 pid=4242) ERROR 05-10 15:51:07 [core.py:708] "


def _frame(path: str, line: int, func: str) -> str:
    # CPython Lib/traceback.py frame line, behind vLLM's process/log prefix.
    return f'{V1_PREFIX}  File "/usr/lib/python3.12/site-packages/{path}", line {line}, in {func}'


def _oom_in(*frames: tuple[str, int, str]) -> str:
    lines = [f"{V1_PREFIX}Traceback (most recent call last):"]
    lines += [_frame(*f) for f in frames]
    return "\n".join(lines + [V1_PREFIX + OOM_ONE_PROCESS]) + "\n"


CASES = [
    # --- oom_weights: the OOM is raised in weight loading -------------------------------
    (
        _oom_in(
            ("vllm/v1/worker/gpu_model_runner.py", 1764, "load_model"),
            ("vllm/model_executor/model_loader/default_loader.py", 269, "load_weights"),
            ("vllm/model_executor/layers/linear.py", 1183, "weight_loader"),
        ),
        "oom_weights",
    ),
    (
        _oom_in(
            ("vllm/model_executor/model_loader/utils.py", 88, "process_weights_after_loading"),
            (
                "vllm/model_executor/layers/quantization/fp8.py",
                420,
                "process_weights_after_loading",
            ),
        ),
        "oom_weights",
    ),
    (
        # torch 2.1 spells it "capacty" and names this process; PyTorch holds the whole GPU.
        (
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 384.00 MiB. GPU 0 "
            "has a total capacty of 79.33 GiB of which 351.81 MiB is free. Including non-PyTorch "
            "memory, this process has 78.97 GiB memory in use. Of the allocated memory 78.33 GiB "
            "is allocated by PyTorch, and 12.11 MiB is reserved by PyTorch but unallocated."
        ),
        "oom_weights",
    ),
    (
        # torch <= 2.0 wording, HIP build figures the same way
        (
            "torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 224.00 MiB (GPU 0; "
            "191.98 GiB total capacity; 191.02 GiB already allocated; 98.00 MiB free; 191.50 GiB "
            "reserved in total by PyTorch)"
        ),
        "oom_weights",
    ),
    (
        (
            "INFO 05-10 15:50:01 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
            "model='/models/big'\n"
            "INFO 05-10 15:50:09 [gpu_model_runner.py:1329] Starting to load model /models/big...\n"
            f"{V1_PREFIX}{OOM_ONE_PROCESS}\n"
        ),
        "oom_weights",
    ),
    (
        # SGLang: the OOM comes between 'Load weight begin' and 'Load weight end'
        "[2025-01-15 21:17:11 TP0] Load weight begin. avail mem=78.81 GB\n" + OOM_ONE_PROCESS,
        "oom_weights",
    ),
    # --- gpu_memory_utilization: the weights were in, a later stage ran out --------------
    (
        _oom_in(
            ("vllm/v1/worker/gpu_worker.py", 205, "determine_available_memory"),
            ("vllm/v1/worker/gpu_model_runner.py", 1902, "profile_run"),
            ("vllm/v1/worker/gpu_model_runner.py", 1700, "_dummy_run"),
            ("vllm/model_executor/models/llama.py", 361, "forward"),
        ),
        "gpu_memory_utilization",
    ),
    (
        (
            "INFO 05-10 15:51:20 [gpu_model_runner.py:1347] Model loading took 14.9926 GiB and "
            "5.101 seconds\n"
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  40%|####      | 27/67\n"
            f"{V1_PREFIX}{OOM_ONE_PROCESS}\n"
        ),
        "gpu_memory_utilization",
    ),
    (
        # torch >= 2.6: the private-pool clause says CUDA graphs hold memory
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
            "this process has 78.11 GiB memory in use. Of the allocated memory 76.80 GiB is "
            "allocated by PyTorch, with 3.12 GiB allocated in private pools (e.g., CUDA Graphs), "
            "and 120.00 MiB is reserved by PyTorch but unallocated."
        ),
        "gpu_memory_utilization",
    ),
    (
        "INFO 05-10 15:52:01 [gpu_worker.py:227] Available KV cache memory: -2.31 GiB\n",
        "gpu_memory_utilization",
    ),
    (
        (
            "INFO 11-02 10:01:02 worker.py:232] Memory profiling takes 4.10 seconds\n"
            "INFO 11-02 10:01:02 worker.py:232] the current vLLM instance can use total_gpu_memory "
            "(15.77GiB) x gpu_memory_utilization (0.90) = 14.19GiB\n"
            "INFO 11-02 10:01:02 worker.py:232] model weights take 14.99GiB; non_torch_memory "
            "takes "
            "0.11GiB; PyTorch activation peak memory takes 1.20GiB; the rest of the memory "
            "reserved "
            "for KV Cache is -2.11GiB.\n"
        ),
        "gpu_memory_utilization",
    ),
    (
        (
            "ValueError: Loaded weights leave no GPU memory for the KV cache under "
            "--mem-fraction-static=0.88. Raise --mem-fraction-static above 0.912 (minimum viable = "
            "1 - available/pre = 0.9113). If using speculative decoding, draft weights are now "
            "counted."
        ),
        "gpu_memory_utilization",
    ),
    (
        # two processes on the GPU: shared, not filled by the weights
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
            "total capacity of 79.25 GiB of which 157.38 MiB is free. Process 1952521 has 40.96 "
            "GiB memory in use. Process 1956684 has 38.13 GiB memory in use. Of the allocated "
            "memory 37.53 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but "
            "unallocated."
        ),
        "gpu_memory_utilization",
    ),
    (
        (
            "RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy "
            "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
            "initializing the engine."
        ),
        "gpu_memory_utilization",
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        "gpu_memory_utilization",
    ),
    (
        # profiling OOM while PyTorch already holds the whole GPU: the weights leave no room
        _oom_in(
            ("vllm/worker/worker.py", 229, "determine_num_available_blocks"),
            ("vllm/worker/model_runner.py", 1290, "profile_run"),
        ).replace(
            OOM_ONE_PROCESS,
            OOM_ONE_PROCESS.replace("17.91 GiB is allocated", "23.11 GiB is allocated"),
        ),
        "oom_weights",
    ),
    (
        # a second process of a few MiB (a monitoring agent) does not make the GPU shared
        (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 296.00 MiB. GPU 0 has a "
            "total capacity of 15.61 GiB of which 55.06 MiB is free. Process 1388164 has 246.00 MiB "
            "memory in use. Including non-PyTorch memory, this process has 15.29 GiB memory in use. "
            "Of the allocated memory 14.94 GiB is allocated by PyTorch, and 41.12 MiB is reserved by "
            "PyTorch but unallocated."
        ),
        "oom_weights",
    ),
    (
        (
            "RuntimeError: Not enough memory to handle 4096 prefill tokens. You need to decrease "
            "`--max-batch-prefill-tokens`"
        ),
        "gpu_memory_utilization",
    ),
    # --- kv_cache_too_small ---------------------------------------------------------------
    (
        (
            "ValueError: To serve at least one request with the model's max seq len (131072), "
            "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(9.10 GiB). Based on the available memory, the estimated maximum model length is "
            "74544."
        ),
        "kv_cache_too_small",
    ),
    (
        (
            "(LLMRayActor pid=20770) INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU "
            "blocks: 378, # CPU blocks: 1638\n"
            "(LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145] Error executing "
            "method initialize_cache. This might cause deadlock in distributed execution.\n"
        ),
        "kv_cache_too_small",
    ),
    # --- cuda_driver_mismatch ----------------------------------------------------------------
    (
        (
            "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA "
            "driver version is insufficient for CUDA runtime version"
        ),
        "cuda_driver_mismatch",
    ),
    (
        "RuntimeError: CUDA error: forward compatibility was attempted on non supported HW",
        "cuda_driver_mismatch",
    ),
    (
        (
            "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been "
            "compiled with your version of the CUDA driver."
        ),
        "cuda_driver_mismatch",
    ),
    (
        (
            "docker: Error response from daemon: failed to create task for container: "
            "nvidia-container-cli: initialization error: nvml error: driver/library version "
            "mismatch: "
            "unknown."
        ),
        "cuda_driver_mismatch",
    ),
    (
        (
            "NVRM: API mismatch: the client has the version 550.54.15, but NVRM: this kernel "
            "module "
            "has the version 535.161.08."
        ),
        "cuda_driver_mismatch",
    ),
    ("CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "cuda_driver_mismatch"),
    (
        (
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: "
            "cannot open shared object file: no such file or directory: unknown."
        ),
        "cuda_driver_mismatch",
    ),
    # --- vllm_platform ----------------------------------------------------------------------
    (
        "RuntimeError: Only one platform plugin can be activated, but got: ['cuda', 'cpu']",
        "vllm_platform",
    ),
    ("AssertionError: Torch not compiled with CUDA enabled", "vllm_platform"),
    ("RuntimeError: No CUDA GPUs are available", "vllm_platform"),
    (
        "AttributeError: 'UnspecifiedPlatform' object has no attribute 'device_control_env_var'",
        "vllm_platform",
    ),
    # --- fabric_manager ---------------------------------------------------------------------
    (
        (
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did "
            "you run "
            "some cuda functions before calling NumCudaDevices() that might have already set an "
            "error? Error 802: system not yet initialized (Triggered internally at "
            "../c10/cuda/CUDAFunctions.cpp:108.)"
        ),
        "fabric_manager",
    ),
    ("RuntimeError: CUDA error: system not yet initialized", "fabric_manager"),
    ("triton.runtime.errors: CUDA_ERROR_SYSTEM_NOT_READY", "fabric_manager"),
    (
        "node7:1:1 [0] misc/cudawrap.cc:90 NCCL WARN Cuda failure 'system not yet initialized'",
        "fabric_manager",
    ),
    (
        "systemd[1]: Failed to start nvidia-fabricmanager.service - NVIDIA fabric manager service.",
        "fabric_manager",
    ),
    ("cudaSetDevice err: 802", "fabric_manager"),
    (
        (
            'level=DEBUG source=gpu.go:592 msg="Unable to load cudart library '
            '/usr/lib/ollama/libcudart.so.12.4.127: cudart init failure: 802"'
        ),
        "fabric_manager",
    ),
    # --- slurm ------------------------------------------------------------------------------
    (
        (
            "slurmstepd: error: *** STEP 4242.0 ON gpu-a17 CANCELLED AT 2024-05-10T15:51:07 DUE TO "
            "TIME LIMIT ***"
        ),
        "slurm_time_limit",
    ),
    (
        "[2024-05-10T15:51:07.001] Time limit exhausted for JobId=4242",
        "slurm_time_limit",
    ),
    (
        "4242         vllm-70b        gpu    proj-a         16    TIMEOUT      0:0",
        "slurm_time_limit",
    ),
    ("=>> PBS: job killed: walltime 3605 exceeded limit 3600", "slurm_time_limit"),
    (
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
            "that the latest NVIDIA driver is installed and running."
        ),
        "cuda_driver_mismatch",
    ),
    (
        "srun: error: Unable to allocate resources: Requested node configuration is not available",
        "slurm_resources",
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification",
        "slurm_resources",
    ),
    (
        "srun: error: Unable to create step for job 4242: More processors requested than permitted",
        "slurm_resources",
    ),
    (
        "  4242       gpu   vllm-70b    alice PD       0:00      2 (QOSMaxGRESPerUser)",
        "slurm_resources",
    ),
    (
        "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
        "slurm_resources",
    ),
    (
        (
            "srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually "
            "exclusive."
        ),
        "slurm_resources",
    ),
    ("slurmd: error: auth_g_unpack: remote plugin_id 101 not found", "slurm_auth"),
    (
        "srun: error: Unable to allocate resources: Protocol authentication error",
        "slurm_auth",
    ),
    (
        'munge: Error: Failed to access "/run/munge/munge.socket.2": No such file or directory',
        "slurm_auth",
    ),
    (
        "slurmd: error: Munge decode failed: Expired credential",
        "slurm_auth",
    ),
]

# Lines that share words with the memory signatures but carry no failure of theirs.
NEAR_MISSES = [
    (
        "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
        "srun: Step created for StepId=4242.1"
    ),
    "4242         vllm-70b        gpu    proj-a         16  COMPLETED      0:0",
    "ERROR 05-10 15:51:07 HTTP error 8021 while fetching the page",
    "INFO 05-10 15:49:58 [__init__.py:239] Automatically detected platform cuda.",
    "sbatch: Submitted batch job 4242",
    "srun: job 4242 queued and waiting for resources",
    "srun: job 4242 has been allocated resources",
    "INFO 05-10 15:51:20 [gpu_model_runner.py:1347] Model loading took 14.9926 GiB and 5.1 s",
    "INFO 05-10 15:52:01 [gpu_worker.py:227] Available KV cache memory: 51.31 GiB",
    "INFO 05-10 15:52:01 [kv_cache_utils.py:634] GPU KV cache size: 420,880 tokens",
    "INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: 1638",
    (
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 "
        "[00:03<00:00, 19.1it/s]"
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert causes and causes[0].cause == cause, [(f.cause, f.signature) for f in causes]


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_miss_names_no_cause(line: str) -> None:
    assert diagnose_text(line + "\n").causes == ()


TP2 = (
    "INFO 05-10 15:50:01 [core.py:58] Initializing a V1 LLM engine (v0.10.1) with "
    "config: model='/m', tensor_parallel_size=2, pipeline_parallel_size=1\n"
)
HEARTBEAT = (
    "(APIServer pid=300) DEBUG 05-10 15:52:{s:02d} [utils.py:777] Waiting for 1 local, 0 "
    "remote core engine proc(s) to start.\n"
)
LOADED = (
    "(Worker_TP1 pid=302) INFO 05-10 15:51:20 [gpu_model_runner.py:1347] Model loading "
    "took 14.9926 GiB and 5.101 seconds\n"
)
SERVING = (
    "(APIServer pid=300) INFO 05-10 15:55:00 [api_server.py:1090] Starting vLLM API "
    "server 0 on http://0.0.0.0:8000\n"
)


def _heartbeats(count: int = 40) -> str:
    return "".join(HEARTBEAT.format(s=i % 60) for i in range(count))


# A log that stops at a stage (no error after it) -> the likely cause of a hang there.
STALLS = [
    (
        TP2
        + (
            "(Worker_TP0 pid=301) INFO 05-10 15:50:09 [gpu_model_runner.py:1329] Starting to "
            "load model /m...\n"
        )
        + (
            "Loading safetensors checkpoint shards:  38% Completed | 11/29 [01:02<01:48,  "
            "5.61s/it]\n"
        ),
        "host_oom",
    ),
    (
        TP2
        + LOADED
        + (
            "(Worker_TP0 pid=301) INFO 05-10 15:51:40 [gpu_worker.py:227] Available KV cache "
            "memory: 51.31 GiB\n"
        )
        + "Capturing CUDA graph shapes:  12%|#2        | 8/67 [00:01<00:12,  4.61it/s]\n",
        "nccl_p2p",
    ),
    (
        LOADED
        + (
            "(EngineCore_DP0 pid=301) INFO 05-10 15:51:22 [backends.py:508] Using cache "
            "directory: /root/.cache/vllm/torch_compile_cache/a599c65868/rank_0_0/backbone for "
            "vLLM's torch.compile\n"
        )
        + (
            "(EngineCore_DP0 pid=301) INFO 05-10 15:51:36 [backends.py:519] Dynamo bytecode "
            "transform time: 14.33 s\n"
        ),
        "tmp_shared",
    ),
    (TP2 + LOADED + _heartbeats(), "nccl_p2p"),
    (TP2 + _heartbeats(), "nccl_p2p"),
    (
        (
            "[I socket.cpp:480] [c10d] The server socket has started to listen on [::]:29500.\n"
            "INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to "
            "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, "
            "num_workers_joined=1, timeout=0:30:00)\n"
        ),
        "nccl_network",
    ),
]

# The same stages followed by the server coming up: not a hang.
NOT_STALLS = [
    STALLS[0][0]
    + "Loading safetensors checkpoint shards: 100% Completed | 29/29 [02:50<00:00,  5.88s/it]\n"
    + LOADED
    + SERVING,
    STALLS[1][0]
    + (
        "INFO 05-10 15:52:30 [gpu_model_runner.py:2000] Graph capturing finished in 9 secs, "
        "took 0.52 GiB\n"
    )
    + SERVING,
    STALLS[2][0]
    + (
        "(EngineCore_DP0 pid=301) INFO 05-10 15:51:44 [backends.py:155] Directly load the "
        "compiled graph(s) for compile range (1, 8192) from the cache, took 1.803 s\n"
    ),
    TP2 + LOADED + _heartbeats() + SERVING,
    # one GPU: the heartbeat alone says nothing about P2P
    LOADED + _heartbeats(),
]


@pytest.mark.parametrize(("log", "cause"), STALLS)
def test_log_that_stops_at_a_stage_names_its_likely_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert causes and causes[0].cause == cause, [(f.cause, f.signature) for f in causes]
    assert causes[0].confidence < 0.7  # a stage marker is a hint, never a confident cause


@pytest.mark.parametrize("log", NOT_STALLS)
def test_stage_followed_by_serving_or_on_one_gpu_is_not_a_hang(log: str) -> None:
    assert diagnose_text(log).causes == ()


def test_run_record_of_a_cpu_build_supports_the_platform_cause() -> None:
    # diagnose/runs.py turns the store row into "hangar: engine E, vLLM V"
    error = "AssertionError: Torch not compiled with CUDA enabled\n"
    plain = diagnose_text(error).causes[0]
    recorded = diagnose_text("hangar: engine default, vLLM 0.11.0+cpu\n" + error).causes[0]
    assert plain.cause == recorded.cause == "vllm_platform"
    assert recorded.confidence > plain.confidence


def test_time_limit_outranks_the_collectives_it_cut_short() -> None:
    log = (
        "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
        "slurmstepd: error: *** JOB 4242 ON gpu-a17 CANCELLED AT 2024-05-10T15:51:07 DUE TO TIME "
        "LIMIT ***\n"
    )
    assert diagnose_text(log).causes[0].cause == "slurm_time_limit"


def test_oom_in_weight_loading_wins_over_another_workers_finished_load() -> None:
    other_worker = (
        "(Worker_TP1 pid=302) INFO 05-10 15:51:20 [gpu_model_runner.py:1347] Model loading took "
        "38.9926 GiB and 55.101 seconds\n"
    )
    log = other_worker + _oom_in(
        ("vllm/v1/worker/gpu_model_runner.py", 1764, "load_model"),
        ("vllm/model_executor/model_loader/default_loader.py", 269, "load_weights"),
    )
    assert diagnose_text(log).causes[0].cause == "oom_weights"


def test_a_driver_too_old_outranks_the_platform_vllm_then_cannot_find() -> None:
    log = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
        "version 11040). Please update your GPU driver by downloading and installing a new "
        "version from the URL: http://www.nvidia.com/Download/index.aspx (Triggered internally "
        "at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
        "INFO 11-02 10:01:02 __init__.py:207] No platform detected, vLLM is running on "
        "UnspecifiedPlatform\n"
        "RuntimeError: Failed to infer device type\n"
    )
    assert diagnose_text(log).causes[0].cause == "cuda_driver_mismatch"
