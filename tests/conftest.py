"""Suite-wide guards: Hangar's files go to a per-test HANGAR_HOME, and no test writes outside
its tmp dirs.

The write guard (``sys.addaudithook``, installed once per process; docs/testing.md "The
write guard") sees every write this pytest process makes: ``open`` for writing (builtins,
``os.open``, ``pathlib``), ``os.mkdir``, ``os.rename``/``os.replace``, ``os.remove``,
``os.rmdir``, ``os.symlink``, ``os.link``, ``os.truncate``, ``os.chmod``/``chown``/``utime``,
``shutil.rmtree`` and ``sqlite3.connect``. A write outside the allowed places raises
:class:`WriteOutsideTmp` (a ``PermissionError``, so nothing is written) and fails the test
even if the code under test swallowed the error. Allowed: the system temp dir (pytest's
basetemp, every ``tmp_path``, the Slurm cluster's ``/tmp/hgXXXX``, subprocess scratch),
``HANGAR_HOME``, the shared caches of ``$HANGAR_TEST_CACHE`` (``~/.cache/hangar-tests``),
``/dev/null``, ``/dev/shm``, ``/dev/pts``, ``/proc`` (kernel knobs such as autogroup nice),
the repo's build outputs (``__pycache__``, ``.pytest_cache``, ``.hypothesis``,
``.coverage*``) and, with ``HANGAR_REGEN_GOLDEN=1`` / ``HANGAR_UPDATE_GOLDEN=1``, the
golden dirs. Subprocesses are beyond an audit hook's reach: they get ``HOME`` pointed at a
per-test dir, so a tool that writes ``~/...`` writes there.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL_HOME = Path.home()
# The shared venv/cluster caches live under the real home; pin them before HOME moves.
os.environ.setdefault("HANGAR_TEST_CACHE", str(REAL_HOME / ".cache" / "hangar-tests"))

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
# event -> indexes of (path, dir_fd) argument pairs it writes (dir_fd index None: none given)
_EVENTS: dict[str, tuple[tuple[int, int | None], ...]] = {
    "os.mkdir": ((0, 2),),
    "os.rename": ((0, 2), (1, 3)),
    "os.remove": ((0, 1),),
    "os.rmdir": ((0, 1),),
    "os.symlink": ((1, 2),),
    "os.link": ((1, 3),),
    "os.truncate": ((0, None),),
    "os.chmod": ((0, 2),),
    "os.chown": ((0, 3),),
    "os.utime": ((0, 3),),
    "shutil.rmtree": ((0, 1),),
    "sqlite3.connect": ((0, None),),
}
# Events that act on a symlink's target; the others (unlink, rename, ...) on the link.
_FOLLOWS = frozenset({"open", "os.truncate", "os.chmod", "os.chown", "os.utime", "sqlite3.connect"})
# pytest's cache is written through a "pytest-cache-files-*" dir renamed into .pytest_cache
_BUILD_OUTPUTS = (
    ".pytest_cache",
    "pytest-cache-files-",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
)


class WriteOutsideTmp(PermissionError):
    """A test wrote (or tried to) outside its tmp dirs; the write did not happen."""


class _Guard:
    """Allowed roots and the violations seen since the last check (any thread)."""

    def __init__(self) -> None:
        self.roots: tuple[str, ...] = ()
        self.violations: list[str] = []
        self.lock = threading.Lock()
        self.busy = threading.local()  # the hook's own path work raises events too

    def allow(self, *roots: str | Path) -> None:
        self.roots = tuple(dict.fromkeys(os.path.realpath(r) for r in (*self.roots, *roots)))

    def allowed(self, path: str) -> bool:
        if "__pycache__" in path or os.path.basename(path).startswith(".coverage"):
            return True
        inside = [r for r in self.roots if path == r or path.startswith(r.rstrip("/") + "/")]
        repo = str(REPO)
        if path == repo or path.startswith(repo + "/"):
            # the checkout is never a tmp dir, even when it lives under one (a CI clone in
            # /tmp): only build outputs, and roots allowed inside it (golden files on request)
            return path[len(repo) + 1 :].startswith(_BUILD_OUTPUTS) or any(
                r.startswith(repo + "/") for r in inside
            )
        return bool(inside)

    def take(self) -> list[str]:
        with self.lock:
            seen, self.violations = self.violations, []
        return seen

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            if len(args) < 3 or not isinstance(args[2], int) or not args[2] & _WRITE_FLAGS:
                return
            pairs: tuple[tuple[int, int | None], ...] = ((0, None),)
        elif event in _EVENTS:
            pairs = _EVENTS[event]
        else:
            return
        if getattr(self.busy, "on", False):
            return
        self.busy.on = True
        try:
            self._check(event, args, pairs)
        finally:
            self.busy.on = False

    def _check(self, event: str, args: tuple[Any, ...], pairs: Any) -> None:
        for path_i, fd_i in pairs:
            path = _absolute(event, args, path_i, fd_i)
            if path is None or self.allowed(path):
                continue
            with self.lock:
                self.violations.append(f"{event} {path}")
            raise WriteOutsideTmp(f"test wrote outside its tmp dirs ({event}): {path}")


def _absolute(event: str, args: tuple[Any, ...], path_i: int, fd_i: int | None) -> str | None:
    """The real absolute path an event touches, or None (an fd, :memory:, unknown)."""
    if path_i >= len(args) or isinstance(args[path_i], int) or args[path_i] is None:
        return None
    try:
        path = os.fsdecode(args[path_i])
    except TypeError:
        return None
    if path in ("", ":memory:") or path.startswith("file:"):
        return None
    dir_fd = args[fd_i] if fd_i is not None and fd_i < len(args) else None
    if not os.path.isabs(path) and isinstance(dir_fd, int) and dir_fd >= 0:
        try:
            path = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), path)
        except OSError:
            return None
    return _real(path, follow=event in _FOLLOWS)


def _real(path: str, *, follow: bool) -> str:
    """realpath, but unlink/rename/symlink act on the link itself: resolve only its dir."""
    if follow:
        return os.path.realpath(path)
    head, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(head), name)


_GUARD = _Guard()
_GUARD.allow(
    tempfile.gettempdir(),
    os.environ["HANGAR_TEST_CACHE"],
    "/dev/null",
    "/dev/shm",
    "/dev/pts",
    "/proc",
)
if "1" in (os.environ.get("HANGAR_REGEN_GOLDEN"), os.environ.get("HANGAR_UPDATE_GOLDEN")):
    _GUARD.allow(*REPO.glob("tests/*/golden"))  # regenerating golden files, on request
sys.addaudithook(_GUARD.hook)


def pytest_configure(config: pytest.Config) -> None:
    basetemp = config.option.basetemp  # --basetemp may be outside the temp dir
    if basetemp:
        _GUARD.allow(basetemp)


@pytest.fixture(autouse=True)
def write_guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _GUARD.allow(tmp_path_factory.getbasetemp())
    before = _GUARD.take()  # session fixtures set up for this test, or between tests
    assert not before, "wrote outside tmp dirs before this test ran:\n" + "\n".join(before)
    yield
    after = _GUARD.take()
    assert not after, "this test wrote outside its tmp dirs:\n" + "\n".join(after)


@pytest.fixture(autouse=True)
def hangar_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("hangar-home")
    monkeypatch.setenv("HANGAR_HOME", str(home))
    # Subprocesses are beyond the audit hook: whatever writes ~/... writes to a tmp dir.
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no test may reach the hub
    monkeypatch.delenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", raising=False)
    yield home


@pytest.fixture
def write_guard_state() -> _Guard:
    """The guard itself, for tests of the guard (tests/test_write_guard.py)."""
    return _GUARD
