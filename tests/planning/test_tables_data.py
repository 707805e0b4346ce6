"""planning/data/tables.yaml: versioned vLLM tables with a validating loader."""

from __future__ import annotations

import pytest

from hangar.errors import DataError
from hangar.planning.tables import parse_tables, table


def test_tables_change_with_the_version() -> None:
    assert "plamo2" in table("fp16_refused", (0, 20, 0))
    assert "plamo2" not in table("fp16_refused", (0, 33, 0))
    assert table("fp16_refused", (0, 8, 5)) == ()
    assert "nvfp4" in table("kv_cache_dtypes", (0, 33, 0))
    assert table("kv_cache_dtypes", (0, 8, 5)) == ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"schema_version": 2}, "schema_version"),
        ({"schema_version": 1, "tables": {}}, "missing"),
        ({"schema_version": 1, "tables": {"fp16_refused": {"source": "x", "default": [1]},
                                          "kv_cache_dtypes": {}, "no_pp_archs": {}}}, "fp16_refused"),
    ],
)
def test_bad_tables_name_the_entry(data: dict[str, object], needle: str) -> None:
    with pytest.raises(DataError, match="tables.yaml") as err:
        parse_tables(data)
    assert needle in str(err.value)
