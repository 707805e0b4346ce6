"""Eval results saved to and read from the store (the store keeps JSON; the model is ours)."""

from __future__ import annotations

from pathlib import Path

from hangar.evaluation.results import EvalResult
from hangar.store import evals as rows


def save_eval(result: EvalResult, db_path: Path | None = None) -> None:
    rows.save_eval(
        rows.EvalRow(
            id=result.id,
            created_at=result.created_at,
            target=result.target,
            run_id=result.snapshot.run_id,
            model=result.snapshot.model,
            status="fail" if result.failed else "pass",
            result_json=result.model_dump_json(),
        ),
        db_path,
    )


def load_eval(ref: str, db_path: Path | None = None) -> EvalResult:
    """An eval by id, unique id prefix, launch run id (its latest eval) or ``latest``."""
    return EvalResult.model_validate_json(rows.load_eval_json(ref, db_path))
