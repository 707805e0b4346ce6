"""The one TOML writer (deploy/io.py toml_text, tomlkit): whatever the file held before,
the text it writes reads back as exactly the data it was given."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hangar.deploy.io import toml_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KEYS = st.text(min_size=1, max_size=8)  # bare and quoted keys alike ("a.b", " ", '"')
SCALARS = (
    st.text(max_size=12)  # control characters and quotes must be escaped
    | st.integers(-(2**63), 2**63 - 1)
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.lists(st.text(max_size=6), max_size=3)
)


def _tables(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    values = SCALARS if depth == 0 else SCALARS | _tables(depth - 1) | st.lists(
        _tables(depth - 1), min_size=1, max_size=2
    )
    return st.dictionaries(KEYS, values, max_size=4)


DOCUMENTS = _tables(2)


@settings(max_examples=100, deadline=None)
@given(before=DOCUMENTS, after=DOCUMENTS)
def test_text_reads_back_as_the_data_over_any_previous_file(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    fresh = toml_text(before)
    assert tomllib.loads(fresh) == before
    assert tomllib.loads(toml_text(after, fresh)) == after


def test_unchanged_values_keep_the_users_spelling() -> None:
    previous = "# top\nport = 0x1F90  # hex\nname = 'lit'\n\n[t]\nx = 1\n"
    assert toml_text({"port": 8080, "name": "lit", "t": {"x": 2}}, previous) == (
        "# top\nport = 0x1F90  # hex\nname = 'lit'\n\n[t]\nx = 2\n"
    )
