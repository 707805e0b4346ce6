"""`hangar ui`: serve the web dashboard (engines, runs, eval, plan, workarounds)."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import click

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@click.command("ui")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but loopback needs a token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(1, 65535))
@click.option("--token", envvar="HANGAR_UI_TOKEN", default=None,
              help="Required on every request; needed off loopback. Prefer env HANGAR_UI_TOKEN "
                   "(argv is visible in ps).")
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a browser.")
def ui(host: str, port: int, token: str | None, open_browser: bool) -> None:
    """Serve the dashboard until Ctrl-C; the same data as JSON under /api/."""
    from hangar.web.security import UiSettings, check_bind
    from hangar.web.server import url_for

    check_bind(host, token)
    settings = UiSettings(host=host, port=port, token=token)
    click.echo(f"Hangar dashboard: {url_for(settings, with_token=True)}", err=True)
    _serve_until_signal(settings, open_browser)


def _serve_until_signal(settings: Any, open_browser: bool) -> None:
    """Serve, and exit 128 + the signal that stopped the server (130 Ctrl-C, 143 TERM,
    129 HUP): uvicorn handles INT and TERM itself and its ``run`` swallows the
    KeyboardInterrupt it re-raises after shutting down, which would exit 0."""
    from hangar.errors import Interrupted
    from hangar.web.server import serve

    if threading.current_thread() is not threading.main_thread():
        serve(settings, open_browser=open_browser)
        return
    caught: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        if signum == signal.SIGHUP and signal.getsignal(signal.SIGTERM) is not on_signal:
            # uvicorn is serving and knows no HUP: ask it for its graceful shutdown
            signal.raise_signal(signal.SIGTERM)
            return
        raise Interrupted(caught[0])

    previous = {sig: signal.signal(sig, on_signal) for sig in _STOP_SIGNALS}
    try:
        serve(settings, open_browser=open_browser)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if caught:
        raise Interrupted(caught[0])
