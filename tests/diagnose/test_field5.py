"""Field set 5 (issue 11, part 6): a post-hoc held-out set collected while the signatures of
stop 18 were written by writers who never saw it. Only its form is checked here (labels from
the taxonomy, a log per case, https sources, no thread quoted twice or by another fixture): its
accuracy is measured once, by `HANGAR_BENCH_HELDOUT=1 python bench/doctor.py --accuracy-only`,
and no test may read it as a floor (that would be tuning on it)."""

from __future__ import annotations

from pathlib import Path

from support.field_sets import check_post_hoc_set

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIELD5 = FIXTURES / "logs_field5" / "heldout"


def test_form_labels_logs_and_threads() -> None:
    check_post_hoc_set(FIXTURES, FIELD5, at_least=30)
