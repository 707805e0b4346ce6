"""``hangar eval TARGET``: functional suites and performance against a running server."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import click

from hangar.cli.options import json_option
from hangar.errors import BadValue, UsageError

# A scheme such as ftp:// or file://: TARGET looks like a URL, but only http(s) is served.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HTTP = re.compile(r"^https?://", re.IGNORECASE)
# Server values in the text report (model id, check details) are cut to this many
# characters: rich wraps in time that grows with the square of the length.
_CELL_LIMIT = 500


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{option} takes comma-separated integers, got '{text}'") from exc
    if not values or min(values) < 1:
        raise UsageError(f"{option} values must be ≥ 1, got '{text}'")
    return values


def _floats(text: str | None, option: str) -> list[float]:
    if not text:
        return []
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise UsageError(f"{option} takes comma-separated numbers, got '{text}'") from exc
    if min(values, default=1.0) <= 0:
        raise UsageError(f"{option} values must be > 0, got '{text}'")
    return values


@click.command("eval")
@click.argument("target")
@click.option(
    "--suite",
    "suite_text",
    default="smoke,tools,reasoning,vision,structured,logs",
    show_default=True,
    help="Comma-separated suites (smoke,tools,reasoning,vision,structured,logs,perf) or 'all'.",
)
@json_option(help="Print the result as JSON (see docs/eval.md).")
@click.option(
    "--api-key",
    default=None,
    help="API key (else $HANGAR_API_KEY or $OPENAI_API_KEY). Never stored.",
)
@click.option("--model", default=None, help="Served model name (default: the first in /v1/models).")
@click.option(
    "--tool-call-parser",
    default=None,
    help="The server's tool-call parser, when TARGET does not say.",
)
@click.option(
    "--reasoning-parser",
    default=None,
    help="The server's reasoning parser, when TARGET does not say.",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Server log for the logs suite.",
)
@click.option("--timeout", default=60.0, show_default=True, help="Seconds per request.")
@click.option(
    "--concurrency", default="1,4,16,64", show_default=True, help="perf: concurrency sweep."
)
@click.option(
    "--request-rate", default=None, help="perf: Poisson request rates (req/s) instead of the sweep."
)
@click.option(
    "--burstiness",
    default=1.0,
    show_default=True,
    help="perf: gamma shape for --request-rate (1 = Poisson).",
)
@click.option(
    "--num-requests",
    type=int,
    default=None,
    help="perf: requests per point [default: max(16, 4 x concurrency)].",
)
@click.option("--input-len", default=128, show_default=True, help="perf: prompt tokens.")
@click.option(
    "--output-len", default=64, show_default=True, help="perf: generated tokens (ignore_eos)."
)
@click.option("--seed", default=0, show_default=True, help="perf: prompt and arrival seed.")
@click.option("--warmup", default=2, show_default=True, help="perf: unmeasured warm-up requests.")
@click.option("--goodput", default=None, help="perf: SLOs in ms, e.g. ttft:500,tpot:50,e2el:2000.")
@click.option(
    "--compare",
    "compare_ref",
    default=None,
    help="Compare with a stored eval (id, run id or 'latest').",
)
@click.option("--force", is_flag=True, help="With --compare: compare even when conditions differ.")
@click.option("--no-store", is_flag=True, help="Do not save the result in Hangar's store.")
def eval_command(
    target: str,
    suite_text: str,
    as_json: bool,
    api_key: str | None,
    model: str | None,
    tool_call_parser: str | None,
    reasoning_parser: str | None,
    log_path: Path | None,
    timeout: float,
    concurrency: str,
    request_rate: str | None,
    burstiness: float,
    num_requests: int | None,
    input_len: int,
    output_len: int,
    seed: int,
    warmup: int,
    goodput: str | None,
    compare_ref: str | None,
    force: bool,
    no_store: bool,
) -> int:
    """Evaluate a server: TARGET is a base URL, a run id from `hangar launch`, or a hangar.toml."""
    from hangar.evaluation import EvalOptions, PerfOptions, parse_suites, resolve_target
    from hangar.evaluation.metrics import parse_slos

    slos = _slos(goodput, parse_slos)
    _check_url(target)
    if num_requests is not None and num_requests < 1:
        raise UsageError("--num-requests must be ≥ 1")
    perf = PerfOptions(
        concurrency=_ints(concurrency, "--concurrency"),
        request_rate=_floats(request_rate, "--request-rate"),
        burstiness=burstiness,
        num_requests=num_requests,
        input_len=input_len,
        output_len=output_len,
        seed=seed,
        warmup=warmup,
        slo_ms=slos,
    )
    options = EvalOptions(suites=parse_suites(suite_text), perf=perf, timeout=timeout, model=model)
    resolved = resolve_target(
        target,
        api_key=api_key,
        tool_call_parser=tool_call_parser,
        reasoning_parser=reasoning_parser,
        log_path=log_path,
    )
    baseline = _baseline(compare_ref)
    result = _run_with_progress(resolved, options, show=not as_json)
    if not no_store:
        from hangar.evaluation.history import save_eval

        save_eval(result)
    comparison = _compare(baseline, result, force) if baseline is not None else None
    _render(result, comparison, as_json)
    return 1 if result.failed else 0


def _slos(text: str | None, parse: Any) -> dict[str, float]:
    """--goodput as KEY:MS pairs; any mistake is one line naming the option and its form."""
    form = "--goodput takes KEY:MS pairs with KEY one of ttft, tpot, e2el and MS > 0"
    try:
        slos: dict[str, float] = parse(text)
    except ValueError as exc:
        raise UsageError(f"{form}, e.g. ttft:500,tpot:50; got '{text}'") from exc
    if any(not v > 0 or v == float("inf") for v in slos.values()):
        raise UsageError(f"{form}, e.g. ttft:500,tpot:50; got '{text}'")
    return slos


def _check_url(target: str) -> None:
    """A TARGET with a scheme other than http(s) is a malformed URL: a usage error (2),
    not a run id that was not found (1)."""
    if _SCHEME.match(target) and not _HTTP.match(target):
        raise BadValue(
            f"not a server URL: '{target}' (only http:// and https:// are served)",
            field="TARGET",
            hint="hangar eval http://127.0.0.1:8000",
        )


def _baseline(ref: str | None) -> Any:
    if ref is None:
        return None
    from hangar.evaluation.history import load_eval

    return load_eval(ref)


def _compare(baseline: Any, result: Any, force: bool) -> Any:
    from hangar.evaluation import compare

    return compare(baseline, result, force=force)


def _run_with_progress(target: Any, options: Any, *, show: bool) -> Any:
    from hangar.evaluation import evaluate

    if not (show and sys.stderr.isatty()):
        return evaluate(target, options)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hangar.evaluation.progress import ProgressEvent

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        tasks: dict[str, Any] = {}

        def on_progress(event: ProgressEvent) -> None:
            if event.task not in tasks:
                tasks[event.task] = bar.add_task(event.task, total=event.total or None)
            bar.update(tasks[event.task], completed=event.completed, total=event.total or None)

        return evaluate(target, options, on_progress)


def _render(result: Any, comparison: Any, as_json: bool) -> None:
    if as_json:
        data = result.contract()
        if comparison is not None:
            data["comparison"] = comparison.model_dump(mode="json")
        click.echo(json.dumps(data, indent=2))
        return
    from rich.console import Console

    from hangar.cli.compare import render_comparison

    console = Console()
    render_result(console, result)
    if comparison is not None:
        render_comparison(console, comparison)


def render_result(console: Any, result: Any) -> None:
    from rich.table import Table

    from hangar.cli.terminal import escape

    # The model id, version and check details come from the server: escaped for the terminal.
    cut = _CELL_LIMIT
    console.print(
        f"[bold]{result.id}[/]  target {escape(result.target, limit=cut)}  "
        f"model {escape(result.snapshot.model or '?', limit=cut)}  "
        f"vLLM {escape(result.snapshot.engine_version or '?', limit=cut)}"
    )
    table = Table("suite", "status", "check", "detail", show_lines=False)
    for name, suite in result.suites.items():
        for i, check in enumerate(suite.checks):
            table.add_row(
                name if i == 0 else "",
                _styled(suite.status) if i == 0 else "",
                f"{_styled(check.status)} {escape(check.name, limit=cut)}",
                escape(check.detail, limit=cut),
            )
    console.print(table)
    perf = result.suites.get("perf")
    if perf and perf.points:
        console.print(_perf_table(perf.points))


def _perf_table(points: Any) -> Any:
    from rich.table import Table

    columns = [
        "load",
        "ok",
        "TTFT ms mean/p99",
        "TPOT ms mean/p99",
        "ITL ms mean/p99",
        "E2E ms mean/p99",
        "out tok/s",
        "total tok/s",
        "req/s",
    ]
    # goodput exists only when --goodput gave SLOs; then it is the figure asked for
    with_goodput = any(p.goodput_requests_per_s is not None for p in points)
    table = Table(*columns, *(["goodput req/s"] if with_goodput else []), title="perf")
    for p in points:
        goodput = p.goodput_requests_per_s
        table.add_row(
            p.label,
            f"{p.completed}/{p.requests}",
            f"{p.ttft_ms.mean:.1f}/{p.ttft_ms.p99:.1f}",
            f"{p.tpot_ms.mean:.2f}/{p.tpot_ms.p99:.2f}",
            f"{p.itl_ms.mean:.2f}/{p.itl_ms.p99:.2f}",
            f"{p.e2e_ms.mean:.1f}/{p.e2e_ms.p99:.1f}",
            f"{p.output_tokens_per_s:.1f}",
            f"{p.total_tokens_per_s:.1f}",
            f"{p.requests_per_s:.2f}",
            *([f"{goodput:.2f}" if goodput is not None else "-"] if with_goodput else []),
        )
    return table


def _styled(status: str) -> str:
    color = {"pass": "green", "fail": "red"}.get(status, "dim")
    return f"[{color}]{status}[/]"


eval = eval_command
