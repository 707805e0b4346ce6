"""uv, the one installer: venv creation, dry-run resolution and install.

uv failures are translated here and nowhere else. uv ignores pip's config
(../shared/research/feasibility.md §5), so indexes and find-links are always
passed explicitly from the engine's ``InstallSource``.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hangar import paths, proc
from hangar.engines.errors import InstallFailed, ResolutionFailed
from hangar.engines.model import InstallSource
from hangar.errors import CommandFailed, HangarError

_PIN = re.compile(r"^\s*\+\s*([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s*$")
_INSTALL_TIMEOUT_S = 3600.0


def uv_bin() -> str:
    """The uv binary shipped by the ``uv`` Python package, else one on PATH."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise HangarError("uv is not installed", hint="pip install uv") from None
        return found


def uv_env() -> dict[str, str]:
    """uv's environment: its cache under Hangar's unless the user chose one; never fetch Pythons."""
    env = dict(os.environ)
    env.setdefault("UV_CACHE_DIR", str(paths.cache_dir() / "uv"))
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")
    env["NO_COLOR"] = "1"
    return env


def source_args(source: InstallSource) -> list[str]:
    args: list[str] = []
    if source.index_url:
        args += ["--index-url", source.index_url]
    for url in source.extra_index_urls:
        args += ["--extra-index-url", url]
    for link in source.find_links:
        args += ["--find-links", link]
    if source.prerelease:
        args += ["--prerelease", "allow"]
    if source.torch_backend:
        args += ["--torch-backend", source.torch_backend]
    if source.offline:
        args.append("--offline")
    return args


def uv_reason(exc: CommandFailed) -> str:
    """uv's explanation on one line (drops the box-drawing and the hint lines)."""
    lines = [
        re.sub(r"^[\s×╰─▶│]+", "", ln).strip() for ln in (exc.stderr or exc.stdout).splitlines()
    ]
    useful = [ln for ln in lines if ln and not ln.startswith(("hint:", "help:"))]
    text = " ".join(useful) or f"uv exited with {exc.code}"
    return text if len(text) <= 400 else text[:397] + "..."


@dataclass(frozen=True)
class Resolution:
    """What a dry run would install: every pinned distribution, by normalized name."""

    spec: str
    pins: dict[str, str]

    def version_of(self, *names: str) -> str | None:
        return next((self.pins[n] for n in names if n in self.pins), None)


def parse_pins(output: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in output.splitlines():
        match = _PIN.match(line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def resolve(source: InstallSource, base_python: Path) -> Resolution:
    """``uv pip install --dry-run`` into an empty target: resolves from scratch, writes nothing."""
    with tempfile.TemporaryDirectory(prefix="hangar-resolve-") as scratch:
        argv = [
            uv_bin(),
            "pip",
            "install",
            "--dry-run",
            "--python",
            str(base_python),
            "--target",
            str(Path(scratch) / "t"),
            source.spec,
            *source_args(source),
        ]
        try:
            done = proc.run(argv, env=uv_env(), timeout=600)
        except CommandFailed as exc:
            raise ResolutionFailed(source.spec, uv_reason(exc)) from exc
    return Resolution(source.spec, parse_pins(done.stdout + "\n" + done.stderr))


def create_venv(venv_dir: Path, base_python: Path) -> Path:
    """``uv venv``; returns the new interpreter."""
    try:
        proc.run(
            [uv_bin(), "venv", str(venv_dir), "--python", str(base_python), "--no-project"],
            env=uv_env(),
            timeout=300,
        )
    except CommandFailed as exc:
        raise InstallFailed(str(venv_dir), "create", uv_reason(exc)) from exc
    return venv_dir / "bin" / "python"


def install(python: Path, requirement: str, source: InstallSource) -> None:
    argv = [uv_bin(), "pip", "install", "--python", str(python), requirement, *source_args(source)]
    try:
        proc.run(argv, env=uv_env(), timeout=_INSTALL_TIMEOUT_S)
    except CommandFailed as exc:
        raise InstallFailed(requirement, "install", uv_reason(exc)) from exc
