"""What every section of the deployment file shares: the frozen base model, value checks
(one printable line, no NUL, host addresses, a pattern with its fix) and secret names."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Strict,
    field_validator,
)

# Names whose values must never reach a log, a snapshot or a repr.
_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|CREDENTIAL|_KEY$)", re.IGNORECASE
)
MASK = "***"

# vllm serve flags whose value is a credential. On a command line it is visible to every
# user (ps, /proc/<pid>/cmdline), vLLM logs it among its "non-default args"
# (vllm/entrypoints/utils.py log_non_default_args) and Hangar records argv in launch.json
# and the runs store, so the deployment must pass it through [env] instead.
SECRET_FLAGS = {"--api-key": "VLLM_API_KEY", "--hf-token": "HF_TOKEN"}
_SECRET_FLAG_WORDS = frozenset(
    {"key", "token", "secret", "password", "passwd", "apikey", "credential", "credentials"}
)

# TOML takes true for an integer in lax pydantic (port = true becomes port 1).
StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def is_secret_flag(arg: str, following: str | None = None) -> bool:
    """``--api-key K``, ``--hf-token=T`` and the like, given the argument after ``arg``.

    Judged by the flag's last word, so ``--tokenizer`` and ``--return-tokens-as-token-ids``
    are not secrets; a bare switch (``--hf-token`` alone: use the cached login) carries none.
    """
    if not arg.startswith("--"):
        return False
    name, has_value = arg[2:].split("=", 1)[0], "=" in arg
    if not has_value and (following is None or following.startswith("--")):
        return False
    return name.lower().split("-")[-1] in _SECRET_FLAG_WORDS


# RFC 1123 hostname: dot-separated labels of letters, digits and inner hyphens, 1-63
# characters each, 253 in all (an optional trailing dot is the root).
_HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def host_address(value: str) -> str:
    """A bind/publish address: an IPv4 or IPv6 address or an RFC 1123 hostname.

    It reaches ``--host``, ``-p HOST:PORT:PORT`` and the job's URL, so anything else
    (spaces, option text, shell characters) is refused here, once for every target.
    """
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    name = value.removesuffix(".")
    if 0 < len(name) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in name.split(".")):
        return value
    raise ValueError(
        f"{value!r} is not an IP address or hostname (e.g. 127.0.0.1, 0.0.0.0, ::1 "
        "or node01.example.org)"
    )


HostAddress = Annotated[str, AfterValidator(host_address)]


def no_control_chars(value: str) -> str:
    """Names end up in argv, status lines and HTTP requests: one printable line only."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError("must be one line without control characters (newline, tab, NUL)")
    return value


def _no_nul(value: Any) -> Any:
    # The kernel cannot pass a NUL inside an argv entry or an environment value.
    if isinstance(value, str) and "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


class Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _strings_without_nul(cls, value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(_no_nul(v) for v in value)
        if isinstance(value, dict):
            for k, v in value.items():
                _no_nul(k)
                _no_nul(v)
            return value
        return _no_nul(value)


def one_of(pattern: re.Pattern[str], what: str, value: str | None) -> str | None:
    if value is not None and not pattern.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid {what}")
    return value
