"""Optional fallback: ask an OpenAI-compatible endpoint about a *redacted* log excerpt.

Only used when no signature is confident. Before anything leaves the machine the
excerpt loses tokens and keys, IP addresses, host names and user names in paths.
The model gets the taxonomy (cause ids with one line each) and must answer a JSON object
restricted to it (``response_format`` json_schema, which vLLM enforces by guided decoding);
the answer is validated (JSON, a cause of the taxonomy, evidence quoted from the excerpt)
and shown labelled as the model's guess, or as rejected, never as a diagnosis.
"""

from __future__ import annotations

import base64
import collections
import getpass
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hangar.diagnose import reader, runs
from hangar.diagnose.knowledge import causes
from hangar.diagnose.model import UNKNOWN
from hangar.errors import BadValue, HangarError
from hangar.text import printable

EXCERPT_LINES = 120
_PUBLIC_HOSTS = ("huggingface.co", "github.com", "docs.vllm.ai", "pytorch.org", "nvidia.com")
_SYSTEM = (
    "You are an expert in vLLM, Ray, NCCL and Slurm. Given a redacted log excerpt from a "
    "failed vLLM launch, name the most likely root cause (not the last symptom) as one cause id "
    "of the taxonomy below, or 'unknown' when the excerpt does not show it. Quote up to 5 lines "
    "of the excerpt as evidence, exactly as they appear, and give the fix (flags, env vars, "
    "commands). Answer only with a JSON object: "
    '{"cause": ..., "confidence": 0..1, "evidence": [...], "fix": "..."}.\nTaxonomy:\n'
)
MAX_EVIDENCE = 5

# Order matters: secrets first (they can contain dots and digits), then addresses and names.
_SECRETS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bhf_[A-Za-z0-9]{16,}"), "<token>"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), "<token>"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "<token>"),
    (re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]+"), "Bearer <token>"),
    (
        re.compile(
            r"(?i)\b([\w-]*(?:api[_-]?key|token|secret|passw(?:or)?d|authorization)[\w-]*)"
            r"(['\"]?\s*[:=]\s*['\"]?)([^\s'\",)}]+)"
        ),
        r"\1\2<redacted>",
    ),
    (re.compile(r"\b[A-Fa-f0-9]{32,}\b"), "<hex>"),
]
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(r"(?<![\w:])[0-9a-fA-F]{1,4}(?::[0-9a-fA-F]{0,4}){3,7}(?![\w:])")
_FQDN = re.compile(r"\b(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}\b")
_NCCL_HOST = re.compile(r"^[\w.-]+(?=:\d+:\d+ \[\d+\])", re.MULTILINE)
_USER_PATH = re.compile(r"(/(?:home|Users|scratch|gpfs|lustre|nfs|hpc|users)/)([^/\s'\"]+)")
_FILE_LIKE = re.compile(r"\.(?:py|so|json|yaml|log|txt|cc|cu|h|cpp|safetensors|bin|pkl|gz)$")


class LlmUnavailable(HangarError):
    """The --llm endpoint could not be reached or answered nonsense."""


class LlmGuess(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str = "model's guess (not verified by a signature)"
    model: str
    text: str
    valid: bool = False
    cause: str | None = None
    confidence: float | None = None
    evidence: tuple[str, ...] = ()


class _Answer(BaseModel):
    """The JSON the model must return (mirrors ``answer_schema``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cause: str
    confidence: float = Field(ge=0, le=1)
    evidence: tuple[str, ...] = Field(max_length=MAX_EVIDENCE)
    fix: str


def taxonomy() -> dict[str, str]:
    """Cause id -> its title in the cause table (data/causes.yaml); 'unknown' last."""
    return {cause: entry.title for cause, entry in causes().items()}


def answer_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "cause": {"type": "string", "enum": list(taxonomy())},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "evidence": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_EVIDENCE},
            "fix": {"type": "string"},
        },
        "required": ["cause", "confidence", "evidence", "fix"],
        "additionalProperties": False,
    }


def _system_prompt() -> str:
    """The taxonomy as one line per cause (id and the cause table's title). Not the whole
    definitions: 34 paragraphs are ~2,500 tokens, more than a small local model's context
    (the tests' tiny vLLM model refused the request), for little gain on a model that reads
    the titles' wording."""
    return _SYSTEM + "\n".join(f"- {cause}: {title}" for cause, title in taxonomy().items())


def redact(text: str, extra_names: Iterable[str] = ()) -> str:
    """The excerpt with secrets, addresses, host and user names replaced by placeholders."""
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    text = _EMAIL.sub("<email>", text)
    text = _IPV4.sub("<ip>", text)
    text = _IPV6.sub("<ip6>", text)
    text = _NCCL_HOST.sub("<host>", text)
    text = _FQDN.sub(_host_or_keep, text)
    text = _USER_PATH.sub(r"\1<user>", text)
    for name in _local_names(extra_names):
        text = re.sub(rf"\b{re.escape(name)}\b", "<name>", text)
    return text


def _host_or_keep(match: re.Match[str]) -> str:
    value = match.group(0)
    if _FILE_LIKE.search(value) or value.count(".") == 1 and value.split(".")[0].isidentifier():
        return value  # module.attr or file.py, not a host
    if any(value == h or value.endswith("." + h) for h in _PUBLIC_HOSTS):
        return value
    return "<host>"


def _local_names(extra: Iterable[str]) -> list[str]:
    names = {socket.gethostname().split(".")[0], *extra}
    try:
        names.add(getpass.getuser())
    except (KeyError, OSError):  # no passwd entry in some containers
        pass
    return sorted((n for n in names if n and len(n) >= 3), key=len, reverse=True)


def excerpt(paths: Iterable[Path], max_lines: int = EXCERPT_LINES) -> str:
    """The last lines of each log (deduplicated across ranks), prefixes stripped, then what
    `hangar launch` recorded for the run (runs.context_lines: limits, GPUs, env), the same
    context the signatures read; the whole goes through ``redact`` before it leaves."""
    inputs = list(paths)
    parts = _log_tails(inputs, max_lines)
    for run_dir in runs.run_dirs(inputs):
        lines = runs.context_lines(run_dir)
        if lines:
            parts.append(f"== {runs.source_name(run_dir)} ==\n" + "\n".join(lines[-max_lines:]))
    return "\n".join(parts)


def _log_tails(paths: list[Path], max_lines: int) -> list[str]:
    parts: list[str] = []
    for source in reader.expand(paths):
        tail: collections.deque[str] = collections.deque(maxlen=max_lines)
        seen: set[str] = set()
        with reader.open_stream(source) as stream:
            for chunk in reader.chunks(stream, source):
                for raw in chunk.splitlines():
                    text = reader.clean(raw)
                    key = reader.fold_key(text)
                    if text.strip() and key not in seen:
                        seen.add(key)
                        tail.append(text)
        parts.append(f"== {Path(source.name).name} ==\n" + "\n".join(tail))
    return parts


class Endpoint(BaseModel):
    """A checked --llm URL: ``url`` without credentials (safe in every message); the
    credentials, when the URL held any, travel only in the Authorization header."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    authorization: str | None = None


def endpoint(url: str) -> Endpoint:
    """The chat-completions endpoint of ``url``; only http(s) URLs with a host (a file://
    URL would read a local file as the model's answer). Credentials (``u:pw@``) are taken
    out of the URL so no message shows them."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        valid = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        valid = False
    if not valid:
        raise BadValue(
            f"--llm takes an http:// or https:// URL, got '{_without_userinfo(url)}'",
            field="--llm",
            hint="hangar doctor LOG --llm http://127.0.0.1:8000/v1 --model MODEL",
        )
    netloc = parts.netloc.rpartition("@")[2]
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
    clean = urllib.parse.urlunsplit((parts.scheme, netloc, path, parts.query, ""))
    auth = None
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        secret = urllib.parse.unquote(parts.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
    return Endpoint(url=clean, authorization=auth)


def _without_userinfo(url: str) -> str:
    """``url`` with anything before an ``@`` of its authority shown as ``***``."""
    return re.sub(r"(?<=://)[^/@\s]*@", "***@", url)


# When the server says the prompt is longer than the model's context (vLLM: "This model's
# maximum context length is N tokens"), ask again smaller: the taxonomy as ids only (the
# answer schema's enum still names them), then the excerpt's last lines only.
_SHRINK = ((False, None), (True, None), (True, 40), (True, 10))
_TOO_LONG = re.compile(
    r"context length|context window|too many tokens|prompt is too long", re.IGNORECASE
)


def ask(url: str, model: str, text: str, timeout: float = 60.0) -> LlmGuess:
    """POST the (already redacted) excerpt to an OpenAI-compatible chat endpoint."""
    if not timeout > 0:
        raise BadValue(f"--llm-timeout must be > 0 seconds, got {timeout}", field="--llm-timeout")
    target = endpoint(url)
    for step, (compact, last_lines) in enumerate(_SHRINK):
        sent = text if last_lines is None else "\n".join(text.splitlines()[-last_lines:])
        try:
            answer = _post_schema_or_plain(target, _request(model, sent, compact), timeout)
        except LlmUnavailable as exc:
            if step + 1 < len(_SHRINK) and _TOO_LONG.search(exc.message):
                continue
            raise
        break
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise LlmUnavailable(f"{target.url} answered without choices[0].message.content") from exc
    return validate(str(content or ""), sent, model)


def _request(model: str, text: str, compact: bool) -> dict[str, Any]:
    system = _SYSTEM + "\n".join(taxonomy()) if compact else _system_prompt()
    return {
        "model": model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"Log excerpt:\n```\n{text}\n```"},
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "hangar_diagnosis", "schema": answer_schema()},
        },
    }


def validate(content: str, excerpt_text: str, model: str) -> LlmGuess:
    """The model's answer, accepted only as JSON naming a taxonomy cause with quoted evidence."""
    try:
        answer = _Answer.model_validate(json.loads(_unfenced(content)))
    except (ValueError, ValidationError) as exc:
        return _rejected(model, content, f"not a JSON answer of the schema ({_first_line(exc)})")
    if answer.cause not in taxonomy():
        return _rejected(model, content, f"cause {answer.cause!r} is not in the taxonomy")
    quoted = tuple(
        line for line in answer.evidence if line.strip() and line.strip() in excerpt_text
    )
    if answer.cause != UNKNOWN and not quoted:
        return _rejected(model, content, "its evidence does not quote the log")
    return LlmGuess(
        model=model,
        text=answer.fix.strip(),
        valid=True,
        cause=answer.cause,
        confidence=answer.confidence,
        evidence=quoted,
    )


def _rejected(model: str, content: str, why: str) -> LlmGuess:
    return LlmGuess(
        label=f"model's answer rejected: {why}", model=model, text=content.strip()[:2000]
    )


def _unfenced(content: str) -> str:
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text.removeprefix("json")
    return text


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


def _post_schema_or_plain(endpoint: Endpoint, body: dict[str, Any], timeout: float) -> Any:
    """A server without structured output answers 400 to response_format: ask again without
    it (the answer is validated all the same)."""
    try:
        return _post(endpoint, body, timeout)
    except LlmUnavailable as exc:
        cause = exc.__cause__
        if not (isinstance(cause, urllib.error.HTTPError) and cause.code == 400):
            raise
        if _TOO_LONG.search(exc.message):  # not the schema: the caller shrinks the prompt
            raise
        cause.close()  # the error holds the response's socket
    plain = {k: v for k, v in body.items() if k != "response_format"}
    return _post(endpoint, plain, timeout)


def _server_says(exc: Exception) -> str:
    """The first line of an HTTP error's body (vLLM says why it refused: a context too long,
    an unknown model), printable and clipped; nothing for other errors."""
    if not isinstance(exc, urllib.error.HTTPError):
        return ""
    try:
        body = exc.read(2000).decode("utf-8", "replace")
    except OSError:
        return ""
    exc.close()
    text = " ".join(body.split())[:300]
    return f" ({printable(text)})" if text else ""


def _post(endpoint: Endpoint, body: dict[str, Any], timeout: float) -> Any:
    headers = {"Content-Type": "application/json"}
    if endpoint.authorization:
        headers["Authorization"] = endpoint.authorization
    request = urllib.request.Request(
        endpoint.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise LlmUnavailable(
            f"--llm endpoint {endpoint.url} failed: {_without_userinfo(str(exc))}"
            f"{_server_says(exc)}",
            hint="check the URL of the OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)",
        ) from exc
