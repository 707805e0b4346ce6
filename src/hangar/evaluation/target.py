"""Resolve ``hangar eval TARGET`` into a server address plus what is known about it.

TARGET is one of:
* a base URL (``http://host:port`` or ``http://host:port/v1``);
* a local deployment file (``hangar.toml``), read through the deployment schema: the
  address from ``[target.local] host/port`` (0.0.0.0/:: mean 127.0.0.1), the model name
  from ``[model] served_name`` (else ``id``), parsers from ``[serve]``; a Slurm deployment
  is reached through its run id (its node is known only once it runs);
* a run id (or a unique prefix of one) written by ``hangar launch`` into the store.

The API key is never stored: it comes from ``--api-key``, ``HANGAR_API_KEY`` or
``OPENAI_API_KEY`` and lives only in a ``SecretStr``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from hangar.errors import BadValue, HangarError, InputError

_URL = re.compile(r"^https?://", re.IGNORECASE)
_WILDCARD_HOSTS = {"0.0.0.0", "::", "[::]", ""}


class Target(BaseModel):
    """A server to evaluate and the deployment facts known about it."""

    model_config = ConfigDict(frozen=True)

    spec: str
    root_url: str  # scheme://host:port (+ path prefix), without /v1
    api_key: SecretStr | None = None
    run_id: str | None = None
    deployment_file: str | None = None
    log_path: Path | None = None
    model: str | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    flags: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    workarounds: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)

    @property
    def openai_base_url(self) -> str:
        return f"{self.root_url}/v1"


class RunEnded(HangarError):
    """The run was stopped or has ended: its address may now belong to another server (or
    none), so it is not evaluated (exit 1) and nothing is stored."""

    def __init__(self, run_id: str, status: str) -> None:
        super().__init__(f"run {run_id} is stopped (status {status})", hint="hangar status --all")
        self.run_id, self.status = run_id, status


def api_key_from_env(explicit: str | None) -> SecretStr | None:
    value = explicit or os.environ.get("HANGAR_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return SecretStr(value) if value else None


def normalize_url(url: str) -> str:
    """``http://h:p/v1/`` -> ``http://h:p`` (the SDK adds /v1 back; /version lives at root)."""
    root = url.strip().rstrip("/")
    try:  # malformed hosts ('http://[::1', spaces) fail here, in one line, not in the client
        parsed = urlsplit(root)
        _ = parsed.port
        valid = bool(parsed.hostname) and not any(c.isspace() for c in root)
    except ValueError:
        valid = False
    if not valid:
        raise BadValue(
            f"not a valid server URL: {url!r}",
            field="TARGET",
            hint="hangar eval http://127.0.0.1:8000",
        )
    return root.removesuffix("/v1")


def resolve_target(
    spec: str,
    *,
    api_key: str | None = None,
    tool_call_parser: str | None = None,
    reasoning_parser: str | None = None,
    log_path: Path | None = None,
    db_path: Path | None = None,
) -> Target:
    """Turn TARGET into a :class:`Target`; explicit options override the deployment."""
    base = _resolve_base(spec, db_path)
    overrides: dict[str, Any] = {"api_key": api_key_from_env(api_key)}
    if tool_call_parser:
        overrides["tool_call_parser"] = tool_call_parser
    if reasoning_parser:
        overrides["reasoning_parser"] = reasoning_parser
    if log_path:
        overrides["log_path"] = log_path
    return base.model_copy(update=overrides)


def _resolve_base(spec: str, db_path: Path | None) -> Target:
    if _URL.match(spec):
        return Target(spec=spec, root_url=normalize_url(spec))
    path = Path(spec)
    if path.suffix == ".toml" or path.is_file():
        return target_from_deployment_file(path)
    return target_from_run(spec, db_path)


def target_from_deployment_file(path: Path) -> Target:
    """The server a local deployment file declares: [target.local] host/port and the name
    clients use ([model] served_name, else id), read through the deployment schema."""
    from hangar.deploy.io import load_deployment
    from hangar.planning.serve import options_for, serve_flags

    if not path.exists():
        raise InputError(
            "deployment file not found",
            source=str(path),
            hint="pass a base URL, a run id or an existing hangar.toml",
        )
    d = load_deployment(path)
    if d.target.kind != "local":
        # A Slurm (or container) server's address is known only once it runs: its node
        # and port are recorded with the run, so it is reached through the run id.
        raise InputError(
            f"a {d.target.kind} deployment is reached through its run id, not its file",
            source=str(path),
            field="target.kind",
            hint="hangar status   (then hangar eval RUN_ID)",
        )
    local = d.target.local
    host = "127.0.0.1" if local.host in _WILDCARD_HOSTS else local.host
    host = f"[{host}]" if ":" in host else host
    return Target(
        spec=str(path),
        root_url=f"http://{host}:{local.port}",
        deployment_file=str(path),
        model=d.model.name_for_clients,
        tool_call_parser=d.serve.tool_call_parser,
        reasoning_parser=d.serve.reasoning_parser,
        flags=list(serve_flags(options_for(d))),
        env=dict(d.env),
    )


def target_from_run(run_id: str, db_path: Path | None) -> Target:
    """A run recorded by ``hangar launch`` (id or unique prefix): its URL from the run
    dir's server.json (written once it answered), else the recorded base URL."""
    from hangar.store.runs import find_run

    run = find_run(run_id, db_path)
    if run is None:
        raise InputError(
            f"'{run_id}' is not a URL, not a deployment file, and the run id is unknown",
            hint="pass http://HOST:PORT, a hangar.toml, or a run id from `hangar launch`",
        )
    if not run.live:  # stopped, exited or failed
        raise RunEnded(run.id, run.status)
    served = _json_object(_read(Path(run.run_dir) / "server.json"))
    url = str(served.get("url") or run.base_url)
    if not url:
        raise InputError(
            f"run {run.id} has no server address yet (status {run.status})",
            hint=f"hangar status   (wait until it is ready), or hangar logs {run.id}",
        )
    facts = deployment_facts(
        {
            **run.deployment,
            "argv": json.loads(run.argv_json or "[]"),
            "workarounds": json.loads(run.workarounds_json or "[]"),
        }
    )
    if served.get("model"):
        facts["model"] = str(served["model"])
    return Target(
        spec=run_id,
        root_url=normalize_url(url),
        run_id=run.id,
        log_path=Path(run.log_path) if run.log_path else None,
        **facts,
    )


def _model_name(model: Any) -> str | None:
    """A model id, or a deployment's [model] table (the name clients use)."""
    if isinstance(model, Mapping):
        return _str_or_none(model.get("served_name")) or _str_or_none(model.get("id"))
    return _str_or_none(model)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def deployment_facts(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """Pull parsers, flags, env, workarounds and GPUs out of a launch's deployment JSON.

    The launch record's exact schema belongs to ``hangar launch``; read defensively:
    top-level keys or a ``serve`` sub-object, and parser flags inside an argv list.
    """
    serve = deployment.get("serve")
    merged: dict[str, Any] = {**deployment, **(serve if isinstance(serve, Mapping) else {})}
    argv = [str(a) for a in _first_list(merged, ("argv", "args", "flags", "command"))]
    facts: dict[str, Any] = {
        "model": _model_name(merged.get("model")),
        "tool_call_parser": _str_or_none(merged.get("tool_call_parser"))
        or _flag(argv, "--tool-call-parser"),
        "reasoning_parser": _str_or_none(merged.get("reasoning_parser"))
        or _flag(argv, "--reasoning-parser"),
        "flags": argv,
        "env": {str(k): str(v) for k, v in (merged.get("env") or {}).items()}
        if isinstance(merged.get("env"), Mapping)
        else {},
        "workarounds": [
            str(w if not isinstance(w, Mapping) else w.get("id", w))
            for w in merged.get("workarounds") or []
        ],
        "gpus": [str(g) for g in _as_list(merged.get("gpus"))],
    }
    return facts


def _flag(argv: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _first_list(data: Mapping[str, Any], keys: Sequence[str]) -> list[Any]:
    for key in keys:
        if isinstance(data.get(key), list):
            return list(data[key])
    return []


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _str_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
