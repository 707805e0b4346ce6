"""Host checks: pure functions on HostFacts, and the probes on real files, sockets and venvs."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from hangar.deploy import Deployment
from hangar.hardware import lookup
from hangar.hardware.detect import DetectedGpu, GpuProcess
from hangar.preflight.checks import CheckInput, host_findings
from hangar.preflight.engine import probe_engine
from hangar.preflight.probe import (
    DirFacts,
    HostFacts,
    NvidiaFacts,
    Ulimit,
    port_in_use,
    probe_dir,
    stale_temp_files,
)
from hangar.preflight.runner import preflight
from hangar.preflight.weights import probe_weights

GiB = 2**30


def _facts(**changes: object) -> HostFacts:
    base = HostFacts(
        ulimits=(
            Ulimit(name="address space", flag="-v", unit=1024, soft=None, hard=None),
            Ulimit(name="open files", flag="-n", unit=1, soft=65535, hard=65535),
            Ulimit(name="processes", flag="-u", unit=1, soft=None, hard=None),
            Ulimit(name="stack", flag="-s", unit=1024, soft=8192 * 1024, hard=None),
            Ulimit(name="locked memory", flag="-l", unit=1024, soft=None, hard=None),
        ),
        tmp=DirFacts(
            path=Path("/tmp"), exists=True, writable=True, free_bytes=100 * GiB, world_shared=True
        ),
        run_root=DirFacts(
            path=Path("/r"), exists=True, writable=True, free_bytes=100 * GiB, world_shared=False
        ),
        cache_root=DirFacts(
            path=Path("/c"), exists=True, writable=True, free_bytes=100 * GiB, world_shared=False
        ),
        stale=(),
        port_in_use=False,
        wsl=False,
        nvcc=None,
        interfaces=("lo", "eth0"),
        nvidia=NvidiaFacts(available=False, reason="no driver"),
        engine=None,
        env={},
    )
    return base.model_copy(update=changes)


def _ids(facts: HostFacts, req: CheckInput | None = None) -> dict[str, str]:
    return {f.id: f.severity for f in host_findings(facts, req or CheckInput())}


def _limit(flag: str, soft: int | None, hard: int | None, unit: int = 1) -> tuple[Ulimit, ...]:
    base = _facts().ulimits
    return tuple(
        Ulimit(name=u.name, flag=u.flag, unit=u.unit, soft=soft, hard=hard) if u.flag == flag else u
        for u in base
    )


def test_clean_host_has_no_findings() -> None:
    assert _ids(_facts()) == {}


def test_address_space_limit_is_an_error_only_when_the_hard_limit_is_finite() -> None:
    assert (
        _ids(_facts(ulimits=_limit("-v", 8 * GiB, None)))["host.ulimit.address_space"] == "warning"
    )
    finding = host_findings(_facts(ulimits=_limit("-v", 8 * GiB, 8 * GiB)), CheckInput())[0]
    assert finding.severity == "error" and "8388608" in finding.evidence


def test_open_files_processes_stack_and_memlock() -> None:
    assert _ids(_facts(ulimits=_limit("-n", 1024, 20000))) == {"host.ulimit.open_files": "warning"}
    assert _ids(_facts(ulimits=_limit("-u", 512, 512))) == {"host.ulimit.processes": "warning"}
    assert _ids(_facts(ulimits=_limit("-s", 1024 * 1024, None))) == {"host.ulimit.stack": "warning"}
    memlock = _facts(ulimits=_limit("-l", 8192 * 1024, 8192 * 1024))
    assert _ids(memlock) == {}  # one node: no RDMA registration, memlock does not matter
    assert _ids(memlock, CheckInput(nodes=2)) == {"host.ulimit.locked_memory": "warning"}


def test_low_space_and_unwritable_dirs() -> None:
    low = DirFacts(
        path=Path("/r"), exists=True, writable=True, free_bytes=GiB // 2, world_shared=False
    )
    assert _ids(_facts(run_root=low))["host.dir.low_space"] == "error"
    ro = low.model_copy(update={"writable": False})
    assert _ids(_facts(cache_root=ro))["host.dir.not_writable"] == "error"


def test_busy_gpu_names_the_pids_and_shared_utilization_adds_up() -> None:
    gpu = DetectedGpu(
        index=0,
        nvml_index=0,
        uuid="GPU-0",
        name="NVIDIA H100 80GB HBM3",
        memory_total_bytes=80 * GiB,
        memory_used_bytes=30 * GiB,
        memory_free_bytes=50 * GiB,
        compute_capability=(9, 0),
        driver_version="550.54.14",
        processes=(GpuProcess(pid=4242, used_bytes=30 * GiB),),
    )
    facts = _facts(nvidia=NvidiaFacts(available=True, driver_version="550.54.14", gpus=(gpu,)))
    busy = next(f for f in host_findings(facts, CheckInput()) if f.id == "host.gpu.busy")
    assert busy.severity == "error" and "4242" in busy.evidence
    assert _ids(facts, CheckInput(gpu_memory_utilization=0.5))["host.gpu.busy"] == "warning"
    shared = _ids(_facts(), CheckInput(gpu_memory_utilization=0.45, other_runs_util={"abc": 0.5}))
    assert shared["host.gpu.shared_utilization"] == "warning"
    assert "host.gpu.shared_utilization" not in _ids(
        _facts(), CheckInput(gpu_memory_utilization=0.4, other_runs_util={"abc": 0.45})
    )


def test_driver_older_than_the_torch_cuda_build(tmp_path: Path) -> None:
    engine = _fake_venv(tmp_path, torch_cuda="12.8")
    facts = _facts(
        engine=probe_engine(engine), nvidia=NvidiaFacts(available=True, driver_version="520.61.05")
    )
    assert _ids(facts)["host.driver.too_old"] == "error"
    assert (
        _ids(
            facts.model_copy(
                update={"nvidia": NvidiaFacts(available=True, driver_version="535.104.05")}
            )
        )["host.driver.minor_compat"]
        == "warning"
    )
    assert "host.driver.too_old" not in _ids(
        facts.model_copy(update={"nvidia": NvidiaFacts(available=True, driver_version="570.86.10")})
    )


def test_socket_ifname_must_name_a_real_interface() -> None:
    assert (
        _ids(_facts(), CheckInput(env={"NCCL_SOCKET_IFNAME": "ib0"}))["host.net.ifname"] == "error"
    )
    assert _ids(_facts(), CheckInput(env={"GLOO_SOCKET_IFNAME": "eth"})) == {}
    assert _ids(_facts(), CheckInput(env={"NCCL_SOCKET_IFNAME": "^lo"})) == {}
    assert (
        _ids(_facts(), CheckInput(env={"NCCL_SOCKET_IFNAME": "=eth"}))["host.net.ifname"] == "error"
    )


def _fake_venv(
    root: Path, torch_cuda: str | None, vllm: str = "0.33.0", flashinfer: bool = False
) -> Path:
    site = root / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "venv" / "bin").mkdir()
    python = root / "venv" / "bin" / "python"
    python.symlink_to(sys.executable)
    cuda = repr(torch_cuda) if torch_cuda else "None"
    (site / "torch" / "version.py").write_text(
        f"__version__ = '2.9.0'\ncuda: Optional[str] = {cuda}\n"
    )
    dists = {"vllm": vllm, "torch": "2.9.0"}
    if flashinfer:
        dists["flashinfer_python"] = "0.6.1"
    for name, version in dists.items():
        (site / f"{name}-{version}.dist-info").mkdir()
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        )
    return python


def test_probe_engine_reads_files_without_importing(tmp_path: Path) -> None:
    facts = probe_engine(_fake_venv(tmp_path, "12.8", flashinfer=True))
    assert (facts.vllm_version, facts.torch_cuda, facts.flashinfer_version) == (
        "0.33.0",
        "12.8",
        "0.6.1",
    )
    assert not facts.cpu_build and not facts.flashinfer_prebuilt
    assert not probe_engine(tmp_path / "nope" / "python").exists


def test_nvcc_missing_only_matters_with_jit_flashinfer(tmp_path: Path) -> None:
    engine = probe_engine(_fake_venv(tmp_path, "12.8", flashinfer=True))
    assert _ids(_facts(engine=engine))["host.nvcc.missing"] == "warning"
    assert "host.nvcc.missing" not in _ids(_facts(engine=engine, nvcc="/usr/local/cuda/bin/nvcc"))


def test_port_probe_sees_a_real_listener() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.listen()
        assert port_in_use("127.0.0.1", port)
    assert not port_in_use("127.0.0.1", port)


def test_stale_ipc_sockets_are_found_only_when_nobody_listens(tmp_path: Path) -> None:
    name = "0b4f2c1e-aaaa-4bbb-8ccc-0123456789ab"
    with socket.socket(socket.AF_UNIX) as live:
        live.bind(str(tmp_path / name))
        assert stale_temp_files(tmp_path) == ()
    stale = stale_temp_files(tmp_path)
    assert [s.path.name for s in stale] == [name]
    (tmp_path / "unrelated.sock").touch()
    assert len(stale_temp_files(tmp_path)) == 1


def test_probe_dir_uses_the_nearest_existing_parent(tmp_path: Path) -> None:
    facts = probe_dir(tmp_path / "not" / "yet")
    assert not facts.exists and facts.writable and facts.free_bytes


def test_weights_in_the_hf_cache_and_offline_consistency(tmp_path: Path) -> None:
    snap = tmp_path / "hub" / "models--org--m" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (tmp_path / "hub" / "models--org--m" / "blobs").mkdir()
    (tmp_path / "hub" / "models--org--m" / "blobs" / "x.incomplete").touch()
    env = {"HF_HUB_CACHE": str(tmp_path / "hub")}
    cached = probe_weights("org/m", env)
    assert cached.present and len(cached.incomplete) == 1
    missing = probe_weights("org/other", env)
    offline = CheckInput(weights=missing, env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    assert _ids(_facts(), offline)["host.weights.offline_missing"] == "error"
    online = CheckInput(weights=missing, env={"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "1"})
    ids = _ids(_facts(), online)
    assert (
        ids["host.weights.download"] == "info" and ids["host.weights.offline_mismatch"] == "warning"
    )
    assert _ids(_facts(), CheckInput(weights=cached))["host.weights.incomplete"] == "warning"


def test_preflight_combines_plan_host_and_workarounds(tmp_path: Path) -> None:
    engine = _fake_venv(tmp_path, "12.8")
    d = Deployment.model_validate(
        {
            "model": {"id": "Qwen/Qwen3-8B"},
            "engine": str(engine),
            "resources": {"gpu": "rtx4090", "gpus": 4},
            "parallel": {"tensor": 3},
            "target": {"local": {"port": 1}},
        }
    )
    report = preflight(
        d, env={"PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    )
    by_id = {f.id: f for f in report.findings}
    assert by_id["heads_divisible_by_tp"].source == "plan"
    assert by_id["workaround.consumer-pcie-tp-p2p"].severity == "info"
    assert by_id["host.weights.offline_missing"].severity == "error"
    assert not report.ok
    assert [f.severity for f in report.findings] == sorted(
        (f.severity for f in report.findings), key=["error", "warning", "info"].index
    )


def test_unknown_engine_name_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    d = Deployment.model_validate({"model": {"id": str(tmp_path)}, "engine": "no-such-engine"})
    report = preflight(d, with_plan=False)
    assert "host.engine.unknown" in {f.id for f in report.errors()}


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [
        (None, {}),  # a CPU deployment needs no driver
        ("H100", {"host.gpu.no_driver": "error"}),  # NVIDIA GPUs asked, NVML found none
        ("MI300X", {}),  # ROCm: the NVIDIA driver check does not apply
        ("GH200", {"host.gpu.no_driver": "error", "host.platform.unified_memory": "info"}),
    ],
)
def test_gpu_asked_on_a_host_without_the_nvidia_driver(
    gpu: str | None, expected: dict[str, str]
) -> None:
    req = CheckInput(gpu=lookup(gpu) if gpu else None, gpus=2)
    assert req.gpu == (lookup(gpu) if gpu else None)
    assert _ids(_facts(), req) == expected
    if gpu == "H100":
        finding = host_findings(_facts(), req)[0]
        assert finding.evidence == "no driver"  # NVML's reason, as probed
        assert finding.message.startswith("the deployment asks for 2 H100-SXM-80GB GPU(s)")
    with_driver = _facts(nvidia=NvidiaFacts(available=True, driver_version="570.86.10"))
    assert "host.gpu.no_driver" not in _ids(with_driver, req)


@pytest.mark.parametrize(
    ("host_env", "deployment_env", "hub"),
    [
        ({"XDG_CACHE_HOME": "{tmp}/xdg"}, {}, "xdg/huggingface/hub"),  # no HF_* variable at all
        ({"HF_HOME": "{tmp}/wrong"}, {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy"}, "legacy"),
    ],
)
def test_preflight_looks_where_huggingface_hub_looks(
    tmp_path: Path, host_env: dict[str, str], deployment_env: dict[str, str], hub: str
) -> None:
    """Offline weights in the cache that huggingface_hub would use (models/hfcache.py): the
    host's XDG_CACHE_HOME and the legacy HUGGINGFACE_HUB_CACHE count, the deployment's [env]
    over the host's."""
    snap = tmp_path / hub / "models--org--m" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    fill = {k: v.replace("{tmp}", str(tmp_path)) for k, v in host_env.items()}
    d = Deployment.model_validate(
        {
            "model": {"id": "org/m"},
            "engine": str(_fake_venv(tmp_path, None)),
            "env": {k: v.replace("{tmp}", str(tmp_path)) for k, v in deployment_env.items()},
            "target": {"local": {"port": 1}},
        }
    )
    env = {"PATH": os.environ["PATH"], "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **fill}
    ids = {f.id for f in preflight(d, env=env, with_plan=False).findings}
    assert not ids & {"host.weights.offline_missing", "host.weights.download"}, ids
