"""SIF inspection: a SIF file built here, offline (mksquashfs of a small tree carrying a
vLLM-like install, wrapped in a SIF header and descriptor table laid out as sylabs/sif's
pkg/sif writes them), read with squashfs-tools and never run; it agrees with reading the
same tree directly, extracts only what the reader needs, and is cached by digest."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import uuid
from pathlib import Path

import pytest

from hangar.engines import image, inventory, sif
from hangar.engines.errors import InspectFailed
from hangar.engines.model import DriverInfo

HOST = DriverInfo(found=False, reason="test")
SITE = "usr/local/lib/python3.12/dist-packages"
DATA_OFFSET = 32768  # past the 48-entry descriptor table (48 x 585 bytes), aligned
REGISTRY = """
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "Qwen3ForCausalLM": ("qwen3", "Qwen3ForCausalLM"),
}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS}
"""
TOOL_PARSER = """
from vllm.entrypoints.openai.tool_parsers.abstract_tool_parser import ToolParserManager


@ToolParserManager.register_module("hermes")
class Hermes:
    pass
"""


def _tree(root: Path) -> Path:
    site = root / SITE
    files = {
        "vllm/__init__.py": "",
        "vllm/model_executor/models/registry.py": REGISTRY,
        "vllm/entrypoints/openai/tool_parsers/__init__.py": "",
        "vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py": TOOL_PARSER,
        "vllm-0.32.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0\n",
        "torch/__init__.py": "",
        "torch/version.py": "__version__ = '2.9.0+cu128'\ncuda = '12.8'\n",
        "transformers-4.57.1.dist-info/METADATA": "Name: transformers\nVersion: 4.57.1\n",
    }
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    (site / "vllm" / "_C.abi3.so").write_bytes(os.urandom(256 * 1024))  # never extracted
    (root / "usr" / "bin").mkdir(parents=True)
    never = root / "usr" / "bin" / "python3"
    never.write_text(f"#!/bin/sh\ntouch {root.parent}/RAN\n")
    never.chmod(0o755)
    return root


def _descriptor(datatype: int, offset: int, size: int, extra: bytes, ident: int) -> bytes:
    name = b"rootfs".ljust(128, b"\0")
    fields = (
        datatype,
        1,
        ident,
        0,
        0,
        offset,
        size,
        size,
        0,
        0,
        0,
        0,
        name,
        extra.ljust(384, b"\0"),
    )
    return sif.DESCRIPTOR.pack(*fields)


def build_sif(tree: Path, out: Path, modified: int = 1_700_000_000) -> Path:
    squash = out.with_suffix(".sqsh")
    subprocess.run(
        ["mksquashfs", str(tree), str(squash), "-noappend", "-quiet", "-no-progress"],
        check=True,
        capture_output=True,
    )
    data = squash.read_bytes()
    deffile = b"Bootstrap: docker\nFrom: vllm/vllm-openai:v0.32.0\n"
    descriptors = _descriptor(0x4001, DATA_OFFSET - len(deffile), len(deffile), b"", 1)
    part = sif.PARTITION_EXTRA.pack(sif.FS_SQUASH, sif.PART_PRIM_SYS, b"01\0")
    descriptors += _descriptor(sif.DATA_PARTITION, DATA_OFFSET, len(data), part, 2)
    header = sif.HEADER.pack(
        b"#!/usr/bin/env run-singularity\n".ljust(32, b"\0"),
        sif.SIF_MAGIC,
        b"01\0",
        b"02\0",  # amd64 in sif's arch table
        uuid.uuid4().bytes,
        modified,
        modified,
        46,  # DescriptorsFree
        48,  # DescriptorsTotal
        sif.HEADER.size,
        48 * sif.DESCRIPTOR.size,
        DATA_OFFSET - len(deffile),
        len(data) + len(deffile),
    )
    table = descriptors.ljust(48 * sif.DESCRIPTOR.size, b"\0")
    blob = (header + table).ljust(DATA_OFFSET - len(deffile), b"\0") + deffile + data
    out.write_bytes(blob)
    return out


@pytest.fixture(scope="module")
def sif_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for tool in ("mksquashfs", "unsquashfs"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing: run scripts/setup-test-host (needs squashfs-tools)")
    base = tmp_path_factory.mktemp("sif")
    return build_sif(_tree(base / "tree"), base / "vllm.sif")


def test_root_partition_found_after_the_header(sif_file: Path) -> None:
    part = sif.root_partition(sif_file)
    assert part.offset == DATA_OFFSET
    assert sif_file.read_bytes()[part.offset : part.offset + 4] == b"hsqs"


def test_sif_read_agrees_with_the_tree_and_runs_nothing(sif_file: Path) -> None:
    found = image.inspect_image("sif", str(sif_file), "apptainer", use_cache=False, host=HOST)
    tree = sif_file.parent / "tree"
    direct = inventory.read_installation("dir", tree, (tree / SITE,), HOST)
    assert found.vllm_version == "0.32.0" and found.torch_cuda == "12.8"
    assert "hermes" in found.tool_parsers and "Qwen3ForCausalLM" in found.architectures
    for field in (
        "vllm_version",
        "torch_version",
        "transformers_version",
        "architectures",
        "tool_parsers",
    ):
        assert getattr(found, field) == getattr(direct, field), field
    assert found.site_packages == (f"/{SITE}",)
    assert not (sif_file.parent / "RAN").exists()


def test_only_the_needed_files_are_extracted(sif_file: Path) -> None:
    with image.image_root(str(sif_file), "apptainer") as root:
        assert (root / SITE / "vllm" / "model_executor" / "models" / "registry.py").is_file()
        assert not (root / SITE / "vllm" / "_C.abi3.so").exists()
        assert not (root / "usr" / "bin" / "python3").exists()


def test_cached_by_digest(sif_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = image.inspect_image("a", str(sif_file), "apptainer", host=HOST)
    rebuilt = build_sif(sif_file.parent / "tree", tmp_path / "rebuilt.sif", modified=1_800_000_000)
    monkeypatch.setenv("PATH", str(tmp_path))  # no unsquashfs: only the cache can answer
    again = image.inspect_image("b", str(sif_file), "apptainer", host=HOST)
    assert again.engine == "b" and again.vllm_version == first.vllm_version
    assert sif.root_partition(rebuilt).digest != sif.root_partition(sif_file).digest
    with pytest.raises(InspectFailed, match="squashfs-tools is not installed"):
        image.inspect_image("c", str(rebuilt), "apptainer", host=HOST)


def test_not_a_sif_is_one_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "model.sif"
    bogus.write_bytes(b"\0" * 200)
    with pytest.raises(InspectFailed, match="not a SIF file"):
        image.inspect_image("x", str(bogus), "apptainer", host=HOST)
    with pytest.raises(InspectFailed, match="not a local SIF file"):
        image.inspect_image("x", "docker://vllm/vllm-openai:v0.32.0", "apptainer", host=HOST)


def test_struct_sizes_match_the_sif_spec() -> None:
    # pkg/sif: the header is 128 bytes and each descriptor 585 (binary.Write, packed)
    assert sif.HEADER.size == 128 and sif.DESCRIPTOR.size == 585
    assert struct.calcsize("<ii3s") == 11
