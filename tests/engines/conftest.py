"""Fixtures for the engines tests: an isolated Hangar home, a local wheel index, real uv."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import fakewheels


@dataclass(frozen=True)
class Indexes:
    stable: (
        str  # file:// PEP 503 index: vllm 0.10.0 / 0.20.0 / 0.21.0 (broken) / 0.22.0 (unresolvable)
    )
    nightly: str  # file:// index holding only the nightly vllm build


@pytest.fixture(scope="session")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Indexes:
    root = tmp_path_factory.mktemp("wheel-index")
    stable = fakewheels.build_index(fakewheels.stable_packages(), root / "stable")
    nightly = fakewheels.build_index(fakewheels.nightly_packages(), root / "nightly")
    return Indexes(stable, nightly)


@pytest.fixture(scope="session")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uv cache for the session: wheels are unpacked once (uv's cache is safe to share)."""
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture(autouse=True)
def hangar_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uv_cache: Path, indexes: Indexes
) -> Iterator[Path]:
    """Every write goes under tmp: Hangar's dirs, uv's cache, XDG dirs; cwd is a tmp project."""
    home = tmp_path / "hangar-home"
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HANGAR_HOME", str(home))
    monkeypatch.setenv("UV_CACHE_DIR", str(uv_cache))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HANGAR_NO_HUB", "1")
    monkeypatch.setenv("HANGAR_VLLM_NIGHTLY_INDEX", indexes.nightly)
    monkeypatch.setenv("HANGAR_FAKE_IMPORT_LOG", str(tmp_path / "imports.log"))
    monkeypatch.chdir(project)
    yield home


@pytest.fixture
def import_log(tmp_path: Path) -> Path:
    return Path(os.environ["HANGAR_FAKE_IMPORT_LOG"])
