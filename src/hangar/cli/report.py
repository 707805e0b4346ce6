"""``hangar report RUN… -o report.html``: one self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("refs", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="Where to write the HTML file.",
)
def report(refs: tuple[str, ...], output: Path) -> int:
    """Write an HTML report (charts, suite results, comparison) for stored evals."""
    from hangar.errors import InputError
    from hangar.evaluation import render_html
    from hangar.evaluation.history import load_eval
    from hangar.paths import atomic_write_text

    results = [load_eval(ref) for ref in refs]
    try:
        atomic_write_text(output, render_html(results))
    except OSError as exc:  # atomic: a failed write leaves no partial report behind
        raise InputError(
            f"cannot write: {exc.strerror}", source=str(output), hint="choose another -o path"
        ) from exc
    click.echo(f"wrote {output} ({len(results)} run(s))")
    return 0
