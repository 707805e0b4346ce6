"""add / upgrade / rollback / prune / remove with real uv, real venvs and a local wheel index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hangar import paths
from hangar.engines import inventory, manage, registry
from hangar.engines.errors import (
    EngineExists,
    EngineInUse,
    InstallFailed,
    NothingToRollBack,
    ProjectEngineReadOnly,
    ResolutionFailed,
)
from hangar.engines.model import Engine

from . import fakewheels
from .conftest import Indexes


def _add(name: str, version: str, indexes: Indexes) -> Engine:
    source = manage.source_for(vllm=version, index_url=indexes.stable)
    return manage.add_venv(name, source, base_python=Path(sys.executable))


def _same(a: Engine, b: Engine) -> bool:
    return a.model_dump() == b.model_dump()  # defined_in (where it was read from) aside


def _imported_version(engine: Engine) -> str:
    """Really run the engine: import its vllm in a subprocess."""
    assert engine.python
    code = "import vllm; print(vllm.__version__)"
    return subprocess.run(
        [engine.python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def _venv_dirs(name: str) -> list[Path]:
    folder = manage.engines_root() / name
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def test_add_inspect_without_import_and_cache(indexes: Indexes, import_log: Path) -> None:
    steps: list[str] = []
    source = manage.source_for(vllm="0.20.0", index_url=indexes.stable)
    engine = manage.add_venv(
        "stable",
        source,
        base_python=Path(sys.executable),
        progress=lambda step, _msg: steps.append(step),
    )
    assert steps == list(manage.STEPS)
    assert engine.vllm_version == "0.20.0" and engine.kind == "venv"
    assert registry.load().get("stable").python == engine.python
    assert import_log.read_text().count("vllm") == 1  # verify imported it once, in a subprocess
    import_log.unlink()

    found = inventory.inspect_engine(engine)
    assert not import_log.exists(), "inspect must not import vllm/torch/transformers anywhere"
    assert (found.vllm_version, found.torch_version, found.torch_cuda) == (
        "0.20.0",
        "2.9.0+cu128",
        "12.8",
    )
    assert (
        found.transformers_version == "4.57.0" and "qwen3_5_moe" in found.transformers_model_types
    )
    assert "Qwen3ForCausalLM" in found.architectures
    assert found.tool_parsers == ("hermes", "qwen3_coder")
    assert found.reasoning_parsers == ("deepseek_r1", "qwen3")
    assert "--tensor-parallel-size" in found.flags and "VLLM_PORT" in found.env_vars
    assert found.driver.status in ("no-driver", "ok", "minor-version", "incompatible")
    assert not found.cached and inventory.inspect_engine(engine).cached


def test_add_never_touches_an_existing_engine(indexes: Indexes) -> None:
    first = _add("stable", "0.10.0", indexes)
    with pytest.raises(EngineExists):
        _add("stable", "0.20.0", indexes)
    assert _same(registry.load().get("stable"), first)
    assert _imported_version(first) == "0.10.0"


def test_upgrade_rollback_prune(indexes: Indexes) -> None:
    old = _add("stable", "0.10.0", indexes)
    plan = manage.plan_upgrade("stable", "0.20.0", base_python=Path(sys.executable))
    assert plan.new_version == "0.20.0" and plan.resolution.pins["torch"] == "2.9.0"
    assert _same(registry.load().get("stable"), old)  # a dry run changes nothing

    new = manage.upgrade("stable", "0.20.0", base_python=Path(sys.executable)).engine
    assert new.vllm_version == "0.20.0" and new.previous and new.previous.python == old.python
    assert _imported_version(new) == "0.20.0" and _imported_version(old) == "0.10.0"

    back = manage.rollback("stable")
    assert back.python == old.python and back.vllm_version == "0.10.0"
    again = manage.rollback("stable")  # rolling back the rollback returns to 0.20.0
    assert again.python == new.python

    removed = manage.prune("stable")
    assert removed == [Path(old.venv_dir or "")]
    assert _venv_dirs("stable") == [Path(new.venv_dir or "")]
    with pytest.raises(NothingToRollBack):
        manage.rollback("stable")
    outcomes = [(h.outcome, h.vllm_version) for h in registry.load().history_for("stable")]
    assert ("switched", "0.20.0") in outcomes and ("rolled-back", "0.10.0") in outcomes


def test_unresolvable_version_changes_nothing(indexes: Indexes) -> None:
    old = _add("stable", "0.10.0", indexes)
    with pytest.raises(ResolutionFailed) as err:
        manage.upgrade("stable", "0.22.0", base_python=Path(sys.executable))
    assert "torch" in err.value.reason
    assert _same(registry.load().get("stable"), old)
    assert _venv_dirs("stable") == [Path(old.venv_dir or "")]
    last = registry.load().history_for("stable")[-1]
    assert (last.outcome, last.spec) == ("unresolvable", "vllm==0.22.0")


def test_version_that_fails_to_import_is_rejected(indexes: Indexes) -> None:
    old = _add("stable", "0.10.0", indexes)
    with pytest.raises(InstallFailed) as err:
        manage.upgrade("stable", "0.21.0", base_python=Path(sys.executable))
    assert err.value.step == "verify" and "libcudart.so.13" in err.value.reason
    assert _same(registry.load().get("stable"), old)
    assert _venv_dirs("stable") == [Path(old.venv_dir or "")]
    assert _imported_version(old) == "0.10.0"
    history = registry.load().history_for("stable")
    assert [h.outcome for h in history[-2:]] == ["resolved", "verify-failed"]


_KILL_SCRIPT = """
import os, signal, sys, threading
from pathlib import Path
from hangar.engines import manage

target, delay = sys.argv[1], float(sys.argv[2])

def progress(step, message):
    if step == target:
        if delay:
            threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
        else:
            os.kill(os.getpid(), signal.SIGKILL)

manage.upgrade("stable", "0.20.0", base_python=Path(sys.executable), progress=progress)
"""


@pytest.mark.parametrize(
    ("step", "delay"),
    [
        ("resolve", 0),
        ("create", 0),
        ("install", 0),
        ("install", 0.05),
        ("verify", 0),
        ("switch", 0),
    ],
)
def test_kill_at_each_step_leaves_the_old_engine_working(
    indexes: Indexes, step: str, delay: float
) -> None:
    old = _add("stable", "0.10.0", indexes)
    before = registry.registry_path().read_text()
    proc = subprocess.run(
        [sys.executable, "-c", _KILL_SCRIPT, step, str(delay)],
        capture_output=True,
        text=True,
        check=False,
        env=dict(os.environ),
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    now = registry.load().get("stable")
    assert _same(now, old) and _imported_version(now) == "0.10.0"
    assert (
        registry.registry_path().read_text().split("[[history]]")[0]
        == before.split("[[history]]")[0]
    )
    # Leftovers of the killed build go. An orphaned uv child may still be writing into one
    # for a moment (a SIGKILL does not reach it); prune skips such a dir until uv exits.
    for _ in range(200):
        manage.prune("stable", keep_previous=True)
        if _venv_dirs("stable") == [Path(old.venv_dir or "")]:
            break
        time.sleep(0.05)
    assert _venv_dirs("stable") == [Path(old.venv_dir or "")]


def test_nightly_version_string_is_recorded_verbatim(indexes: Indexes) -> None:
    source = manage.source_for(nightly=True, index_url=indexes.stable)
    assert source.extra_index_urls == (indexes.nightly,) and source.prerelease
    engine = manage.add_venv("nightly", source, base_python=Path(sys.executable))
    assert engine.vllm_version == fakewheels.NIGHTLY_VERSION
    found = inventory.inspect_engine(engine)
    assert found.vllm_version == fakewheels.NIGHTLY_VERSION
    assert "Qwen3_5MoeForConditionalGeneration" in found.architectures
    evaluated = {h.vllm_version for h in registry.load().history_for("nightly")}
    assert evaluated == {fakewheels.NIGHTLY_VERSION}


def test_upgrade_to_nightly(indexes: Indexes) -> None:
    _add("stable", "0.20.0", indexes)
    new = manage.upgrade("stable", "nightly", base_python=Path(sys.executable)).engine
    assert new.vllm_version == fakewheels.NIGHTLY_VERSION and new.spec == "vllm"


def test_remove_refuses_while_a_deployment_uses_it(indexes: Indexes) -> None:
    engine = _add("stable", "0.10.0", indexes)
    deployment = Path.cwd() / "hangar.toml"
    deployment.write_text('version = 1\nengine = "stable"\n[model]\nid = "x"\n')
    with pytest.raises(EngineInUse) as err:
        manage.remove("stable")
    assert str(deployment) in err.value.users
    assert _imported_version(registry.load().get("stable")) == "0.10.0"
    deployment.write_text('version = 1\nengine = "other"\n[model]\nid = "x"\n')
    manage.remove("stable")
    assert "stable" not in registry.load().all()
    assert not Path(engine.venv_dir or "").exists()


def test_deployment_without_engine_line_uses_default(tmp_path: Path) -> None:
    manage.add_image("default", "vllm/vllm-openai:v0.20.0")
    (Path.cwd() / "hangar.toml").write_text('version = 1\n[model]\nid = "x"\n')
    with pytest.raises(EngineInUse):
        manage.remove("default")


def test_python_and_image_engines_and_project_file(indexes: Indexes) -> None:
    stable = _add("stable", "0.20.0", indexes)
    ext = manage.add_python("ext", Path(stable.python or ""))
    assert ext.kind == "python" and ext.vllm_version == "0.20.0"
    img = manage.add_image("qwen35", "vllm/vllm-openai:v0.21.0")
    assert img.vllm_version == "0.21.0"
    (Path.cwd() / "hangar-engines.toml").write_text(
        f'[engines.site]\nkind = "python"\npython = {json.dumps(stable.python)}\n'
        'created = "2026-01-01T00:00:00Z"\nupdated = "2026-01-01T00:00:00Z"\n'
    )
    reg = registry.load()
    assert set(reg.all()) == {"stable", "ext", "qwen35", "site"}
    assert reg.get("site").defined_in == str(Path.cwd() / "hangar-engines.toml")
    with pytest.raises(ProjectEngineReadOnly):
        manage.remove("site")
    with pytest.raises(Exception, match="only upgrades"):
        manage.upgrade("ext", "0.21.0")
    assert paths.config_dir().joinpath("engines.toml").is_file()
