"""The one builder of the ``vllm serve`` argv, used by plan, preflight, launch and render.

``ServeOptions`` is what vLLM is asked to do (model, layout, serve settings, and for
multi-node, this node's role); ``serve_flags`` turns it into flags in one stable order.
Every caller (plan's printed command, preflight's workaround check, the local target's
argv, the Slurm scripts) goes through here, so the flags cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # plan never needs the deployment schema; launch passes one in
    from hangar.deploy.schema import Deployment

Backend = Literal["mp", "ray"]


class NodeRole(BaseModel):
    """vLLM's own multi-node mode (``--nnodes``, vllm/engine/arg_utils.py, 0.11.1+)."""

    model_config = ConfigDict(frozen=True)

    nnodes: int = Field(ge=1)
    node_rank: int = Field(ge=0)
    master_addr: str
    master_port: int = Field(ge=1, le=65535)

    @property
    def headless(self) -> bool:
        # Every rank but 0 runs without the API server (vllm serve --headless).
        return self.node_rank > 0


class ServeOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    served_name: str | None = None
    revision: str | None = None
    host: str | None = None
    port: int | None = None
    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: bool = False
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    tool_call_parser: str | None = None
    reasoning_parser: str | None = None
    enforce_eager: bool = False
    trust_remote_code: bool = False
    backend: Backend | None = None  # --distributed-executor-backend
    node: NodeRole | None = None
    extra_args: tuple[str, ...] = ()
    # data parallel across nodes (vllm/engine/arg_utils.py, 0.9+): this node's engines
    dp_local: int | None = None  # --data-parallel-size-local
    dp_start_rank: int | None = None  # --data-parallel-start-rank (non-head nodes)
    dp_address: str | None = None  # --data-parallel-address (the head node)
    dp_rpc_port: int | None = None  # --data-parallel-rpc-port
    headless: bool = False  # --headless without a NodeRole (DP secondary nodes)


def _value_flags(o: ServeOptions) -> list[tuple[str, object]]:
    return [
        ("--host", o.host),
        ("--port", o.port),
        ("--served-model-name", o.served_name),
        ("--revision", o.revision),
        ("--tensor-parallel-size", o.tp if o.tp != 1 else None),
        ("--pipeline-parallel-size", o.pp if o.pp != 1 else None),
        ("--data-parallel-size", o.dp if o.dp != 1 else None),
        ("--max-model-len", o.max_model_len),
        ("--gpu-memory-utilization", o.gpu_memory_utilization),
        ("--max-num-seqs", o.max_num_seqs),
        ("--max-num-batched-tokens", o.max_num_batched_tokens),
        ("--dtype", o.dtype),
        ("--kv-cache-dtype", o.kv_cache_dtype),
        ("--quantization", o.quantization),
        ("--tool-call-parser", o.tool_call_parser),
        ("--reasoning-parser", o.reasoning_parser),
        ("--distributed-executor-backend", o.backend),
        ("--data-parallel-size-local", o.dp_local),
        ("--data-parallel-start-rank", o.dp_start_rank),
        ("--data-parallel-address", o.dp_address),
        ("--data-parallel-rpc-port", o.dp_rpc_port),
    ]


def _node_flags(node: NodeRole | None) -> list[str]:
    if node is None:
        return []
    flags = [
        "--nnodes",
        str(node.nnodes),
        "--node-rank",
        str(node.node_rank),
        "--master-addr",
        node.master_addr,
        "--master-port",
        str(node.master_port),
    ]
    return flags + (["--headless"] if node.headless else [])


def serve_flags(o: ServeOptions) -> tuple[str, ...]:
    """The flags after ``vllm serve MODEL``, in one stable order; extra args last."""
    flags: list[str] = []
    for flag, value in _value_flags(o):
        if value is not None:
            flags += [flag, str(value)]
    switches = [
        ("--enable-expert-parallel", o.ep),
        ("--enable-auto-tool-choice", o.tool_call_parser is not None),
        ("--enforce-eager", o.enforce_eager),
        ("--trust-remote-code", o.trust_remote_code),
    ]
    flags += [flag for flag, on in switches if on]
    headless = ["--headless"] if o.headless and not (o.node and o.node.headless) else []
    return (*flags, *_node_flags(o.node), *headless, *o.extra_args)


def serve_command(o: ServeOptions) -> tuple[str, ...]:
    """The command a user would type: ``vllm serve MODEL FLAGS``."""
    return ("vllm", "serve", o.model, *serve_flags(o))


def options_for(d: Deployment, **placement: object) -> ServeOptions:
    """The deployment's serve options; ``placement`` adds host/port/backend/node."""
    s, p = d.serve, d.parallel
    return ServeOptions.model_validate(
        {
            "model": d.model.id,
            "served_name": d.model.name_for_clients,
            "revision": d.model.revision,
            "tp": p.tensor,
            "pp": p.pipeline,
            "dp": p.data,
            "ep": p.expert,
            "max_model_len": s.max_model_len,
            "gpu_memory_utilization": s.gpu_memory_utilization,
            "max_num_seqs": s.max_num_seqs,
            "dtype": s.dtype,
            "kv_cache_dtype": s.kv_cache_dtype,
            "quantization": s.quantization,
            "tool_call_parser": s.tool_call_parser,
            "reasoning_parser": s.reasoning_parser,
            "enforce_eager": s.enforce_eager,
            "trust_remote_code": d.model.trust_remote_code,
            "extra_args": s.extra_args,
            **placement,
        }
    )
