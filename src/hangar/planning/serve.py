"""The one builder of the ``vllm serve`` argv, used by plan, preflight, launch and render.

``ServeOptions`` is what vLLM is asked to do (model, layout, serve settings, and for
multi-node, this node's role); ``serve_flags`` turns it into flags in one stable order.
Every caller (plan's printed command, preflight's workaround check, the local target's
argv, the Slurm scripts) goes through here, so the flags cannot drift apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from hangar.deploy.params import PARAMS, file_value

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


# The table's parameters that become vllm serve flags, in its order: a value flag is
# written when set and not vLLM's own default, a switch when on.
_SERVED = tuple(p for p in PARAMS if p.serve is not None)
_VALUES = tuple(p for p in _SERVED if p.kind != "switch")


def _value_flags(o: ServeOptions) -> list[tuple[str, object]]:
    table = [
        (str(p.serve), None if value == p.vllm_default else value)
        for p in _VALUES
        for value in (getattr(o, p.name),)
    ]
    return table + [
        ("--distributed-executor-backend", o.backend),
        ("--data-parallel-size-local", o.dp_local),
        ("--data-parallel-start-rank", o.dp_start_rank),
        ("--data-parallel-address", o.dp_address),
        ("--data-parallel-rpc-port", o.dp_rpc_port),
    ]


def _switches(o: ServeOptions) -> list[str]:
    """Switches that are on, and the ones a set value implies (--enable-auto-tool-choice)."""
    flags = []
    for p in _SERVED:
        value = getattr(o, p.name)
        if p.kind == "switch" and value:
            flags.append(str(p.serve))
        if p.implies is not None and value is not None:
            flags.append(p.implies)
    return flags


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
    flags += _switches(o)
    headless = ["--headless"] if o.headless and not (o.node and o.node.headless) else []
    return (*flags, *_node_flags(o.node), *headless, *o.extra_args)


def serve_command(o: ServeOptions) -> tuple[str, ...]:
    """The command a user would type: ``vllm serve MODEL FLAGS``."""
    return ("vllm", "serve", o.model, *serve_flags(o))


# Filled from [target.<kind>] by the target that places the server (placement).
_PLACED = frozenset({"host", "port"})


def options_for(d: Deployment, **placement: object) -> ServeOptions:
    """The deployment's serve options; ``placement`` adds host/port/backend/node."""
    from_file = {
        p.name: file_value(d, p) for p in _SERVED if p.path is not None and p.name not in _PLACED
    }
    return ServeOptions.model_validate(
        {
            **from_file,
            "model": d.model.id,
            "served_name": d.model.name_for_clients,  # clients always see one name
            "extra_args": d.serve.extra_args,
            **placement,
        }
    )
