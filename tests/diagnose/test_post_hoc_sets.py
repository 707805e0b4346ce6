"""The post-hoc field sets (issue 11, part 6): real failures collected while (or after) a stop's
signatures were written by people who never saw them, each measured once by the lead (README
and docs/doctor.md) and in-sample since. Their form is checked (labels from the taxonomy, a log
per case, https sources, a confirmation, no thread quoted twice or by another fixture) and
their top-1 guarded against regression at the one measurement's count.

- field set 4: 14/26 on b33c837; two misses fixed afterwards.
- field set 5: 13/40 on cd5a9fc; one general miss fixed afterwards (Python 3.9's unqualified
  ``__init__()`` TypeError).
- field set 6: 48/94 on bd4cb54 (signatures frozen there, measured at 01:46 UTC on 2026-12-02).
- field set 7: 6/10 on f0c4111 (after field set 6's fixes; measured at 01:57 UTC, not tuned on).
- field set 11: 26/51 on 36070ca (the first commit with the last-resort `other`; tuned on in stop 22).
- field set 12: 57/97 on 777bbeb (measured at 17:36 UTC on 2026-12-02; the stop's start, 2c76e05,
  scores 58/97 on it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.field_sets import check_post_hoc_set, in_sample_top1

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# folder, the fewest cases it holds, its top-1 at the one measurement (the floor)
SETS = [
    ("logs_field4/heldout", 25, 14),
    ("logs_field5/heldout", 30, 13),
    ("logs_field6/heldout", 90, 48),
    ("logs_field7/heldout", 10, 6),
    ("logs_field8/heldout", 90, 38),
    ("logs_field9/heldout", 35, 15),
    ("logs_field10/heldout", 17, 7),
    ("logs_field11/heldout", 50, 26),
    ("logs_field12/heldout", 95, 57),
]


@pytest.mark.parametrize(("folder", "at_least", "floor"), SETS, ids=[s[0] for s in SETS])
def test_form_labels_logs_and_threads(folder: str, at_least: int, floor: int) -> None:
    check_post_hoc_set(FIXTURES, FIXTURES / folder, at_least=at_least)


@pytest.mark.parametrize(("folder", "at_least", "floor"), SETS, ids=[s[0] for s in SETS])
def test_in_sample_floor(folder: str, at_least: int, floor: int) -> None:
    label = f"{folder} (in-sample since its one measurement)"
    assert in_sample_top1(FIXTURES / folder, label) >= floor
