"""Field set 5 (issue 11, part 6): a post-hoc held-out set collected while the signatures of
stop 18 were written by writers who never saw it. Its form is checked (labels from the
taxonomy, a log per case, https sources, no thread quoted twice or by another fixture). Its
accuracy was measured once by the lead (13/40 on cd5a9fc, README and docs/doctor.md); one
general miss was fixed afterwards (Python 3.9's unqualified ``__init__()`` TypeError), so it is
in-sample and guarded here against regression (14/40 now, floor 13/40)."""

from __future__ import annotations

from pathlib import Path

from support.field_sets import check_post_hoc_set, in_sample_top1

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD5 = FIXTURES / "logs_field5" / "heldout"


def test_form_labels_logs_and_threads() -> None:
    check_post_hoc_set(FIXTURES, FIELD5, at_least=30)


def test_in_sample_floor() -> None:
    label = "field set 5 (in-sample since its one measurement)"
    assert in_sample_top1(FIELD5, label) >= 13
