"""Runs INSIDE the vLLM venv: vLLM's own front-end config validation as an oracle.

Protocol (JSON lines): after importing vLLM it writes ``{"ready": true, ...}``;
then for each case line read on stdin it writes one result line
``{"id", "ok", "error_type", "wrapper", "loc", "message", "detail", "resolved", "seconds"}``.
A case is either
* ``{"id", "model": DIR, "args": {EngineArgs field: value}}``: ``EngineArgs(model=DIR,
  **args).create_engine_config()``; or
* ``{"id", "model": DIR, "serve_args": ["--tensor-parallel-size", "3", ...]}``: what
  ``vllm serve DIR ...`` does before starting an engine: its argparse parser
  (choices, types), ``validate_parsed_serve_args``, ``AsyncEngineArgs.from_cli_args``
  and ``create_engine_config``. Argparse refusals come back as error_type
  ``ArgumentError`` with argparse's message ("argument --dtype: invalid choice: ...").

``create_engine_config()`` runs the checks vLLM's API server runs before any engine
process starts (ModelConfig/ParallelConfig/CacheConfig/VllmConfig validators and
arg_utils' own raises), without weights, tokenizer or GPU.
Library log lines go to stderr; stdout carries only the protocol.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import sys
import time
from typing import Any, TextIO

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")


def _protocol_stream() -> TextIO:
    """Keep the real stdout for results; send fd 1 (prints, loggers) to stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _describe(exc: BaseException) -> dict[str, Any]:
    """Unwrap pydantic's ValidationError to the exception vLLM's validator raised."""
    wrapper, loc, inner, message = None, None, type(exc).__name__, str(exc)
    errors = getattr(exc, "errors", None)
    if type(exc).__name__ == "ValidationError" and callable(errors):
        first = errors()[0]
        wrapper = f"ValidationError[{getattr(exc, 'title', '')}]"
        loc = ".".join(str(part) for part in first.get("loc", ()))
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, BaseException):
            inner, message = type(cause).__name__, str(cause)
        else:
            inner, message = str(first.get("type")), str(first.get("msg"))
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return {
        "error_type": inner,
        "wrapper": wrapper,
        "loc": loc or None,
        "message": lines[0] if lines else "",
        "detail": message[:4000],
    }


def _resolved(config: Any) -> dict[str, Any]:
    model, parallel, cache = config.model_config, config.parallel_config, config.cache_config
    text = getattr(model, "hf_text_config", None)
    return {
        "architecture": getattr(model, "architecture", None),
        "model_type": getattr(text, "model_type", None),
        "max_model_len": model.max_model_len,
        "dtype": str(model.dtype).removeprefix("torch."),
        "quantization": model.quantization,
        "kv_cache_dtype": cache.cache_dtype,
        "world_size": parallel.world_size,
        "enable_expert_parallel": parallel.enable_expert_parallel,
        "num_attention_heads": _safe(lambda: model.model_arch_config.total_num_attention_heads),
        "num_kv_heads": _safe(lambda: model.get_total_num_kv_heads()),
        "num_layers": _safe(lambda: model.get_total_num_hidden_layers()),
        "head_size": _safe(lambda: model.get_head_size()),
        "is_moe": _safe(lambda: model.is_moe),
    }


def _safe(getter: Any) -> Any:
    try:
        value = getter()
    except Exception:  # noqa: BLE001 - a fact this vLLM version cannot give is just absent
        return None
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


class _Oracle:
    def __init__(self) -> None:
        from vllm.engine.arg_utils import EngineArgs

        self.engine_args_cls = EngineArgs
        self.fields = {field.name for field in dataclasses.fields(EngineArgs)}
        self._parser: Any = None

    def check(self, case: dict[str, Any]) -> dict[str, Any]:
        if "serve_args" in case:
            return self._check_serve(case["model"], [str(arg) for arg in case["serve_args"]])
        return self._check_args(case["model"], dict(case.get("args") or {}))

    def _check_args(self, model: str, args: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(args) - self.fields)
        if unknown:
            return {"ok": False, "harness_error": f"unknown EngineArgs fields: {unknown}"}
        args.setdefault("skip_tokenizer_init", True)
        try:
            config = self.engine_args_cls(model=model, **args).create_engine_config()
        except Exception as exc:  # noqa: BLE001 - vLLM's refusal is the oracle's answer
            return {"ok": False, **_describe(exc)}
        return {"ok": True, "resolved": _resolved(config)}

    def _check_serve(self, model: str, argv: list[str]) -> dict[str, Any]:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.entrypoints.launchers.cli_args import validate_parsed_serve_args

        errors = io.StringIO()
        try:
            with contextlib.redirect_stderr(errors):
                namespace = self.parser().parse_args(["--model", model, *argv])
        except SystemExit:
            return {"ok": False, **_argparse_error(errors.getvalue())}
        try:
            validate_parsed_serve_args(namespace)
            engine_args = AsyncEngineArgs.from_cli_args(namespace)
            engine_args.skip_tokenizer_init = True
            config = engine_args.create_engine_config()
        except Exception as exc:  # noqa: BLE001 - vLLM's refusal is the oracle's answer
            return {"ok": False, **_describe(exc)}
        return {"ok": True, "resolved": _resolved(config)}

    def parser(self) -> Any:
        """`vllm serve`'s own parser (vllm/entrypoints/cli/serve.py subparser_init)."""
        if self._parser is None:
            from vllm.entrypoints.launchers.cli_args import make_arg_parser
            from vllm.utils.argparse_utils import FlexibleArgumentParser

            self._parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
        return self._parser


def _argparse_error(stderr: str) -> dict[str, Any]:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "argparse refused the arguments"
    message = last.split(": error: ", 1)[-1]
    return {
        "error_type": "ArgumentError",
        "wrapper": "SystemExit(2)",
        "loc": None,
        "message": message,
        "detail": message,
    }


def _inspect_models_in_process() -> None:
    """Inspect model classes in this process instead of a fresh interpreter per architecture.

    vllm/model_executor/models/registry.py `_run_in_subprocess` re-imports vLLM (~15 s)
    for every new architecture so that CUDA is never initialised in the API server;
    on the CPU build there is no CUDA, and the returned `_ModelInfo` is the same.
    """
    from vllm.model_executor.models import registry

    def run_here(fn: Any) -> Any:
        return fn()

    registry._run_in_subprocess = run_here


def main() -> int:
    out = _protocol_stream()
    started = time.monotonic()
    import vllm

    _inspect_models_in_process()
    oracle = _Oracle()
    ready = {"ready": True, "vllm_version": vllm.__version__}
    out.write(json.dumps(dict(ready, import_seconds=round(time.monotonic() - started, 2))) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        began = time.monotonic()
        result = oracle.check(case)
        result.update(id=case.get("id"), seconds=round(time.monotonic() - began, 4))
        out.write(json.dumps(result, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
