"""Surface forms of the interconnect under the collectives (data/interconnect.yaml, and the HIP
static-function form of data/platforms.yaml), written from the emitting sources (file and
version in each signature's `sources`): NCCL's NVLS multicast bind by its CUDA error, the
topology graph's missing NET, GPU Direct RDMA disabled, the socket transport on a link-local
interface, aws-ofi-nccl / libfabric, the fabric manager service, nccl-tests built against
NCCL 1.x, and a HIP library without code for the GPU. Every log below is the source's format
string with its variables filled in, not a line copied from a report. Near misses share words
with a signature but must not name its cause."""

from __future__ import annotations

import pytest
from support.sources import assert_names_first

from hangar.diagnose import diagnose_text

# NCCL's log header (src/debug.cc: "%s:%d:%d [%d] " host, pid, tid, cudaDev)
H = "gpu-node-07:48211:48290 [2] "

BIND_WARN_229 = (
    "{h}NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size {size} : CUDA "
    "error {code} '{text}'.\n"
    "This is usually caused by a system or configuration error in the Fabric Manager or "
    "NVSwitches.\n"
    "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future.\n"
)
BIND_WARN_227_FORCED = (
    "{h}NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size {size} : CUDA "
    "error {code} '{text}'.\n"
    "This is usually caused by a system or configuration error in the Fabric Manager or "
    "NVSwitches.\n"
    "Do not force-enable NVLS (NCCL_NVLS_ENABLE=1) if you wish to avoid this error in the "
    "future.\n"
)
BIND_INFO_227 = (
    "{h}NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size {size} : CUDA "
    "error {code} '{text}'. Proceeding without NVLS support.\n"
)

CASES = [
    # NCCL 2.18 nvls.cc CUCHECK (checks.h "Cuda failure '%s'") and the NCCLCHECK trace
    (
        (
            f"{H}transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
            f"{H}NCCL INFO transport/nvls.cc:324 -> 1\n"
            f"{H}NCCL INFO init.cc:1093 -> 1\n"
        ),
        "fabric_manager",
    ),
    # NCCL 2.23 cudawrap.h CUCHECK ("Cuda failure %d '%s'")
    (
        (
            f"{H}transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'\n"
            f"{H}NCCL INFO transport/nvls.cc:411 -> 1\n"
        ),
        "fabric_manager",
    ),
    # NCCL 2.29 bind WARN, invalid argument
    (
        BIND_WARN_229.format(h=H, size=4194304, code=1, text="invalid argument"),
        "fabric_manager",
    ),
    # NCCL 2.29 bind WARN, out of memory: the multicast objects are used up
    (
        BIND_WARN_229.format(h=H, size=2097152, code=2, text="out of memory"),
        "other",
    ),
    # NCCL 2.27 with NCCL_NVLS_ENABLE=1 forced, out of memory
    (
        BIND_WARN_227_FORCED.format(h=H, size=1048576, code=2, text="out of memory"),
        "other",
    ),
    # NCCL graph/topo.h ncclTopoIdToNetDev
    (f"{H}graph/topo.h:248 NCCL WARN Could not find NET with id 3\n", "other"),
    # NCCL topo.cc GDR state per HCA
    (
        (
            f"{H}NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_4'\n"
            f"{H}NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 1 'mlx5_5'\n"
        ),
        "other",
    ),
    # NCCL net_socket.cc interface list with a link-local address, then socket.cc 2.27+ retries
    (
        (
            f"{H}NCCL INFO NET/Socket : Using [0]ens5:10.20.3.4<0> [1]lnk-agent0:169.254.7.9<0>\n"
            f"{H}NCCL INFO socketPollConnect: connect to 169.254.7.9<51877> returned Connection "
            "refused, retrying (5/34) after sleep for 500 msec\n"
        ),
        "nccl_network",
    ),
    # the bootstrap on a link-local address, then socket.cc 2.21 giving up
    (
        (
            f"{H}NCCL INFO Bootstrap : Using lnk-agent0:169.254.7.9<0>\n"
            f"{H}NCCL WARN socketStartConnect: exceeded retries (34)\n"
        ),
        "nccl_network",
    ),
    # aws-ofi-nccl rdma init: fi_getinfo failed (1.14: WARN for every error)
    (
        (
            f"{H}nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call failed: No data "
            "available\n"
        ),
        "nccl_network",
    ),
    # aws-ofi-nccl 1.17+: FI_ENODATA as an INFO line, then the plugin's init failure
    (
        (
            f"{H}NCCL INFO NET/OFI No eligible providers were found\n"
            f"{H}NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
        ),
        "nccl_network",
    ),
    # aws-ofi-nccl register_mr_buffers, CUDA buffer (type 2), -EINVAL
    (
        (
            f"{H}register_mr_buffers:441 NCCL WARN NET/OFI Unable to register memory (type = 2) for "
            "device 5. RC: -22, Error: Invalid argument\n"
        ),
        "dependency_mismatch",
    ),
    # Chef resource.rb custom_exception_message
    (
        (
            "service[nvidia-fabricmanager] (site-gpu::fabric line 12) had an error: "
            "Mixlib::ShellOut::ShellCommandFailed: Expected process to exit with [0], but received "
            "'1'\n"
        ),
        "fabric_manager",
    ),
    # Chef's formatter headline
    (
        "Error executing action `start` on resource 'service[nvidia-fabricmanager]'\n",
        "fabric_manager",
    ),
    # systemctl and systemd
    (
        (
            "Job for nvidia-fabricmanager.service failed because the control process exited with "
            "error code.\n"
        ),
        "fabric_manager",
    ),
    ("nvidia-fabricmanager.service: Failed with result 'timeout'.\n", "fabric_manager"),
    # nccl-tests 2017-2019 built against NCCL 1.x, NCCLCHECK
    (
        (
            "# NCCL Tests compiled with NCCL 1.3\n"
            "# Using devices\n"
            "NCCL failure common.cu:412 'unhandled cuda error'\n"
        ),
        "other",
    ),
    # ROCm CLR hip_platform.cpp with deferred loading off: 209 and 218
    (
        (
            ":0:/src/clr/hipamd/src/hip_platform.cpp:106 : 88412 us: \n"
            "Cannot retrieve Static function, error: 209\nAborted (core dumped)\n"
        ),
        "extension_abi_mismatch",
    ),
    ("Cannot retrieve Static function, error: 218\n", "extension_abi_mismatch"),
    # the same on an ISA outside ROCm's list: the HSA_OVERRIDE_GFX_VERSION case
    (
        ("  Name:                    gfx1031\nCannot retrieve Static function, error: 209\n"),
        "other",
    ),
]


@pytest.mark.parametrize(("log", "cause"), CASES)
def test_source_form_names_its_cause(log: str, cause: str) -> None:
    assert_names_first(log, cause)


def _named(log: str) -> list[str]:
    return [c.cause for c in diagnose_text(log).causes]


NEAR_MISSES = [
    # 2.27-2.28 INFO: NCCL goes on without NVLS
    (BIND_INFO_227.format(h=H, size=2097152, code=2, text="out of memory"), "other"),
    (BIND_INFO_227.format(h=H, size=2097152, code=1, text="invalid argument"), "fabric_manager"),
    (BIND_INFO_227.format(h=H, size=2097152, code=1, text="invalid argument"), "nccl_p2p"),
    # healthy NVLS set-up lines (src/transport/nvls.cc INFO)
    (
        (
            f"{H}NCCL INFO NVLS multicast support is available on dev 2\n"
            f"{H}NCCL INFO NVLS comm 0x55d0c3a0 headRank 2 nHeads 8 buffSize 1048576\n"
            f"{H}NCCL INFO Connected NVLS tree\n"
            f"{H}NCCL INFO ncclCommInitRank comm 0x55d0c3a0 rank 2 nranks 8 - Init COMPLETE\n"
        ),
        "fabric_manager",
    ),
    # GDR enabled, and paths.cc's distance rule (NCCL_NET_GDR_LEVEL), are not the module check
    (f"{H}NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'\n", "other"),
    (
        f"{H}NCCL INFO GPU Direct RDMA Disabled for GPU 3 / HCA 5 (distance 5 > 4)\n",
        "other",
    ),
    # a link-local interface with nothing failing (a direct point-to-point link)
    (
        (
            f"{H}NCCL INFO NET/Socket : Using [0]enp1s0f1np1:169.254.28.198<0>\n"
            f"{H}NCCL INFO ncclCommInitRank comm 0x7f00 rank 0 nranks 2 - Init COMPLETE\n"
        ),
        "nccl_network",
    ),
    # aws-ofi-nccl's own CUDA init failure is not the network
    (f"{H}NCCL WARN NET/OFI CUDA initialization failed.\n", "nccl_network"),
    # host memory (type 1) refused for another reason
    (
        (
            f"{H}register_mr_buffers:441 NCCL WARN NET/OFI Unable to register memory (type = 1) for "
            "device 0. RC: -12, Error: Cannot allocate memory\n"
        ),
        "dependency_mismatch",
    ),
    # the fabric manager service starting and stopping normally
    (
        (
            "Started NVIDIA fabric manager service.\n"
            "nvidia-fabricmanager.service: Deactivated successfully.\n"
        ),
        "fabric_manager",
    ),
    # another Chef resource failing on the same node
    (
        (
            "service[slurmd] (site-slurm::compute line 40) had an error: "
            "Mixlib::ShellOut::ShellCommandFailed: Expected process to exit with [0], but received "
            "'1'\n"
        ),
        "fabric_manager",
    ),
    # nccl-tests built against NCCL 2.x: 'unhandled cuda error' alone names nothing
    (
        (
            "# NCCL Tests compiled with NCCL 2.3\n"
            "NCCL failure common.cu:412 'unhandled cuda error'\n"
        ),
        "other",
    ),
    # HIP registration with another error, or a found code object
    ("Cannot register Static function, error: 1\n", "extension_abi_mismatch"),
]


@pytest.mark.parametrize(("log", "cause"), NEAR_MISSES)
def test_near_miss_does_not_name_the_cause(log: str, cause: str) -> None:
    assert cause not in _named(log), diagnose_text(log).causes


def test_gdr_disabled_yields_to_a_specific_failure() -> None:
    """GPU Direct RDMA disabled is a fallback: a multi-node timeout in the same log wins."""
    log = (
        f"{H}NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
        f"{H}NCCL INFO comm 0x55 rank 3 nRanks 16 nNodes 2 localRanks 8 localRank 3 MNNVL 0\n"
        "[rank3]:[E1202 04:10:00.000000 1 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    )
    causes = _named(log)
    assert causes[0] == "nccl_network", causes
    assert "other" not in causes


def test_nccl_tests_failure_after_the_header_is_not_a_hang() -> None:
    """The table header then a failed NCCL call: the run failed, it did not stop at the first
    size (stall_nccl_tests_first_size must not read it as a one-node P2P hang)."""
    log = (
        "# NCCL Tests compiled with NCCL 2.3\n"
        "#  Rank  0 Pid 1 on node03 device  0 [0x00] Tesla V100-SXM2-16GB\n"
        "#                                                 out-of-place                    "
        "in-place\n"
        "#      bytes             N    type      op     time  algbw  busbw      res     time  "
        "algbw  busbw      res\n"
        "NCCL failure all_reduce.cu:95 'unhandled cuda error'\n"
    )
    assert "nccl_p2p" not in _named(log)


def test_nvls_invalid_argument_outranks_the_generic_nvls_failure() -> None:
    log = f"{H}transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'\n"
    causes = diagnose_text(log).causes
    assert causes[0].cause == "fabric_manager"
    p2p = [c for c in causes if c.cause == "nccl_p2p"]
    assert not p2p or p2p[0].confidence < 0.5


def test_nvls_other_errors_stay_with_the_generic_signature() -> None:
    """A bind failure with neither code 1 nor 2 (e.g. 801 not supported) is still NVLS set-up."""
    log = BIND_WARN_229.format(h=H, size=2097152, code=801, text="operation not supported")
    assert_names_first(log, "nccl_p2p")
