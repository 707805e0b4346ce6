"""vLLM's own requirements (its METADATA ``Requires-Dist``) checked against what the engine's
environment holds, read from dist-info files without importing anything; a torch another
install moved is an error before launch, and the doctor reads the same facts for a run it
launched (host.json -> ``hangar: engine requirement not met`` lines)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hangar.diagnose import diagnose_text
from hangar.diagnose.runs import context_lines
from hangar.preflight.checks.engine import check_engine
from hangar.preflight.checks.inputs import CheckInput
from hangar.preflight.engine import EngineFacts, probe_engine
from hangar.preflight.probe import HostFacts, NvidiaFacts, probe_dir

VLLM_REQUIRES = [
    "torch==2.8.0",
    "transformers<5.20.0,>=4.56.0",
    "numpy",
    'six>=1.16.0; python_version > "3.11"',  # the engine is 3.11: not required
    'librosa; extra == "audio"',  # an extra: not installed on purpose
    "this is not a requirement ;;",  # unreadable: ignored, not evidence
    "pydantic>=2.12",
]


def _venv(root: Path, dists: dict[str, str], requires: list[str]) -> Path:
    site = root / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "venv" / "bin").mkdir()
    python = root / "venv" / "bin" / "python"
    python.symlink_to(sys.executable)
    for name, version in dists.items():
        meta = site / f"{name}-{version}.dist-info" / "METADATA"
        meta.parent.mkdir()
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        if name == "vllm":
            lines += [f"Requires-Dist: {r}" for r in requires]
        meta.write_text("\n".join(lines) + "\n\nlong description\nRequires-Dist: ignored\n")
    return python


def test_unmet_requirements_are_read_from_the_dist_info(tmp_path: Path) -> None:
    dists = {"vllm": "0.10.2", "torch": "2.9.0", "transformers": "4.40.0", "pydantic": "2.12.3"}
    facts = probe_engine(_venv(tmp_path, dists, VLLM_REQUIRES))
    assert [(u.requirement, u.found) for u in facts.unmet] == [
        ("torch==2.8.0", "2.9.0"),
        ("transformers<5.20.0,>=4.56.0", "4.40.0"),
        ("numpy", None),
    ]


def test_a_local_build_label_meets_the_pin(tmp_path: Path) -> None:
    dists = {"vllm": "0.10.2", "torch": "2.8.0+cu128", "numpy": "2.2.0"}
    facts = probe_engine(_venv(tmp_path, dists, ["torch==2.8.0", "numpy"]))
    assert facts.unmet == ()


def test_a_moved_torch_is_an_error_and_the_rest_a_warning(tmp_path: Path) -> None:
    dists = {"vllm": "0.10.2", "torch": "2.9.0", "transformers": "4.40.0", "pydantic": "2.12.3"}
    python = _venv(tmp_path, dists, VLLM_REQUIRES)
    findings = {f.id: f for f in check_engine(_host(tmp_path, probe_engine(python)), CheckInput())}
    pin = findings["host.engine.torch_pin"]
    assert pin.severity == "error"
    assert "torch==2.8.0" in pin.message and "2.9.0" in pin.message
    assert pin.fix is not None and f"uv pip install --python {python} 'torch==2.8.0'" in pin.fix
    rest = findings["host.engine.requirements"]
    assert rest.severity == "warning"
    assert "transformers<5.20.0,>=4.56.0 (found 4.40.0)" in rest.message
    assert "numpy (not installed)" in rest.message


def test_the_doctor_reads_the_recorded_requirements_of_a_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    unmet = [{"requirement": "torch==2.8.0", "name": "torch", "found": "2.9.0"}]
    (run / "host.json").write_text(json.dumps({"engine_unmet": unmet}))
    (run / "launch.json").write_text(json.dumps({"target": "local"}))
    lines = context_lines(run, database=tmp_path / "none.sqlite3")
    assert "hangar: engine requirement not met: torch==2.8.0, found 2.9.0" in lines
    log = "\n".join([*lines, "INFO Starting vLLM", "Aborted (core dumped)"]) + "\n"
    top = diagnose_text(log).top
    assert top is not None
    assert (top.cause, top.signature) == ("extension_abi_mismatch", "recorded_torch_pin_unmet")


def test_a_slurm_run_keeps_its_engines_requirements_but_not_the_submit_hosts_facts(
    tmp_path: Path,
) -> None:
    run = tmp_path / "runs" / "r2"
    run.mkdir(parents=True)
    unmet = [{"requirement": "pydantic>=2.12", "name": "pydantic", "found": "1.10.2"}]
    (run / "host.json").write_text(json.dumps({"engine_unmet": unmet, "nvcc": "12.4"}))
    (run / "launch.json").write_text(json.dumps({"target": "slurm"}))
    lines = context_lines(run, database=tmp_path / "none.sqlite3")
    assert "hangar: engine requirement not met: pydantic>=2.12, found 1.10.2" in lines
    assert not any("nvcc" in line for line in lines)


def test_a_missing_optional_package_alone_names_nothing() -> None:
    # the CPU test engine has no torchaudio: recorded, but not a cause by itself
    log = "hangar: engine requirement not met: torchaudio, not installed\nTraceback (most recent call last):\nKeyError: 'x'\n"
    assert all(c.signature != "recorded_requirement_unmet" for c in diagnose_text(log).causes)


def _host(tmp: Path, engine: EngineFacts) -> HostFacts:
    return HostFacts(
        ulimits=(),
        tmp=probe_dir(tmp),
        run_root=probe_dir(tmp),
        cache_root=probe_dir(tmp),
        stale=(),
        port_in_use=False,
        wsl=False,
        nvcc=None,
        interfaces=(),
        nvidia=NvidiaFacts(available=False, reason="no driver"),
        engine=engine,
        env={},
    )
