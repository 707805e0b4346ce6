"""What the dashboard shows is scrubbed of secrets first: env values of secret-looking
names, credentials inside URLs, and tokens that appear in log lines."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hangar.deploy.schema import MASK, is_secret_flag, is_secret_name

_URL_USERINFO = re.compile(r"(?<=://)[^/@\s:]+(?::[^/@\s]*)?@")
_TOKENS = (
    re.compile(r"\bhf_[A-Za-z0-9]{16,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+")
# KEY=value / "api_key": "value" / --api-key value in a log line
_ASSIGNED = re.compile(
    r"(?i)\b([\w-]*(?:api[_-]?key|token|secret|passw(?:or)?d|credential)[\w-]*)"
    r"(['\"]?\s*[:=]\s*['\"]?)(?!\*\*\*)([^\s'\",)}]+)"
)
_TOKEN_WORDS = re.compile(r"(?i)(tokens?_|_tokens?$|tokenizer|num_|max_)")


def text(value: str) -> str:
    """A log line or message with credentials replaced by ``***``."""
    for pattern in _TOKENS:
        value = pattern.sub(MASK, value)
    value = _BEARER.sub(lambda m: m.group(1) + MASK, value)
    value = _URL_USERINFO.sub(MASK + "@", value)
    return _ASSIGNED.sub(_assigned, value)


def _assigned(match: re.Match[str]) -> str:
    name = match.group(1)
    if _TOKEN_WORDS.search(name):  # max_tokens=16, tokenizer=..., prompt_tokens: 5
        return match.group(0)
    return f"{name}{match.group(2)}{MASK}"


def env(values: Mapping[str, str]) -> dict[str, str]:
    return {k: MASK if is_secret_name(k) else text(v) for k, v in values.items()}


def argv(args: list[str]) -> list[str]:
    """A command line with the value after (or in) a credential flag masked."""
    out: list[str] = []
    mask_next = False
    for i, arg in enumerate(args):
        if mask_next:
            out.append(MASK)
            mask_next = False
        elif is_secret_flag(arg, args[i + 1] if i + 1 < len(args) else None):
            mask_next = "=" not in arg
            out.append(arg if mask_next else arg.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(text(arg))
    return out


def tree(value: Any) -> Any:
    """A JSON-like value with secret-named keys masked and every string scrubbed."""
    if isinstance(value, Mapping):
        return {k: MASK if is_secret_name(str(k)) else tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tree(v) for v in value]
    if isinstance(value, str):
        return text(value)
    return value
