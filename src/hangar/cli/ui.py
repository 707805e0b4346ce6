"""`hangar ui`: serve the web dashboard (engines, runs, eval, plan, workarounds)."""

from __future__ import annotations

import click


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs --token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option("--token", envvar="HANGAR_UI_TOKEN", default=None,
              help="Required on every request (env HANGAR_UI_TOKEN); needed off loopback.")
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a browser.")
def ui(host: str, port: int, token: str | None, open_browser: bool) -> None:
    """Serve the dashboard until Ctrl-C; the same data as JSON under /api/."""
    from hangar.web.security import UiSettings, check_bind
    from hangar.web.server import serve, url_for

    settings = UiSettings(host=host, port=port, token=token)
    check_bind(host, token)
    click.echo(f"Hangar dashboard: {url_for(settings, with_token=True)}", err=True)
    serve(settings, open_browser=open_browser)
