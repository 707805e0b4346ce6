"""Where model facts come from, in this order (first hit wins):

1. a local path: a model directory holding config.json, or a config.json file;
2. the Hugging Face cache on this machine (HF_HOME / HF_HUB_CACHE), without network;
3. the embedded catalog shipped with Hangar (real configs with their sources);
4. the Hugging Face hub over the network (skipped when HF_HUB_OFFLINE=1): config.json,
   hf_quant_config.json and the exact weight size from the safetensors index.

The token is whatever huggingface_hub reads itself (HF_TOKEN, the token file); Hangar
never reads, prints or stores it.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from hangar.errors import BadValue, InputError, ModelNotFound
from hangar.models.config import parse_config
from hangar.models.config_file import load_config_file
from hangar.models.hfcache import repo_cache_dir
from hangar.models.spec import ModelSpec

# huggingface_hub's HTTP errors subclass OSError (requests/httpx) or ValueError (validation).
_HUB_ERRORS = (OSError, ValueError)
CATALOG_PACKAGE = "hangar.models"
CATALOG_DIR = "catalog"


def load_model(ref: str, overrides: Mapping[str, Any] | None = None) -> ModelSpec:
    """Resolve ``ref`` (path, hub id or catalog id) to a frozen ModelSpec; ``overrides`` are
    vLLM's --hf-overrides, applied to config.json as vLLM applies them."""
    if not ref.strip():
        raise InputError(
            "the model is empty", field="MODEL", hint="pass ORG/NAME, a catalog id or a directory"
        )
    path = expand_user(ref)
    if path.exists():
        return from_local(path, overrides)
    if _looks_like_path(ref):
        raise InputError(
            "no such file or directory",
            source=ref,
            hint="pass an existing model directory, or a hub/catalog id",
        )
    cached = _from_hf_cache(ref, overrides)
    if cached is not None:
        return cached
    entry = catalog_entry(ref)
    if entry is not None:
        return from_catalog(entry, overrides)
    remote = _from_hub(ref, overrides)
    if remote is not None:
        return remote
    raise ModelNotFound(ref, hub=hub_unreachable() if _valid_repo_id(ref) else None)


def expand_user(text: str) -> Path:
    """``~`` and ``~user`` expanded as the shell does; an unknown user (``~0``) stays
    literal, as in the shell, instead of Path.expanduser's RuntimeError."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        return Path(text)


def _looks_like_path(ref: str) -> bool:
    return ref.startswith((".", "/", "~")) or ref.count("/") > 1 or ref.endswith(".json")


def from_local(path: Path, overrides: Mapping[str, Any] | None = None) -> ModelSpec:
    directory = path if path.is_dir() else path.parent
    config_path = directory / "config.json" if path.is_dir() else path
    if path.is_dir() and path.suffix == ".json":  # e.g. m/config.json made a directory
        raise InputError(
            "is a directory, not a JSON file",
            source=str(path),
            hint=f"pass the model directory ({path.parent}) or a config.json file",
        )
    if not config_path.is_file():
        raise InputError(
            "no config.json in this directory",
            source=str(directory),
            hint="point at the model directory that holds config.json",
        )
    return _from_files(
        config_path,
        model_id=str(directory),
        source="local",
        local_dir=directory,
        checkpoint_bytes=_local_weight_bytes(directory),
        overrides=overrides,
    )


def _from_files(
    config_path: Path,
    *,
    model_id: str,
    source: str,
    local_dir: Path | None,
    checkpoint_bytes: int | None,
    overrides: Mapping[str, Any] | None = None,
) -> ModelSpec:
    config = apply_hf_overrides(_load_json(config_path), overrides)
    quant_path = config_path.with_name("hf_quant_config.json")
    quant = _load_json(quant_path) if quant_path.is_file() else None
    try:
        return parse_config(
            config,
            model_id=model_id,
            source=source,
            path=str(config_path),
            quant_file=quant,
            local_dir=local_dir,
            checkpoint_bytes=checkpoint_bytes,
        )
    except InputError as exc:
        if exc.field is None or not _overridden(overrides, exc.field):
            raise
        raise _override_error(exc, exc.field) from exc


# Sections whose keys the reader also reads as the model's own (text_config of a
# multimodal config, llm_config of InternVL ...): an override there sets the same field.
_NESTED_SECTIONS = ("text_config", "llm_config", "language_config", "thinker_config")


def _overridden(overrides: Mapping[str, Any] | None, field: str) -> bool:
    """Whether the value at dotted ``field`` came from ``overrides`` (at the top or in a
    nested text section) rather than from the config file itself."""

    def has(mapping: Any, keys: list[str]) -> bool:
        for key in keys:
            if not isinstance(mapping, Mapping) or key not in mapping:
                return False
            mapping = mapping[key]
        return True

    if not overrides:
        return False
    keys = field.split(".")
    return has(overrides, keys) or any(has(overrides, [s, *keys]) for s in _NESTED_SECTIONS)


def _override_error(exc: InputError, field: str) -> BadValue:
    """The config reader's complaint, blamed on the option that set the value (exit 2)
    instead of on a config.json the user never wrote."""
    where = ": ".join(p for p in (exc.source, f"field '{field}'") if p) + ": "
    option = f"--hf-overrides.{field}"
    return BadValue(
        exc.message.removeprefix(where),
        field=option,
        hint=f"give '{field}' a valid value in --hf-overrides (or --rope-scaling), or drop it",
    )


def apply_hf_overrides(
    config: dict[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """vLLM's --hf-overrides on the config dict: nested dicts merge key by key, other values
    replace (vllm/transformers_utils/config.py, hf_overrides applied after loading; 0.8.5+
    ModelConfig.hf_overrides). ``--rope-scaling X`` of the versions that have it is the same
    as ``--hf-overrides '{"rope_scaling": X}'``."""
    if not overrides:
        return config
    merged = dict(config)
    for key, value in overrides.items():
        old = merged.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            merged[key] = apply_hf_overrides(dict(old), value)
        else:
            merged[key] = value
    return merged


def _load_json(path: Path) -> dict[str, Any]:
    """load_config_file, plus the JSON that Python's parser accepts but no config holds:
    nesting deep enough to overflow the parser's recursion, and NaN / Infinity / 1e400 or
    numbers past 2**63 as sizes, which would overflow the int/float arithmetic of the
    planner (a traceback instead of a line naming the field)."""
    try:
        data = load_config_file(path)
        bad = _bad_number(data)
    except RecursionError as exc:
        raise InputError(
            "not valid JSON: nested too deeply", source=str(path), hint=_REFETCH
        ) from exc
    if bad is not None:
        raise InputError(
            "not a finite number below 2**63", source=str(path), field=bad, hint=_REFETCH
        )
    return data


_REFETCH = "re-download the file or fix the JSON by hand"
_LIMIT = 2**63


def _bad_number(value: Any, where: str = "") -> str | None:
    """Dotted key of the first NaN, Infinity or out-of-range number in ``value``, or None.

    Only scalars under object keys are checked (the sizes the reader turns into ints);
    lists may hold Infinity legitimately, e.g. Mamba's time_step_limit [0.0, Infinity]
    in the Nemotron-H configs of the catalog."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return None if math.isfinite(value) and abs(value) < _LIMIT else (where or "(top level)")
    if not isinstance(value, dict):
        return None
    for key, child in value.items():
        found = _bad_number(child, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def _local_weight_bytes(directory: Path) -> int | None:
    """Exact size from the safetensors index, else the sum of *.safetensors files."""
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        total = _json_total_size(index)
        if total is not None:
            return total
    files = list(directory.glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) or None if files else None


# ---------------------------------------------------------------- embedded catalog
def _catalog_root() -> Path:
    return Path(str(resources.files(CATALOG_PACKAGE) / CATALOG_DIR))


@lru_cache(maxsize=1)
def _catalog_index() -> dict[str, Path]:
    root = _catalog_root()
    index: dict[str, Path] = {}
    if root.is_dir():
        for folder in sorted(root.iterdir()):
            if (folder / "config.json").is_file():
                index[folder.name.replace("__", "/").lower()] = folder
    return index


def catalog_ids() -> list[str]:
    return [read_meta(folder).get("hf_id", folder.name) for folder in _catalog_index().values()]


def catalog_entry(ref: str) -> Path | None:
    key = ref.strip().lower().replace("__", "/")
    return _catalog_index().get(key)


def catalog_folders() -> Iterator[Path]:
    yield from _catalog_index().values()


def read_meta(folder: Path) -> dict[str, Any]:
    meta_path = folder / "meta.yaml"
    if not meta_path.is_file():
        return {}
    try:
        data = yaml.load(meta_path.read_text(encoding="utf-8"), Loader=_yaml_loader())
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", source=str(meta_path)) from exc
    return data if isinstance(data, dict) else {}


def _yaml_loader() -> Any:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def from_catalog(folder: Path, overrides: Mapping[str, Any] | None = None) -> ModelSpec:
    meta = read_meta(folder)
    size = meta.get("total_size_bytes")
    return _from_files(
        folder / "config.json",
        model_id=meta.get("hf_id", folder.name),
        source="catalog",
        local_dir=folder,
        checkpoint_bytes=size if isinstance(size, int) else None,
        overrides=overrides,
    )


# ---------------------------------------------------------------- Hugging Face
def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")


def _valid_repo_id(ref: str) -> bool:
    parts = ref.split("/")
    return 1 <= len(parts) <= 2 and all(p and not p.startswith(".") for p in parts)


def _from_hf_cache(ref: str, overrides: Mapping[str, Any] | None = None) -> ModelSpec | None:
    if not _valid_repo_id(ref):
        return None
    # the repo folder ("models--org--name") must exist before huggingface_hub is worth
    # importing (a quarter of a second on a cold process)
    if not repo_cache_dir(ref).is_dir():
        return None
    from huggingface_hub import try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_id=ref, filename="config.json")
    except ValueError:  # HFValidationError: not a repo id the hub accepts, so not cached
        return None
    if not isinstance(hit, str):
        return None
    directory = Path(hit).parent
    return _from_files(
        Path(hit),
        model_id=ref,
        source="hf-cache",
        local_dir=directory,
        checkpoint_bytes=_local_weight_bytes(directory),
        overrides=overrides,
    )


HUB_PROBE_TIMEOUT_S = 2.0
OFFLINE_BY_USER = "HF_HUB_OFFLINE is set"


def hub_unreachable() -> str | None:
    """Why the Hugging Face hub cannot be reached from here, or None when it can.

    One TCP connect per process, bounded in a thread (a slow resolver is not bounded
    by the socket timeout). When it fails, huggingface_hub is put in offline mode for the
    rest of the process (HF_HUB_OFFLINE, read by every hub call), so no later download
    spends its retries (24 s and pages of warnings) learning the same thing.
    """
    if _probe_hub.cache_info().currsize == 0 and _offline():  # the user's choice: no probe
        return OFFLINE_BY_USER
    return _probe_hub()


@lru_cache(maxsize=1)
def _probe_hub() -> str | None:
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    address = (endpoint.hostname or "huggingface.co", endpoint.port or 443)
    outcome: list[str | None] = []
    probe = threading.Thread(target=lambda: outcome.append(_connect(address)), daemon=True)
    probe.start()
    probe.join(HUB_PROBE_TIMEOUT_S + 0.5)
    reason = outcome[0] if outcome else f"no answer within {HUB_PROBE_TIMEOUT_S:g} s"
    if reason is not None:
        reason = f"{address[0]}:{address[1]}: {reason}"
        _go_offline()
    return reason


def _connect(address: tuple[str, int]) -> str | None:
    try:
        with socket.create_connection(address, HUB_PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _go_offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # already imported: it read the environment at import time
        setattr(constants, "HF_HUB_OFFLINE", True)  # noqa: B010  (not in its stubs)


def _from_hub(ref: str, overrides: Mapping[str, Any] | None = None) -> ModelSpec | None:
    if _offline() or not _valid_repo_id(ref) or "/" not in ref or hub_unreachable():
        return None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import GatedRepoError

    try:
        config_path = Path(hf_hub_download(ref, "config.json"))
    except GatedRepoError as exc:
        raise InputError(
            f"'{ref}' is a gated repository and this machine has no access token for it",
            hint="hf auth login (or export HF_TOKEN=...), accept the model's terms, retry",
        ) from exc
    except _HUB_ERRORS:
        return None  # not on the hub, or the hub is unreachable: the caller reports not found
    _optional_hub_file(ref, "hf_quant_config.json")
    return _from_files(
        config_path,
        model_id=ref,
        source="hub",
        local_dir=config_path.parent,
        checkpoint_bytes=_hub_weight_bytes(ref),
        overrides=overrides,
    )


def _optional_hub_file(ref: str, name: str) -> Path | None:
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(ref, name))
    except _HUB_ERRORS:  # most repos have no such file
        return None


def _hub_weight_bytes(ref: str) -> int | None:
    index = _optional_hub_file(ref, "model.safetensors.index.json")
    if index is None:  # single-file checkpoints have no index
        return None
    return _json_total_size(index)


def _json_total_size(index: Path) -> int | None:
    """metadata.total_size of a safetensors index (None when absent or not a positive int)."""
    metadata = _load_json(index).get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None
