"""Per-node commands for a layout that spans nodes, in vLLM's two multi-node modes.

mp (vLLM's own, no Ray): every node runs the same `vllm serve` with its --node-rank
(``--nnodes/--node-rank/--master-addr/--master-port``, vllm/engine/arg_utils.py; the flags
exist from 0.11.1, research/vllm-internals.md §8.2); ranks > 0 run --headless. When only data
parallelism spans the nodes, the head runs the API server and the others run
``--headless --data-parallel-start-rank K --data-parallel-size-local L
--data-parallel-address HEAD --data-parallel-rpc-port P`` (0.9+).

ray: a Ray cluster across the nodes (``ray start --head`` / ``ray start --address``), then one
`vllm serve ... --distributed-executor-backend ray` on the head; Ray must see TP x PP GPUs or
vLLM waits PG_WAIT_TIMEOUT = 1800 s for a placement group (v1/executor/ray_utils.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from hangar.planning.serve import NodeRole, ServeOptions, serve_command

MP_NNODES_SINCE = (0, 11, 1)  # --nnodes / --node-rank (NodeRole docstring, arg_utils.py)
HEAD_PLACEHOLDER = "HEAD_IP"  # replaced by --head-address
MASTER_PORT = 29501  # ParallelConfig.master_port default
DP_RPC_PORT = 13345  # documented example port; vLLM's default is 29550 (ParallelConfig)
RAY_PORT = 6379  # `ray start --head` default


class NodeCommand(BaseModel):
    model_config = ConfigDict(frozen=True)

    node_rank: int
    argv: tuple[str, ...]
    role: str  # "head (API server)" | "headless worker" | "ray head" | "ray worker"


class MultiNode(BaseModel):
    """How to start a layout that spans nodes; ``recommended`` is "mp" or "ray"."""

    model_config = ConfigDict(frozen=True)

    recommended: str
    why: str
    mp: tuple[NodeCommand, ...]
    ray: tuple[NodeCommand, ...]


def _mp_model_parallel(base: ServeOptions, nodes: int, head: str) -> tuple[NodeCommand, ...]:
    out = []
    for rank in range(nodes):
        role = NodeRole(nnodes=nodes, node_rank=rank, master_addr=head, master_port=MASTER_PORT)
        argv = serve_command(base.model_copy(update={"node": role}))
        out.append(NodeCommand(node_rank=rank, argv=argv,
                               role="head (API server)" if rank == 0 else "headless worker"))
    return tuple(out)


def _mp_data_parallel(
    base: ServeOptions, nodes: int, per_node: int, head: str
) -> tuple[NodeCommand, ...]:
    engines_per_node = max(1, per_node // (base.tp * base.pp))
    out = []
    for rank in range(nodes):
        update: dict[str, object] = {
            "dp_local": engines_per_node, "dp_address": head, "dp_rpc_port": DP_RPC_PORT,
        }
        if rank:
            update |= {"dp_start_rank": rank * engines_per_node, "headless": True}
        argv = serve_command(base.model_copy(update=update))
        out.append(NodeCommand(node_rank=rank, argv=argv,
                               role="head (API server)" if rank == 0 else "headless worker"))
    return tuple(out)


def _ray(base: ServeOptions, nodes: int, head: str) -> tuple[NodeCommand, ...]:
    head_cmd = ("ray", "start", "--head", f"--port={RAY_PORT}")
    serve = serve_command(base.model_copy(update={"backend": "ray"}))
    out = [NodeCommand(node_rank=0, argv=head_cmd, role="ray head"),
           NodeCommand(node_rank=0, argv=serve, role="ray head: vllm serve after all nodes joined")]
    out += [NodeCommand(node_rank=r, argv=("ray", "start", f"--address={head}:{RAY_PORT}"),
                        role="ray worker") for r in range(1, nodes)]
    return tuple(out)


def multi_node(
    base: ServeOptions,
    nodes: int,
    gpus_per_node: int,
    version: tuple[int, int, int],
    head: str = HEAD_PLACEHOLDER,
) -> MultiNode | None:
    """None when the layout fits one node."""
    world = base.tp * base.pp
    total = world * base.dp
    if nodes <= 1 or total <= gpus_per_node:
        return None
    used = min(nodes, -(-total // gpus_per_node))
    spans_engine = world > gpus_per_node
    mp = (_mp_model_parallel(base, used, head) if spans_engine
          else _mp_data_parallel(base, used, gpus_per_node, head))
    ray = _ray(base, used, head)
    if version < MP_NNODES_SINCE and spans_engine:
        why = (f"vLLM {'.'.join(map(str, version))} has no --nnodes (added in 0.11.1): "
               "an engine across nodes needs a Ray cluster")
        return MultiNode(recommended="ray", why=why, mp=(), ray=ray)
    why = ("vLLM's own multi-node mode needs no Ray cluster: the same command on every node, "
           "differing only in its rank; use Ray when the site already runs one")
    return MultiNode(recommended="mp", why=why, mp=mp, ray=ray)
