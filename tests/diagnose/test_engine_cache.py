"""The derived-needle cache (knowledge.py): a second load reads what the first derived, the
file is only ever a cache (foreign or broken, it is ignored), and bad data still fails at
load whatever the cache holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hangar.diagnose import knowledge
from hangar.diagnose.knowledge import CACHE_FILE, build, load_dir
from hangar.errors import DataError

GOOD = """
schema_version: 1
signatures:
  - id: demo
    cause: port_in_use
    title: demo
    patterns: ['NCCL INFO (?:Bootstrap|NET/Socket) : Using lo:']
    confidence: 0.9
    explanation: x
    fix: [y]
"""


def _cache(hangar_home: Path) -> Path:
    return hangar_home / "cache" / CACHE_FILE


def test_a_second_build_reads_the_derived_needles_back(
    hangar_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build([("a.yaml", GOOD)])
    doc = json.loads(_cache(hangar_home).read_text())
    assert _cache(hangar_home).stat().st_mode & 0o777 == 0o600
    assert doc["entries"]["NCCL INFO (?:Bootstrap|NET/Socket) : Using lo:"][1] == [
        "NCCL INFO Bootstrap : Using lo:",
        "NCCL INFO NET/Socket : Using lo:",
    ]

    def no_derivation(text: str, where: str) -> tuple[str, tuple[str, ...]]:
        raise AssertionError(f"derived again: {where}")

    monkeypatch.setattr(knowledge, "_derive", no_derivation)
    second = build([("a.yaml", GOOD)])
    assert second.patterns == first.patterns
    assert second.patterns[0].regex.search("x NCCL INFO Bootstrap : Using lo:0")


@pytest.mark.parametrize("content", ["{not json", '{"key": "other", "entries": {}}', "[1, 2]"])
def test_a_broken_or_foreign_cache_is_ignored(hangar_home: Path, content: str) -> None:
    _cache(hangar_home).parent.mkdir(parents=True)
    _cache(hangar_home).write_text(content)
    kb = build([("a.yaml", GOOD)])
    assert kb.patterns[0].needles[0] == "NCCL INFO Bootstrap : Using lo:"
    assert json.loads(_cache(hangar_home).read_text())["key"] != "other"  # rewritten


def test_bad_data_fails_at_load_with_a_warm_cache(tmp_path: Path, hangar_home: Path) -> None:
    build([("a.yaml", GOOD)])
    (tmp_path / "bad.yaml").write_text(GOOD.replace("(?:Bootstrap|", "(?:Boot[strap|"))
    with pytest.raises(DataError, match="bad.yaml: signature 'demo', key 'patterns\\[0\\]'"):
        load_dir(tmp_path)


def test_an_unwritable_cache_dir_only_costs_the_derivation(hangar_home: Path) -> None:
    hangar_home.mkdir(parents=True, exist_ok=True)
    (hangar_home / "cache").write_text("a file where the cache dir should be")
    assert build([("a.yaml", GOOD)]).patterns
