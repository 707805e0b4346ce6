"""Surface forms of NCCL / torch.distributed / Gloo failures and hangs (data/collectives.yaml),
written from the emitting sources (file and version in each signature's `sources`): every log
below is the source's format string with its variables filled in, not a line copied from a
report. Near misses share words with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text

HOST = "gpu-node-1:2741:2741"


def _info(msg: str, dev: int = 0) -> str:
    # NCCL src/debug.cc: "%s:%d:%d [%d] NCCL INFO " (hostname, pid, tid, cudaDev)
    return f"{HOST} [{dev}] NCCL INFO {msg}\n"


def _warn(where: str, msg: str, dev: int = 0) -> str:
    # NCCL src/debug.cc: "\n%s:%d:%d [%d] %s:%d NCCL WARN " (__FILE__, __LINE__)
    return f"\n{HOST} [{dev}] {where} NCCL WARN {msg}\n"


def _torch_nccl_error(result: str, detail: str, last: str, version: str = "2.27.3") -> str:
    # torch 2.6-2.10 c10d NCCLUtils (C10D_NCCL_CHECK + getNcclErrorDetailStr, "Last error:")
    return (
        "torch.distributed.DistBackendError: NCCL error in: "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
        f"{result}, NCCL version {version}\n{detail}\nLast error:\n{last}\n"
    )


NCCL_227 = _info("NCCL version 2.27.3+cuda12.9")
ONE_NODE_START = (
    NCCL_227
    + _info("Bootstrap: Using eth0:10.1.2.3<0>")
    + _info("Using network Socket")
    + _info(
        "ncclCommInitRank comm 0x55d1c2a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x5e3f6a1b2c3d4e5f - Init START"
    )
    + _info("comm 0x55d1c2a0 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0")
)
TWO_NODE_START = (
    NCCL_227
    + _info("Bootstrap: Using ib0:10.20.0.11<0>")
    + _info("Using network IB")
    + _info(
        "ncclCommInitRank comm 0x55d1c2a0 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x5e3f6a1b2c3d4e5f - Init START"
    )
    + _info("comm 0x55d1c2a0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0")
)
# NCCL 2.21-2.28 src/graph/connect.cc: one "Channel %02d/%02d : <ring>" INFO line per channel
RINGS = "".join(_info(f"Channel {c:02d}/32 :    0   1") for c in range(32))
ULIMIT_V = "virtual memory          (kbytes, -v) 67108864\n"
WATCHDOG_STUCK = (
    "[rank0]:[E1202 01:10:11.123456 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
    "monitoring enqueued collectives. This typically indicates a NCCL/CUDA API (e.g., "
    "CudaEventDestroy) hang blocking the watchdog, and could be triggered by another thread "
    "holding the GIL inside a CUDA api (for example, CudaEventDestroy), or other deadlock-prone "
    "behaviors.\n"
)
GLOO_TIMEOUT = (
    "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
    "Timed out waiting 1800000ms for recv operation to complete\n"
)
STARTED = "INFO:     Application startup complete.\n"

CASES = [
    # NCCL 2.27+ src/misc/socket.cc socketConnectCheck: retries exhausted
    (
        _warn(
            "misc/socket.cc:583",
            "socketStartConnect: connect to 10.20.0.12<45311> returned Connection refused, "
            "exceeded error retry count after 35 attempts",
        ),
        "nccl_network",
    ),
    # NCCL 2.24-2.26 wording of the same
    (
        _warn(
            "misc/socket.cc:543",
            "socketPollConnect: connect returned Connection timed out, exceeded error retry "
            "count (35)",
        ),
        "nccl_network",
    ),
    # ... through torch's NCCL error with its "Last error:" line (no NCCL WARN prefix)
    (
        _torch_nccl_error(
            "remote process exited or there was a network error",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
            "exiting prematurely.",
            "socketStartConnect: connect to 10.20.0.12<45311> returned No route to host, exceeded "
            "error retry count after 35 attempts",
        ),
        "nccl_network",
    ),
    # NCCL 2.27+ lower-case connect failure, through torch
    (
        _torch_nccl_error(
            "unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
            "or device error. ",
            "socketStartConnect: connect to 10.20.0.12<45311> failed : Software caused connection "
            "abort",
        ),
        "nccl_network",
    ),
    # NCCL 2.27+ socketPollConnect / socketTryAccept
    (
        _warn(
            "misc/socket.cc:622",
            "socketPollConnect to 10.20.0.12<45311> failed with error Connection reset by peer",
        ),
        "nccl_network",
    ),
    (
        _warn(
            "misc/socket.cc:453",
            "socketTryAccept: exceeded error retry count after 35 attempts, Connection reset by "
            "peer",
        ),
        "nccl_network",
    ),
    # NCCL 2.23 socketPollConnect poll() failure
    (
        _warn(
            "misc/socket.cc:610", "socketPollConnect poll() returned -1, error Bad file descriptor"
        ),
        "nccl_network",
    ),
    # a log that stops in NCCL's connect retries (INFO, 2.27+ and 2.21 forms)
    (
        TWO_NODE_START
        + _info(
            "socketStartConnect: connect to 10.20.0.12<45311> returned Connection refused, "
            "retrying (1/34) after sleep for 100 msec"
        )
        + _info(
            "socketStartConnect: connect to 10.20.0.12<45311> returned Connection refused, "
            "retrying (2/34) after sleep for 200 msec"
        ),
        "nccl_network",
    ),
    (
        NCCL_227.replace("2.27.3", "2.21.5")
        + _info("Call to connect returned Connection refused, retrying"),
        "nccl_network",
    ),
    # NCCL 2.26+ bootstrap on loopback / docker0, then a failure
    (
        _info("Bootstrap: Using lo:127.0.0.1<0>")
        + _torch_nccl_error(
            "unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
            "or device error. ",
            "socketProgress: Connection closed by remote peer 10.20.0.12<45311>",
        ),
        "nccl_network",
    ),
    (
        _info("Bootstrap: Using docker0:172.17.0.2<0>")
        + "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for "
        "details)\n",
        "nccl_network",
    ),
    # hangs: one node, the log stops at a late init stage (trees, thresholds, channel counts)
    (ONE_NODE_START + _info("Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1"), "nccl_p2p"),
    (
        ONE_NODE_START
        + _info("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read")
        + _info("Connected all rings")
        + _info("Connected all trees"),
        "nccl_p2p",
    ),
    (
        ONE_NODE_START
        + _info("threadThresholds 8/8/64 | 16/8/64 | 512 | 512")
        + _info(
            "24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p "
            "channels per peer"
        ),
        "nccl_p2p",
    ),
    # ... where Init START lies beyond the last lines (one ring line per channel before it)
    (ONE_NODE_START + RINGS + _info("Connected all trees"), "nccl_p2p"),
    (ONE_NODE_START + RINGS + _info("threadThresholds 8/8/64 | 16/8/64 | 512 | 512"), "nccl_p2p"),
    # hangs: a 2.26+ run across nodes that stops right after its bootstrap line
    (
        "torchrun --nnodes=2 --nproc-per-node=8 --rdzv-endpoint=10.20.0.11:29500 serve.py\n"
        + NCCL_227
        + _info("Bootstrap: Using ib0:10.20.0.11<0>")
        + _info("Using network Socket"),
        "nccl_network",
    ),
    # hangs: 2.26+ bootstrap line, or the nRanks line, on a run across nodes
    (TWO_NODE_START, "nccl_network"),
    (
        TWO_NODE_START + _info("Setting affinity for GPU 0 to ffff,ffffffff"),
        "nccl_network",
    ),
    # hangs: NVLS multicast set-up on an NVSwitch node
    (
        ONE_NODE_START
        + RINGS
        + _info("NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)")
        + _info(
            "NVLS comm 0x55d1c2a0 headRank 0 nHeads 8 nvlsRanks 8 buffSize 1048576 "
            "nvlsPerRankSize 201326592 nvlsTotalSize 1610612736"
        ),
        "nccl_p2p",
    ),
    # NCCL 2.27+ NVLS bind failure (WARN and through torch's Last error)
    (
        _warn(
            "transport/nvls.cc:158",
            "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : CUDA error "
            "1 'invalid argument'.",
        ),
        # 'invalid argument' from the multicast bind: the fabric manager restarted without a GPU
        # reset (NVIDIA/nccl#976, #1488; interconnect.yaml)
        "fabric_manager",
    ),
    (
        _torch_nccl_error(
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            "ncclUnhandledCudaError: Call to CUDA function failed.",
            "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : CUDA error "
            "801 'operation not supported'.",
        ),
        "nccl_p2p",
    ),
    # NCCL /dev/shm segment files (2.28 and 2.21 forms)
    (
        _warn(
            "misc/shmutils.cc:81",
            "Error: failed to create shared memory file /dev/shm/nccl-Xk3P9q, error No space "
            "left on device (28)",
        ),
        "shm_ipc",
    ),
    (
        _warn(
            "misc/shmutils.cc:101",
            "Could not map /dev/shm/nccl-Xk3P9q size 9637888, error: No such device",
        ),
        "shm_ipc",
    ),
    # a CUDA call failing inside NCCL's P2P / SHM transport (the WARN line's location)
    (
        _warn("transport/p2p.cc:275", "Cuda failure 1 'invalid argument'")
        + _torch_nccl_error(
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
            "ncclUnhandledCudaError: Call to CUDA function failed.",
            "Cuda failure 1 'invalid argument'",
        ),
        "nccl_p2p",
    ),
    (
        _warn("transport/shm.cc:112", "Cuda failure 'invalid argument'"),
        "shm_ipc",
    ),
    # NCCL host allocations under a finite ulimit -v
    (
        ULIMIT_V + _warn("include/alloc.h:119", "Failed to CUDA host alloc 4194304 bytes"),
        "ulimit_mmap",
    ),
    (ULIMIT_V + _warn("include/alloc.h:136", "Failed to malloc 33554432 bytes"), "ulimit_mmap"),
    # vLLM's pynccl could not dlopen libnccl under a finite ulimit -v
    (
        ULIMIT_V + "ERROR 12-02 01:10:11 [pynccl_wrapper.py:336] Failed to load NCCL library from "
        "libnccl.so.2. It is expected if you are not running on NVIDIA/AMD GPUs.Otherwise, the "
        "nccl library might not exist, be corrupted or it does not support the current platform "
        "Linux-5.15.0-x86_64-with-glibc2.35. If you already have the library, please set the "
        "environment variable VLLM_NCCL_SO_PATH to point to the correct nccl library path.\n",
        "ulimit_mmap",
    ),
    # torch's watchdog heartbeat: across nodes; one node with P2P channels
    (TWO_NODE_START + WATCHDOG_STUCK, "nccl_network"),
    (
        ONE_NODE_START + _info("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read") + WATCHDOG_STUCK,
        "nccl_p2p",
    ),
    (
        TWO_NODE_START
        + "[rank0]:[E1202 01:10:11.1 ProcessGroupNCCL.cpp:1204] [Rank 0] Heartbeat monitor timed "
        "out! Process will be terminated after dumping debug info. workMetaList_.size()=1\n",
        "nccl_network",
    ),
    # NCCL's IB transport, through torch's "Last error:" line (2.21 and 2.28 wording)
    (
        _torch_nccl_error(
            "remote process exited or there was a network error",
            "ncclRemoteError: A call failed possibly due to a network error or a remote process "
            "exiting prematurely.",
            "NET/IB: Got completion from peer 10.20.0.12<51234> with status=IBV_WC_RETRY_EXC_ERR(12) "
            "opcode=IBV_WC_SEND(0) reqSize=0 vendor_err=129 req_type=Send localGid ::ffff:10.20.0.11 "
            "remoteGids ::ffff:10.20.0.12 hca mlx5_0",
            version="2.28.9",
        ),
        "nccl_network",
    ),
    (
        _torch_nccl_error(
            "unhandled system error (run with NCCL_DEBUG=INFO for details)",
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
            "or device error. ",
            "NET/IB : mlx5_0:1 Got async event : port error",
            version="2.21.5",
        ),
        "nccl_network",
    ),
    (
        _warn("transport/net_ib.cc:715", "NET/IB : Unable to open device mlx5_2"),
        "nccl_network",
    ),
    # Gloo I/O timeout across nodes
    (TWO_NODE_START + _info("Init COMPLETE") + GLOO_TIMEOUT, "nccl_network"),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


HEALTHY_INIT = (
    ONE_NODE_START
    + _info("Failed to open libibverbs.so[.1]")
    + _info("NET/IB : No device found.")
    + _info("Setting affinity for GPU 0 to ffff,ffffffff")
    + _info("Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1")
    + _info("Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read")
    + _info("Connected all rings")
    + _info("Connected all trees")
    + _info("threadThresholds 8/8/64 | 16/8/64 | 512 | 512")
    + _info(
        "ncclCommInitRank comm 0x55d1c2a0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x5e3f6a1b2c3d4e5f - Init COMPLETE"
    )
    + _info(
        "Init timings - ncclCommInitRank: rank 0 nranks 2 total 0.61 (kernels 0.15, alloc "
        "0.02, bootstrap 0.01, allgathers 0.00, topo 0.20, graphs 0.01, connections 0.20, "
        "rest 0.02)"
    )
)

NEAR_MISSES = [
    # a healthy NCCL 2.27 init that completes (IB library missing is INFO: sockets are used)
    (HEALTHY_INIT + STARTED, "nccl_p2p"),
    (HEALTHY_INIT + STARTED, "nccl_network"),
    # loopback bootstrap on a healthy one-process run
    (_info("Bootstrap: Using lo:127.0.0.1<0>") + HEALTHY_INIT + STARTED, "nccl_network"),
    # one connect retry, then the communicator completes
    (
        ONE_NODE_START
        + _info(
            "socketStartConnect: connect to 10.1.2.3<45311> returned Connection refused, "
            "retrying (1/34) after sleep for 100 msec"
        )
        + HEALTHY_INIT
        + STARTED,
        "nccl_network",
    ),
    # vLLM's custom all-reduce warning on a healthy PCIe start
    (
        "WARNING 12-02 01:10:11 [custom_all_reduce.py:137] Custom allreduce is disabled because "
        "your platform lacks GPU P2P capability or P2P test failed. To silence this warning, "
        "specify disable_custom_all_reduce=True explicitly.\n" + STARTED,
        "nccl_p2p",
    ),
    # a Gloo timeout on one node: a slow rank as often as anything; not the network
    (GLOO_TIMEOUT, "nccl_network"),
    # the watchdog heartbeat alone: a guess, not a diagnosis
    (WATCHDOG_STUCK, "nccl_p2p"),
    (WATCHDOG_STUCK, "nccl_network"),
    # NCCL host-alloc failure without a finite address space: not ulimit_mmap
    (_warn("include/alloc.h:119", "Failed to CUDA host alloc 4194304 bytes"), "ulimit_mmap"),
    # a P2P-transport WARN about memory is the memory budget, not the link
    (_warn("transport/p2p.cc:275", "Cuda failure 'out of memory'"), "nccl_p2p"),
    # libnccl failing to load without a finite address space: not ulimit_mmap
    (
        (
            "ERROR 12-02 01:10:11 [pynccl_wrapper.py:336] Failed to load NCCL library from "
            "libnccl.so.2. It is expected if you are not running on NVIDIA/AMD GPUs.\n"
        ),
        "ulimit_mmap",
    ),
    # torch's TCPStore after rank 0 exited (shutdown noise, not the network)
    (
        HEALTHY_INIT
        + "[rank1]:[W1202 01:10:11.1 ProcessGroupNCCL.cpp:1783] [PG ID 0 PG GUID 0 Rank 1] Failed "
        'to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too '
        "early), with error: Failed to recv, got 0 bytes. Connection was likely closed. Did the "
        "remote server shutdown or crash?\n",
        "nccl_network",
    ),
    # a one-node hang must not be read as the network, a two-node one not as P2P
    (ONE_NODE_START + _info("Connected all trees"), "nccl_network"),
    (TWO_NODE_START + _info("Connected all trees"), "nccl_p2p"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    causes = diagnose_text(log).causes
    assert all(c.cause != cause for c in causes[:1]), [
        (c.cause, c.signature, c.confidence) for c in causes
    ]


def test_watchdog_heartbeat_alone_stays_below_the_naming_floor() -> None:
    diagnosis = diagnose_text(WATCHDOG_STUCK)
    assert diagnosis.healthy
    assert diagnosis.unconfirmed and diagnosis.unconfirmed[0].confidence < 0.3
