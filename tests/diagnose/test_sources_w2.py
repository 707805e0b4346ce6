"""Surface forms of the collective, Ray, port and JIT-toolchain causes, written from the emitting
sources (file and version in each signature's `sources`): the source's format string with its
variables filled in, never a line copied from a report. Near misses are lines the same sources
print on healthy runs, or look-alikes from other software, that must not name the cause."""

from __future__ import annotations

import pytest

from hangar.diagnose import diagnose_text

# (log text, expected first cause). Multi-line entries are a symptom plus the context a log shows.
CASES = [
    # NCCL src/misc/socket.cc, src/bootstrap.cc (2.18.3 .. 2.30.7)
    (
        "node1:12:34 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: exceeded retries (20000)",
        "nccl_network",
    ),
    ("gpu-b:2211:2330 [1] NCCL WARN socketPollConnect: exceeded timeouts (3)", "nccl_network"),
    (
        (
            "gpu-b:2211:2330 [1] NCCL WARN socketPollConnect: Connect to 10.1.2.3<45321> returned "
            "111(Connection refused) errno 115(Operation now in progress)"
        ),
        "nccl_network",
    ),
    (
        "gpu-a:7:9 [3] NCCL WARN socketProgress: Connection closed by remote peer gpu-b<51234>",
        "nccl_network",
    ),
    (
        (
            "n2:1:1 [0] NCCL WARN Net : error encountered when getting address info : Name or service "
            "not known"
        ),
        "nccl_network",
    ),
    (
        (
            "n2:1:1 [0] NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or "
            "[<ipv6>]:<port> or <hostname>:<port>"
        ),
        "nccl_network",
    ),
    (
        "n2:1:1 [0] NCCL WARN no device found matching exactly ib9, verify NCCL_OOB_NET_IFNAME",
        "nccl_network",
    ),
    # NCCL src/transport/net_ib/*.cc, src/include/ibvwrap.h
    (
        (
            "n1:5:77 [2] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f00, comm=0x5500 "
            "(send), wr_id=12, qp_num=77)"
        ),
        "nccl_network",
    ),
    (
        (
            "n1:5:77 [2] NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB "
            "and [1]mlx5_1:1/RoCE. Try selecting NICs of the same type"
        ),
        "nccl_network",
    ),
    ("n1:5:77 [2] NCCL WARN Call to ibv_poll_cq() returned -1", "nccl_network"),
    # ncclSystemError on a run whose NCCL spreads over several interfaces (net_socket.cc INFO)
    (
        (
            "n1:5:5 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]br-0a1b2c3d4e5f:172.18.0.1<0>\n"
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5"
        ),
        "nccl_network",
    ),
    # bootstrap over loopback on a run that then times out (bootstrap.cc INFO + c10d watchdog)
    (
        (
            "gpu-a:100:100 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
            "gpu-a:100:100 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
            "[rank0]:[E501 10:00:00.000] [PG 0 Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600001 milliseconds before timing out."
        ),
        "nccl_network",
    ),
    # torch/csrc/distributed/c10d TCPStore.cpp / socket.cpp (2.5)
    (
        (
            "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. "
            "1/2 clients joined."
        ),
        "nccl_network",
    ),
    (
        (
            "torch.distributed.DistNetworkError: The client socket has failed to connect to any "
            "network address of (10.0.0.1, 29500)."
        ),
        "nccl_network",
    ),
    # ProcessGroupGloo.cpp fallback + gloo tcp/pair.cc connect
    (
        (
            "[W501 10:00:00.000 ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a "
            "(local) address. Using the loopback address as fallback. Manually set the network "
            "interface to bind to with GLOO_SOCKET_IFNAME. (function operator())\n"
            "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:144] connect "
            "[127.0.1.1]:47161: Connection refused"
        ),
        "nccl_network",
    ),
    (
        (
            "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] connect "
            "[10.0.0.2]:47161: No route to host"
        ),
        "nccl_network",
    ),
    # a multi-node log that stops inside NCCL's set-up (net.cc channel lines)
    (
        (
            "n1:9:9 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
            "n1:9:9 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
            "n1:9:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/Socket/0\n"
        ),
        "nccl_network",
    ),
    # NCCL src/transport/p2p.cc; CUDA runtime error strings through CUDACHECK
    (
        (
            "n1:4:4 [0] NCCL WARN failed to peer with device 1(=41000): 217 peer access is not "
            "supported between these two devices"
        ),
        "nccl_p2p",
    ),
    ("n1:4:4 [0] NCCL WARN cudaIpcGetMemHandle failed : invalid argument", "nccl_p2p"),
    ("n1:4:4 [0] NCCL WARN Cuda failure 'peer mapping resources exhausted'", "nccl_p2p"),
    # one node, the log stops after Init COMPLETE and vLLM's P2P cache (custom_all_reduce_utils.py)
    (
        (
            "(VllmWorker rank=0 pid=11) INFO 05-10 15:51:02 [pynccl.py:69] vLLM is using nccl==2.21.5\n"
            "h:11:11 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId "
            "0xabc - Init COMPLETE\n"
            "(VllmWorker rank=0 pid=11) INFO 05-10 15:51:03 [custom_all_reduce_utils.py:244] reading "
            "GPU P2P access cache from /root/.cache/vllm/gpu_p2p_access_cache_for_0,1.json\n"
        ),
        "nccl_p2p",
    ),
    # NCCLCHECK's error trace (checks.h INFO '%s:%d -> %d'): the first frame names the layer
    (
        (
            "h:2330:2658 [2] NCCL INFO misc/socket.cc:567 -> 2\n"
            "h:2330:2658 [2] NCCL INFO bootstrap.cc:270 -> 2\n"
        ),
        "nccl_network",
    ),
    ("node08:27106:27302 [0] NCCL INFO include/shm.h:41 -> 2", "shm_ipc"),
    ("h:4:4 [1] NCCL INFO transport/p2p.cc:321 -> 1", "nccl_p2p"),
    # SIGBUS in a process with NCCL mapped (UCX's handler text), POSIX semaphores and torch shm
    (
        (
            "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
            " 5 0x00000000000489b1 ???()  /usr/lib/x86_64-linux-gnu/libnccl.so.2:0\n"
        ),
        "shm_ipc",
    ),
    (
        (
            "    sl = self._semlock = _multiprocessing.SemLock(\n"
            "OSError: [Errno 28] No space left on device\n"
        ),
        "shm_ipc",
    ),
    (
        "RuntimeError: unable to write to file </torch_1624_1163512929>: No space left on device (28)",
        "shm_ipc",
    ),
    (
        (
            "RuntimeError: unable to open shared memory object </torch_31124_2696026929> in read-write "
            "mode: No such file or directory (2)"
        ),
        "shm_ipc",
    ),
    # nccl-tests (src/common.cu) stops at its table header: the first all-reduce hangs
    (
        (
            "#   Rank  0 uses device  0 [0x05] Tesla M40 24GB\n"
            "#   Rank  1 uses device  1 [0x08] Tesla M40 24GB\n"
            "#                                                 out-of-place                    in-place\n"
            "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw\n"
        ),
        "nccl_p2p",
    ),
    # NCCL 2.8-2.12 socket.h / socket.cc, graph/paths.cc, transport/nvls.cc
    (
        "n3:7:7 [1] NCCL WARN Net : Connect to 10.0.0.2<43211> failed : Connection refused",
        "nccl_network",
    ),
    ("n3:7:7 [1] NCCL WARN Connect to 10.0.0.2<43211> failed : No route to host", "nccl_network"),
    (
        (
            "n3:7:7 [1] NCCL WARN Net : No interface found in the same subnet as remote address "
            "fe80::1461:22ff:fe33:b471<45015>"
        ),
        "nccl_network",
    ),
    (
        (
            "h:5:5 [0] NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This should "
            "not be the case given their connectivity, and is probably due to a hardware issue."
        ),
        "nccl_p2p",
    ),
    # NVLS 'invalid argument': a fabric manager restarted without a GPU reset (interconnect.yaml)
    (
        "h:5:5 [0] transport/nvls.cc:163 NCCL WARN Cuda failure 1 'invalid argument'",
        "fabric_manager",
    ),
    # vLLM csrc/custom_all_reduce.cuh CUDACHECK
    ("Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'invalid argument'", "nccl_p2p"),
    (
        (
            "[rank0]: RuntimeError: Error happened when batch testing peer-to-peer access from "
            "(0, 0, 1, 1) to (0, 1, 0, 1):"
        ),
        "nccl_p2p",
    ),
    (
        (
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/'
            'custom_all_reduce.py", line 297, in all_reduce\n'
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        ),
        "nccl_p2p",
    ),
    # torch elastic c10d rendezvous; Gloo device.cc; c10d bind / pyzmq EADDRNOTAVAIL
    (
        (
            "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to "
            "the C10d store has failed. See inner exception for details."
        ),
        "nccl_network",
    ),
    (
        (
            "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] "
            "ifa != nullptr. Unable to find address for: eth0"
        ),
        "nccl_network",
    ),
    (
        (
            "RuntimeError: The server socket has failed to listen on any local network address. The "
            "server socket has failed to bind to 10.0.0.9:29500 (errno: 99 - Cannot assign requested "
            "address)."
        ),
        "nccl_network",
    ),
    ("ConnectionError: ray client connection timeout", "ray_cluster"),
    (
        (
            "[2025-07-23 10:06:19,681 W 51000 51000] gcs_client.cc:183: Failed to get cluster ID from "
            "GCS server: TimedOut: Timed out while waiting for GCS to become available."
        ),
        "ray_cluster",
    ),
    (
        (
            "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
            "variable MASTER_ADDR expected, but not set"
        ),
        "nccl_network",
    ),
    (
        (
            "Exception: The current node has not been updated within 30 seconds, this could happen "
            "because of some of the Ray processes failed to startup."
        ),
        "ray_cluster",
    ),
    ("HIP error: invalid device ordinal", "world_size_gpus"),
    # ptxas / nvcc that predate the GPU; torch cpp_extension's `which c++`
    (
        "ptxas fatal   : Value 'sm_103a' is not defined for option 'gpu-name'",
        "flashinfer_jit_nvcc",
    ),
    (
        "subprocess.CalledProcessError: Command '['which', 'c++']' returned non-zero exit status 1.",
        "flashinfer_jit_nvcc",
    ),
    ("n1:4:4 [0] NCCL WARN hipIpcGetMemHandle failed : invalid argument", "nccl_p2p"),
    (
        "n1:5:77 [2] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out",
        "nccl_network",
    ),
    ("n1:5:77 [2] NCCL WARN NET/Socket : socket progress error", "nccl_network"),
    ("n1:5:77 [2] NCCL WARN NET/IB : No IP interface found.", "nccl_network"),
    # multiprocessing.shared_memory (vLLM shm_broadcast) on a /dev/shm that was cleaned / is full
    (
        (
            '  File "/usr/lib/python3.10/multiprocessing/shared_memory.py", line 104, in __init__\n'
            "FileNotFoundError: [Errno 2] No such file or directory: '/psm_4a1f0b2c'\n"
        ),
        "shm_ipc",
    ),
    # the log stops at vLLM's message-queue handle (shm_broadcast.py), after NCCL set-up
    (
        (
            "INFO 05-10 15:51:02 [pynccl.py:69] vLLM is using nccl==2.21.5\n"
            "INFO 05-10 15:51:03 [shm_broadcast.py:266] vLLM message queue communication handle: "
            "Handle(local_reader_ranks=[1], buffer_handle=(1, 4194304, 6, 'psm_8a'), "
            "local_subscribe_addr='ipc:///tmp/abc', remote_subscribe_addr=None, remote_addr_ipv6=False)\n"
        ),
        "nccl_p2p",
    ),
    # DeepGEMM deep_gemm/jit/compiler.py
    ("RuntimeError: Cannot find any available NVCC compiler", "flashinfer_jit_nvcc"),
    (
        "AssertionError: NVCC /usr/local/cuda/bin/nvcc version 12.1 is lower than 12.3",
        "flashinfer_jit_nvcc",
    ),
    # NCCL init.cc; CUDA cudaErrorInvalidDevice
    (
        (
            "h:10:10 [0] init.cc:738 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
            "CUDA device 1000"
        ),
        "world_size_gpus",
    ),
    ("RuntimeError: CUDA error: invalid device ordinal", "world_size_gpus"),
    ("h:10:10 [3] NCCL WARN Cuda failure 'invalid device ordinal'", "world_size_gpus"),
    # vLLM vllm/executor/ray_utils.py, ray_distributed_executor.py (0.6 .. 0.11)
    (
        (
            "ValueError: Current node has no GPU available. current_node_resource={'CPU': 20.0, "
            "'memory': 1e10}. vLLM engine cannot start without GPU. Make sure you have at least 1 GPU "
            "available in a node current_node_id='abc' current_ip='10.0.0.1'."
        ),
        "ray_cluster",
    ),
    (
        "ValueError: Current node has no NPU available. current_node_resource={'CPU': 8.0}.",
        "ray_cluster",
    ),
    (
        (
            "RuntimeError: driver node id 0a1b is not included in a placement group 0c2d. Node id -> "
            "bundles {}. You don't have enough GPUs available in a current node."
        ),
        "ray_cluster",
    ),
    (
        (
            "RuntimeError: Every node should have a unique IP address. Got 2 nodes with node ids "
            "['a', 'b'] and 3 unique IP addresses {'10.0.0.1', '10.0.0.2', '192.168.1.5'}. Please "
            "check your network configuration. If you set `VLLM_HOST_IP` environment variable, make "
            "sure it is unique for each node."
        ),
        "ray_cluster",
    ),
    ("ValueError: Placement group bundle cannot have more than 1 GPU.", "ray_cluster"),
    (
        (
            "ValueError: The number of required TPUs exceeds the total number of available TPUs in "
            "the placement group."
        ),
        "ray_cluster",
    ),
    (
        (
            '  File "/usr/lib/python3/site-packages/vllm/executor/ray_utils.py", line 112, in '
            "initialize_ray_cluster\n"
            "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready."
        ),
        "ray_cluster",
    ),
    # vLLM v1 data parallel on Ray (vllm/v1/engine/utils.py)
    (
        (
            "ValueError: ('Not enough resources to allocate %s DP ranks on DP master node %s, "
            "possible to fit %s DP ranks', 2, '10.0.0.1', 1)"
        ),
        "ray_cluster",
    ),
    (
        (
            "ValueError: Not enough resources to allocate 4 placement groups, only created 2 "
            "placement groups. Available resources: {'CPU': 64.0, 'GPU': 8.0}"
        ),
        "ray_cluster",
    ),
    (
        'Exception: Error setting CUDA_VISIBLE_DEVICES: local range: [8, 16) base value: "0,1,2,3,4,5,6,7"',
        "world_size_gpus",
    ),
    # Ray redis_context.cc (1.x), core_worker.cc (2.9)
    (
        (
            "F1119 08:22:23.602082 1513 1513 redis_context.cc:298] Could not establish connection to "
            "redis 10.0.0.1:6379 (context.err = 1)"
        ),
        "ray_cluster",
    ),
    (
        (
            "[2024-05-01 10:00:00,000 C 123 123] core_worker.cc:215: Failed to get the system config "
            "from raylet because it is dead. Worker will terminate. Status: GrpcUnavailable"
        ),
        "ray_cluster",
    ),
    # Ray grpc_server.cc; Winsock WSAEADDRINUSE
    (
        (
            "[2024-05-01 10:00:00,000 C 1 1] grpc_server.cc:120: Failed to start the grpc server. The "
            "specified port is 6379. This means that Ray's core components will not be able to "
            "function correctly."
        ),
        "port_in_use",
    ),
    (
        (
            "OSError: [WinError 10048] Only one usage of each socket address (protocol/network "
            "address/port) is normally permitted"
        ),
        "port_in_use",
    ),
    (
        (
            "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
            '"../aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. device=1, num_gpus='
        ),
        "world_size_gpus",
    ),
    (
        (
            "/root/.cache/flashinfer/jit/sampling.cu:18:10: fatal error: cuda_runtime.h: No such file "
            "or directory"
        ),
        "flashinfer_jit_nvcc",
    ),
    ("/usr/bin/ld: cannot find -lcuda: No such file or directory", "flashinfer_jit_nvcc"),
    # torch cpp_extension / inductor, setuptools, Triton build.py, FlashInfer jit, CUDA host_config.h
    ("RuntimeError: Ninja is required to load C++ extensions", "flashinfer_jit_nvcc"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'", "flashinfer_jit_nvcc"),
    ("/bin/sh: 1: ninja: not found", "flashinfer_jit_nvcc"),
    (
        (
            "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in "
            "torch._inductor.config.cpp.cxx: (None, 'g++')"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "UserWarning: Error checking compiler version for c++: [Errno 2] No such file or "
            "directory: 'c++'"
        ),
        "flashinfer_jit_nvcc",
    ),
    ("error: command 'gcc' failed: No such file or directory", "flashinfer_jit_nvcc"),
    ("/bin/sh: 1: x86_64-linux-gnu-gcc: not found", "flashinfer_jit_nvcc"),
    (
        "/tmp/tmpa1b2/main.c:5:10: fatal error: Python.h: No such file or directory",
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpxyz/main.c', '-O3', "
            "'-shared', '-fPIC', '-o', '/tmp/tmpxyz/cuda_utils.cpython-310-x86_64-linux-gnu.so']' "
            "returned non-zero exit status 1."
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "RuntimeError: The detected CUDA version (11.8) mismatches the version that was used to compile",
        "flashinfer_jit_nvcc",
    ),
    (
        (
            "/usr/local/cuda/include/crt/host_config.h:143:2: error: #error -- unsupported GNU "
            "version! gcc versions later than 13 are not supported! The nvcc flag "
            "'-allow-unsupported-compiler' can be used to override this version check"
        ),
        "flashinfer_jit_nvcc",
    ),
    (
        "RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist",
        "flashinfer_jit_nvcc",
    ),
    ("AssertionError: libcuda.so cannot found!", "flashinfer_jit_nvcc"),
    ("bash: nvcc: command not found", "flashinfer_jit_nvcc"),
    (
        "/usr/bin/which: no nvcc in (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin)",
        "flashinfer_jit_nvcc",
    ),
    ("RuntimeError: Error building extension 'flashinfer_sampling'", "flashinfer_jit_nvcc"),
]

# Lines the same sources print on healthy runs, or look-alikes from other software: no cause.
HEALTHY = [
    "INFO 05-10 15:51:02 [ray_utils.py:300] No current placement group found. Creating a new placement group.",
    "ninja: no work to do.",
    "ERROR app.worker: Could not establish connection to Redis after maximum retries.",
    # nccl-tests that ran to the end
    (
        "#                                                 out-of-place                    in-place\n"
        "           8             2   float     sum    18.42    0.00    0.00  0e+00    18.11\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.5\n"
    ),
    # vLLM's NCCL sanity script passing: Init COMPLETE, then its success lines and teardown
    (
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId a000 commId 0x6f - "
        "Init COMPLETE\nvLLM NCCL is successful!\n"
        "h:1:5 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"
    ),
]


# A CUDA graph capture that ran out of memory inside the all-reduce is not a P2P problem.
CUSTOM_AR_OOM = (
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/device_communicators/'
    'custom_all_reduce.py", line 297, in all_reduce\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
)


# Logs that went past NCCL's set-up: whatever a later stage says, the collectives are not it.
PAST_NCCL = [
    # one node that went on to load weights after NCCL set-up: not a hang
    (
        "h:11:11 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId "
        "0xabc - Init COMPLETE\n"
        "WARNING 05-10 15:51:03 [custom_all_reduce.py:136] Custom allreduce is disabled because "
        "it's not supported on more than two PCIe-only GPUs.\n"
        "INFO 05-10 15:51:04 [gpu_model_runner.py:1164] Starting to load model /models/Qwen3-8B...\n"
    ),
    # a multi-node run that got past NCCL set-up
    (
        "n1:9:9 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
        "n1:9:9 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[0] [receive] via NET/IB/0\n"
        "INFO 05-10 15:52:10 [default_loader.py:262] Loading weights took 31.20 seconds\n"
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert causes and causes[0].cause == cause, [(c.cause, c.signature) for c in causes]


@pytest.mark.parametrize("log", HEALTHY)
def test_healthy_source_lines_name_no_cause(log: str) -> None:
    assert diagnose_text(log).causes == ()


@pytest.mark.parametrize(
    "line",
    [
        "gpu-a:100:100 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
        "n1:5:5 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>",
    ],
)
def test_bootstrap_interface_alone_is_not_a_network_failure(line: str) -> None:
    # NCCL prints these on every healthy run; without an error or a second node they name no
    # network problem (a log that stops there is a one-node stage marker of stages.yaml)
    assert all(c.cause != "nccl_network" for c in diagnose_text(line).causes)


@pytest.mark.parametrize("log", PAST_NCCL)
def test_a_log_past_nccl_setup_is_no_collective_hang(log: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause not in ("nccl_p2p", "nccl_network") for c in causes), causes


def test_c10d_connect_retry_warning_alone_is_not_confident() -> None:
    # torch warns on every retry while rank 0 starts: alone it is a weak hint, never confident
    warning = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 "
        "(errno: 99 - Cannot assign requested address)."
    )
    diagnosis = diagnose_text(warning)
    assert not diagnosis.confident(), diagnosis.causes


def test_shm_segment_error_is_not_read_as_the_network() -> None:
    # an NCCL shm failure prints the same 'unhandled system error' on a node with NET/Socket lines
    log = (
        "n1:5:5 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>\n"
        "n1:5:5 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-AbCd12 "
        "(size 9637888)\n"
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    assert diagnose_text(log).causes[0].cause == "shm_ipc"


def test_a_redis_client_of_another_app_is_not_ray() -> None:
    line = "ConnectionError: Could not establish connection to Redis at redis://cache:6379"
    assert all(c.cause != "ray_cluster" for c in diagnose_text(line).causes)


def test_a_bus_error_without_shared_memory_evidence_is_not_shm() -> None:
    assert all(c.cause != "shm_ipc" for c in diagnose_text("Bus error (core dumped)").causes)


WATCHDOG = (
    "[rank0]:[E501 10:00:00.000] [PG 0 Rank 0] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
    "600001 milliseconds before timing out."
)
NET_SOCKET = "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>"


def _layout(nodes: int) -> str:
    # the line diagnose/runs.py (_layout) writes for a run Hangar launched
    return (
        "hangar: deployment m: tensor_parallel_size=2 pipeline_parallel_size=1 "
        f"data_parallel_size=1 expert_parallel=False; 2 GPU(s) per node (H100) x {nodes} node(s)"
    )


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        # NCCL prints NET/Socket on one node too: the recorded one-node layout settles it
        (f"{_layout(1)}\n{NET_SOCKET}\n{WATCHDOG}\n", "nccl_p2p"),
        (f"{_layout(2)}\n{WATCHDOG}\n", "nccl_network"),
    ],
)
def test_the_recorded_layout_decides_where_a_collective_timed_out(log: str, cause: str) -> None:
    assert diagnose_text(log).causes[0].cause == cause


def test_an_oom_inside_the_custom_all_reduce_is_not_p2p() -> None:
    assert all(c.cause != "nccl_p2p" for c in diagnose_text(CUSTOM_AR_OOM).causes)
