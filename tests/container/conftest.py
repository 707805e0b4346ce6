"""Fixtures for the container tests: real Podman (runc, the ulimits this host needs) and
small images built offline from local files (no registry is ever contacted).

Podman here needs runc and lowered default ulimits (shared/research/feasibility.md §4:
crun refuses hybrid cgroups; root lacks CAP_SYS_RESOURCE for nofile 1048576), so the
tests point CONTAINERS_CONF at such a file. The fake image holds only
tests/launch/fake_vllm.py as ``vllm.entrypoints.cli.main``; the host's /usr is
bind-mounted read-only for its Python (the deployment's ``extra_args``).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

LAUNCH = Path(__file__).resolve().parents[1] / "launch"
CONF = """[containers]
default_ulimits = ["nofile=1024:20000", "nproc=1024:1024"]
[engine]
runtime = "runc"
"""


def _need(program: str) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed: run scripts/setup-test-host (needs {program})")


@pytest.fixture(scope="session")
def containers_conf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for program in ("podman", "runc"):
        _need(program)
    path = tmp_path_factory.mktemp("podman") / "containers.conf"
    path.write_text(CONF)
    return path


@pytest.fixture(autouse=True)
def _podman_env(containers_conf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTAINERS_CONF", str(containers_conf))


def podman(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], capture_output=True, text=True, check=check, timeout=300
    )


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, 0o755
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    import io

    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def _base_tree(tar: tarfile.TarFile) -> None:
    """Merged-/usr layout: /bin, /lib... point into /usr, which the test bind-mounts."""
    for d in ("usr", "tmp", "etc", "proc", "sys", "dev", "opt"):
        _add_dir(tar, d)
    for d in ("bin", "lib", "lib64", "sbin"):
        info = tarfile.TarInfo(d)
        info.type, info.linkname = tarfile.SYMTYPE, f"usr/{d}"
        tar.addfile(info)


def import_image(ref: str, files: dict[str, bytes], env: str, tmp: Path) -> str:
    archive = tmp / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        _base_tree(tar)
        added = {"opt", "usr"}
        for name, data in sorted(files.items()):
            parts = Path(name).parts
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder not in added:
                    _add_dir(tar, folder)
                    added.add(folder)
            _add_file(tar, name, data)
    podman("import", "--change", f"ENV={env}", str(archive), ref)
    return ref


SITE = "opt/engine/site-packages"


def fake_vllm_files(version: str = "0.33.0") -> dict[str, bytes]:
    main = (LAUNCH / "fake_vllm.py").read_bytes()
    meta = f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n".encode()
    return {
        f"{SITE}/vllm/__init__.py": b"",
        f"{SITE}/vllm/entrypoints/__init__.py": b"",
        f"{SITE}/vllm/entrypoints/cli/__init__.py": b"",
        f"{SITE}/vllm/entrypoints/cli/main.py": main,
        f"{SITE}/vllm-{version}.dist-info/METADATA": meta,
    }


@pytest.fixture(scope="session")
def fake_image(containers_conf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """localhost/hangar-test-fake:<unique>: the fake vLLM, run by the host's Python."""
    import os

    os.environ["CONTAINERS_CONF"] = str(containers_conf)  # session scope: no monkeypatch
    ref = f"localhost/hangar-test-fake:{uuid.uuid4().hex[:8]}"
    import_image(ref, fake_vllm_files(), f"PYTHONPATH=/{SITE}", tmp_path_factory.mktemp("img"))
    yield ref
    tags = podman("images", "--format", "{{.Repository}}:{{.Tag}}", check=False).stdout.split()
    for tag in [t for t in tags if t.startswith(ref)]:  # with the tests' -purge/-cli tags
        podman("rmi", "-f", tag, check=False)


def container_deployment(
    image: str, model: Path, port: int, **container: object
) -> dict[str, object]:
    return {
        "model": {"id": str(model), "served_name": "tiny"},
        "engine": "img",
        "target": {
            "kind": "container",
            "container": {
                "image": image,
                "port": port,
                "pull": "never",
                "extra_args": ["-v", "/usr:/usr:ro"],
                "ready_timeout_s": 60,
                "stop_grace_s": 3,
                **container,
            },
        },
    }
