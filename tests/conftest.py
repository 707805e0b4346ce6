"""Suite-wide guards: Hangar's files go to a per-test HANGAR_HOME, never the real home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def hangar_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("hangar-home")
    monkeypatch.setenv("HANGAR_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no test may reach the hub
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    yield home
