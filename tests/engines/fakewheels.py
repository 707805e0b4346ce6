"""Tiny stand-ins for vllm / torch / transformers with the real file layout ``inspect`` reads.

Each package is a real wheel (dist-info with METADATA, WHEEL and a hashed RECORD)
served from a PEP 503 ``file://`` index, so uv resolves and installs them offline.
Importing any stand-in appends its name to ``$HANGAR_FAKE_IMPORT_LOG`` (when set),
which lets tests prove that ``inspect`` imports nothing.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

_IMPORT_LOG = (
    "import os as _os\n"
    "if _os.environ.get('HANGAR_FAKE_IMPORT_LOG'):\n"
    "    with open(_os.environ['HANGAR_FAKE_IMPORT_LOG'], 'a') as _f:\n"
    "        _f.write(__name__ + '\\n')\n"
)


@dataclass
class FakePackage:
    name: str
    version: str
    files: dict[str, str]
    requires: list[str] = field(default_factory=list)

    @property
    def wheel_name(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def build_wheel(pkg: FakePackage, out_dir: Path) -> Path:
    dist_info = f"{pkg.name.replace('-', '_')}-{pkg.version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {pkg.name}", f"Version: {pkg.version}"]
    meta += [f"Requires-Dist: {req}" for req in pkg.requires]
    files = dict(pkg.files)
    files[f"{dist_info}/METADATA"] = "\n".join(meta) + "\n"
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: hangar-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{path},{_record_hash(text.encode())}" for path, text in files.items()]
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / pkg.wheel_name
    with zipfile.ZipFile(target, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return target


def write_tree(pkg: FakePackage, site: Path) -> None:
    """Unpacked form (for static-reader unit tests without uv)."""
    for rel, text in pkg.files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def build_index(packages: list[FakePackage], root: Path) -> str:
    """A PEP 503 simple index under ``root``; returns its ``file://`` URL."""
    files = root / "files"
    simple = root / "simple"
    by_name: dict[str, list[str]] = {}
    for pkg in packages:
        wheel = build_wheel(pkg, files)
        by_name.setdefault(pkg.name.lower().replace("_", "-"), []).append(wheel.name)
    for name, wheels in by_name.items():
        (simple / name).mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{w}">{w}</a><br/>\n' for w in wheels)
        (simple / name / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    (simple / "index.html").write_text(
        "<html><body>\n"
        + "".join(f'<a href="{n}/">{n}</a>\n' for n in by_name)
        + "</body></html>\n"
    )
    return (simple).as_uri()


# --- torch / transformers -------------------------------------------------------------------


def torch(version: str, cuda: str | None) -> FakePackage:
    version_py = (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'cuda']\n"
        f"__version__ = '{version}'\n"
        "debug = False\n"
        f"cuda: Optional[str] = {cuda!r}\n"
        "hip: Optional[str] = None\n"
    )
    init = _IMPORT_LOG + "from torch.version import __version__\n"
    return FakePackage(
        "torch", version.split("+")[0], {"torch/__init__.py": init, "torch/version.py": version_py}
    )


def transformers(version: str, model_types: list[str]) -> FakePackage:
    pairs = "".join(f'        ("{t}", "{t.title()}Config"),\n' for t in model_types)
    config_auto = (
        "from collections import OrderedDict\n\n"
        f"CONFIG_MAPPING_NAMES = OrderedDict(\n    [\n{pairs}    ]\n)\n"
        'CONFIG_MAPPING_NAMES.update({"EvollaModel": "EvollaConfig"})\n'
    )
    return FakePackage(
        "transformers",
        version,
        {
            "transformers/__init__.py": _IMPORT_LOG + f"__version__ = '{version}'\n",
            "transformers/models/__init__.py": "",
            "transformers/models/auto/__init__.py": "",
            "transformers/models/auto/configuration_auto.py": config_auto,
        },
    )


# --- vllm ------------------------------------------------------------------------------------


def _dict_literal(
    name: str, entries: dict[str, tuple[str, str]], spreads: tuple[str, ...] = ()
) -> str:
    body = "".join(f'    "{k}": ("{m}", "{c}"),\n' for k, (m, c) in entries.items())
    body += "".join(f"    **{s},\n" for s in spreads)
    return f"{name} = {{\n{body}}}\n"


def _registry(archs: list[str], transformers_archs: list[str]) -> str:
    text = {a: (a.lower(), a) for a in archs}
    return (
        "import torch.nn as nn  # the real registry imports torch: inspect must not run this\n\n"
        + _dict_literal("_TEXT_GENERATION_MODELS", text)
        + _dict_literal("_EMBEDDING_MODELS", {"BertModel": ("bert", "BertEmbeddingModel")})
        + _dict_literal(
            "_TRANSFORMERS_SUPPORTED_MODELS", {a: ("transformers", a) for a in transformers_archs}
        )
        + _dict_literal("_PREVIOUSLY_SUPPORTED_MODELS", {})
        + _dict_literal(
            "_VLLM_MODELS",
            {},
            ("_TEXT_GENERATION_MODELS", "_EMBEDDING_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS"),
        )
    )


_ARG_UTILS = """
import argparse
from dataclasses import dataclass


@dataclass
class EngineArgs:
    model: str = "facebook/opt-125m"
    tensor_parallel_size: int = 1
    enforce_eager: bool = False
    max_model_len: int | None = None
    reasoning_parser: str = ""  # an EngineArgs field in real vLLM (arg_utils.py)

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--model", type=str)
        parser.add_argument("--tensor-parallel-size", "-tp", type=int)
        parser.add_argument("--kv-cache-dtype", type=str)
        return parser
"""

_CLI_ARGS = """
from dataclasses import dataclass


@dataclass
class FrontendArgs:
    host: str | None = None
    port: int = 8000
    enable_auto_tool_choice: bool = False
    tool_call_parser: str | None = None
"""

_ENVS = """
import os
from typing import Any, Callable

environment_variables: dict[str, Callable[[], Any]] = {
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_PORT": lambda: None,
    %s
}
"""


def vllm(
    version: str,
    *,
    requires: list[str],
    archs: list[str],
    tool_parsers: list[str],
    reasoning_parsers: list[str],
    layout: str = "lazy",
    transformers_archs: tuple[str, ...] = ("OlmoForCausalLM",),
    env_extra: tuple[str, ...] = (),
    broken_import: str | None = None,
    dist_name: str = "vllm",
) -> FakePackage:
    """A stand-in vLLM; ``layout='lazy'`` is >=0.20's, ``'decorators'`` is <=0.11's."""
    commit = "g" + hashlib.sha1(version.encode()).hexdigest()[:9]
    init = _IMPORT_LOG
    init += f"raise ImportError({broken_import!r})\n" if broken_import else ""
    init += "import torch, transformers\nfrom vllm._version import __version__\n"
    files = {
        "vllm/__init__.py": init,
        "vllm/_version.py": (
            f"__version__ = version = '{version}'\n"
            f"__version_tuple__ = version_tuple = {tuple(version.split('.')[:3])!r}\n"
            f"__commit_id__ = commit_id = '{commit}'\n"
        ),
        "vllm/envs.py": _ENVS % "".join(f'"{v}": lambda: None,\n    ' for v in env_extra),
        "vllm/engine/__init__.py": "",
        "vllm/engine/arg_utils.py": _ARG_UTILS,
        "vllm/entrypoints/__init__.py": "",
        "vllm/entrypoints/openai/__init__.py": "",
        "vllm/entrypoints/openai/cli_args.py": _CLI_ARGS,
        "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/models/__init__.py": "",
        "vllm/model_executor/models/registry.py": _registry(archs, list(transformers_archs)),
        "vllm/reasoning/__init__.py": "",
    }
    if layout == "lazy":
        tools = {p: (f"{p}_tool_parser", f"{p.title()}ToolParser") for p in tool_parsers}
        reasons = {
            p: (f"{p}_reasoning_parser", f"{p.title()}ReasoningParser") for p in reasoning_parsers
        }
        files["vllm/tool_parsers/__init__.py"] = _dict_literal("_TOOL_PARSERS_TO_REGISTER", tools)
        files["vllm/reasoning/__init__.py"] = _dict_literal(
            "_REASONING_PARSERS_TO_REGISTER", reasons
        )
    else:
        files["vllm/entrypoints/openai/tool_parsers/__init__.py"] = ""
        for p in tool_parsers:
            files[f"vllm/entrypoints/openai/tool_parsers/{p}_tool_parser.py"] = (
                "from .abstract_tool_parser import ToolParserManager\n\n"
                f'@ToolParserManager.register_module(["{p}"])\nclass P:\n    pass\n'
            )
        for p in reasoning_parsers:
            files[f"vllm/reasoning/{p}_reasoning_parser.py"] = (
                "from .abs_reasoning_parsers import ReasoningParserManager\n\n"
                f'@ReasoningParserManager.register_module("{p}")\nclass R:\n    pass\n'
            )
    return FakePackage(dist_name, version, files, requires)


def stable_packages() -> list[FakePackage]:
    old_tf = transformers("4.50.0", ["llama", "qwen2", "olmo"])
    new_tf = transformers("4.57.0", ["llama", "qwen2", "qwen3", "olmo", "qwen3_5_moe"])
    base = ["LlamaForCausalLM", "Qwen2ForCausalLM"]
    return [
        torch("2.5.0+cu124", "12.4"),
        torch("2.9.0+cu128", "12.8"),
        old_tf,
        new_tf,
        vllm(
            "0.10.0",
            requires=["torch==2.5.0", "transformers==4.50.0"],
            archs=base,
            tool_parsers=["hermes", "llama3_json"],
            reasoning_parsers=["deepseek_r1"],
            layout="decorators",
            env_extra=("VLLM_USE_V1",),
        ),
        vllm(
            "0.20.0",
            requires=["torch==2.9.0", "transformers==4.57.0"],
            archs=[*base, "Qwen3ForCausalLM"],
            tool_parsers=["hermes", "qwen3_coder"],
            reasoning_parsers=["deepseek_r1", "qwen3"],
        ),
        vllm(
            "0.21.0",
            requires=["torch==2.9.0", "transformers==4.57.0"],
            archs=base,
            tool_parsers=["hermes"],
            reasoning_parsers=[],
            broken_import="libcudart.so.13: cannot open shared object file: No such file or directory",
        ),
        vllm(
            "0.22.0",
            requires=["torch==99.0", "transformers==4.57.0"],
            archs=base,
            tool_parsers=["hermes"],
            reasoning_parsers=[],
        ),
    ]


NIGHTLY_VERSION = "0.21.1rc1.dev12+g1234abc"


def nightly_packages() -> list[FakePackage]:
    return [
        vllm(
            NIGHTLY_VERSION,
            requires=["torch==2.9.0", "transformers==4.57.0"],
            archs=["LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen3_5MoeForConditionalGeneration"],
            tool_parsers=["hermes", "qwen3_coder", "qwen3_xml"],
            reasoning_parsers=["qwen3"],
        ),
    ]
