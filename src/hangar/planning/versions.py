"""The one vLLM version type, and version-range matching for versioned data.

A version string is parsed once, at the boundary where it enters Hangar (``--vllm-version``,
an engine's inspected or recorded version, a deployment), into a ``VllmVersion``; code below
that boundary compares the value and never re-parses the text.

Parsing follows PEP 440 through ``packaging`` (the parser pip and vLLM's own wheels use).
Nightly strings such as ``0.33.1rc1.dev42+g1234abc`` compare as their release part
(0.33.1): a nightly carries the rules of the release it leads to. Only major.minor.patch
count (vLLM 0.10.1.1 compares as 0.10.1): no rule or workaround tells patch releases apart
below that.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

DEFAULT_VLLM_VERSION = "0.33.0"  # the newest release whose source the rules were read from


class VllmVersion(NamedTuple):
    """major.minor.patch of a vLLM release; a tuple, so ``version >= (0, 20, 0)`` holds."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> VllmVersion:
        """ValueError (naming the text) when ``text`` is not a PEP 440 version."""
        return _parse(text.strip())

    @classmethod
    def parse_or_none(cls, text: str | None) -> VllmVersion | None:
        """For versions read from outside that may be absent or garbled: None then."""
        if not text:
            return None
        try:
            return _parse(text.strip())
        except ValueError:
            return None

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def in_range(self, spec: str) -> bool:
        """Hangar's data ranges: ``spec`` like '>=0.20,<0.34' or '*'."""
        return in_range(self, spec)

    def satisfies(self, specifier: str) -> bool:
        """A PEP 440 specifier set (workaround conditions, e.g. '>=0.20,!=0.21.*')."""
        return _specifier(specifier).contains(self.pep440, prereleases=True)

    @property
    def pep440(self) -> Version:
        return _pep440(self)


@functools.lru_cache(maxsize=512)
def _parse(text: str) -> VllmVersion:
    try:
        release = Version(text).release
    except InvalidVersion as exc:
        raise ValueError(f"not a vLLM version: {text!r} (expected e.g. 0.33.0)") from exc
    major, minor, patch = (release + (0, 0))[:3]
    return VllmVersion(major, minor, patch)


@functools.lru_cache(maxsize=512)
def _pep440(version: VllmVersion) -> Version:
    return Version(str(version))


@functools.lru_cache(maxsize=256)
def _specifier(text: str) -> SpecifierSet:
    return SpecifierSet(text)


@functools.lru_cache(maxsize=4096)
def in_range(version: tuple[int, int, int], spec: str) -> bool:
    """``spec`` like '>=0.20,<0.34' or '*'; every clause must hold."""
    for clause in (c.strip() for c in spec.split(",")):
        if not clause or clause == "*":
            continue
        op, bound = re.match(r"(>=|<=|==|>|<)?\s*(.+)", clause).groups()  # type: ignore[union-attr]
        other = VllmVersion.parse(bound)
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
