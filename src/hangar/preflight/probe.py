"""Probe the local host once into a frozen HostFacts value (no decisions here).

Every probe is cheap (files under /proc and /sys, getrlimit, one bind, NVML when a
driver exists), so a preflight without a GPU finishes in a fraction of a second.
"""

from __future__ import annotations

import errno
import os
import re
import resource
import shutil
import socket
import stat
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.errors import NoGpuDetected
from hangar.hardware.detect import DetectedGpu, detect_local_gpus
from hangar.preflight.engine import EngineFacts

UNLIMITED: int | None = None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Ulimit(_Frozen):
    name: str
    flag: str  # the `ulimit` option, e.g. -v
    unit: int  # bytes per `ulimit` unit (1024 for -v/-s/-l, 1 for counts)
    soft: int | None  # None means unlimited
    hard: int | None


class DirFacts(_Frozen):
    path: Path
    exists: bool
    writable: bool
    free_bytes: int | None
    world_shared: bool  # mode 1777-like: other users write here too


class StaleItem(_Frozen):
    path: Path
    kind: str
    size_bytes: int


class NvidiaFacts(_Frozen):
    available: bool
    reason: str = ""
    driver_version: str | None = None
    gpus: tuple[DetectedGpu, ...] = ()


class HostFacts(_Frozen):
    ulimits: tuple[Ulimit, ...]
    tmp: DirFacts
    run_root: DirFacts
    cache_root: DirFacts
    stale: tuple[StaleItem, ...]
    port_in_use: bool
    wsl: bool
    nvcc: str | None
    interfaces: tuple[str, ...]
    nvidia: NvidiaFacts
    engine: EngineFacts | None
    env: dict[str, str]


_LIMITS = (
    ("address space", "-v", resource.RLIMIT_AS, 1024),
    ("open files", "-n", resource.RLIMIT_NOFILE, 1),
    ("processes", "-u", resource.RLIMIT_NPROC, 1),
    ("stack", "-s", resource.RLIMIT_STACK, 1024),
    ("locked memory", "-l", resource.RLIMIT_MEMLOCK, 1024),
)

# Variables the host checks read; everything else in the environment is ignored.
RELEVANT_ENV = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_HOME",
    "HF_HUB_CACHE",
    "NCCL_SOCKET_IFNAME",
    "GLOO_SOCKET_IFNAME",
    "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "TMPDIR",
)


def probe_ulimits() -> tuple[Ulimit, ...]:
    out = []
    for name, flag, which, unit in _LIMITS:
        soft, hard = resource.getrlimit(which)
        out.append(Ulimit(name=name, flag=flag, unit=unit, soft=_limit(soft), hard=_limit(hard)))
    return tuple(out)


def _limit(value: int) -> int | None:
    return None if value == resource.RLIM_INFINITY else value


def probe_dir(path: Path) -> DirFacts:
    """Facts of ``path``, or of its nearest existing parent when it does not exist yet."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        st = os.stat(existing)
        free = shutil.disk_usage(existing).free
    except OSError:
        return DirFacts(
            path=path, exists=False, writable=False, free_bytes=None, world_shared=False
        )
    shared = bool(st.st_mode & stat.S_IWOTH)
    return DirFacts(
        path=path,
        exists=existing == path,
        writable=os.access(existing, os.W_OK | os.X_OK),
        free_bytes=free,
        world_shared=shared,
    )


def port_in_use(host: str, port: int) -> bool:
    """True when binding host:port fails because something already listens there."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR as uvicorn sets it: connections in TIME_WAIT from an earlier
        # server do not block a new one, only a live listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def in_wsl() -> bool:
    # Same test as vLLM's in_wsl() (vllm/platforms/interface.py): "microsoft" in the kernel release.
    try:
        return "microsoft" in Path("/proc/sys/kernel/osrelease").read_text().lower()
    except OSError:
        return False


def find_nvcc(env: Mapping[str, str]) -> str | None:
    found = shutil.which("nvcc", path=env.get("PATH"))
    if found:
        return found
    for home in (env.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    return None


def interfaces() -> tuple[str, ...]:
    return tuple(name for _, name in socket.if_nameindex())


def bound_unix_sockets() -> set[str]:
    """Paths of UNIX sockets some process has bound (from /proc/net/unix)."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {parts[-1] for parts in (line.split() for line in lines) if len(parts) >= 8}


# Files vLLM and Ray leave in the system temp dir (feasibility.md §1.4):
# ZMQ IPC sockets named by UUID, vllm_dist_<hex> dirs, and Ray session dirs.
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_STALE_AGE_S = 3600.0


def stale_temp_files(tmp: Path) -> tuple[StaleItem, ...]:
    """vLLM/Ray leftovers in ``tmp`` that no live process uses."""
    try:
        entries = list(os.scandir(tmp))
    except OSError:
        return ()
    bound = bound_unix_sockets()
    ray_alive = _process_named("raylet")
    now = time.time()
    items = []
    for entry in entries:
        kind = _stale_kind(entry, bound, ray_alive, now)
        if kind:
            items.append(
                StaleItem(path=Path(entry.path), kind=kind, size_bytes=_size(Path(entry.path)))
            )
    return tuple(items)


def _stale_kind(
    entry: os.DirEntry[str], bound: set[str], ray_alive: bool, now: float
) -> str | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    if stat.S_ISSOCK(st.st_mode) and _UUID.match(entry.name) and entry.path not in bound:
        return "vLLM IPC socket with no listener"
    if entry.name.startswith("vllm_dist_") and now - st.st_mtime > _STALE_AGE_S:
        return "vLLM distributed-init dir"
    if entry.name == "ray" and stat.S_ISDIR(st.st_mode) and not ray_alive:
        return "Ray session dir with no running raylet"
    return None


def _process_named(name: str) -> bool:
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == name:
                return True
        except OSError:
            continue
    return False


def _size(path: Path) -> int:
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size
        return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink())
    except OSError:
        return 0


def probe_nvidia(environ: Mapping[str, str]) -> NvidiaFacts:
    """Driver version and per-GPU memory and processes (hangar.hardware's NVML reader)."""
    try:
        gpus = detect_local_gpus(environ)
    except NoGpuDetected as exc:
        return NvidiaFacts(available=False, reason=exc.message)
    return NvidiaFacts(available=True, driver_version=gpus[0].driver_version, gpus=tuple(gpus))
