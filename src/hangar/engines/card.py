"""What a model card asks of vLLM, read from its own text: serve flags, parsers,
version requirements, nightly or source installs, and named images.

Only the card's commands count: ``vllm serve`` / ``python -m vllm.entrypoints...`` /
``docker run ... vllm/vllm-openai:TAG ...`` lines (``\\`` continuations joined) for flags,
and ``pip``/``uv pip`` install lines for versions. Prose ("works with vllm>=0.8") is
matched only in install lines, so a changelog mention does not become a requirement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_IMAGE = re.compile(r"\b(vllm/vllm-openai:[A-Za-z0-9][A-Za-z0-9._-]*)")
# Vendor images named on a docker/podman/apptainer line: registry/path:tag with a vllm part.
_VENDOR_IMAGE = re.compile(
    r"(?:docker|podman|apptainer|singularity)\b[^\n]*?\s(?:docker://)?"
    r"((?:[a-z0-9.-]+(?::\d+)?/)?[a-z0-9._/-]*vllm[a-z0-9._/-]*:[A-Za-z0-9][A-Za-z0-9._-]*)"
)
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?:[=\s]+([^\s\\'\"]+))?")
_VERSION_REQ = re.compile(r"\bvllm(?:\[[^\]]*\])?\s*(>=|==|~=|>)\s*v?(\d+\.\d+(?:\.\d+)?[\w.+-]*)")
_TRANSFORMERS_REQ = re.compile(r"\btransformers\s*(>=|==|~=|>)\s*v?(\d+\.\d+(?:\.\d+)?)")
_NIGHTLY = re.compile(r"wheels\.vllm\.ai/nightly|--pre\b|vllm-nightly|\bnightly\b", re.IGNORECASE)
_GIT_VLLM = re.compile(r"git\+https?://github\.com/vllm-project/vllm")
_GIT_TRANSFORMERS = re.compile(r"git\+https?://github\.com/huggingface/transformers")
# Flags of the docker/podman CLI on a `docker run` line, not vLLM's.
_RUNTIME_FLAGS = frozenset(
    {
        "--gpus",
        "--runtime",
        "--ipc",
        "--shm-size",
        "--network",
        "--env",
        "--volume",
        "--name",
        "--rm",
        "--device",
        "--privileged",
        "--entrypoint",
        "--publish",
        "--user",
        "--init",
        "--platform",
        "--ulimit",
        "--security-opt",
        "--cap-add",
        "--workdir",
        "--env-file",
        "--mount",
        "--pull",
        "--detach",
        "--interactive",
        "--tty",
        "--nv",
        "--bind",
        "--cleanenv",
    }
)
PARSER_FLAGS = {"tool_call_parser": "--tool-call-parser", "reasoning_parser": "--reasoning-parser"}


@dataclass(frozen=True)
class CardAsks:
    flags: tuple[str, ...] = ()
    parsers: dict[str, str] = field(default_factory=dict)
    chat_template: str | None = None
    vllm_min: str | None = None  # from vllm>=X / vllm==X
    vllm_exact: bool = False
    transformers_min: str | None = None
    nightly: bool = False
    vllm_from_source: bool = False
    transformers_from_source: bool = False
    images: tuple[str, ...] = ()


def _joined(card: str) -> list[str]:
    return re.sub(r"\\\s*\n\s*", " ", card).splitlines()


def serve_lines(card: str) -> list[str]:
    return [
        ln
        for ln in _joined(card)
        if "vllm serve" in ln or "vllm/vllm-openai" in ln or "vllm.entrypoints" in ln
    ]


def install_lines(card: str) -> list[str]:
    return [
        ln
        for ln in _joined(card)
        if re.search(r"\bpip3?\s+install\b|\buv\s+pip\b|\buv\s+add\b", ln)
    ]


def _vllm_part(line: str) -> str:
    """The part of a line vLLM parses: after ``vllm serve``/the module/the image."""
    for marker in ("vllm serve", "vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main"):
        if marker in line:
            return line.split(marker, 1)[1]
    match = _IMAGE.search(line) or _VENDOR_IMAGE.search(line)
    return line[match.end() :] if match else line


def card_flags(card: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for line in serve_lines(card):
        for flag, _ in _FLAG.findall(_vllm_part(line)):
            if flag not in _RUNTIME_FLAGS:
                found[flag] = None
    return tuple(found)


def card_parsers(card: str) -> dict[str, str]:
    """Parsers named in the card's serve commands (first mention wins)."""
    found: dict[str, str] = {}
    for line in serve_lines(card):
        for key, flag in PARSER_FLAGS.items():
            match = re.search(re.escape(flag) + r"[=\s]+([A-Za-z0-9_.-]+)", line)
            if match and key not in found:
                found[key] = match.group(1)
    return found


def card_images(card: str) -> tuple[str, ...]:
    named = _IMAGE.findall(card) + _VENDOR_IMAGE.findall(card)
    return tuple(dict.fromkeys(named))


def _chat_template(card: str) -> str | None:
    for line in serve_lines(card):
        match = re.search(r"--chat-template[=\s]+([^\s\\]+)", line)
        if match:
            return match.group(1)
    return None


def _requirement(pattern: re.Pattern[str], lines: list[str]) -> tuple[str | None, bool]:
    for line in lines:
        match = pattern.search(line)
        if match:
            return match.group(2), match.group(1) == "=="
    return None, False


def read_card(card: str) -> CardAsks:
    installs = install_lines(card)
    vllm_min, exact = _requirement(_VERSION_REQ, installs)
    tf_min, _ = _requirement(_TRANSFORMERS_REQ, installs)
    install_text = "\n".join(installs)
    return CardAsks(
        flags=card_flags(card),
        parsers=card_parsers(card),
        chat_template=_chat_template(card),
        vllm_min=vllm_min,
        vllm_exact=exact,
        transformers_min=tf_min,
        nightly=any(_NIGHTLY.search(ln) and "vllm" in ln for ln in installs),
        vllm_from_source=bool(_GIT_VLLM.search(install_text)),
        transformers_from_source=bool(_GIT_TRANSFORMERS.search(install_text)),
        images=card_images(card),
    )
