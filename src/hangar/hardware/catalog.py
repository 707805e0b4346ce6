"""The GPU catalog: ``data/gpus.yaml`` loaded and validated once, and forgiving name lookup.

Lookup order for a user-typed name (``--gpu``):
1. normalise it (lowercase, drop "nvidia"/"geforce"/"tesla", drop punctuation and spaces);
2. exact match on an entry's id, NVML name or alias;
3. the data file's ``family_defaults`` (``A100`` -> ``A100-SXM-80GB``; the reason is in the file);
4. otherwise ``UnknownGpu``: the entries the name is a prefix of, if any
   (``rtx`` is ambiguous), else the closest names (difflib). A unique prefix is suggested, never
   taken: ``rtx 6000`` could mean a Quadro, an Ada or a Blackwell card, and a plan for the wrong
   one is worse than a one-line error.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hangar.errors import DataError, InputError, UnknownGpu
from hangar.hardware.spec import GpuSpec

DATA_FILE = Path(__file__).parent / "data" / "gpus.yaml"
SCHEMA_VERSION = 1
GENERATIONS = ("volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4")
INTERCONNECTS = ("nvlink", "pcie", "xgmi")
# torch.cuda.get_device_capability() on ROCm is the gfx target's major/minor digits
# (gfx90a -> 9.0, gfx942 -> 9.4, gfx950 -> 9.5); vLLM's capability checks read that value.
GFX_CAPABILITY = {"gfx90a": (9, 0), "gfx942": (9, 4), "gfx950": (9, 5)}
# Ids are typed on command lines and printed in tables: letters, digits, '.', '_', '-'
# (the packaged ids use letters, digits and '-'), starting with a letter or digit.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Device memory of any GPU vLLM runs on, with room to spare: 1 GiB to 4 TiB.
MEMORY_GIB_RANGE = (1, 4096)
# CUDA compute capability majors: vLLM needs 7.0 or higher (docs.vllm.ai, GPU installation
# requirements) and the newest NVIDIA parts are 12.x (the packaged catalog spans V100 7.0 to
# GB10 12.1); a major outside 7-12 is a typo, not a GPU.
CAPABILITY_MAJORS = range(7, 13)
GFX_FP8 = frozenset({"gfx942", "gfx950"})  # FP8 (FNUZ on gfx942, OCP on gfx950)
GFX_FP4 = frozenset({"gfx950"})  # MXFP4 matrix cores (CDNA4)
_MAX_CANDIDATES = 8  # keeps the UnknownGpu hint to one readable line
_DROPPED_WORDS = ("nvidia", "geforce", "tesla")
# libyaml's safe loader when PyYAML was built with it (about 10x faster), else the pure one.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Catalog:
    """Validated catalog contents plus the normalised-name indexes used by lookup."""

    path: str
    gpus: tuple[GpuSpec, ...]
    by_id: Mapping[str, GpuSpec]
    index: Mapping[str, str]  # normalised id/name/alias -> id
    defaults: Mapping[str, str]  # normalised family -> id

    @property
    def ids(self) -> list[str]:
        return [gpu.id for gpu in self.gpus]


def normalize_gpu_name(name: str) -> str:
    """Canonical lookup key: ``NVIDIA GeForce RTX 4090`` and ``rtx-4090`` both give ``rtx4090``."""
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    for word in _DROPPED_WORDS:
        key = key.replace(word, "")
    return key


# ---------------------------------------------------------------- loading and validation


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate a catalog file (the packaged one by default); raise DataError."""
    source = path or DATA_FILE
    raw = _read_yaml(source)
    _check_schema_version(source, raw)
    gpus = tuple(_parse_entry(source, i, entry) for i, entry in enumerate(_entries(source, raw)))
    by_id = _unique_ids(source, gpus)
    index = _build_index(source, gpus)
    defaults = _build_defaults(source, raw.get("family_defaults", {}), by_id, index)
    return Catalog(str(source), gpus, by_id, index, defaults)


@functools.cache
def default_catalog() -> Catalog:
    """The packaged catalog plus the user's GPU profiles (``user_catalog_path()``), once."""
    packaged = load_catalog()
    user = user_catalog_path()
    return merge_user_catalog(packaged, user) if user.is_file() else packaged


def user_catalog_path() -> Path:
    """``<config dir>/gpus.toml`` (``$HANGAR_HOME/config`` or ``$XDG_CONFIG_HOME/hangar``)."""
    from hangar.paths import config_dir

    return config_dir() / "gpus.toml"


USER_EXAMPLE = (
    'schema_version = 1\n[[gpus]]\nid = "MY-GPU"\nname = "NVIDIA Example 80GB"\n'
    "memory_gib = 80\ncompute_capability = [9, 0]\n"
    'generation = "hopper"\ninterconnect = "pcie"\nsource = "nvidia-smi on our nodes"'
)


def merge_user_catalog(packaged: Catalog, path: Path) -> Catalog:
    """Add the GPU profiles of a user TOML file; errors name the file, entry and key."""
    import tomllib

    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _user_fail(path, "file", f"cannot read ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise _user_fail(path, "file", f"invalid TOML ({exc})") from exc
    if "schema_version" not in raw:
        raise _user_fail(
            path, "key 'schema_version'", f"missing: add schema_version = {SCHEMA_VERSION}"
        )
    if raw["schema_version"] != SCHEMA_VERSION:
        got = raw["schema_version"]
        raise _user_fail(
            path,
            "key 'schema_version'",
            f"expected {SCHEMA_VERSION}, got {got!r}: set schema_version = {SCHEMA_VERSION}",
        )
    entries = raw.get("gpus")
    if not isinstance(entries, list) or not entries:
        raise _user_fail(path, "key 'gpus'", "must be a non-empty array of [[gpus]] tables")
    added = tuple(_user_entry(path, i, e) for i, e in enumerate(entries))
    gpus = packaged.gpus + added
    try:
        by_id = _unique_ids(path, gpus)
        index = _build_index(path, gpus)
    except DataError as exc:
        raise _user_fail(path, "entry", exc.message.split(": ", 1)[-1]) from exc
    return Catalog(f"{packaged.path} + {path}", gpus, by_id, index, dict(packaged.defaults))


def _user_entry(path: Path, index: int, entry: Any) -> GpuSpec:
    if isinstance(entry, dict) and "memory_gib" in entry:
        gib = entry["memory_gib"]
        low, high = MEMORY_GIB_RANGE
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or not low <= gib <= high:
            where = f"{_entry_label(index, entry)}: key 'memory_gib'"
            raise _user_fail(path, where, f"must be a number from {low} to {high} (GiB)")
        entry = {k: v for k, v in entry.items() if k != "memory_gib"}
        entry["memory_bytes"] = int(gib * 2**30)
    try:
        return _parse_entry(path, index, entry)
    except DataError as exc:
        raise InputError(
            exc.message, hint=f"fix {path} (keys as in src/hangar/hardware/data/gpus.yaml)"
        ) from exc


def _user_fail(path: Path, where: str, problem: str) -> InputError:
    # not "hangar gpus list": it reads this same file and fails the same way
    return InputError(
        f"{path}: {where}: {problem}",
        hint=f"fix {path} (keys as in src/hangar/hardware/data/gpus.yaml; memory_gib for memory)",
    )


def custom_gpu(
    memory_bytes: int, capability: tuple[int, int], base: GpuSpec | None = None
) -> GpuSpec:
    """--gpu-memory / --compute-capability: a catalog entry with those facts replaced, or a
    spec built from them (PCIe, dtype support from the capability)."""
    if base is not None:
        cap = capability[0] * 10 + capability[1]
        update = {"memory_bytes": memory_bytes, "compute_capability": capability,
                  "bf16": cap >= 80, "fp8": base.fp8 and cap >= 89, "fp4": base.fp4 and cap >= 100,
                  "id": f"{base.id} (custom)", "source": base.source + " Overridden on the command line."}
        return base.model_copy(update=update)
    name = f"custom {memory_bytes / 2**30:g}GiB SM{capability[0]}.{capability[1]}"
    spec = synthesize_spec(name, memory_bytes, capability)
    return spec.model_copy(update={"id": f"custom-{memory_bytes / 2**30:g}GiB-sm{capability[0]}{capability[1]}",
                                   "source": "--gpu-memory / --compute-capability on the command line"})


def _fail(source: Path, where: str, problem: str) -> DataError:
    return DataError(f"{source}: {where}: {problem}")


def _read_yaml(source: Path) -> dict[str, Any]:
    try:
        raw = yaml.load(source.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except OSError as exc:
        raise _fail(source, "file", f"cannot read ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise _fail(source, "file", f"invalid YAML ({str(exc).splitlines()[0]})") from exc
    if not isinstance(raw, dict):
        raise _fail(source, "file", "top level must be a mapping with schema_version and gpus")
    return raw


def _check_schema_version(source: Path, raw: Mapping[str, Any]) -> None:
    # Checked before anything else (pre-commit style): a newer file must not half-parse.
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise _fail(source, "key 'schema_version'", f"expected {SCHEMA_VERSION}, got {version!r}")


def _entries(source: Path, raw: Mapping[str, Any]) -> list[Any]:
    entries = raw.get("gpus")
    if not isinstance(entries, list) or not entries:
        raise _fail(source, "key 'gpus'", "must be a non-empty list of GPU entries")
    return entries


def _entry_label(index: int, entry: Any) -> str:
    gpu_id = entry.get("id") if isinstance(entry, dict) else None
    if not isinstance(gpu_id, str):
        return f"entry #{index + 1}"
    # repr shows control characters as \x1b ...: the message never carries them raw
    return f"entry '{gpu_id}'" if gpu_id.isprintable() else f"entry {gpu_id!r}"


def _parse_entry(source: Path, index: int, entry: Any) -> GpuSpec:
    label = _entry_label(index, entry)
    if not isinstance(entry, dict):
        raise _fail(source, label, "must be a mapping")
    try:
        spec = GpuSpec.model_validate(entry)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "?"
        raise _fail(source, f"{label}: key '{key}'", error["msg"]) from exc
    _check_semantics(source, label, spec)
    return spec


def _check_semantics(source: Path, label: str, spec: GpuSpec) -> None:
    for key, problem in _semantic_problems(spec):
        raise _fail(source, f"{label}: key '{key}'", problem)


def _printable(text: str) -> bool:
    return text.isprintable()


def _common_problems(spec: GpuSpec) -> list[tuple[str, str]]:
    """Checks for every vendor: values a terminal shows and ranges no real GPU leaves."""
    low, high = MEMORY_GIB_RANGE
    # source may be several lines of prose; it is shown through the terminal sanitizer
    names = (spec.name, spec.generation, spec.interconnect, *spec.aliases)
    checks = [
        (
            "id",
            bool(_ID.match(spec.id)),
            "must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ),
        (
            "name",
            all(_printable(n) for n in names),
            "name, aliases, generation and interconnect must be printable text",
        ),
        (
            "memory_bytes",
            low * 2**30 <= spec.memory_bytes <= high * 2**30,
            f"must be from {low} to {high} GiB",
        ),
    ]
    return [(key, problem) for key, ok, problem in checks if not ok]


def _semantic_problems(spec: GpuSpec) -> list[tuple[str, str]]:
    common = _common_problems(spec)
    if common or spec.vendor == "amd":
        return common or _amd_problems(spec)
    cap = spec.capability_int
    major, minor = spec.compute_capability
    if major not in CAPABILITY_MAJORS or not 0 <= minor <= 9:
        first, last = CAPABILITY_MAJORS[0], CAPABILITY_MAJORS[-1]
        return [
            (
                "compute_capability",
                (
                    f"must be [MAJOR, MINOR] with MAJOR {first}-{last} (vLLM's CUDA targets) "
                    f"and MINOR 0-9, got {list(spec.compute_capability)}"
                ),
            )
        ]
    checks = [
        ("generation", spec.generation in GENERATIONS, f"must be one of {', '.join(GENERATIONS)}"),
        ("interconnect", spec.interconnect in INTERCONNECTS, "must be 'nvlink' or 'pcie'"),
        (
            "nvlink_gbps",
            spec.interconnect != "nvlink" or bool(spec.nvlink_gbps),
            "required when interconnect is nvlink",
        ),
        ("source", bool(spec.source.strip()), "every entry must cite where its facts come from"),
        # Tensor-core dtype support follows capability (vllm/platforms/cuda.py dtype checks;
        # FP8 from SM 8.9, FP4 from SM 10.0), so the flags must agree with it.
        ("bf16", spec.bf16 == (cap >= 80), f"must be {cap >= 80} for capability {cap}"),
        ("fp8", not spec.fp8 or cap >= 89, f"fp8 needs capability >= 89, entry has {cap}"),
        ("fp4", not spec.fp4 or cap >= 100, f"fp4 needs capability >= 100, entry has {cap}"),
    ]
    return [(key, problem) for key, ok, problem in checks if not ok]


def _amd_problems(spec: GpuSpec) -> list[tuple[str, str]]:
    gfx = spec.gfx or ""
    checks = [
        ("gfx", gfx in GFX_CAPABILITY, f"must be one of {', '.join(GFX_CAPABILITY)}"),
        ("generation", spec.generation.startswith("cdna"), "AMD Instinct entries are cdna2-4"),
        (
            "compute_capability",
            GFX_CAPABILITY.get(gfx) == spec.compute_capability,
            f"{gfx} reports {GFX_CAPABILITY.get(gfx)} through torch on ROCm",
        ),
        ("fp8", spec.fp8 == (gfx in GFX_FP8), f"must be {gfx in GFX_FP8} for {gfx}"),
        ("fp4", spec.fp4 == (gfx in GFX_FP4), f"must be {gfx in GFX_FP4} for {gfx}"),
        ("source", bool(spec.source.strip()), "every entry must cite where its facts come from"),
    ]
    return [(key, problem) for key, ok, problem in checks if not ok]


def _unique_ids(source: Path, gpus: Sequence[GpuSpec]) -> dict[str, GpuSpec]:
    by_id: dict[str, GpuSpec] = {}
    for gpu in gpus:
        if gpu.id in by_id:
            raise _fail(source, f"entry '{gpu.id}': key 'id'", "duplicate id")
        by_id[gpu.id] = gpu
    return by_id


def _keys_of(gpu: GpuSpec) -> list[tuple[str, str]]:
    """(field, normalised key) for everything a user or NVML may call this GPU."""
    named = [("id", gpu.id), ("name", gpu.name)] + [("aliases", alias) for alias in gpu.aliases]
    return [(field, normalize_gpu_name(value)) for field, value in named]


def _build_index(source: Path, gpus: Sequence[GpuSpec]) -> dict[str, str]:
    index: dict[str, str] = {}
    for gpu in gpus:
        for field, key in _keys_of(gpu):
            if not key:
                raise _fail(source, f"entry '{gpu.id}': key '{field}'", "normalises to nothing")
            owner = index.setdefault(key, gpu.id)
            if owner != gpu.id:
                raise _fail(
                    source,
                    f"entry '{gpu.id}': key '{field}'",
                    f"'{key}' already names entry '{owner}'",
                )
    return index


def _build_defaults(
    source: Path, raw: Any, by_id: Mapping[str, GpuSpec], index: Mapping[str, str]
) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise _fail(source, "key 'family_defaults'", "must be a mapping of family -> entry id")
    defaults: dict[str, str] = {}
    for family, target in raw.items():
        where = f"key 'family_defaults.{family}'"
        key = normalize_gpu_name(str(family))
        if target not in by_id:
            raise _fail(source, where, f"names unknown entry '{target}'")
        if index.get(key, target) != target:
            raise _fail(source, where, f"'{key}' already names entry '{index[key]}'")
        defaults[key] = str(target)
    return defaults


# ---------------------------------------------------------------- queries


def list_gpus() -> list[GpuSpec]:
    """Every catalog entry, in data-file order."""
    return list(default_catalog().gpus)


def lookup(name: str, catalog: Catalog | None = None) -> GpuSpec:
    """Resolve a user-typed GPU name; raise UnknownGpu (one line, with suggestions)."""
    cat = catalog or default_catalog()
    key = normalize_gpu_name(name)
    gpu_id = cat.index.get(key) or cat.defaults.get(key)
    if gpu_id:
        return cat.by_id[gpu_id]
    candidates = _prefix_candidates(cat, key)
    raise UnknownGpu(name, candidates or suggestions(name, cat))


def _prefix_candidates(cat: Catalog, key: str) -> list[str]:
    if not key:
        return []
    found = {gpu_id for k, gpu_id in cat.index.items() if k.startswith(key)}
    return [gpu_id for gpu_id in cat.ids if gpu_id in found][:_MAX_CANDIDATES]


def suggestions(name: str, catalog: Catalog | None = None, limit: int = 3) -> list[str]:
    """Closest catalog ids to ``name`` (difflib over every known key); all ids if none is close."""
    cat = catalog or default_catalog()
    keys = {**cat.index, **cat.defaults}
    close = difflib.get_close_matches(normalize_gpu_name(name), list(keys), n=10, cutoff=0.6)
    ids = list(dict.fromkeys(keys[key] for key in close))[:limit]
    return ids or cat.ids[:_MAX_CANDIDATES]


def from_nvml_name(
    name: str,
    memory_bytes: int | None,
    compute_capability: tuple[int, int] | None = None,
    catalog: Catalog | None = None,
) -> GpuSpec:
    """Map a detected device (NVML name, NVML total) to its catalog entry.

    Only exact names count here: a detected device is never guessed into a family default.
    When NVML's total differs from the catalog (ECC toggled, a new driver), the detected total
    wins. Unknown devices become a spec synthesised from the NVML facts, which needs the
    compute capability; without it, UnknownGpu is raised.
    """
    cat = catalog or default_catalog()
    gpu_id = cat.index.get(normalize_gpu_name(name))
    if gpu_id:
        return _with_detected_memory(cat.by_id[gpu_id], memory_bytes)
    if compute_capability is None or not memory_bytes:
        raise UnknownGpu(name, suggestions(name, cat))
    return synthesize_spec(name, memory_bytes, compute_capability)


def _with_detected_memory(spec: GpuSpec, memory_bytes: int | None) -> GpuSpec:
    if not memory_bytes or memory_bytes == spec.memory_bytes:
        return spec
    note = f" Detected NVML total {memory_bytes} bytes replaces the catalog's {spec.memory_bytes}."
    return spec.model_copy(update={"memory_bytes": memory_bytes, "source": spec.source + note})


def generation_for(capability: tuple[int, int]) -> str:
    """Architecture name for a compute capability (CUDA GPUs table); 'unknown' before Volta."""
    major, minor = capability
    if major >= 10:
        return "blackwell"
    table = {(7, 5): "turing", (8, 9): "ada"}
    by_major = {7: "volta", 8: "ampere", 9: "hopper"}
    return table.get((major, minor)) or by_major.get(major, "unknown")


def synthesize_spec(name: str, memory_bytes: int, capability: tuple[int, int]) -> GpuSpec:
    """A spec for a GPU the catalog lacks, from NVML facts; interconnect assumed PCIe."""
    cap = capability[0] * 10 + capability[1]
    lowered = name.lower()
    return GpuSpec(
        id=f"detected:{name}",
        name=name,
        memory_bytes=memory_bytes,
        compute_capability=capability,
        generation=generation_for(capability),
        interconnect="pcie",
        consumer="geforce" in lowered or " rtx" in lowered,
        bf16=cap >= 80,
        fp8=cap >= 89,
        fp4=cap >= 100,
        source="synthesised from NVML (name, total memory, compute capability); "
        "not in Hangar's catalog, so NVLink is not assumed",
    )
