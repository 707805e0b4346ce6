"""``hangar ui``: a local web dashboard of engines, runs, eval results, plans and workarounds.

Server-rendered pages (Jinja2 templates and static files shipped in this package, no build
step, no CDN) and the same data as JSON under ``/api/`` (OpenAPI at ``/openapi.json``).
It reads what the other stages recorded through their APIs and changes one thing only:
stopping a run (a POST with a CSRF token).
"""

from hangar.web.app import create_app
from hangar.web.security import UiSettings

__all__ = ["UiSettings", "create_app"]
