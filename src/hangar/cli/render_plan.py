"""Rich rendering of a Plan for people.

Every value from the model, the flags or a rule message goes through ``escape``
(hangar.cli.terminal): a model directory or a flag value holding ``[/]`` or ``[red]`` is
text, not rich markup (it crashed the render, or silently dropped from the printed
launch command), and an escape sequence in a config.json is shown, not executed.
"""

from __future__ import annotations

import shlex

from rich.console import Console
from rich.table import Table

from hangar.cli.terminal import escape
from hangar.planning.plan import LayoutPlan, Plan, recommendation_reason

GIB = 2**30
_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _gib(value: int) -> str:
    return f"{value / GIB:.1f}"


def _layout_name(lay: LayoutPlan) -> str:
    return f"TP{lay.tp} PP{lay.pp} DP{lay.dp}" + (" EP" if lay.ep else "")


def _verdict(lay: LayoutPlan, recommended: LayoutPlan | None) -> str:
    if not lay.valid:
        first = next(f for f in lay.findings if f.severity == "error")
        return f"[red]✗ {escape(first.id)}[/red]"
    star = " ★" if lay is recommended else ""
    return f"[green]✓{star}[/green]"


def _header(console: Console, p: Plan) -> None:
    m, hw, s = p.model, p.hardware, p.settings
    size = "exact" if m.checkpoint_bytes else "computed"
    console.print(
        f"[bold]{escape(m.id)}[/bold]  {escape(m.architecture)}  {m.num_params / 1e9:.1f}B params, "
        f"weights {_gib(m.weight_bytes)} GiB ({size})  {escape('[' + ', '.join(m.features) + ']')}"
    )
    console.print(
        f"{hw.total_gpus}× {hw.gpu.id} ({_gib(hw.gpu.memory_bytes)} GiB, SM "
        f"{hw.gpu.compute_capability[0]}.{hw.gpu.compute_capability[1]}) on {hw.nodes} node(s)   "
        f"vLLM {escape(str(p.request.vllm_version))} rules   max_model_len {s.max_model_len}   "
        f"gpu_memory_utilization {s.gpu_memory_utilization}"
    )


def _table(p: Plan, layouts: list[LayoutPlan]) -> Table:
    table = Table(show_lines=False)
    # KV tokens and concurrency are per engine (one DP replica: each sizes its own cache);
    # the caption gives the deployment total
    for col, justify in (("layout", "left"), ("verdict", "left"), ("weights /GPU GiB", "right"),
                         ("KV /GPU GiB", "right"), ("KV tokens /engine", "right"),
                         ("max conc. /engine", "right")):
        table.add_column(col, justify=justify, no_wrap=col in ("layout", "verdict"))  # type: ignore[arg-type]
    table.caption = "per engine = per DP replica; the deployment holds DP times as much"
    for lay in layouts:
        mem = lay.memory
        table.add_row(_layout_name(lay), _verdict(lay, p.recommended), _gib(mem.weight_bytes_per_gpu),
                      _gib(mem.kv_cache_bytes_per_gpu), f"{mem.kv_cache_tokens:,}", f"{mem.max_concurrency:.2f}")
    return table


def _findings(console: Console, lay: LayoutPlan, title: str) -> None:
    if not lay.findings:
        return
    console.print(f"\n[bold]{title}[/bold]")
    for f in lay.findings:
        console.print(
            f"  [{_STYLE[f.severity]}]{f.severity:7}[/] {escape(f.id)} ({escape(f.phase)})",
            highlight=False,
        )
        who = "vLLM:  " if f.origin == "vllm" else "Hangar:"
        console.print(f"          {who} {escape(f.message)}", highlight=False, soft_wrap=True)
        console.print(f"          fix:    {escape(f.fix)}", highlight=False, soft_wrap=True)


def _launch(out: Console, lay: LayoutPlan, whose: str = "") -> None:
    nodes = lay.multi_node
    if nodes is None:
        out.print(f"\n[bold]Launch{whose}:[/bold] " + escape(shlex.join(lay.serve_args)),
                  highlight=False, soft_wrap=True)
        return
    out.print(f"\n[bold]Launch{whose} on {max(c.node_rank for c in nodes.ray) + 1} nodes[/bold] "
              f"(recommended: {nodes.recommended}; {escape(nodes.why)})", highlight=False)
    for mode, commands in (("mp", nodes.mp), ("ray", nodes.ray)):
        if not commands:
            continue
        out.print(f"  [bold]{mode}[/bold]" + (" ★" if mode == nodes.recommended else ""))
        for c in commands:
            out.print(f"    node {c.node_rank} ({escape(c.role)}): "
                      + escape(shlex.join(c.argv)), highlight=False, soft_wrap=True)


def render_plan(p: Plan, show_all: bool = False, console: Console | None = None) -> None:
    out = console or Console()
    _header(out, p)
    shown = list(p.layouts) if show_all else list(p.layouts[:12])
    out.print(_table(p, shown))
    if len(p.layouts) > len(shown):
        out.print(f"  … {len(p.layouts) - len(shown)} more layouts (--all)")
    target = p.verdict_layout
    if p.request.layout_requested and p.layouts:
        _findings(out, p.layouts[0], f"Requested layout {_layout_name(p.layouts[0])}")
    if p.recommended is not None and (p.recommended is not target or not p.request.layout_requested):
        label = "Recommended" if not p.request.layout_requested else "Recommended instead"
        _findings(out, p.recommended, f"{label} {_layout_name(p.recommended)}")
    if p.recommended is None and not p.request.layout_requested and p.layouts:
        _findings(out, p.layouts[0], f"Closest rejected layout {_layout_name(p.layouts[0])}")
    if p.recommended is not None:
        rec = p.recommended
        if rec.valid and not p.request.layout_requested:
            out.print(f"\n[bold]Why ★ {_layout_name(rec)}:[/bold] "
                      + escape(recommendation_reason(rec, p.hardware)), highlight=False)
        # After a rejected requested layout, these figures and the command are the
        # recommended layout's: say so, or they read as the requested one's.
        instead = p.request.layout_requested and rec is not target
        whose = f" (recommended instead: {_layout_name(rec)})" if instead else ""
        total_tokens = rec.memory.kv_cache_tokens * rec.dp
        if rec.dp > 1:
            gap = "\n" if instead else ""
            out.print(f"{gap}Deployment total{whose}: {total_tokens:,} KV tokens, "
                      f"{rec.memory.max_concurrency * rec.dp:.2f} max-length requests "
                      f"({rec.dp} engines)", highlight=False)
        _launch(out, rec, whose)
    else:
        out.print("\n[red]No layout of these GPUs can serve this model with these settings; apply a fix above.[/red]")
