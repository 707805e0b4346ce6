"""Host checks: HostFacts + what the deployment asks for -> findings (pure functions)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict

from hangar.hardware.spec import GpuSpec
from hangar.host.findings import Finding, Severity, gib
from hangar.host.probe import HostFacts, Ulimit
from hangar.host.weights import WeightsFacts

# vLLM raises RLIMIT_NOFILE to 65535 itself when the hard limit allows
# (vllm/utils/system_utils.py set_ulimit); below that it logs "Found ulimit of N and
# failed to automatically increase" and big servers run out of sockets/files.
NOFILE_WANTED = 65535
NPROC_MIN = 4096  # threads count against -u: each worker runs torch/NCCL/OMP pools
STACK_MIN_KIB = 8192
MEMLOCK_MIN_KIB = 64 * 1024  # NCCL/IB register host buffers across nodes
TMP_FREE_WARN = 10 * 2**30  # torch.compile, Triton and FlashInfer caches, IPC files
TMP_FREE_ERROR = 1 * 2**30
SHARED_UTIL_LIMIT = (
    0.9  # summed gpu_memory_utilization on one GPU; CUDA context + others need the rest
)
GPU_BUSY_FRACTION = 0.05  # memory in use by others before we call a GPU busy
VLLM_DEFAULT_UTIL = 0.92  # default since <=0.20 (vllm/config/cache.py); 0.9 in <=0.11


class CheckInput(BaseModel):
    """What the checks need from the deployment, flattened (no schema coupling)."""

    model_config = ConfigDict(frozen=True)

    host: str = "127.0.0.1"
    port: int = 8000
    gpus: int = 1
    nodes: int = 1
    tp: int = 1
    gpu: GpuSpec | None = None
    gpu_memory_utilization: float | None = None
    env: dict[str, str] = {}  # deployment env over the caller's relevant env
    other_runs_util: dict[str, float] = {}  # live Hangar runs on this host -> their utilization
    weights: WeightsFacts | None = None


Check = Callable[[HostFacts, CheckInput], list[Finding]]


def _ulimit_value(limit: Ulimit, value: int | None) -> str:
    return "unlimited" if value is None else str(value // limit.unit if limit.unit > 1 else value)


def _limit(facts: HostFacts, flag: str) -> Ulimit:
    return next(u for u in facts.ulimits if u.flag == flag)


def check_address_space(facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, "-v")
    if limit.soft is None:
        return []
    evidence = f"ulimit -v soft={_ulimit_value(limit, limit.soft)} hard={_ulimit_value(limit, limit.hard)} (KiB)"
    # CUDA reserves virtual address space far beyond physical memory in every worker
    # process; a finite -v shows up as mmap/"cannot allocate memory"/import failures.
    if limit.hard is None:
        return [
            Finding(
                id="host.ulimit.address_space",
                severity="warning",
                evidence=evidence,
                message=f"address-space limit is {_ulimit_value(limit, limit.soft)} KiB; each vLLM worker process maps far more virtual memory than it uses. Hangar raises it for servers it launches.",
                fix="ulimit -v unlimited   (for vllm serve started by hand)",
            )
        ]
    return [
        Finding(
            id="host.ulimit.address_space",
            severity="error",
            evidence=evidence,
            message=f"hard address-space limit is {_ulimit_value(limit, limit.hard)} KiB; vLLM (CUDA) will fail with 'cannot allocate memory' or import errors, worse with each tensor-parallel worker",
            fix="ask the admin to lift it: '* hard as unlimited' in /etc/security/limits.conf (or the scheduler's memory limit instead of -v), then log in again",
        )
    ]


def check_open_files(facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, "-n")
    if limit.hard is None or limit.hard >= NOFILE_WANTED:
        return []
    return [
        Finding(
            id="host.ulimit.open_files",
            severity="warning",
            evidence=f"ulimit -n soft={_ulimit_value(limit, limit.soft)} hard={_ulimit_value(limit, limit.hard)}",
            message=f"open-files hard limit {limit.hard} is below the {NOFILE_WANTED} vLLM tries to set; many concurrent requests can fail with 'Too many open files'",
            fix=f"'* hard nofile {NOFILE_WANTED}' in /etc/security/limits.conf, then: ulimit -n {NOFILE_WANTED}",
        )
    ]


def check_processes(facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, "-u")
    if limit.soft is None or limit.soft >= NPROC_MIN:
        return []
    return [
        Finding(
            id="host.ulimit.processes",
            severity="warning",
            evidence=f"ulimit -u soft={limit.soft} hard={_ulimit_value(limit, limit.hard)}",
            message=f"process/thread limit {limit.soft} is low: every vLLM worker starts dozens of threads (torch, OpenMP, NCCL) and they all count",
            fix=f"ulimit -u {NPROC_MIN if limit.hard is None else min(limit.hard, 65536)}",
        )
    ]


def check_stack(facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, "-s")
    if limit.soft is None or limit.soft >= STACK_MIN_KIB * 1024:
        return []
    return [
        Finding(
            id="host.ulimit.stack",
            severity="warning",
            evidence=f"ulimit -s soft={_ulimit_value(limit, limit.soft)} KiB",
            message="stack limit below 8 MiB; torch.compile (dynamo) recursion can overflow it",
            fix=f"ulimit -s {STACK_MIN_KIB}",
        )
    ]


def check_locked_memory(facts: HostFacts, req: CheckInput) -> list[Finding]:
    limit = _limit(facts, "-l")
    if req.nodes < 2 or limit.soft is None or limit.soft >= MEMLOCK_MIN_KIB * 1024:
        return []
    return [
        Finding(
            id="host.ulimit.locked_memory",
            severity="warning",
            evidence=f"ulimit -l soft={_ulimit_value(limit, limit.soft)} KiB hard={_ulimit_value(limit, limit.hard)}",
            message="locked-memory limit is small for a multi-node run: NCCL over InfiniBand/RoCE registers (pins) communication buffers",
            fix="ulimit -l unlimited   ('* hard memlock unlimited' in /etc/security/limits.conf)",
        )
    ]


def check_dirs(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out: list[Finding] = []
    for label, d in (
        ("run dir (TMPDIR, logs)", facts.run_root),
        ("engine cache dir", facts.cache_root),
    ):
        if not d.writable:
            out.append(
                Finding(
                    id="host.dir.not_writable",
                    severity="error",
                    evidence=str(d.path),
                    message=f"{label} {d.path} is not writable",
                    fix="set HANGAR_HOME to a writable directory",
                )
            )
        elif d.free_bytes is not None and d.free_bytes < TMP_FREE_WARN:
            sev: Severity = "error" if d.free_bytes < TMP_FREE_ERROR else "warning"
            out.append(
                Finding(
                    id="host.dir.low_space",
                    severity=sev,
                    evidence=f"{d.path}: {gib(d.free_bytes)} free",
                    message=f"{label} has only {gib(d.free_bytes)} free; compile caches and temp files need several GiB",
                    fix="free space there or set HANGAR_HOME to a bigger disk",
                )
            )
    return out


def check_stale_files(facts: HostFacts, req: CheckInput) -> list[Finding]:
    if not facts.stale:
        return []
    total = sum(s.size_bytes for s in facts.stale)
    kinds = sorted({s.kind for s in facts.stale})
    sample = " ".join(str(s.path) for s in facts.stale[:5])
    return [
        Finding(
            id="host.tmp.stale_files",
            severity="warning",
            evidence=f"{len(facts.stale)} in {facts.tmp.path} ({gib(total)}): {', '.join(kinds)}",
            message=f"{len(facts.stale)} leftovers of earlier vLLM/Ray runs in the shared temp dir {facts.tmp.path}; they fill the disk and stale IPC sockets confuse new servers",
            fix=f"check they are yours, then: rm -rf {sample}{' ...' if len(facts.stale) > 5 else ''}",
        )
    ]


def check_port(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out = []
    if facts.port_in_use:
        out.append(
            Finding(
                id="host.port.in_use",
                severity="error",
                evidence=f"bind {req.host}:{req.port} failed: address in use",
                message=f"port {req.port} on {req.host} is already taken; vLLM binds it before loading the model and exits",
                fix=f"stop what listens there (ss -ltnp 'sport = :{req.port}') or set target.local.port",
            )
        )
    if req.host not in ("127.0.0.1", "localhost", "::1"):
        out.append(
            Finding(
                id="host.port.exposed",
                severity="info",
                evidence=f"host = {req.host}",
                message=f"the server will listen on {req.host}, reachable from other machines",
                fix="bind 127.0.0.1 unless clients on other hosts need it; set VLLM_API_KEY in env to require a key",
            )
        )
    return out


def check_engine(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine = facts.engine
    if engine is None:
        return []
    if not engine.exists:
        return [
            Finding(
                id="host.engine.missing",
                severity="error",
                evidence=str(engine.python),
                message=f"engine interpreter {engine.python} does not exist",
                fix='hangar engines list   (or set engine = "/path/to/venv/bin/python")',
            )
        ]
    if engine.vllm_version is None:
        return [
            Finding(
                id="host.engine.no_vllm",
                severity="error",
                evidence=", ".join(map(str, engine.site_packages)),
                message=f"no vLLM installed for {engine.python}",
                fix="install vLLM into that environment or pick another engine",
            )
        ]
    torch = f"torch {engine.torch_version} (CUDA {engine.torch_cuda or 'none: CPU build'})"
    out = []
    if engine.cpu_build and req.gpu is not None:
        out.append(
            Finding(
                id="host.engine.cpu_build",
                severity="warning",
                evidence=torch,
                message=f"the engine is a CPU build of vLLM but the deployment asks for {req.gpu.id} GPUs; it will not use them",
                fix="pick an engine with a CUDA build of vLLM (hangar engines list)",
            )
        )
    return [
        *out,
        Finding(
            id="host.engine.version",
            severity="info",
            evidence=f"{engine.python}",
            message=f"engine has vLLM {engine.vllm_version} ({engine.vllm_distribution}), {torch}",
        ),
    ]


@lru_cache(maxsize=1)
def _driver_table() -> dict[str, dict[str, str]]:
    text = resources.files("hangar.host").joinpath("data", "cuda_drivers.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    return {"minor_compat": data["minor_compat"], "toolkit": data["toolkit"]}


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check_driver(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine, nv = facts.engine, facts.nvidia
    if engine is None or not engine.torch_cuda or not nv.available or not nv.driver_version:
        return []
    table = _driver_table()
    major = engine.torch_cuda.split(".")[0]
    have = _vtuple(nv.driver_version)
    evidence = f"driver {nv.driver_version}; torch built with CUDA {engine.torch_cuda}"
    floor = table["minor_compat"].get(major)
    if floor and have < _vtuple(floor):
        return [
            Finding(
                id="host.driver.too_old",
                severity="error",
                evidence=evidence,
                message=f"NVIDIA driver {nv.driver_version} is older than CUDA {major}.x needs ({floor}); torch will report the driver as too old",
                fix=f"upgrade the driver to >= {table['toolkit'].get(engine.torch_cuda, floor)} or use an engine built for an older CUDA",
            )
        ]
    full = table["toolkit"].get(engine.torch_cuda)
    if full and have < _vtuple(full):
        return [
            Finding(
                id="host.driver.minor_compat",
                severity="warning",
                evidence=evidence,
                message=f"driver {nv.driver_version} runs CUDA {engine.torch_cuda} only through minor-version compatibility; JIT-compiled kernels (FlashInfer, Triton PTX) may fail",
                fix=f"upgrade the driver to >= {full}",
            )
        ]
    return []


def check_gpu_usage(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out = []
    for gpu in facts.nvidia.gpus:
        total, used = gpu.memory_total_bytes, gpu.memory_used_bytes
        if total is None or used is None or used <= GPU_BUSY_FRACTION * total:
            continue
        pids = (
            ", ".join(str(p.pid) for p in gpu.processes) or "not visible (other container or user)"
        )
        util = req.gpu_memory_utilization or VLLM_DEFAULT_UTIL
        free = total - used
        severity: Severity = "error" if free < util * total else "warning"
        out.append(
            Finding(
                id="host.gpu.busy",
                severity=severity,
                evidence=f"GPU {gpu.index} {gpu.name}: {gib(used)} of {gib(total)} used; PIDs {pids}",
                message=f"GPU {gpu.index} already holds {gib(used)}; vLLM needs {util:.2f} x total free at start",
                fix=f"stop those processes (hangar status; kill PIDs {pids}) or lower serve.gpu_memory_utilization below {free / total:.2f}",
            )
        )
    return out


def check_shared_utilization(facts: HostFacts, req: CheckInput) -> list[Finding]:
    if not req.other_runs_util:
        return []
    mine = req.gpu_memory_utilization or VLLM_DEFAULT_UTIL
    total = mine + sum(req.other_runs_util.values())
    if total <= SHARED_UTIL_LIMIT:
        return []
    others = ", ".join(f"{k}={v:.2f}" for k, v in req.other_runs_util.items())
    return [
        Finding(
            id="host.gpu.shared_utilization",
            severity="error" if total > 1 else "warning",
            evidence=f"this={mine:.2f}; running: {others}",
            message=f"servers sharing the GPU would reserve {total:.2f} of its memory (keep the sum under {SHARED_UTIL_LIMIT})",
            fix="lower serve.gpu_memory_utilization on each so they sum below 0.9, or stop a run (hangar stop RUN)",
        )
    ]


def check_platform(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out = []
    if facts.wsl:
        out.append(
            Finding(
                id="host.platform.wsl2",
                severity="info",
                evidence="/proc/sys/kernel/osrelease mentions microsoft",
                message="running under WSL2: pinned memory is off by default and Ctrl+C can leave workers holding the GPU",
                fix="see workaround wsl2-pin-memory; stop servers with hangar stop",
            )
        )
    if req.gpu is not None and req.gpu.unified_memory:
        out.append(
            Finding(
                id="host.platform.unified_memory",
                severity="info",
                evidence=f"{req.gpu.id}: unified memory",
                message="CPU and GPU share one memory pool: the OS, page cache and vLLM compete for it",
                fix="see workarounds unified-memory-allocator and gb10-memory-utilization",
            )
        )
    return out


def check_nvcc(facts: HostFacts, req: CheckInput) -> list[Finding]:
    engine = facts.engine
    if (
        engine is None
        or not engine.torch_cuda
        or facts.nvcc
        or engine.flashinfer_prebuilt
        or not engine.flashinfer_version
    ):
        return []
    return [
        Finding(
            id="host.nvcc.missing",
            severity="warning",
            evidence=f"flashinfer {engine.flashinfer_version}, no nvcc on PATH or CUDA_HOME",
            message="FlashInfer is installed without prebuilt kernels and there is no nvcc to JIT-compile them",
            fix="install flashinfer-cubin and flashinfer-jit-cache matching flashinfer-python, or a CUDA toolkit; Hangar applies the no-nvcc workarounds meanwhile",
        )
    ]


def _ifname_matches(spec: str, names: tuple[str, ...]) -> bool:
    # NCCL syntax: comma list of prefixes; '^' excludes, '=' asks for exact names.
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    wanted = [p for p in body.lstrip("=").split(",") if p]
    hit = [n for n in names if any((n == p) if exact else n.startswith(p) for p in wanted)]
    return bool(set(names) - set(hit)) if exclude else bool(hit)


def check_socket_ifnames(facts: HostFacts, req: CheckInput) -> list[Finding]:
    out = []
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        spec = req.env.get(var)
        if spec and not _ifname_matches(spec, facts.interfaces):
            out.append(
                Finding(
                    id="host.net.ifname",
                    severity="error",
                    evidence=f"{var}={spec}; interfaces: {', '.join(facts.interfaces)}",
                    message=f"{var}={spec} names no network interface on this host; distributed init will time out",
                    fix=f"set {var} to one of: {', '.join(n for n in facts.interfaces if n != 'lo')}",
                )
            )
    return out


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def check_weights(facts: HostFacts, req: CheckInput) -> list[Finding]:
    w = req.weights
    if w is None:
        return []
    offline = _truthy(req.env.get("HF_HUB_OFFLINE"))
    out: list[Finding] = []
    if w.local and not w.present:
        out.append(
            Finding(
                id="host.weights.missing",
                severity="error",
                evidence=w.detail,
                message=f"model directory {w.model} has no config.json",
                fix="point model.id at a directory holding config.json and the weights",
            )
        )
    elif not w.local and not w.present:
        if offline:
            out.append(
                Finding(
                    id="host.weights.offline_missing",
                    severity="error",
                    evidence=w.detail,
                    message=f"HF_HUB_OFFLINE=1 but {w.model} is not in the Hugging Face cache; vLLM cannot download it",
                    fix=f"huggingface-cli download {w.model}   (with network), or unset HF_HUB_OFFLINE",
                )
            )
        else:
            out.append(
                Finding(
                    id="host.weights.download",
                    severity="info",
                    evidence=w.detail,
                    message=f"{w.model} is not in the Hugging Face cache; vLLM will download it at start",
                    fix=f"huggingface-cli download {w.model}   (to download ahead)",
                )
            )
    if w.incomplete:
        out.append(
            Finding(
                id="host.weights.incomplete",
                severity="warning",
                evidence=", ".join(map(str, w.incomplete[:3])),
                message=f"{len(w.incomplete)} interrupted downloads of {w.model} in the HF cache",
                fix=f"huggingface-cli download {w.model}   (resumes them)",
            )
        )
    if offline != _truthy(req.env.get("TRANSFORMERS_OFFLINE", req.env.get("HF_HUB_OFFLINE"))):
        out.append(
            Finding(
                id="host.weights.offline_mismatch",
                severity="warning",
                evidence="HF_HUB_OFFLINE vs TRANSFORMERS_OFFLINE",
                message="HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE disagree; tokenizer and weights loading may take different paths",
                fix="set both to the same value",
            )
        )
    return out


CHECKS: tuple[Check, ...] = (
    check_address_space,
    check_open_files,
    check_processes,
    check_stack,
    check_locked_memory,
    check_dirs,
    check_stale_files,
    check_port,
    check_engine,
    check_driver,
    check_gpu_usage,
    check_shared_utilization,
    check_platform,
    check_nvcc,
    check_socket_ifnames,
    check_weights,
)


def host_findings(facts: HostFacts, req: CheckInput) -> list[Finding]:
    return [f for check in CHECKS for f in check(facts, req)]


def relevant_env(
    env: Mapping[str, str], deployment_env: Mapping[str, str], names: tuple[str, ...]
) -> dict[str, str]:
    merged = {k: env[k] for k in names if k in env}
    merged.update({k: v for k, v in deployment_env.items() if k in names})
    return merged
