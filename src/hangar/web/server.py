"""Serve the dashboard with uvicorn (the one place that binds a socket)."""

from __future__ import annotations

import socket
import threading
import webbrowser

from hangar.errors import InputError
from hangar.web.app import create_app
from hangar.web.security import UiSettings, check_bind


def url_for(settings: UiSettings, *, with_token: bool = False) -> str:
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    base = f"http://{host}:{settings.port}/"
    return base + (f"?token={settings.token}" if with_token and settings.token else "")


def serve(settings: UiSettings, *, open_browser: bool = False) -> None:
    """Run until interrupted; refuses a non-loopback bind without a token first."""
    import uvicorn

    check_bind(settings.host, settings.token)
    check_port_free(settings.host, settings.port)
    warm_up()
    if open_browser:
        url = url_for(settings, with_token=True)
        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    uvicorn.run(
        create_app(settings), host=settings.host, port=settings.port, log_level="warning",
        access_log=False, server_header=False,
    )


def warm_up() -> None:
    """Import the eval, plan and chart code once before the first request, so no page pays
    for it (matplotlib's first figure alone takes about a second)."""
    from hangar.evaluation.charts import line_chart
    from hangar.evaluation.report import perf_charts  # noqa: F401
    from hangar.planning.api import make_plan  # noqa: F401

    line_chart("warm-up", "x", "y", [("s", [(1.0, 1.0)])])


def check_port_free(host: str, port: int) -> None:
    """One clear line instead of uvicorn's log when the address is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise InputError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                hint=f"hangar ui --port {port + 1 if port < 65535 else 8765}",
            ) from exc
