"""The cause table (data/causes.yaml): one entry per cause id, validated on load, and the
source of the taxonomy the --llm fallback is given."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from hangar.diagnose import CAUSES, diagnose_text, llm
from hangar.diagnose.knowledge import CAUSES_FILE, causes, load, parse_causes
from hangar.diagnose.model import UNKNOWN
from hangar.errors import DataError

# A fix names something to change: a --flag, an ENV_VAR, or a command the user runs.
_ACTIONABLE = re.compile(
    r"--[a-z]|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b(?:ulimit|hangar|pip|sbatch|systemctl|docker|df|ray|vllm|nvidia-smi)\b"
)


def _packaged_text() -> str:
    return (resources.files("hangar.diagnose") / "data" / CAUSES_FILE).read_text(encoding="utf-8")


def test_every_cause_id_has_one_entry_and_every_entry_is_a_cause() -> None:
    table = causes()
    assert list(table) == [*CAUSES, UNKNOWN]


@pytest.mark.parametrize("cause", [*CAUSES, UNKNOWN])
def test_each_entry_has_a_title_a_definition_and_an_actionable_fix(cause: str) -> None:
    entry = causes()[cause]
    assert entry.id == cause
    assert entry.title and entry.definition.endswith(".")
    assert _ACTIONABLE.search(entry.fix), entry.fix


def test_the_table_is_not_read_as_a_signature_file() -> None:
    assert all(not name.endswith(CAUSES_FILE) for name in load().files)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda t: t.replace("  - id: fabric_manager\n", "  - id: fabric_manager_x\n"),
            "no entry for cause(s) fabric_manager",
        ),
        (
            lambda t: (
                t
                + "  - id: cosmic_rays\n    title: t\n    definition: "
                + "d" * 30
                + ".\n    fix: ulimit -v unlimited\n"
            ),
            "cosmic_rays are not in the taxonomy",
        ),
        (
            lambda t: (
                t
                + "  - id: other\n    title: t\n    definition: "
                + "d" * 30
                + ".\n    fix: ulimit -v unlimited\n"
            ),
            "cause 'other' is listed twice",
        ),
        (
            lambda t: t.replace("schema_version: 1", "schema_version: 2"),
            "key 'schema_version' must be 1",
        ),
        (
            lambda t: t.replace("    title: Slurm/munge authentication failed\n", ""),
            "cause 'slurm_auth', key 'title'",
        ),
    ],
)
def test_a_bad_table_names_the_file_the_entry_and_the_key(edit: object, expected: str) -> None:
    with pytest.raises(DataError) as info:
        parse_causes("x/causes.yaml", edit(_packaged_text()))  # type: ignore[operator]
    assert str(info.value).startswith("x/causes.yaml: ")
    assert expected in str(info.value)


def test_llm_taxonomy_titles_come_from_the_table() -> None:
    taxonomy = llm.taxonomy()
    assert list(taxonomy) == [*CAUSES, UNKNOWN]
    assert taxonomy["other"] == causes()["other"].title  # was a signature's "gated repo" title
    assert "gated" not in taxonomy["other"].lower()
    # titles, not the definitions: 34 paragraphs overflow a small local model's context
    assert f"- ulimit_mmap: {causes()['ulimit_mmap'].title}" in llm._system_prompt()
    assert causes()["ulimit_mmap"].definition not in llm._system_prompt()


def test_a_diagnosed_cause_carries_the_table_title() -> None:
    top = diagnose_text("OSError: [Errno 98] Address already in use\n").top
    assert top is not None and top.cause == "port_in_use"
    assert top.cause_title == causes()["port_in_use"].title
