"""The ASGI app: HTML pages and the same data under ``/api/`` (OpenAPI at /openapi.json)."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import jinja2
from fastapi import Depends, FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from hangar.errors import HangarError, InputError
from hangar.launch.errors import RunNotLive
from hangar.web import data
from hangar.web.security import (
    CSRF_FIELD,
    SECURITY_HEADERS,
    UiSettings,
    csrf_refusal,
    gate,
)

NAV = (("engines", "Engines"), ("runs", "Runs"), ("eval", "Eval"), ("plan", "Plan"),
       ("workarounds", "Workarounds"))
RUNS_PER_PAGE = 100
PLAN_INT_FIELDS = ("gpus", "nodes", "tp", "pp", "dp", "max_model_len", "max_num_seqs",
                   "max_num_batched_tokens")


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("hangar.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["ts"] = _ts
    env.filters["gib"] = lambda b: f"{(b or 0) / 2**30:.1f}"
    return Jinja2Templates(env=env)


def _ts(value: float | None) -> str:
    if value is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value)) + "Z"


def _json(value: Any) -> Response:
    """Plain JSON without FastAPI's per-item re-validation (1,000 runs: 150 ms saved)."""
    return Response(json.dumps(value, separators=(",", ":")), media_type="application/json")


def _status_code(exc: HangarError) -> int:
    if isinstance(exc, RunNotLive):
        return 409
    return 404 if isinstance(exc, InputError) and exc.one_line().startswith("no ") else 400


def create_app(settings: UiSettings | None = None) -> FastAPI:
    """The dashboard app; ``settings`` carries the bind address, token and CSRF secret."""
    settings = settings or UiSettings()
    app = FastAPI(title="Hangar", version="1", docs_url=None, redoc_url=None)
    app.state.settings = settings
    templates = _templates()
    app.mount("/static", StaticFiles(packages=[("hangar.web", "static")]), name="static")
    _guard(app, settings)
    _errors(app, templates, settings)
    _api_routes(app, settings)
    _page_routes(app, templates, settings)
    return app


def _guard(app: FastAPI, settings: UiSettings) -> None:
    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = gate(request, settings) or await call_next(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def _errors(app: FastAPI, templates: Jinja2Templates, settings: UiSettings) -> None:
    @app.exception_handler(HangarError)
    async def hangar_error(request: Request, exc: HangarError) -> Response:
        status = _status_code(exc)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.one_line()}, status_code=status)
        return _page(templates, settings, request, "error.html", "",
                     {"message": exc.one_line()}, status)


def _page(
    templates: Jinja2Templates, settings: UiSettings, request: Request, name: str,
    active: str, context: dict[str, Any], status: int = 200,
) -> HTMLResponse:
    full = {"nav": NAV, "active": active, "csrf": settings.csrf, "csrf_field": CSRF_FIELD,
            **context}
    return templates.TemplateResponse(request, name, full, status_code=status)


async def _csrf(request: Request) -> None:
    refusal = await csrf_refusal(request, request.app.state.settings)
    if refusal is not None:
        raise _Refused(refusal)


class _Refused(Exception):
    def __init__(self, response: Response) -> None:
        self.response = response


CsrfChecked = Annotated[None, Depends(_csrf)]


def _api_routes(app: FastAPI, settings: UiSettings) -> None:
    @app.exception_handler(_Refused)
    async def refused(request: Request, exc: _Refused) -> Response:
        return exc.response

    @app.get("/api/engines", tags=["engines"])
    def api_engines() -> list[dict[str, Any]]:
        """Registered engines: kind, versions, parsers, users, workarounds, history."""
        return data.engines()

    @app.get("/api/runs", tags=["runs"], response_model=list[dict[str, Any]])
    def api_runs(limit: int | None = None) -> Response:
        """The recorded runs, newest first (live runs asked of their target)."""
        return _json(data.runs(limit)[0])

    @app.get("/api/runs/{run_id}", tags=["runs"])
    def api_run(run_id: str) -> dict[str, Any]:
        """One run: handle, stage timings from the launch events, log tails, diagnosis."""
        return data.run_detail(run_id)

    @app.post("/api/runs/{run_id}/stop", tags=["runs"])
    def api_stop(run_id: str, _: CsrfChecked) -> dict[str, Any]:
        """Stop the run (its process group or Slurm job only). Needs X-CSRF-Token."""
        return data.stop_run(run_id)

    @app.get("/api/evals", tags=["eval"], response_model=list[dict[str, Any]])
    def api_evals(limit: int = 200) -> Response:
        """Stored eval results, newest first."""
        return _json(data.evals(limit))

    @app.get("/api/evals/{eval_id}", tags=["eval"])
    def api_eval(eval_id: str) -> dict[str, Any]:
        """One stored eval result, as `hangar eval --json` wrote it."""
        return data.eval_json(eval_id)

    @app.get("/api/compare", tags=["eval"])
    def api_compare(a: str, b: str, force: bool = False) -> dict[str, Any]:
        """`hangar compare A B`: deltas, or the refusal when conditions differ."""
        return data.comparison(a, b, force)

    @app.get("/api/plan", tags=["plan"])
    def api_plan(request: Request, model: str) -> dict[str, Any]:
        """The JSON of `hangar plan --json` (query parameters as the CLI flags)."""
        return data.plan(_plan_params(dict(request.query_params)))[0]

    @app.get("/api/workarounds", tags=["workarounds"])
    def api_workarounds() -> dict[str, Any]:
        """The workaround registry and which entries are in range on each engine."""
        return data.workarounds()

    @app.get("/api/workarounds/applies", tags=["workarounds"])
    def api_applies(engine: str, gpu: str, gpus: int = 1) -> dict[str, Any]:
        """The workarounds that apply to ENGINE on GPUS x GPU (TP = GPUS)."""
        return data.applies_on(engine, gpu, gpus)


def _plan_params(query: dict[str, str]) -> dict[str, Any]:
    """Form/query values -> make_plan keywords (empty fields mean 'not given')."""
    from hangar.errors import UsageError

    known = {"model", "gpu", "vllm_version", "kv_cache_dtype", "quantization", "dtype",
             "gpu_memory_utilization", "enforce_eager", *PLAN_INT_FIELDS}
    params: dict[str, Any] = {}
    for key, value in query.items():
        if key not in known or not value.strip():
            continue
        try:
            params[key] = _plan_value(key, value.strip())
        except ValueError:
            raise UsageError(f"plan field {key}: {value!r} is not a number",
                             hint=f"give {key} as a whole number") from None
    if "model" not in params:
        raise UsageError("plan needs a model", hint="fill in the model field")
    return params


def _plan_value(key: str, value: str) -> Any:
    if key in PLAN_INT_FIELDS:
        return int(value)
    if key == "gpu_memory_utilization":
        return float(value)
    if key == "enforce_eager":
        return value.lower() in ("1", "true", "on", "yes")
    return value


def _page_routes(app: FastAPI, templates: Jinja2Templates, settings: UiSettings) -> None:
    def page(request: Request, name: str, active: str, **context: Any) -> HTMLResponse:
        return _page(templates, settings, request, name, active, context)

    @app.get("/", include_in_schema=False)
    def index() -> RedirectResponse:
        return RedirectResponse("/runs", status_code=303)

    @app.get("/engines", include_in_schema=False)
    def engines_page(request: Request) -> HTMLResponse:
        return page(request, "engines.html", "engines", engines=data.engines())

    @app.get("/runs", include_in_schema=False)
    def runs_page(
        request: Request, show_all: Annotated[bool, Query(alias="all")] = False
    ) -> HTMLResponse:
        rows, total = data.runs(None if show_all else RUNS_PER_PAGE)
        return page(request, "runs.html", "runs", runs=rows, total=total,
                    live=any(r["live"] for r in rows))

    @app.get("/runs/{run_id}", include_in_schema=False)
    def run_page(request: Request, run_id: str) -> HTMLResponse:
        return page(request, "run.html", "runs", run=data.run_detail(run_id))

    @app.post("/runs/{run_id}/stop", include_in_schema=False)
    def stop_page(run_id: str, _: CsrfChecked, csrf_token: Annotated[str, Form()] = "") -> Response:
        data.stop_run(run_id)
        return RedirectResponse(f"/runs/{run_id}", status_code=303)

    @app.get("/eval", include_in_schema=False)
    def evals_page(request: Request) -> HTMLResponse:
        return page(request, "evals.html", "eval", evals=data.evals())

    @app.get("/eval/compare", include_in_schema=False)
    def compare_page(request: Request, a: str, b: str, force: bool = False) -> HTMLResponse:
        return _compare_page(page, request, a, b, force)

    @app.get("/eval/{eval_id}", include_in_schema=False)
    def eval_page(request: Request, eval_id: str) -> HTMLResponse:
        result = data.eval_result(eval_id)
        return page(request, "eval.html", "eval", result=data.eval_json(result.id),
                    charts=data.eval_charts([result]))

    @app.get("/plan", include_in_schema=False)
    def plan_page(request: Request, model: Annotated[str, Query()] = "") -> HTMLResponse:
        return _plan_page(page, request, model)

    @app.get("/workarounds", include_in_schema=False)
    def workarounds_page(
        request: Request, engine: str = "", gpu: str = "", gpus: int = 1
    ) -> HTMLResponse:
        check = data.applies_on(engine, gpu, gpus) if engine and gpu else None
        return page(request, "workarounds.html", "workarounds", check=check,
                    gpu_ids=data.gpu_ids(), **data.workarounds())


def _compare_page(
    page: Callable[..., HTMLResponse], request: Request, a: str, b: str, force: bool
) -> HTMLResponse:
    from hangar.evaluation.compare import compare
    from hangar.evaluation.report import comparison_html

    result = data.comparison(a, b, force)
    ra, rb = data.eval_result(a), data.eval_result(b)
    table = None if result["refused"] else comparison_html(compare(ra, rb, force=True))
    return page(request, "compare.html", "eval", comparison=result, table=table,
                charts=data.eval_charts([ra, rb]), a=a, b=b)


def _plan_page(page: Callable[..., HTMLResponse], request: Request, model: str) -> HTMLResponse:
    from hangar.evaluation.charts import stacked_bars

    form = dict(request.query_params)
    if not model:
        return page(request, "plan.html", "plan", form=form, plan=None, bars=None, chart=None)
    plan_json, split = data.plan(_plan_params(form))
    chart = stacked_bars(
        "Memory per GPU", "GiB",
        [(s["layout"], [(k, s[k] / 2**30) for k in ("weights", "activations", "kv_cache", "free")])
         for s in split[:12]],
    )
    return page(request, "plan.html", "plan", form=form, plan=plan_json, bars=split, chart=chart)
