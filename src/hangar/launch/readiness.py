"""Real readiness: process alive, /health 200, /v1/models lists the model, 1-token completion.

HTTP to vLLM is translated here, once: any failure becomes "not yet" until the
deadline, or NotReady with the stage that never passed.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

STAGES = ("process", "health", "models", "completion")


class NotReady(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def _request(
    url: str, api_key: str | None, body: dict[str, Any] | None = None, timeout: float = 10.0
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    req.add_header("Content-Type", "application/json")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw.strip() else None
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def health_ok(base_url: str, api_key: str | None, timeout: float = 5.0) -> bool:
    return _request(f"{base_url}/health", api_key, timeout=timeout)[0] == 200


def models_list(base_url: str, api_key: str | None) -> list[str]:
    status, data = _request(f"{base_url}/v1/models", api_key, timeout=5.0)
    if status != 200 or not isinstance(data, dict):
        return []
    return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]


def one_token(
    base_url: str, model: str, api_key: str | None, timeout: float = 120.0
) -> tuple[bool, str]:
    body = {"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0}
    status, data = _request(f"{base_url}/v1/completions", api_key, body, timeout=timeout)
    if status == 200 and isinstance(data, dict) and data.get("choices"):
        return True, ""
    return False, f"POST /v1/completions returned {status or 'no answer'}"


def wait_ready(
    alive: Callable[[], bool],
    base_url: str,
    model: str,
    timeout_s: float,
    on_stage: Callable[[str, float], None],
    api_key: str | None = None,
    poll_s: float = 0.5,
) -> dict[str, float]:
    """Seconds since start at which each stage passed; NotReady when one never does."""
    start = time.monotonic()
    deadline = start + timeout_s
    timings: dict[str, float] = {}

    def passed(stage: str) -> None:
        timings[stage] = round(time.monotonic() - start, 2)
        on_stage(stage, timings[stage])

    if not alive():
        raise NotReady("process", "the server process exited at once")
    passed("process")
    _poll(lambda: health_ok(base_url, api_key), alive, deadline, poll_s, "health")
    passed("health")
    _poll(lambda: model in models_list(base_url, api_key), alive, deadline, poll_s, "models")
    passed("models")
    ok, why = one_token(base_url, model, api_key, timeout=max(5.0, deadline - time.monotonic()))
    if not ok:
        reason = why if alive() else f"{why}; the server process exited"
        raise NotReady("completion", reason)
    passed("completion")
    return timings


def _poll(
    check: Callable[[], bool], alive: Callable[[], bool], deadline: float, poll_s: float, stage: str
) -> None:
    while True:
        if not alive():
            raise NotReady(stage, "the server process exited")
        if check():
            return
        if time.monotonic() > deadline:
            raise NotReady(stage, "timed out")
        time.sleep(poll_s)
