"""The dashboard's data, gathered through the other stages' APIs (no SQL here).

Each function returns plain JSON-able values, the same for a page and for ``/api/``; every
string that could carry a secret goes through ``redact`` first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from hangar.errors import HangarError
from hangar.store import runs as store

LOG_TAIL_LINES = 60


@contextmanager
def _runs_db() -> Iterator[Any]:
    from hangar.launch.runs import open_store

    conn = open_store()
    try:
        yield conn
    finally:
        conn.close()


# ---- runs ---------------------------------------------------------------------------


def _where(run: store.RunRecord) -> str:
    """Where the run lives, in the target's own terms."""
    h = run.handle
    if run.target == "slurm":
        nodes = h.get("nodes") or h.get("nodelist") or "-"
        nodes = ",".join(nodes) if isinstance(nodes, list) else str(nodes)
        return f"job {h.get('job_id', '?')} on {nodes}"
    if run.target == "container":
        return f"{h.get('runtime', 'container')} container {h.get('container', '?')} ({h.get('image', '?')})"
    return f"pid {h.get('pid', '?')} (group {h.get('pgid', '?')})" if h else "-"


def run_summary(run: store.RunRecord, probed: str = "", fix: str = "") -> dict[str, Any]:
    """``status`` is the record's; ``state`` what `hangar status` probed (orphaned,
    unresponsive) or the status again, with its ``fix``."""
    from hangar.web import redact

    d = run.deployment
    return {
        "id": run.id,
        "label": run.label,
        "target": run.target,
        "where": _where(run),
        "status": run.status,
        "state": probed or run.status,
        "fix": fix,
        "live": run.live,
        "engine": run.engine,
        "vllm_version": run.vllm_version,
        "model": d.get("model") if isinstance(d.get("model"), str) else d.get("model", {}),
        "base_url": redact.text(run.base_url),
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "error": redact.text(run.error) if run.error else None,
        "workarounds": json.loads(run.workarounds_json or "[]"),
    }


def runs(limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """The newest ``limit`` runs (all when None) and how many are recorded; live runs are
    asked of their target first (``hangar status``)."""
    from hangar.launch import runs as launch_runs

    with _runs_db() as conn:
        states = launch_runs.refresh(conn)
    rows = [run_summary(s.run, s.state, s.fix) for s in states[:limit]]
    return rows, len(states)


def stage_timings(run: store.RunRecord, events: list[store.EventRow]) -> list[dict[str, Any]]:
    """Each launch event with its time since the launch began and since the previous event
    (render and record come before the run's own start time)."""
    origin = min([run.started_at, *(e.at for e in events)])
    rows, previous = [], origin
    for e in events:
        rows.append(
            {
                "stage": e.stage,
                "at": e.at,
                "since_start_s": round(e.at - origin, 3),
                "took_s": round(e.at - previous, 3),
                "detail": e.detail,
            }
        )
        previous = e.at
    return rows


def run_detail(ref: str) -> dict[str, Any]:
    from hangar.launch import recorded
    from hangar.web import redact

    with _runs_db() as conn:
        run = store.get_run(conn, ref)
        events = store.list_events(conn, run.id)
    logs = recorded.run_logs(run)
    detail = run_summary(run)
    detail["handle"] = redact.tree(run.handle)
    detail["argv"] = redact.argv(json.loads(run.argv_json or "[]"))
    detail["timings"] = run.timings
    detail["stages"] = [{**row, "detail": redact.text(row["detail"])} for row in
                        stage_timings(run, events)]
    detail["logs"] = [_log_tail(p) for p in logs]
    detail["diagnosis"] = _diagnosis(logs) if run.status in ("failed", "exited") else None
    return detail


def _log_tail(path: Path) -> dict[str, Any]:
    from hangar.web import redact

    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 64 * 1024))
            lines = handle.read().decode("utf-8", "replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError as exc:
        return {"path": str(path), "lines": [], "error": exc.strerror or str(exc)}
    return {"path": str(path), "lines": [redact.text(line) for line in lines], "error": None}


def _diagnosis(logs: list[Path]) -> dict[str, Any] | None:
    """The doctor's top cause for a run that ended badly (None when the log looks fine)."""
    from hangar.diagnose import diagnose_paths
    from hangar.web import redact

    existing = [p for p in logs if p.is_file()]
    if not existing:
        return None
    top = diagnose_paths(existing).top
    if top is None:
        return None
    return redact.tree(top.model_dump(mode="json"))  # type: ignore[no-any-return]


def stop_run(ref: str) -> dict[str, Any]:
    """Stop exactly what the run's target started (``hangar stop``)."""
    from hangar.launch.recorded import stop

    record, stopped = stop(ref)
    return {"run": run_summary(record), "signalled": stopped.signalled,
            "forced": stopped.forced, "detail": stopped.detail}


# ---- evals --------------------------------------------------------------------------


def evals(limit: int = 200) -> list[dict[str, Any]]:
    from hangar.store.evals import list_evals

    return [dict(row) for row in list_evals(limit)]


def eval_result(ref: str) -> Any:
    from hangar.evaluation.history import load_eval

    return load_eval(ref)


@lru_cache(maxsize=64)
def _charts_of(ids: tuple[str, ...]) -> tuple[str, ...]:
    """Stored results never change, so their charts are drawn once per process."""
    from hangar.evaluation.report import perf_charts

    return tuple(perf_charts([eval_result(i) for i in ids]))


def eval_charts(results: list[Any]) -> list[str]:
    return list(_charts_of(tuple(r.id for r in results)))


def eval_json(ref: str) -> dict[str, Any]:
    from hangar.web import redact

    result = eval_result(ref)
    return redact.tree(result.model_dump(mode="json"))  # type: ignore[no-any-return]


def comparison(a_ref: str, b_ref: str, force: bool) -> dict[str, Any]:
    """``hangar compare``: the deltas, or the refusal with the differing conditions."""
    from hangar.evaluation.compare import ConditionsDiffer, compare

    a, b = eval_result(a_ref), eval_result(b_ref)
    try:
        comp = compare(a, b, force=force)
    except ConditionsDiffer as refused:
        return {"a": a.id, "b": b.id, "refused": refused.one_line(),
                "conditions_differ": [d.model_dump(mode="json") for d in refused.diffs]}
    return {"a": a.id, "b": b.id, "refused": None, **comp.model_dump(mode="json")}


# ---- engines and workarounds ---------------------------------------------------------


def _kind(engine: Any) -> str:
    if engine.kind == "image":
        return "image"
    if engine.kind == "python":
        return "external"
    return "nightly" if engine.source is not None and engine.source.prerelease else "venv"


@lru_cache(maxsize=1)
def _host() -> Any:
    from hangar.engines import driver

    return driver.host_driver()


def _inspection_of(reg: Any, name: str, engine: Any) -> dict[str, Any]:
    """A project file's interpreter is never run unasked (docs/engines.md): the dashboard
    started inside a cloned repository must not execute what that repository names."""
    from hangar.engines import registry

    if reg.is_project(name) and registry.runs_interpreter(engine):
        where = engine.defined_in or registry.PROJECT_FILE
        return {"error": f"defined by {where}: not run unless named (hangar engines inspect {name})"}
    return _inspection(engine)


def _inspection(engine: Any) -> dict[str, Any]:
    from hangar.engines.inventory import inspect_engine

    if engine.kind == "image":
        return {"error": "a container image: inspect an installed engine of the same version"}
    try:
        found = inspect_engine(engine, host=_host())
    except HangarError as exc:
        return {"error": exc.one_line()}
    return {
        "error": None, "vllm_version": found.vllm_version, "torch_version": found.torch_version,
        "cuda": found.torch_cuda, "driver": found.driver.message,
        "tool_parsers": list(found.tool_parsers), "reasoning_parsers": list(found.reasoning_parsers),
        "architectures": len(found.architectures),
    }


def engines() -> list[dict[str, Any]]:
    from hangar.engines import registry
    from hangar.engines.deployments import users_of
    from hangar.web import redact

    reg = registry.load()
    return [
        {
            "name": name, "kind": _kind(e), "python": e.python, "image": redact.text(e.image or ""),
            "vllm_version": e.vllm_version, "notes": e.notes,
            "source": redact.tree(e.source.model_dump(mode="json")) if e.source else None,
            "rollback_to": e.previous.model_dump(mode="json") if e.previous else None,
            "inspection": _inspection_of(reg, name, e), "deployments": users_of(name),
            "workarounds": _engine_workarounds(e.vllm_version),
            "history": [redact.tree(h.model_dump(mode="json")) for h in reg.history_for(name)],
        }
        for name, e in sorted(reg.all().items())
    ]


def _in_range(spec: str | None, version: str | None) -> bool | None:
    from hangar.planning.versions import VllmVersion

    if spec is None:
        return True
    parsed = VllmVersion.parse_or_none(version)
    return None if parsed is None else parsed.satisfies(spec)


def _engine_workarounds(vllm_version: str | None) -> list[dict[str, Any]]:
    """The workarounds whose vLLM range holds this engine (GPU and model decide the rest)."""
    return [w for w in workarounds_for(vllm_version) if w["vllm_in_range"] is not False]


def workarounds_for(vllm_version: str | None) -> list[dict[str, Any]]:
    from hangar.workarounds.registry import load_registry, removal_due

    return [
        {
            "id": w.id, "title": w.title, "reason": w.reason, "upstream": list(w.upstream),
            "added": w.added.isoformat(), "env": dict(w.env), "args": list(w.args),
            "when": w.when.model_dump(mode="json", exclude_none=True),
            "remove_when": w.remove_when.model_dump(mode="json"),
            "vllm_in_range": _in_range(w.when.vllm, vllm_version),
            "removal_due": removal_due(w, vllm_version) if vllm_version else False,
        }
        for w in load_registry()
    ]


def workarounds() -> dict[str, Any]:
    """The registry, and per engine which entries its vLLM version is in range of."""
    from hangar.engines import registry

    engines_by_version = {n: e.vllm_version for n, e in sorted(registry.load().all().items())}
    return {
        "workarounds": workarounds_for(None),
        "engines": {
            name: [w["id"] for w in _engine_workarounds(version)]
            for name, version in engines_by_version.items()
        },
        "gpu_conditions": {
            w.id: w.when.model_dump(mode="json", exclude_none=True, exclude={"vllm"})
            for w in _registry()
        },
    }


def applies_on(engine: str, gpu: str, gpus: int) -> dict[str, Any]:
    """The workarounds that apply to ENGINE on GPUS x GPU (the model's own conditions, and
    host ones such as nvcc or WSL, stay unknown and so do not match)."""
    from hangar.engines import registry
    from hangar.hardware import lookup
    from hangar.workarounds.registry import Facts, applicable

    version = registry.load().get(engine).vllm_version
    spec = lookup(gpu)
    facts = Facts(gpu=spec, gpus=gpus, tp=gpus, vllm_version=version,
                  cuda=spec.vendor == "nvidia")
    return {"engine": engine, "vllm_version": version, "gpu": spec.id, "gpus": gpus,
            "applies": [w.id for w in applicable(facts)]}


def gpu_ids() -> list[str]:
    from hangar.hardware import list_gpus

    return [g.id for g in list_gpus()]


def _registry() -> Any:
    from hangar.workarounds.registry import load_registry

    return load_registry()


# ---- plan ---------------------------------------------------------------------------


def plan(params: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``hangar plan --json`` for the form's values, and the per-GPU memory split."""
    from hangar.planning.api import make_plan
    from hangar.planning.report import plan_json

    model = params.pop("model")
    result = make_plan(model, **params)
    return plan_json(result), [_memory_split(result, layout) for layout in result.layouts]


def _memory_split(result: Any, layout: Any) -> dict[str, Any]:
    total = result.hardware.gpu.memory_bytes
    m = layout.memory
    used = m.weight_bytes_per_gpu + m.overhead_bytes + m.kv_cache_bytes_per_gpu
    return {
        "layout": f"TP{layout.tp} PP{layout.pp} DP{layout.dp}" + (" EP" if layout.ep else ""),
        "valid": layout.valid,
        "weights": m.weight_bytes_per_gpu, "activations": m.overhead_bytes,
        "kv_cache": m.kv_cache_bytes_per_gpu, "free": max(0, total - used), "total": total,
    }


def now() -> float:
    return time.time()
