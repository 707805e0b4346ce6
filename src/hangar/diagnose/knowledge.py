"""The signature knowledge base: packaged YAML files, validated once; the cause table.

Every regex gets a literal *anchor* (its longest run of plain characters, validated) and
*needles* (prefilter.needles_for: the anchor, or a more selective set of literals read from
the regex's parse tree). The scanner looks for needles with one multi-literal search over raw
bytes and runs the full regexes (compiled on first use) only on the few lines that hold one,
which is what keeps a 1 GB scan at ``grep -E -f`` speed. Anchors and needles are cached
between runs (``doctor-needles.json`` in Hangar's cache dir).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hangar.diagnose.model import CAUSES, UNKNOWN, CauseEntry, CauseFile, Signature, SignatureFile
from hangar.diagnose.prefilter import needles_for
from hangar.errors import DataError

MIN_ANCHOR = 6
# The cause table lives next to the signature files but is not one of them.
CAUSES_FILE = "causes.yaml"
# libyaml's safe loader when PyYAML was built with it: the pure-Python one took most of
# `hangar doctor`'s start-up (about 0.25 s of 0.3 s for the knowledge base).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_META = set(".^$*+?{}[]|()")
_QUANT = set("*?{")
_ESCAPED_CLASS = set("dDwWsSbBAZzn")


# regex text -> (anchor, needles): what validating a regex and reading its literals yields.
_Derived = dict[str, tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class Pattern:
    """A regex of one signature, with its role, literal anchor and the prefilter's needles;
    compiled on first use (most never meet a line that holds one of their needles)."""

    signature: str
    role: str  # "patterns" | "requires" | "requires_any" | "absent" | "context"
    index: int
    text: str
    anchor: str  # the longest literal run (validated: >= MIN_ANCHOR characters)
    # What the prefilter searches: every match contains one of them (prefilter.needles_for:
    # the anchor, or a more selective set of literals read from the regex's parse tree).
    needles: tuple[str, ...] = ()

    @cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.text)  # validated when its needles were derived (_derive)


@dataclass(frozen=True)
class KnowledgeBase:
    signatures: tuple[Signature, ...]
    patterns: tuple[Pattern, ...]
    files: tuple[str, ...]

    def by_id(self) -> dict[str, Signature]:
        return {sig.id: sig for sig in self.signatures}

    def anchors(self) -> tuple[str, ...]:
        """Every needle the prefilter searches for."""
        return tuple(sorted({n for p in self.patterns for n in p.needles}))


def literal_runs(regex: str) -> list[str]:
    """Runs of characters every match must contain literally (best effort, conservative)."""
    runs: list[str] = []
    current: list[str] = []
    depth = 0
    i = 0
    while i < len(regex):
        char, step, literal = _token(regex, i)
        quantified = i + step < len(regex) and regex[i + step] in _QUANT
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if literal is None or quantified or depth > 0 or char == ")":
            _flush(runs, current)
        else:
            current.append(literal)
        i += step
    _flush(runs, current)
    return runs


def _token(regex: str, i: int) -> tuple[str, int, str | None]:
    """(raw char, width, literal or None) of the regex token at ``i``."""
    char = regex[i]
    if char == "\\" and i + 1 < len(regex):
        nxt = regex[i + 1]
        return char, 2, None if nxt in _ESCAPED_CLASS or nxt.isdigit() else nxt
    if char == "[":
        end = regex.find("]", i + 2)
        return char, (end - i + 1) if end > 0 else 1, None
    return char, 1, None if char in _META else char


def _flush(runs: list[str], current: list[str]) -> None:
    if current:
        runs.append("".join(current))
        current.clear()


def anchor_for(regex: str) -> str | None:
    """The longest literal run, or None when the regex has a top-level alternation."""
    if _has_top_level_alternation(regex):
        return None
    runs = literal_runs(regex)
    return max(runs, key=len) if runs else None


def _has_top_level_alternation(regex: str) -> bool:
    depth, i = 0, 0
    while i < len(regex):
        char, step, _ = _token(regex, i)
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += step
    return False


def _compile(sig: Signature, role: str, index: int, source: str, known: _Derived) -> Pattern:
    text: str = getattr(sig, role)[index]
    derived = known.get(text)
    if derived is None:
        derived = known[text] = _derive(
            text, f"{source}: signature '{sig.id}', key '{role}[{index}]'"
        )
    return Pattern(sig.id, role, index, text, derived[0], derived[1])


def _derive(text: str, where: str) -> tuple[str, tuple[str, ...]]:
    """Validate one regex and derive its anchor and needles (what the cache keeps)."""
    try:
        re.compile(text)
    except re.error as exc:
        raise DataError(f"{where}: invalid regex: {exc}") from exc
    anchor = anchor_for(text)
    if anchor is None or len(anchor.strip()) < MIN_ANCHOR:
        raise DataError(
            f"{where}: regex needs a literal run of >= {MIN_ANCHOR} characters and no "
            f"top-level '|' (split it into several patterns): {text!r}"
        )
    return anchor, needles_for(text, anchor)


def _check_raised_in(sig: Signature, source: str) -> None:
    for key in ("raised_in", "called_from"):
        text = getattr(sig, key)
        if text is None:
            continue
        try:
            re.compile(text)
        except re.error as exc:
            raise DataError(
                f"{source}: signature '{sig.id}', key '{key}': invalid regex: {exc}"
            ) from exc


def _patterns_of(sig: Signature, source: str, known: _Derived) -> Iterable[Pattern]:
    for role in ("patterns", "requires", "requires_any", "absent", "context"):
        for index in range(len(getattr(sig, role))):
            yield _compile(sig, role, index, source, known)


def parse_file(name: str, text: str) -> SignatureFile:
    """Validate one data file; errors name the file, the signature id and the key."""
    raw: Any = yaml.load(text, Loader=_LOADER)
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        found = raw.get("schema_version") if isinstance(raw, dict) else None
        raise DataError(f"{name}: key 'schema_version' must be 1 (found {found!r})")
    try:
        return SignatureFile.model_validate(raw)
    except ValidationError as exc:
        raise DataError(f"{name}: {_describe(raw, exc)}") from exc


def _describe(raw: dict[str, Any], exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = list(err["loc"])
    sig_id = "?"
    if len(loc) >= 2 and loc[0] == "signatures" and isinstance(loc[1], int):
        entries = raw.get("signatures") or []
        if loc[1] < len(entries) and isinstance(entries[loc[1]], dict):
            sig_id = str(entries[loc[1]].get("id", f"#{loc[1]}"))
        key = ".".join(str(part) for part in loc[2:]) or "(entry)"
        return f"signature '{sig_id}', key '{key}': {err['msg']}"
    return f"key '{'.'.join(str(p) for p in loc)}': {err['msg']}"


def build(files: Iterable[tuple[str, str]]) -> KnowledgeBase:
    """Compile (name, yaml text) pairs into a knowledge base; ids must be unique."""
    signatures: list[Signature] = []
    patterns: list[Pattern] = []
    names: list[str] = []
    seen: dict[str, str] = {}
    known = _read_cache()
    before = len(known)
    for name, text in files:
        names.append(name)
        for sig in parse_file(name, text).signatures:
            if sig.id in seen:
                raise DataError(f"{name}: signature '{sig.id}' already defined in {seen[sig.id]}")
            seen[sig.id] = name
            _check_raised_in(sig, name)
            signatures.append(sig)
            patterns.extend(_patterns_of(sig, name, known))
    if len(known) > before:
        _write_cache(known)
    return KnowledgeBase(tuple(signatures), tuple(patterns), tuple(names))


# The derived anchors and needles are kept in Hangar's cache dir between runs: deriving them
# parses every regex twice in pure Python (0.75 s of `hangar doctor`'s start with 1,300
# regexes, twice that for a knowledge base twice as large), while reading them back is a JSON
# load. Entries are per regex text; the file is valid only for the code that derived them
# (its key hashes this module, the prefilter and the Python version) and is only ever a
# cache: unreadable, foreign or unwritable, it is ignored.
CACHE_FILE = "doctor-needles.json"
CACHE_LIMIT = 20000


def _cache_key() -> str:
    from hangar.diagnose import prefilter

    digest = hashlib.sha256(sys.version.encode())
    for module in (__file__, prefilter.__file__):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()


def _cache_path() -> Path:
    from hangar.paths import cache_dir

    return cache_dir() / CACHE_FILE


def _read_cache() -> _Derived:
    try:
        raw = json.loads(_cache_path().read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("key") != _cache_key():
            return {}
        return {
            str(text): (str(anchor), tuple(str(n) for n in needles))
            for text, (anchor, needles) in raw["entries"].items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _write_cache(known: _Derived) -> None:
    entries = dict(list(known.items())[-CACHE_LIMIT:])
    doc = {"key": _cache_key(), "entries": {t: [a, list(n)] for t, (a, n) in entries.items()}}
    from hangar.paths import atomic_write_text

    try:
        atomic_write_text(_cache_path(), json.dumps(doc), mode=0o600)
    except OSError:
        pass  # a read-only cache dir only costs the next run the derivation


def _packaged_files() -> list[tuple[str, str]]:
    root = resources.files("hangar.diagnose") / "data"
    entries = sorted(
        (e for e in root.iterdir() if e.name.endswith(".yaml") and e.name != CAUSES_FILE),
        key=lambda e: e.name,
    )
    return [(f"hangar/diagnose/data/{e.name}", e.read_text(encoding="utf-8")) for e in entries]


@lru_cache(maxsize=1)
def load() -> KnowledgeBase:
    """The packaged knowledge base (validated on first use, then cached)."""
    return build(_packaged_files())


def load_dir(directory: Path) -> KnowledgeBase:
    """A knowledge base from another directory of YAML files (tests, site extensions)."""
    files = sorted(p for p in directory.glob("*.yaml") if p.name != CAUSES_FILE)
    return build((str(path), path.read_text(encoding="utf-8")) for path in files)


def parse_causes(name: str, text: str) -> dict[str, CauseEntry]:
    """The cause table, checked: one entry per cause id of the taxonomy plus 'unknown'."""
    raw: Any = yaml.load(text, Loader=_LOADER)
    if not isinstance(raw, dict) or raw.get("schema_version") != 1:
        found = raw.get("schema_version") if isinstance(raw, dict) else None
        raise DataError(f"{name}: key 'schema_version' must be 1 (found {found!r})")
    try:
        table = CauseFile.model_validate(raw)
    except ValidationError as exc:
        raise DataError(f"{name}: {_describe_cause(raw, exc)}") from exc
    entries: dict[str, CauseEntry] = {}
    for entry in table.causes:
        if entry.id in entries:
            raise DataError(f"{name}: cause '{entry.id}' is listed twice (keep one entry)")
        entries[entry.id] = entry
    _check_coverage(name, entries)
    return entries


def _describe_cause(raw: dict[str, Any], exc: ValidationError) -> str:
    loc = list(exc.errors()[0]["loc"])
    msg = exc.errors()[0]["msg"]
    if len(loc) >= 2 and loc[0] == "causes" and isinstance(loc[1], int):
        entries = raw.get("causes") or []
        entry = entries[loc[1]] if loc[1] < len(entries) else None
        cause_id = entry.get("id", f"#{loc[1]}") if isinstance(entry, dict) else f"#{loc[1]}"
        key = ".".join(str(part) for part in loc[2:]) or "(entry)"
        return f"cause '{cause_id}', key '{key}': {msg}"
    return f"key '{'.'.join(str(p) for p in loc)}': {msg}"


def _check_coverage(name: str, entries: dict[str, CauseEntry]) -> None:
    wanted = {*CAUSES, UNKNOWN}
    missing = sorted(wanted - set(entries))
    if missing:
        raise DataError(
            f"{name}: no entry for cause(s) {', '.join(missing)} "
            "(add one per CauseId of hangar/diagnose/model.py)"
        )
    extra = sorted(set(entries) - wanted)
    if extra:
        raise DataError(
            f"{name}: cause(s) {', '.join(extra)} are not in the taxonomy "
            "(add them to CauseId in hangar/diagnose/model.py, or remove the entries)"
        )


@lru_cache(maxsize=1)
def causes() -> dict[str, CauseEntry]:
    """The packaged cause table, taxonomy order ('unknown' last)."""
    root = resources.files("hangar.diagnose") / "data" / CAUSES_FILE
    table = parse_causes(f"hangar/diagnose/data/{CAUSES_FILE}", root.read_text(encoding="utf-8"))
    return {cause: table[cause] for cause in (*CAUSES, UNKNOWN)}
