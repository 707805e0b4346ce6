"""``hangar logs``: a run's logs (the server log; for Slurm the job log and every node's)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from hangar.cli.terminal import printable

# gzip's magic number; a NUL byte marks other binary data (text logs hold neither)
_GZIP = b"\x1f\x8b"


@click.command()
@click.argument("run", required=False)
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the run ends.")
@click.option(
    "-n", "--lines", type=click.IntRange(min=0), help="Only the last N lines of each log."
)
def logs(run: str | None, follow: bool, lines: int | None) -> None:
    """Print the logs of RUN (id or prefix; default: the latest run)."""
    from hangar.errors import InputError
    from hangar.launch.recorded import observe, run_logs
    from hangar.launch.runs import open_store
    from hangar.store.runs import get_run

    record = get_run(open_store(), run)
    paths = [p for p in run_logs(record) if p.is_file()]
    if not paths:
        raise InputError(
            f"the logs of run {record.id} are gone (removed by hangar clean?)",
            source=record.log_path,
            hint="hangar status --all",
        )
    for path in paths[:-1]:
        _show(path, lines, header=True)
    last = paths[-1]
    _warn_if_binary(last)
    with open(last, encoding="utf-8", errors="replace") as fh:
        _print_tail(fh.read(), lines, last if len(paths) > 1 else None)
        while follow and observe(record).phase in ("queued", "running"):
            chunk = fh.read()
            if chunk:
                click.echo(_safe(chunk), nl=False)
            else:
                time.sleep(0.5)
        if follow:
            click.echo(_safe(fh.read()), nl=False)


def _safe(text: str) -> str:
    """Server output on its way to the terminal: its escape sequences (a retitle, a
    screen clear) and lone carriage returns shown as ``\\xNN``, never acted on."""
    return printable(text.replace("\r\n", "\n"))


def _warn_if_binary(path: Path) -> None:
    with open(path, "rb") as fh:
        head = fh.read(8192)
    if head.startswith(_GZIP) or b"\0" in head:
        click.echo(
            f"hangar: {path} holds binary data, not text (gzipped or corrupt); "
            "control bytes are shown as \\xNN, undecodable ones as U+FFFD",
            err=True,
        )


def _show(path: Path, lines: int | None, header: bool) -> None:
    _warn_if_binary(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    _print_tail(text, lines, path if header else None)


def _print_tail(text: str, lines: int | None, header: Path | None) -> None:
    if header is not None:
        click.echo(f"==> {printable(header, one_line=True)} <==")
    all_lines = text.splitlines()
    # not [-lines:]: [-0:] is the whole list, and -n 0 means no lines (as tail -n 0)
    shown = all_lines if lines is None else all_lines[max(0, len(all_lines) - lines) :]
    if shown:
        click.echo(_safe("\n".join(shown)))
