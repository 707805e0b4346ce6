"""The one Hugging Face cache resolver agrees with huggingface_hub's own constants.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hangar.models.hfcache import HUB_CACHE_ENV, hub_cache_dir, repo_cache_dir

# One interpreter for every case: constants.py is re-executed per environment (reload).
_ASK = """
import importlib, json, os, sys
import huggingface_hub.constants as c
out = []
for env in json.loads(sys.argv[1]):
    for name in NAMES:
        os.environ.pop(name, None)
    os.environ.update(env)
    out.append(importlib.reload(c).HF_HUB_CACHE)
print(json.dumps(out))
"""

CASES = [
    {},
    {"XDG_CACHE_HOME": "{tmp}/xdg"},
    {"XDG_CACHE_HOME": "{tmp}/xdg", "HF_HOME": "{tmp}/home"},
    {"HF_HOME": "~/hf-home"},
    {"HF_HOME": "$HANGAR_T/hf", "HANGAR_T": "{tmp}"},
    {"HF_HOME": "{tmp}/home", "HUGGINGFACE_HUB_CACHE": "{tmp}/legacy"},
    {"HF_HOME": "{tmp}/home", "HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HUB_CACHE": "{tmp}/h"},
    {"HF_HUB_CACHE": "${HANGAR_T}/braced", "HANGAR_T": "{tmp}"},
    {"HF_HOME": ""},
]


def _huggingface_hub_says(envs: list[dict[str, str]], cwd: Path) -> list[Path]:
    """constants.HF_HUB_CACHE for each ``env`` (over this environment minus the HF names)."""
    base = {k: v for k, v in os.environ.items() if k not in HUB_CACHE_ENV}
    code = f"NAMES = {list(HUB_CACHE_ENV)!r}\n" + _ASK
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(envs)], env=base, cwd=cwd,
        capture_output=True, text=True, check=True,
    ).stdout
    return [Path(p) for p in json.loads(out)]


def test_same_directory_as_huggingface_hub(tmp_path: Path) -> None:
    envs = [{k: v.replace("{tmp}", str(tmp_path)) for k, v in c.items()} for c in CASES]
    theirs = _huggingface_hub_says(envs, tmp_path)
    base = {k: v for k, v in os.environ.items() if k not in HUB_CACHE_ENV}
    ours = [hub_cache_dir({**base, **env}) for env in envs]
    relative = [os.path.join(tmp_path, p) if not p.is_absolute() else str(p) for p in theirs]
    assert [os.path.normpath(tmp_path / p) for p in ours] == [os.path.normpath(p) for p in relative]


def test_repo_folder_is_the_hub_layout(tmp_path: Path) -> None:
    env = {"HF_HUB_CACHE": str(tmp_path)}
    assert repo_cache_dir("org/name", env) == tmp_path / "models--org--name"
