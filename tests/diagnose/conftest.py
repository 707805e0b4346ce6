"""Shared fixtures: a private HANGAR_HOME and the corpus manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(autouse=True)
def hangar_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hangar-home"
    monkeypatch.setenv("HANGAR_HOME", str(home))
    return home


def load_manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CORPUS / "manifest.yaml").read_text(encoding="utf-8"))
    return data
