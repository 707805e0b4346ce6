"""Inspect the vLLM inside a container image without running anything in it.

The image's filesystem is read, never executed: rootful Podman mounts the image
(``podman image mount``, read-only overlay); otherwise (rootless Podman, Docker) a
container is created, not started, and ``export`` streams its filesystem, of which
only the files the static reader needs are kept (``*.py`` of vllm/torch/transformers,
``dist-info/METADATA``). The site-packages found are read by ``inventory.read_installation``,
the same reader as for venvs, so an image and a venv of one vLLM version agree. The
result is cached by image ID (the config digest), which changes with any rebuild.

SIF files (Apptainer) are read the same way from their squashfs partition with
squashfs-tools (``engines.sif``: only the files the reader needs are extracted), cached by
the digest of the SIF header and descriptor table; sandbox directories are read in place.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from hangar import paths, proc
from hangar.engines import driver, sif
from hangar.engines.errors import InspectFailed
from hangar.engines.inventory import _read_cache, _write_cache, read_installation
from hangar.engines.model import DriverInfo, Inspection
from hangar.errors import CommandFailed

_TIMEOUT = 120.0
_SITE_NAMES = ("site-packages", "dist-packages")
_WALK_ROOTS = ("usr", "opt", "root", "app", "workspace", "venv", "home")
_MAX_DEPTH = 7
# Inside site-packages: what staticread and inventory open (nothing else is extracted).
_KEEP = re.compile(
    r"(^|/)(site|dist)-packages/("
    r"vllm(_cpu)?/.*\.py|torch/version\.py|transformers/(__init__|models/auto/[^/]+)\.py"
    r"|[^/]+\.dist-info/METADATA|[^/]+/__init__\.py)$"
)


def runtime_cmd(runtime: str, args: list[str], timeout: float = _TIMEOUT) -> str:
    """Run one container CLI command; its failures are translated here once."""
    try:
        return proc.run([runtime, *args], timeout=timeout).stdout
    except CommandFailed as exc:
        if exc.code == 127:
            raise InspectFailed(
                runtime, f"{runtime} is not installed", hint=f"install {runtime}"
            ) from exc
        raise


def apptainer_image(image: str) -> str:
    """The image argument apptainer reads: a bare argument is a local path (a .sif file or a
    sandbox directory), a registry reference needs its URI scheme. ``vllm/vllm-openai:v1``
    becomes ``docker://vllm/vllm-openai:v1``; a URI (docker://, oras://, library://,
    shub://, https://, docker-daemon://, oci-archive://, ...: apptainer's "Supported URIs",
    https://apptainer.org/docs/user/main/cli/apptainer_pull.html) or a path stays."""
    if "://" in image or _is_path(image):
        return image
    return f"docker://{image}"


def _is_path(image: str) -> bool:
    # Registry references never start with '/', '.' or '~' and never end in .sif; an
    # existing file or directory of that name is what apptainer would open.
    return image.startswith(("/", ".", "~")) or image.endswith(".sif") or Path(image).exists()


def image_id(ref: str, runtime: str = "podman") -> str:
    """The local image's ID; InspectFailed when it is not present here."""
    if runtime == "apptainer":
        if not Path(ref).is_file():
            raise InspectFailed(
                ref,
                "not a local SIF file (a docker:// or library:// reference is pulled by "
                "apptainer at exec time, and read only once it is a file)",
                hint=f"apptainer pull vllm.sif {apptainer_image(ref)}   (then register the .sif path)",
            )
        return sif.root_partition(Path(ref)).digest
    try:
        out = runtime_cmd(runtime, ["image", "inspect", "--format", "{{.Id}}", ref], 30)
    except CommandFailed as exc:
        raise InspectFailed(
            ref,
            f"the container image is not present in {runtime} here (it is read, never run, "
            "so it must be pulled or built first)",
            hint=f"{runtime} pull {ref}",
        ) from exc
    return out.strip().splitlines()[0].removeprefix("sha256:")


def find_site_dirs(root: Path) -> tuple[Path, ...]:
    """site-/dist-packages dirs under the image's usual install roots (bounded walk)."""
    found: list[Path] = []
    for top in _WALK_ROOTS:
        base = root / top
        for dirpath, dirnames, _ in os.walk(base) if base.is_dir() else ():
            depth = len(Path(dirpath).relative_to(root).parts)
            if Path(dirpath).name in _SITE_NAMES:
                found.append(Path(dirpath))
                dirnames[:] = []
            elif depth >= _MAX_DEPTH:
                dirnames[:] = []
            else:
                dirnames[:] = [d for d in dirnames if not os.path.islink(Path(dirpath, d))]
    with_vllm = [s for s in found if (s / "vllm" / "__init__.py").is_file()]
    rest = [s for s in found if s not in with_vllm and any(s.glob("*.dist-info"))]
    return tuple(sorted(with_vllm) + sorted(rest))


@contextmanager
def _mounted(ref: str) -> Iterator[Path]:
    out = runtime_cmd("podman", ["image", "mount", ref])
    try:
        yield Path(out.strip())
    finally:
        proc.run(["podman", "image", "unmount", ref], timeout=60, check=False)


def _keep(member: tarfile.TarInfo) -> bool:
    return (member.isfile() or member.isdir()) and bool(_KEEP.search(member.name.lstrip("./")))


def _extract_stream(stream: IO[bytes], dest: Path) -> None:
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            if member.isfile() and _keep(member):
                # data filter: no absolute paths, no '..', no devices (PEP 706)
                tar.extract(member, dest, filter="data")


@contextmanager
def _exported(ref: str, runtime: str) -> Iterator[Path]:
    """A created (never started) container's filesystem, the needed files only."""
    import subprocess

    cid = runtime_cmd(runtime, ["create", "--entrypoint", "/hangar-never-run", ref]).strip()
    tmp = Path(tempfile.mkdtemp(prefix="hangar-image-"))
    try:
        with subprocess.Popen(
            [runtime, "export", cid], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        ) as child:
            assert child.stdout is not None
            _extract_stream(child.stdout, tmp)
        yield tmp
    finally:
        proc.run([runtime, "rm", "-f", cid], timeout=60, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _sif_root(ref: str) -> Iterator[Path]:
    """The SIF's root partition, the needed files only (listed first, then extracted)."""
    path = Path(ref)
    files = sif.list_files(path, sif.root_partition(path))
    with sif.extracted(path, [f for f in files if _KEEP.search(f)]) as root:
        yield root


@contextmanager
def image_root(ref: str, runtime: str) -> Iterator[Path]:
    if runtime == "apptainer":
        with _sif_root(ref) as root:
            yield root
    elif runtime == "podman" and os.geteuid() == 0:
        with _mounted(ref) as root:
            yield root
    else:
        with _exported(ref, runtime) as root:
            yield root


def _cache_file(digest: str) -> Path:
    return paths.cache_dir() / "engines" / "inspect-image" / f"{digest[:40]}.json"


def read_image(name: str, ref: str, runtime: str, host: DriverInfo) -> Inspection:
    with image_root(ref, runtime) as root:
        sites = find_site_dirs(root)
        if not sites:
            raise InspectFailed(
                ref, "no site-packages with vLLM found in the image", hint="check the image tag"
            )
        found = read_installation(name, Path(f"{ref} (image)"), sites, host)
        inside = tuple("/" + str(s.relative_to(root)) for s in sites)
        return found.model_copy(update={"site_packages": inside})


def inspect_image(
    name: str,
    ref: str,
    runtime: str = "podman",
    *,
    use_cache: bool = True,
    host: DriverInfo | None = None,
) -> Inspection:
    """What the image's vLLM can do, read from its files (cached by image ID)."""
    host = host or driver.host_driver()
    if runtime == "apptainer" and Path(ref).is_dir():  # a sandbox image: its files as they are
        sites = find_site_dirs(Path(ref))
        found = read_installation(name, Path(f"{ref} (sandbox)"), sites, host)
        return found.model_copy(
            update={"site_packages": tuple(f"/{s.relative_to(ref)}" for s in sites)}
        )
    cache = _cache_file(image_id(ref, runtime))
    cached = _read_cache(cache) if use_cache else None
    if cached is not None:
        return cached.model_copy(
            update={
                "engine": name,
                "driver": driver.check(cached.torch_cuda, host, cached.torch_version),
            }
        )
    result = read_image(name, ref, runtime, host)
    _write_cache(cache, result)
    return result


def image_present(ref: str, runtime: str) -> bool:
    try:
        image_id(ref, runtime)
    except InspectFailed:
        return False
    return True
