"""Where Hangar keeps its own files.

XDG base directories by default; ``HANGAR_HOME`` moves all of them under one
directory (tests and benchmarks use it so they never touch the real home).
"""

from __future__ import annotations

import os
from pathlib import Path

_KINDS = {
    "config": ("XDG_CONFIG_HOME", ".config"),
    "data": ("XDG_DATA_HOME", ".local/share"),
    "state": ("XDG_STATE_HOME", ".local/state"),
    "cache": ("XDG_CACHE_HOME", ".cache"),
}


def hangar_dir(kind: str) -> Path:
    """Directory for ``kind`` (config, data, state or cache); not created."""
    env_var, fallback = _KINDS[kind]
    home = os.environ.get("HANGAR_HOME")
    if home:
        return Path(home) / kind
    base = os.environ.get(env_var) or str(Path.home() / fallback)
    return Path(base) / "hangar"


def config_dir() -> Path:
    return hangar_dir("config")


def data_dir() -> Path:
    return hangar_dir("data")


def state_dir() -> Path:
    return hangar_dir("state")


def cache_dir() -> Path:
    return hangar_dir("cache")


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    """Write ``text`` to ``path`` so readers never see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def runs_root() -> Path:
    """One private dir per launch (logs, rendered scripts, temp dirs): runs/<id>/."""
    return state_dir() / "runs"


# What `hangar launch` records in a run dir (written by launch, read by the doctor).
LAUNCH_FILE = "launch.json"  # target, argv, the env Hangar added (secrets by name only)
HOST_FILE = "host.json"  # the launching host's preflight facts, without env or engine


def engine_cache_dir(key: str) -> Path:
    """Compile caches per engine (they differ per vLLM/torch build)."""
    return cache_dir() / "engines" / key


def crash_dir() -> Path:
    """Crash logs of internal errors (exit 3), one file each."""
    return state_dir() / "crash"
