"""Who may talk to the dashboard and how a state change is proven to come from its pages.

- Loopback only by default; any other bind address needs a token (``--token``), checked on
  every request (``Authorization: Bearer T``, or the cookie set by opening ``/?token=T``).
- On loopback the Host header must name a loopback host, so a web page elsewhere cannot
  reach the dashboard through DNS rebinding.
- Every POST carries the per-process CSRF token (form field ``csrf_token`` or header
  ``X-CSRF-Token``) that only the dashboard's own pages contain, and a cross-site Origin is
  refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from hangar.errors import UsageError

TOKEN_COOKIE = "hangar_token"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; img-src 'self' data:; "
        "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class UiSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = field(default=None, repr=False)
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)


def is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# The token travels in the environment, never in argv (where `ps` shows it to every user).
TOKEN_HINT = 'HANGAR_UI_TOKEN="$(openssl rand -hex 16)" hangar ui --host {host}'


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a token (anyone on the network could stop runs)."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} is reachable from other machines and needs a token "
            "(env HANGAR_UI_TOKEN, or --token)",
            hint=TOKEN_HINT.format(host=host),
        )
    if token is not None and len(token) < 8:
        raise UsageError(
            "the token is too short (at least 8 characters)", hint=TOKEN_HINT.format(host=host)
        )


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def _host_name(request: Request) -> str:
    host = request.headers.get("host", "")
    return urlsplit(f"//{host}").hostname or ""


def gate(request: Request, settings: UiSettings) -> Response | None:
    """A refusal for this request, or None when it may go on."""
    if is_loopback(settings.host) and not is_loopback(_host_name(request)):
        return PlainTextResponse("unknown Host header (DNS rebinding?)", status_code=421)
    if settings.token is None:
        return None
    given = request.query_params.get("token")
    if _same(given, settings.token):
        return _remember_token(request.url, settings.token)
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if _same(bearer, settings.token) or _same(request.cookies.get(TOKEN_COOKIE), settings.token):
        return None
    return _refuse(request, 401, "a token is required: open the URL printed by hangar ui")


def _remember_token(url: URL, token: str) -> Response:
    """Set the token cookie and drop ?token= from the address bar (and from history)."""
    response = RedirectResponse(str(url.remove_query_params("token")), status_code=303)
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return response


async def csrf_refusal(request: Request, settings: UiSettings) -> Response | None:
    """None when a POST proves it came from one of our pages."""
    origin = request.headers.get("origin")
    if origin and origin != "null" and urlsplit(origin).netloc != request.headers.get("host"):
        return _refuse(request, 403, "cross-site request refused")
    given = request.headers.get(CSRF_HEADER)
    if given is None and "form" in request.headers.get("content-type", ""):
        form = await request.form()
        value = form.get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not _same(given, settings.csrf):
        return _refuse(request, 403, "missing or wrong CSRF token: reload the page and retry")
    return None


def _refuse(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": message}, status_code=status)
    return PlainTextResponse(message, status_code=status)
