"""The knowledge base is data, validated on load, with errors that name file, entry and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.diagnose import CAUSES
from hangar.diagnose.knowledge import anchor_for, build, literal_runs, load, load_dir
from hangar.errors import DataError

GOOD = """
schema_version: 1
signatures:
  - id: demo
    cause: port_in_use
    title: demo
    patterns: ['Address already in use']
    confidence: 0.9
    explanation: x
    fix: [y]
"""


def test_packaged_base_covers_every_cause() -> None:
    kb = load()
    assert len(kb.signatures) >= 60
    assert {sig.cause for sig in kb.signatures} == set(CAUSES)
    assert all(sig.fix and sig.explanation for sig in kb.signatures)


def test_anchor_is_longest_literal_run() -> None:
    assert anchor_for(r"Total number of attention heads \(\d+\) must be") == (
        "Total number of attention heads ("
    )
    assert anchor_for(r"models?'s max seq len") == "'s max seq len"
    assert anchor_for(r"foo|bar") is None
    assert literal_runs(r"a(?:bc)de[xy]fg") == ["a", "de", "fg"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace("schema_version: 1", "schema_version: 2"), "key 'schema_version' must be 1"),
        (GOOD.replace("port_in_use", "bogus"), "signature 'demo', key 'cause'"),
        (
            GOOD.replace("'Address already in use'", "'(unclosed'"),
            "signature 'demo', key 'patterns[0]'",
        ),
        (GOOD.replace("'Address already in use'", "'abcd|efgh'"), "top-level '|'"),
        (GOOD.replace("confidence: 0.9", "confidence: 3"), "key 'confidence'"),
    ],
)
def test_bad_data_names_file_signature_and_key(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(DataError) as info:
        load_dir(tmp_path)
    assert "bad.yaml" in str(info.value)
    assert expected in str(info.value)


def test_duplicate_ids_are_rejected() -> None:
    with pytest.raises(DataError, match="already defined"):
        build([("a.yaml", GOOD), ("b.yaml", GOOD)])
