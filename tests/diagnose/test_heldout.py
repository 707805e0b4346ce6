"""Top-1 accuracy on tests/fixtures/logs_heldout: real logs collected after the first signatures.

Its baseline (signatures untouched): 46/57 = 80.7%. The fixes that followed were made while
looking at its misses, so this directory is in-sample now (55/57) despite its name; the
held-out figure of issue 11 comes from tests/fixtures/logs_field's `heldout` split
(test_field.py). The floor below is the honest baseline of this set.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

from hangar.diagnose import CAUSES, diagnose_paths

HELDOUT = Path(__file__).resolve().parents[1] / "fixtures" / "logs_heldout"
CORPUS_MANIFEST = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "manifest.yaml"
# Measured 55/57 = 96.5% (in-sample since the fixes made from its misses); the floor is that
# figure minus two cases (53/57 = 93.0%), the margin for one signature change moving a case
# each way. Its honest held-out baseline (46/57 = 80.7%) is history, not a floor.
MIN_ACCURACY = 0.92


def _cases(manifest: Path) -> list[dict[str, Any]]:
    data: dict[str, Any] = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = data["cases"]
    return cases


def test_heldout_manifest_is_disjoint_and_well_formed() -> None:
    cases = _cases(HELDOUT / "manifest.yaml")
    assert len(cases) >= 40
    in_corpus = {c["source"] for c in _cases(CORPUS_MANIFEST)}
    for case in cases:
        assert case["source"] not in in_corpus, case["file"]  # held out by source thread
        assert case["source"].startswith("https://github.com/"), case["file"]
        assert case["cause"] in CAUSES, case["file"]
        assert case["file"].startswith(case["cause"] + "/")
        assert (HELDOUT / case["file"]).is_file(), case["file"]
    # max_model_len_exceeds_config: no public excerpt outside the main corpus was found.
    assert len({c["cause"] for c in cases}) >= 21  # of the 22 causes it was collected for


def test_heldout_top1_accuracy_and_confusion() -> None:
    cases = _cases(HELDOUT / "manifest.yaml")
    confusion: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[str] = []
    for case in cases:
        # Any exception here fails the test: no fixture may crash the doctor.
        diagnosis = diagnose_paths([HELDOUT / case["file"]])
        got = diagnosis.causes[0].cause if diagnosis.causes else "(healthy)"
        confusion[case["cause"]][got] += 1
        if got != case["cause"]:
            misses.append(f"{case['file']} -> {got}")
    correct = sum(row[cause] for cause, row in confusion.items())
    accuracy = correct / len(cases)
    print(f"\nheld-out top-1 accuracy {correct}/{len(cases)} = {accuracy:.1%}")
    for cause in sorted(confusion):
        row = confusion[cause]
        wrong = {k: v for k, v in row.items() if k != cause}
        print(f"  {cause:30s} {row[cause]}/{sum(row.values())}  {wrong or ''}")
    print("\n".join(f"  miss: {m}" for m in misses))
    assert accuracy >= MIN_ACCURACY


def test_heldout_evidence_is_free_of_process_prefixes() -> None:
    # Ray actor forms `(pid=N)`, `(name, pid=N)`, Ray Serve `(App:Deployment pid=N, ip=…)`,
    # `(raylet, ip=…)`, docker-compose columns: evidence shows the message, not the prefix.
    prefix = re.compile(r"^\((?:[^()]*[ ,])?pid=\d+|^\(raylet|^[\w.-]+ +\| ")
    for case in _cases(HELDOUT / "manifest.yaml"):
        for finding in diagnose_paths([HELDOUT / case["file"]]).causes[:1]:
            for evidence in finding.evidence:
                assert not prefix.match(evidence.text), (case["file"], evidence.text)
