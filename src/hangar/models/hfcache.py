"""Where huggingface_hub (and so vLLM) keeps downloaded models: the one resolver in Hangar.

The order is huggingface_hub's own, read from huggingface_hub 2.4.0 ``constants.py``
(lines 159-184)::

    default_home = ~/.cache
    HF_HOME = expandvars(expanduser(getenv("HF_HOME", join(getenv("XDG_CACHE_HOME", default_home),
                                                            "huggingface"))))
    HUGGINGFACE_HUB_CACHE = getenv("HUGGINGFACE_HUB_CACHE", join(HF_HOME, "hub"))  # legacy
    HF_HUB_CACHE = expandvars(expanduser(getenv("HF_HUB_CACHE", HUGGINGFACE_HUB_CACHE)))

``getenv`` counts a variable that is set, even to "", as set; Hangar does the same, so the
directory it checks is the one the engine will read. The environment is a parameter: the
host's for a local launch, the deployment's ``[env]`` over it for preflight, the host's for
a container's bind mount.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

# Every variable the resolution reads, for callers that pass a filtered environment.
HUB_CACHE_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
_VAR = re.compile(r"\$(\w+|\{[^}]*\})", re.ASCII)  # posixpath.expandvars' pattern


def hub_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """huggingface_hub's ``constants.HF_HUB_CACHE`` for ``env`` (default: this process's)."""
    env = os.environ if env is None else env
    legacy = env.get("HUGGINGFACE_HUB_CACHE", os.path.join(hf_home(env), "hub"))
    return _expand(env.get("HF_HUB_CACHE", legacy), env)


def hf_home(env: Mapping[str, str] | None = None) -> Path:
    """``constants.HF_HOME``: HF_HOME, else XDG_CACHE_HOME/huggingface, else ~/.cache/..."""
    env = os.environ if env is None else env
    default = os.path.join(env.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface")
    return _expand(env.get("HF_HOME", default), env)


def repo_cache_dir(repo_id: str, env: Mapping[str, str] | None = None) -> Path:
    """The folder of one model repo in the cache (``models--org--name``)."""
    return hub_cache_dir(env) / ("models--" + repo_id.replace("/", "--"))


def _expand(text: str, env: Mapping[str, str]) -> Path:
    """expandvars(expanduser(text)) as huggingface_hub does, with ``env`` for the variables
    (os.path.expanduser leaves an unknown ``~user`` literal, as the shell does)."""
    return Path(_VAR.sub(lambda m: _variable(m, env), os.path.expanduser(text)))


def _variable(match: re.Match[str], env: Mapping[str, str]) -> str:
    name = match.group(1).strip("{}")
    return env.get(name, match.group(0))
