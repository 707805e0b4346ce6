"""vLLM versions as comparable tuples, and version-range matching for versioned data.

Nightly strings such as ``0.33.1rc1.dev42+g1234abc`` compare as their release part
(0.33.1): a nightly carries the rules of the release it leads to.
"""

from __future__ import annotations

import functools
import re

DEFAULT_VLLM_VERSION = "0.33.0"  # the newest release whose source the rules were read from
_NUM = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


@functools.lru_cache(maxsize=512)
def parse_version(text: str) -> tuple[int, int, int]:
    match = _NUM.match(text.strip())
    if not match:
        raise ValueError(f"not a vLLM version: {text!r} (expected e.g. 0.33.0)")
    major, minor, patch = (int(g) if g else 0 for g in match.groups())
    return (major, minor, patch)


@functools.lru_cache(maxsize=4096)
def in_range(version: tuple[int, int, int], spec: str) -> bool:
    """``spec`` like '>=0.20,<0.34' or '*'; every clause must hold."""
    for clause in (c.strip() for c in spec.split(",")):
        if not clause or clause == "*":
            continue
        op, bound = re.match(r"(>=|<=|==|>|<)?\s*(.+)", clause).groups()  # type: ignore[union-attr]
        other = parse_version(bound)
        ok = {
            ">=": version >= other,
            "<=": version <= other,
            ">": version > other,
            "<": version < other,
            "==": version == other,
            None: version == other,
        }[op]
        if not ok:
            return False
    return True
