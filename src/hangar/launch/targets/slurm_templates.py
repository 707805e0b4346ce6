"""Quoting filters and the template environment of the Slurm renderer (slurm_render.py).

Quoting. Every value reaches a template through a filter: ``q`` (``shlex.quote``),
``words`` (a list of ``q``'d words), ``envname`` (a validated identifier) or ``sbatch``
(an ``#SBATCH`` value that ``shlex.quote`` leaves unchanged). The filters return
``Quoted``; the environment's ``finalize`` refuses anything else, so a value that skipped
quoting cannot be rendered at all. Values only ever appear as whole shell words
(assignments, array elements), never inside another quoted string.

Runtime values. The head's IP, each node's IP, the object-store size and Ray's PID are
known only in the job. They are written into argv as sentinels ``runtime("NAME")``: a
NUL-delimited name (the schema refuses NUL in every user value, and the kernel cannot
carry one in argv, so a sentinel cannot be forged). ``q`` turns each sentinel into
``"${NAME}"`` and quotes the literal text around it, so ``--address=`` + sentinel +
``:6379`` renders as ``--address="${HANGAR_HEAD_IP}":6379``. The node count is known at
render time, so mp mode renders one complete ``vllm serve`` argv per rank (all from
``planning.serve``, the one builder) and the node picks its own by its position in the
job's node list.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import yaml

from hangar.errors import HangarError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SENTINEL = re.compile("\x00([A-Z_]+)\x00")
# Runtime values a template may expand (see the module docstring).
RUNTIME_NAMES = frozenset(
    {
        "HEAD_IP",
        "HANGAR_HEAD_IP",
        "VLLM_HOST_IP",
        "JOB_TMP",
        "OBJECT_STORE_BYTES",
        "RAY_PID",
        "TMP_ROOT",
        "HANGAR_HF_HUB",
    }
)


class RenderError(HangarError):
    """The deployment cannot be rendered as a correct Slurm job (names the field and fix)."""


class UnquotedValue(RuntimeError):
    """A template printed a value that did not pass through a quoting filter (a bug)."""


class Quoted(str):
    """Text already safe to place as shell words."""

    __slots__ = ()


def runtime(name: str) -> str:
    """A value only the job knows, rendered as ``"${NAME}"``."""
    if name not in RUNTIME_NAMES:
        raise ValueError(f"unknown runtime value {name!r}")
    return f"\x00{name}\x00"


# --- quoting filters ------------------------------------------------------------------


def _quote_text(text: str) -> str:
    pieces = _SENTINEL.split(text)  # literal, name, literal, name, ..., literal
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            if piece not in RUNTIME_NAMES:
                raise UnquotedValue(f"unknown runtime value {piece!r}")
            out.append(f'"${{{piece}}}"')
        elif piece:
            if "\x00" in piece:
                raise UnquotedValue(f"stray NUL in {piece!r}")
            out.append(_shell_quote(piece))
    return "".join(out) or "''"


# Backslashes right before a quote in shlex.quote's output: data at the end of a single-
# quoted run (shlex never writes \' itself, and the \$ / \` above sit outside quotes).
_TRAILING_BACKSLASHES = re.compile(r"(\\+)'")


def _shell_quote(text: str) -> str:
    """``shlex.quote``, with ``$`` and backticks taken out of the single quotes as ``\\$``
    and ``\\```: the same word to bash, and shellcheck's SC2016 ("expressions don't expand
    in single quotes") cannot fire on data that is literal by design. shlex.quote quotes
    any text holding either character, so both only ever occur inside single quotes.

    Backslashes that end a single-quoted run (``'x \\'``) move out of it as ``\\\\``:
    bash reads the same word, and shellcheck's SC1003 ("want to escape a single quote?")
    does not fire on a value that merely ends with a backslash."""
    quoted = shlex.quote(text).replace("$", "'\\$'").replace("`", "'\\`'")
    return _TRAILING_BACKSLASHES.sub(lambda m: "'" + "\\\\" * len(m.group(1)), quoted)


def q(value: object) -> Quoted:
    """One shell word: ``shlex.quote``, runtime sentinels as ``"${NAME}"``."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Path)):
        raise UnquotedValue(f"cannot quote {type(value).__name__} {value!r}")
    return Quoted(_quote_text(str(value)))


def words(values: Iterable[object]) -> Quoted:
    return Quoted(" ".join(q(v) for v in values))


def envname(value: object) -> Quoted:
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise UnquotedValue(f"not an environment variable name: {value!r}")
    return Quoted(value)


def sbatch_value(value: object) -> Quoted:
    """An ``#SBATCH`` option: sbatch splits these lines itself, so only words that
    ``shlex.quote`` leaves unchanged (no space, quote or shell character) are allowed."""
    if not isinstance(value, str) or not value or shlex.quote(value) != value:
        raise UnquotedValue(f"not a simple sbatch option: {value!r}")
    return Quoted(value)


def _finalize(value: object) -> object:
    if isinstance(value, Quoted):
        return value
    raise UnquotedValue(f"template printed an unquoted value {value!r}: use | q")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # Jinja's default comment tag "{#" occurs in bash (${#ARRAY[@]}); no comments.
        comment_start_string="<<hangar#",
        comment_end_string="#hangar>>",
    )
    env.filters.update(q=q, words=words, envname=envname, sbatch=sbatch_value)
    return env


def _templates() -> Any:
    return resources.files("hangar.launch.targets").joinpath("templates")


def _template_source(name: str) -> str:
    return str(_templates().joinpath(name).read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def ray_options() -> dict[str, Any]:
    """``templates/ray_start.yaml``: head-only, worker-only and Hangar-owned options."""
    data = yaml.safe_load(_template_source("ray_start.yaml"))
    if not isinstance(data, dict) or data.get("version") != 1:
        raise RenderError("templates/ray_start.yaml: version must be 1 (a bug in Hangar's data)")
    return data


def render(name: str, values: Mapping[str, object]) -> str:
    return _environment().get_template(name).render(**values)
