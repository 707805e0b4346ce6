"""Every deployment parameter, defined once (issue 13 item 6).

One row per parameter: where it lives in ``hangar.toml``, the CLI flag(s) and help of
the commands that take it, the ``PlanRequest`` field it fills and the ``vllm serve``
flag it becomes. Derived from this table, not restated:

* the click options of plan, preflight, render, launch and init (``hangar.cli.options``);
* the file-vs-flag merge (``with_flags``): a flag given on the command line wins, a flag
  not given never overrides the file (``hangar init --nodes 2`` then ``hangar preflight``
  must agree: the old shared ``--nodes`` defaulted to 1 and overrode the file);
* the CLI -> PlanRequest mapping (``hangar.planning.request.request_fields``);
* the order and names of the ``vllm serve`` flags (``hangar.planning.serve``).

Serve flags are vLLM's own (vLLM 0.32.0 vllm/engine/arg_utils.py ``EngineArgs`` and
vllm/entrypoints/launchers/cli_args.py ``FrontendArgs``, entrypoints/openai/ before 0.32;
tests/test_params_table.py checks each against the real build), and so are the CLI's long
spellings where vLLM has the setting. This module is data plus small helpers; it imports
no CLI library and no planner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from hangar.deploy.schema import Deployment

# What a value is; the CLI turns each kind into one click type (hangar.cli.options).
Kind = Literal["text", "count", "length", "fraction", "port", "switch", "choice"]
# Commands that take a parameter: "deploy" is preflight, render and launch.
Command = Literal["plan", "init", "deploy"]
COMMANDS: tuple[Command, ...] = ("plan", "init", "deploy")

# The path segment for "this deployment's [target.<kind>] table".
TARGET_KIND = "<kind>"

_ALL: frozenset[Command] = frozenset(COMMANDS)
_DEPLOY: frozenset[Command] = frozenset({"init", "deploy"})
_RULES: frozenset[Command] = frozenset({"plan", "deploy"})


@dataclass(frozen=True)
class Param:
    """One deployment parameter. ``name`` is also the click dest, the ``Answers`` key of
    ``hangar init`` and the ``ServeOptions`` field."""

    name: str
    path: str | None  # dotted path in hangar.toml; None: not a file field
    flags: tuple[str, ...]  # CLI spellings, the short one first
    help: str
    kind: Kind
    commands: frozenset[Command]
    request: str | None = None  # PlanRequest field
    serve: str | None = None  # vllm serve flag (a switch's "on" spelling)
    vllm_default: object = None  # the value vLLM assumes: not written on its command line
    implies: str | None = None  # a vllm serve switch a set value turns on
    choices: tuple[str, ...] = ()
    help_on: tuple[tuple[Command, str], ...] = ()  # a command's own wording of ``help``

    def help_for(self, command: Command) -> str:
        return dict(self.help_on).get(command, self.help)

    def takes(self, command: Command) -> bool:
        return command in self.commands

    @property
    def section(self) -> str | None:
        """The file's table the parameter lives in (resources, parallel, serve, ...)."""
        return self.path.split(".")[0] if self.path else None

    def file_path(self, target_kind: str) -> tuple[str, ...]:
        """The path's keys for a deployment whose target is ``target_kind``."""
        assert self.path is not None, f"{self.name} is not a deployment-file field"
        return tuple(target_kind if k == TARGET_KIND else k for k in self.path.split("."))


# vLLM's --dtype choices, in its order (vLLM 0.32.0 vllm/config/model.py:99 ModelDType).
DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")

# The order of the rows is the order of the value flags (and then the switches) on the
# `vllm serve` line: rendered scripts and their golden files depend on it.
PARAMS: tuple[Param, ...] = (
    Param("model", "model.id", ("--model",), "Hugging Face id or local directory.", "text",
          frozenset({"init"})),
    Param("engine", "engine", ("--engine",),
          "Engine name (hangar engines list) or interpreter path.", "text", _DEPLOY),
    Param("gpu", "resources.gpu", ("--gpu",),
          "GPU kind from the catalog (H100, a100-40gb, rtx4090...).", "text", _ALL),
    Param("gpus", "resources.gpus", ("--gpus",),
          "GPUs per node (default: 1 with --gpu, all detected otherwise).", "count", _ALL),
    Param("nodes", "resources.nodes", ("--nodes",), "Number of nodes (default 1).", "count", _ALL),
    Param("host", f"target.{TARGET_KIND}.host", ("--host",),
          "Bind address (default 127.0.0.1; Slurm: the node's own IP).", "text", _DEPLOY,
          serve="--host"),
    Param("port", f"target.{TARGET_KIND}.port", ("--port",), "Port to serve on (default 8000).",
          "port", _DEPLOY, serve="--port"),
    Param("served_name", "model.served_name", ("--served-name",),
          "Model name clients use (default: the model id).", "text", _DEPLOY,
          serve="--served-model-name"),
    Param("revision", "model.revision", ("--revision",),
          "Hub revision of the model (branch, tag or commit).", "text", frozenset({"deploy"}),
          serve="--revision"),
    Param("tp", "parallel.tensor", ("--tp", "--tensor-parallel-size"),
          "Tensor parallel size.", "count", _ALL,
          request="tp", serve="--tensor-parallel-size", vllm_default=1,
          help_on=(("init", "Tensor parallel size (default: the plan's pick)."),)),
    Param("pp", "parallel.pipeline", ("--pp", "--pipeline-parallel-size"),
          "Pipeline parallel size.", "count", _ALL,
          request="pp", serve="--pipeline-parallel-size", vllm_default=1),
    Param("dp", "parallel.data", ("--dp", "--data-parallel-size"), "Data parallel size.",
          "count", _RULES, request="dp", serve="--data-parallel-size", vllm_default=1),
    Param("ep", "parallel.expert", ("--ep", "--enable-expert-parallel"), "Expert parallel.",
          "switch", _RULES, request="ep", serve="--enable-expert-parallel"),
    Param("max_model_len", "serve.max_model_len", ("--max-model-len",),
          "Context length (32768, 32k, 128K).", "length", _ALL,
          request="max_model_len", serve="--max-model-len",
          help_on=(("plan", "Context length (32768, 32k, 128K; -1 = auto-fit)."),)),
    Param("gpu_memory_utilization", "serve.gpu_memory_utilization",
          ("--gpu-memory-utilization",),
          "Fraction of GPU memory for vLLM (default 0.92 from 0.20).", "fraction", _ALL,
          request="gpu_memory_utilization", serve="--gpu-memory-utilization"),
    Param("max_num_seqs", "serve.max_num_seqs", ("--max-num-seqs",),
          "Most sequences per scheduler step.", "count", _RULES,
          request="max_num_seqs", serve="--max-num-seqs"),
    # not a file field: a deployment sets it in serve.extra_args (preflight reads it there)
    Param("max_num_batched_tokens", None, ("--max-num-batched-tokens",),
          "Most tokens per scheduler step.", "count", frozenset({"plan"}),
          request="max_num_batched_tokens", serve="--max-num-batched-tokens"),
    Param("dtype", "serve.dtype", ("--dtype",), "Model dtype, as for vllm serve (default auto).",
          "choice", _RULES, request="dtype", serve="--dtype", choices=DTYPES),
    Param("kv_cache_dtype", "serve.kv_cache_dtype", ("--kv-cache-dtype",),
          "KV cache dtype, as for vllm serve (default auto).", "text", _RULES,
          request="kv_cache_dtype", serve="--kv-cache-dtype"),
    Param("quantization", "serve.quantization", ("-q", "--quantization"),
          "Quantization method, as for vllm serve.", "text", _RULES,
          request="quantization", serve="--quantization"),
    Param("tool_call_parser", "serve.tool_call_parser", ("--tool-call-parser",),
          "Tool-call parser (enables --enable-auto-tool-choice).", "text", _DEPLOY,
          serve="--tool-call-parser", implies="--enable-auto-tool-choice",
          help_on=(("init", "Default: the catalog's parser for the model."),)),
    Param("reasoning_parser", "serve.reasoning_parser", ("--reasoning-parser",),
          "Reasoning parser, as for vllm serve.", "text", _DEPLOY, serve="--reasoning-parser",
          help_on=(("init", "Default: the catalog's parser for the model."),)),
    Param("enforce_eager", "serve.enforce_eager", ("--enforce-eager",),
          "No CUDA graphs (no graph memory reserved).", "switch", _RULES,
          request="enforce_eager", serve="--enforce-eager"),
    # No flag on purpose: running the model repo's own code is decided in the file, where
    # it is reviewed, not slipped in on a command line.
    Param("trust_remote_code", "model.trust_remote_code", (), "Run the model repo's code.",
          "switch", frozenset(), serve="--trust-remote-code"),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}
# The parallel layout; the planner chooses it when the request leaves it out.
LAYOUT = ("tp", "pp", "dp", "ep")


def params_for(command: Command) -> tuple[Param, ...]:
    """The parameters ``command`` takes, in table order."""
    return tuple(p for p in PARAMS if p.takes(command))


def file_value(d: Deployment, p: Param) -> Any:
    """The value ``d`` holds for ``p`` (the target's own table for host/port)."""
    node: Any = d
    for key in p.file_path(d.target.kind):
        node = getattr(node, key)
    return node


def _set(data: dict[str, Any], keys: tuple[str, ...], value: object) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


def with_flags(d: Deployment, given: Mapping[str, object], *, source: str) -> Deployment:
    """``d`` with the flags the user gave; ``given`` holds only those (never defaults).

    Validated again as a whole, so a flag that breaks the file (``--tp 4`` on 2 GPUs)
    is one error naming ``source`` and the field.
    """
    from hangar.deploy.io import deployment_from_data

    if not given:
        return d
    data = d.model_dump(mode="json")
    for name, value in given.items():
        _set(data, BY_NAME[name].file_path(d.target.kind), value)
    return deployment_from_data(data, source=source)


def deployment_for(target: str | None, given: Mapping[str, object]) -> Deployment:
    """``hangar preflight/render/launch [FILE | MODEL] [flags]``: the file (default
    ./hangar.toml) with the given flags over it, or a deployment of MODEL built from them."""
    from hangar.deploy.init import Answers, build_deployment
    from hangar.deploy.io import DEFAULT_FILE, load_deployment
    from hangar.errors import UsageError

    if target is None and not Path(DEFAULT_FILE).is_file():
        raise UsageError(f"no deployment file given and no ./{DEFAULT_FILE}", hint="hangar init")
    path = Path(target or DEFAULT_FILE)
    if path.is_file() or path.suffix == ".toml":
        return with_flags(load_deployment(path), given, source=f"{path} + command-line flags")
    source = "command-line flags"
    return with_flags(build_deployment(Answers(model=str(target)), source=source), given,
                      source=source)
