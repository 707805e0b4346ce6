"""A stand-in for ``vllm serve`` installed as ``vllm.entrypoints.cli.main`` in a throwaway venv.

It behaves like the real server where supervision cares: parses --host/--port/
--served-model-name, starts a worker child in its process group (as vLLM's
EngineCore), answers /health, /v1/models and /v1/completions, and exits on SIGTERM
together with its worker. FAKE_VLLM_MODE selects a failure:
  crash        traceback and exit 1 before binding the port
  no_complete  healthy, lists the model, but every completion returns 500 and the process exits
  stubborn     the worker ignores SIGTERM (stop must escalate to SIGKILL)
  slow         waits FAKE_VLLM_DELAY seconds before binding
It also records its environment (TMPDIR, marker, limits) to $TMPDIR/fake-env.json.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = os.environ.get("FAKE_VLLM_MODE", "")


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {"model": argv[1] if len(argv) > 1 and argv[0] == "serve" else ""}
    for i, token in enumerate(argv):
        if token.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[token[2:]] = argv[i + 1]
    return out


def _record(args: dict[str, str]) -> None:
    doc = {
        "argv": sys.argv[1:],
        "tmpdir": tempfile.gettempdir(),
        "marker": os.environ.get("HANGAR_RUN_ID"),
        "as_limit": resource.getrlimit(resource.RLIMIT_AS),
        "env": {
            k: v
            for k, v in os.environ.items()
            if k.startswith(("VLLM", "TORCH", "TRITON", "NCCL", "FAKE"))
        },
    }
    with open(os.path.join(tempfile.gettempdir(), "fake-env.json"), "w") as fh:
        json.dump(doc, fh)


def _worker() -> subprocess.Popen[bytes]:
    code = "import signal, time\n"
    if MODE == "stubborn":
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "while True: time.sleep(1)\n"
    return subprocess.Popen([sys.executable, "-c", code])


def main() -> None:
    args = _args(sys.argv[1:])
    served = args.get("served-model-name") or args["model"]
    _record(args)
    print("INFO fake vLLM starting", flush=True)
    if MODE == "crash":
        print(
            'Traceback (most recent call last):\n  File "fake.py", line 1\nValueError: fake engine refused the model',
            flush=True,
        )
        sys.exit(1)
    if MODE == "slow":
        time.sleep(float(os.environ.get("FAKE_VLLM_DELAY", "2")))
    worker = _worker()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *a: object) -> None:
            print("INFO http " + fmt % a, flush=True)

        def _send(self, code: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": served, "object": "model"}]})
            else:
                self._send(404, {})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            json.loads(self.rfile.read(length) or b"{}")
            if MODE == "no_complete":
                print(
                    "ERROR EngineCore encountered an issue\nRuntimeError: fake engine died on first request",
                    flush=True,
                )
                self._send(500, {"error": "EngineDeadError"})
                os.kill(os.getpid(), signal.SIGTERM)
                return
            self._send(200, {"object": "text_completion", "choices": [{"index": 0, "text": "x"}]})

    server = ThreadingHTTPServer(
        (args.get("host", "127.0.0.1"), int(args.get("port", "8000"))), Handler
    )

    def shutdown(signum: int, frame: object) -> None:
        worker.terminate()
        print("INFO shutting down", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, shutdown)
    print("INFO Application startup complete.", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
