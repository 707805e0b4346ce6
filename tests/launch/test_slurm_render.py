"""The Slurm renderer: golden files, shellcheck, quoting enforced, hostile values inert.

Golden files live in ``tests/launch/golden/slurm/<case>/``; regenerate them with
``HANGAR_REGEN_GOLDEN=1 .venv/bin/python -m pytest -q tests/launch/test_slurm_render.py``
and read the diff before committing.

The execution tests run the rendered scripts with real bash and behavioural fakes of
``scontrol`` (node list, KillWait), ``srun`` (it runs the step's command once per node,
concurrently, with that node's SLURMD_NODENAME / SLURM_TMPDIR / SLURM_GPUS_ON_NODE, writes
its --output per node, forwards SIGUSR2 to its tasks and turns its own SIGTERM into
SIGKILL, as srun does) and the engine's interpreter (it records argv and env for vLLM and
Ray, answers the helper's ``ip``, waits for every node's Ray in ``ray-wait``, and runs the
helper's other commands with the real Python). A real Ray head is started by one test;
runs on the real test Slurm cluster are the orchestrator's tests.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hangar.deploy.schema import Deployment
from hangar.launch.targets import slurm_argv as sa
from hangar.launch.targets import slurm_job as sj
from hangar.launch.targets import slurm_render as sr
from hangar.launch.targets import slurm_templates as st
from hangar.launch.targets.base import RenderContext, Rendered
from hangar.preflight.engine import EngineFacts
from hangar.workarounds import Applied

GOLDEN = Path(__file__).parent / "golden" / "slurm"
REGEN = os.environ.get("HANGAR_REGEN_GOLDEN") == "1"
RUN_DIR = Path("/shared/hangar/runs/20261201-120000-abcd")
SECRET = "hf_s3cr3t_value_never_written"


def marker_payloads(marker: Path) -> str:
    return f"$(touch {marker}) `touch {marker}` ; touch {marker} ' \" \\"


def engine(distribution: str = "vllm") -> EngineFacts:
    return EngineFacts(
        python=Path("/opt/engines/vllm-0.32/bin/python"),
        exists=True,
        vllm_version="0.32.0",
        vllm_distribution=distribution,
    )


def context(run_dir: Path = RUN_DIR, applied: Applied | None = None, **kw: Any) -> RenderContext:
    return RenderContext(
        run_id="20261201-120000-abcd",
        run_dir=run_dir,
        engine=kw.pop("engine", engine()),
        engine_cache=Path("/home/u/.cache/hangar/engines/k"),
        applied=applied or Applied(ids=("w1",), env={"VLLM_WORKAROUND": "1"}, args=("--wk",)),
        **kw,
    )


def deployment(slurm: dict[str, Any] | None = None, **fields: Any) -> Deployment:
    data: dict[str, Any] = {
        "name": "tiny",
        "model": {"id": "org/tiny-llama"},
        "target": {"kind": "slurm", "slurm": slurm or {}},
    }
    data.update(fields)
    return Deployment.model_validate(data)


def hostile_text(marker: Path) -> str:
    return f'it\'s a "name" {marker_payloads(marker)} ünïcödé ✓'


def cases(marker: Path) -> dict[str, Deployment]:
    hostile = hostile_text(marker)
    return {
        "one_node": deployment(env={"HF_TOKEN": SECRET}),
        "two_nodes_ray": deployment(
            {"multinode": "ray", "partition": "gpu", "time": "01:00:00"},
            resources={"gpus": 4, "nodes": 2},
            parallel={"tensor": 4, "pipeline": 2},
        ),
        "two_nodes_mp": deployment(
            {"multinode": "mp", "network_interface": "eth0"},
            resources={"gpus": 2, "nodes": 2},
            parallel={"tensor": 4},
        ),
        "typed_gres": deployment({"gres_type": "h100"}, resources={"gpus": 8}),
        "every_field": deployment(
            {
                "partition": "gpu",
                "account": "proj",
                "qos": "normal",
                "time": "1-00:00:00",
                "gres_type": "a100",
                "cpus_per_task": 16,
                "mem": "200G",
                "exclusive": True,
                "constraint": "a100&ib",
                "reservation": "resv1",
                "modules": ["cuda/12.4", "nccl/2.21"],
                "multinode": "ray",
                "network_interface": "ib0",
                "port": 8001,
                "host": "0.0.0.0",
                "ray_port": 6380,
                "ray_head_args": ["--dashboard-port=8265", "--include-dashboard=true"],
                "ray_worker_args": ['--resources={"fast": 1}'],
                "python": "/shared/envs/vllm/bin/python",
                "tmp_root": "/local",
                "sbatch_extra": ["--mail-type=END", "--signal=B:USR1@300"],
                "stop_grace_s": 10,
            },
            resources={"gpus": 4, "nodes": 3},
            parallel={"tensor": 4, "pipeline": 3},
            serve={"max_model_len": 4096, "enforce_eager": True},
            env={"HF_HOME": "/shared/hf", "NCCL_DEBUG": "INFO", "MY_API_KEY": SECRET},
        ),
        "hostile": deployment(
            {"multinode": "ray", "constraint": hostile},
            name=hostile,
            model={"id": f"/models/{hostile}", "served_name": hostile},
            resources={"nodes": 2},
            env={"PLAIN": hostile, "MULTILINE": f"line one\n{hostile}\nline three"},
            serve={"extra_args": [f"--chat-template={hostile}", f"two\nlines {hostile}"]},
        ),
    }


@pytest.fixture(scope="module")
def marker() -> Path:
    # A fixed path so golden files are stable; the tests assert it never appears.
    return Path("/tmp/hangar-slurm-render-marker")


@pytest.fixture(scope="module")
def rendered(marker: Path) -> dict[str, Rendered]:
    return {name: sr.render_slurm(d, context()) for name, d in cases(marker).items()}


def _golden_dump(r: Rendered) -> dict[str, str]:
    out = {name: f.text for name, f in r.files.items() if name != sj.HELPER_FILE}
    meta = {
        "argv": list(r.argv),
        "secret_env": list(r.secret_env),
        "modes": {name: oct(f.mode) for name, f in r.files.items()},
    }
    out["argv.json"] = json.dumps(meta, indent=2, ensure_ascii=False) + "\n"
    return out


@pytest.mark.parametrize(
    "case", ["one_node", "two_nodes_ray", "two_nodes_mp", "typed_gres", "every_field", "hostile"]
)
def test_golden(case: str, rendered: dict[str, Rendered]) -> None:
    files = _golden_dump(rendered[case])
    if case == "one_node":  # the helper does not depend on the deployment: stored once
        files[sj.HELPER_FILE] = rendered[case].files[sj.HELPER_FILE].text
    for name, text in files.items():
        path = GOLDEN / case / name
        if REGEN:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.read_text(encoding="utf-8") == text, f"{path} differs (HANGAR_REGEN_GOLDEN=1)"


def test_helper_is_the_same_for_every_deployment(rendered: dict[str, Rendered]) -> None:
    assert len({r.files[sj.HELPER_FILE].text for r in rendered.values()}) == 1


def test_files_and_argv_shape(rendered: dict[str, Rendered]) -> None:
    r = rendered["one_node"]
    assert list(r.files) == [sj.JOB_FILE, sj.NODE_FILE, sj.HELPER_FILE]
    assert r.argv == (
        "sbatch",
        "--parsable",
        "--export=ALL",
        f"--output={RUN_DIR}/slurm-%j.out",
        f"--chdir={RUN_DIR}",
        f"{RUN_DIR}/job.sbatch",
    )
    assert r.base_url is None and r.served_name == "org/tiny-llama" and r.kind == "slurm"
    assert r.files[sj.JOB_FILE].mode == 0o700 and r.files[sj.HELPER_FILE].mode == 0o600


@pytest.fixture(scope="module")
def shellcheck() -> str:
    found = shutil.which("shellcheck")
    if not found:
        pytest.fail("shellcheck is not installed: apt-get install -y shellcheck")
    return found


@pytest.mark.parametrize(
    "case", ["one_node", "two_nodes_ray", "two_nodes_mp", "typed_gres", "every_field", "hostile"]
)
def test_bash_n_and_shellcheck_clean(
    case: str, rendered: dict[str, Rendered], shellcheck: str, tmp_path: Path
) -> None:
    paths = []
    for name in (sj.JOB_FILE, sj.NODE_FILE):
        path = tmp_path / name
        path.write_text(rendered[case].files[name].text, encoding="utf-8")
        subprocess.run(["bash", "-n", str(path)], check=True)
        paths.append(str(path))
    result = subprocess.run(
        [shellcheck, "-S", "style", "-s", "bash", *paths],
        check=False,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout
    helper = tmp_path / sj.HELPER_FILE
    helper.write_text(rendered[case].files[sj.HELPER_FILE].text, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "py_compile", str(helper)], check=True)


def test_no_secret_anywhere(rendered: dict[str, Rendered]) -> None:
    for r in rendered.values():
        assert SECRET not in " ".join(r.argv) and SECRET not in json.dumps(r.env)
        for f in r.files.values():
            assert SECRET not in f.text
    assert rendered["one_node"].secret_env == ("HF_TOKEN",)
    assert rendered["every_field"].secret_env == ("MY_API_KEY",)


def test_secret_names_from_context_are_not_written(marker: Path) -> None:
    d = deployment(env={"INNOCENT_LOOKING": "value-x"})
    r = sr.render_slurm(d, context(secret_names=("INNOCENT_LOOKING",)))
    assert all("value-x" not in f.text for f in r.files.values())
    assert r.secret_env == ("INNOCENT_LOOKING",)


def test_sbatch_lines_only_simple_values(rendered: dict[str, Rendered]) -> None:
    for r in rendered.values():
        text = r.files[sj.JOB_FILE].text
        for line in text.splitlines():
            if line.startswith("#SBATCH"):
                assert re.fullmatch(r"#SBATCH --[a-z-]+(=[\w@%+=:,./-]+)?", line), line
        assert "--output" not in "".join(ln for ln in text.splitlines() if "#SBATCH" in ln)
    every = rendered["every_field"]
    lines = every.files[sj.JOB_FILE].text
    for option in (
        "--partition=gpu", "--account=proj", "--qos=normal", "--time=1-00:00:00",
        "--gres=gpu:a100:4", "--cpus-per-task=16", "--mem=200G", "--exclusive",
        "--reservation=resv1", "--mail-type=END", "--signal=B:USR1@300", "--nodes=3",
        "--ntasks-per-node=1", "--job-name=hangar-tiny",
    ):  # fmt: skip
        assert f"#SBATCH {option}\n" in lines
    assert "--constraint=a100&ib" in every.argv  # not a shell-safe word: on the argv
    assert "#SBATCH --gpus-per-node=1\n" in rendered["one_node"].files[sj.JOB_FILE].text
    assert "#SBATCH --gres=gpu:h100:8\n" in rendered["typed_gres"].files[sj.JOB_FILE].text


def test_job_name_sanitised(rendered: dict[str, Rendered]) -> None:
    line = next(
        ln for ln in rendered["hostile"].files[sj.JOB_FILE].text.splitlines() if "job-name" in ln
    )
    assert re.fullmatch(r"#SBATCH --job-name=hangar-[A-Za-z0-9._-]+", line)


def test_unquoted_value_cannot_be_rendered() -> None:
    env = st._environment()
    with pytest.raises(st.UnquotedValue):
        env.from_string("echo {{ value }}").render(value="$(touch /tmp/x)")
    with pytest.raises(st.UnquotedValue):
        env.from_string("#SBATCH {{ value | sbatch }}").render(value="--comment=a b")
    with pytest.raises(st.UnquotedValue):
        env.from_string("export {{ value | envname }}=1").render(value="A;B")
    assert env.from_string("x={{ value | q }}").render(value="a b") == "x='a b'"


def test_runtime_sentinels() -> None:
    word = st.q(f"--address={st.runtime('HEAD_IP')}:6379")
    assert word == '--address="${HEAD_IP}":6379'
    assert st.q(st.runtime("VLLM_HOST_IP")) == '"${VLLM_HOST_IP}"'
    with pytest.raises(st.UnquotedValue):
        st.q("\x00PATH\x00")  # not a runtime name
    with pytest.raises(st.UnquotedValue):
        st.q("a\x00b")
    with pytest.raises(ValueError):
        st.runtime("HOME")


def _ray_lines(text: str) -> tuple[str, str]:
    head = next(ln for ln in text.splitlines() if "RAY_START=(" in ln and "--head" in ln)
    worker = next(ln for ln in text.splitlines() if "RAY_START=(" in ln and "--address=" in ln)
    return head, worker


def _flags(line: str) -> set[str]:
    return {w.split("=", 1)[0] for w in re.findall(r"(?<![\w'])--[a-z][a-z-]*=?", line)}


@pytest.mark.parametrize("case", ["two_nodes_ray", "every_field", "hostile"])
def test_ray_head_and_worker_options_never_mixed(case: str, rendered: dict[str, Rendered]) -> None:
    data = st.ray_options()
    head, worker = _ray_lines(rendered[case].files[sj.NODE_FILE].text)
    head_flags, worker_flags = _flags(head), _flags(worker)
    assert not head_flags & set(data["worker_only"]), head
    assert not worker_flags & set(data["head_only"]), worker
    for line, flags in ((head, head_flags), (worker, worker_flags)):
        assert "--block" in flags and "--num-gpus" in flags and "--node-ip-address" in flags
        lo = int(re.search(r"--min-worker-port=(\d+)", line).group(1))  # type: ignore[union-attr]
        hi = int(re.search(r"--max-worker-port=(\d+)", line).group(1))  # type: ignore[union-attr]
        assert not (lo <= 19999 and hi >= 10002)  # off Ray's default worker range
    assert "--include-dashboard=false" in head or case == "every_field"


def test_worker_port_range_avoids_rendered_ports() -> None:
    d = deployment({"multinode": "ray", "port": 20500, "ray_port": 21001}, resources={"nodes": 2})
    assert sa.worker_port_range(d) == (22000, 22999)
    given = deployment(
        {"multinode": "ray", "ray_head_args": ["--dashboard-port=20001"],
         "ray_worker_args": ["--dashboard-agent-listen-port=21002"]},
        resources={"nodes": 2},
    )  # fmt: skip
    assert sa.worker_port_range(given) == (22000, 22999)


@pytest.mark.parametrize(
    ("field", "arg", "needle"),
    [
        ("ray_worker_args", "--dashboard-port=8265", "head-only"),
        ("ray_worker_args", "--include-dashboard=false", "head-only"),
        ("ray_head_args", "--address=1.2.3.4:6379", "worker-only"),
        ("ray_head_args", "--num-gpus=8", "resources.gpus"),
        ("ray_worker_args", "--temp-dir=/tmp/x", "set by Hangar"),
    ],
)
def test_misplaced_ray_args_refused(field: str, arg: str, needle: str) -> None:
    d = deployment({"multinode": "ray", field: [arg]}, resources={"nodes": 2})
    with pytest.raises(st.RenderError, match=needle) as err:
        sr.render_slurm(d, context())
    assert f"target.slurm.{field}" in str(err.value)


@pytest.mark.parametrize("roles", [("head",), ("worker",), ("head", "worker")])
def test_user_object_store_size(roles: tuple[str, ...], shellcheck: str, tmp_path: Path) -> None:
    d = deployment(
        {
            "multinode": "ray",
            **{f"ray_{r}_args": ["--object-store-memory=1000000000"] for r in roles},
        },
        resources={"nodes": 2},
    )
    text = sr.render_slurm(d, context()).files[sj.NODE_FILE].text
    assert ("OBJECT_STORE_BYTES=$(" in text) == (len(roles) == 1)
    path = tmp_path / "node.sh"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run([shellcheck, "-S", "style", str(path)], check=False, capture_output=True)
    assert done.returncode == 0, done.stdout


def test_mp_refused_without_the_vllm_cli() -> None:
    d = deployment({"multinode": "mp"}, resources={"nodes": 2})
    with pytest.raises(st.RenderError, match="--headless"):
        sr.render_slurm(d, context(engine=engine("vllm-cpu")))


def test_mp_ranks(rendered: dict[str, Rendered]) -> None:
    text = rendered["two_nodes_mp"].files[sj.NODE_FILE].text
    rank0 = next(ln for ln in text.splitlines() if ln.strip().startswith("0) SERVE=("))
    rank1 = next(ln for ln in text.splitlines() if ln.strip().startswith("1) SERVE=("))
    assert "--headless" not in rank0 and "--port 8000" in rank0
    assert "--headless" in rank1 and "--port" not in rank1
    for line in (rank0, rank1):
        assert '--master-addr "${HANGAR_HEAD_IP}" --master-port 29501' in line
        assert "--distributed-executor-backend mp --nnodes 2" in line
    job = rendered["two_nodes_mp"].files[sj.JOB_FILE].text
    assert "--kill-on-bad-exit=1" in job and "--wait=30" in job


def test_single_node_and_local_model_env(marker: Path) -> None:
    d = deployment(model={"id": "/shared/models/tiny"}, parallel={"tensor": 2},
                   resources={"gpus": 2})  # fmt: skip
    text = sr.render_slurm(d, context()).files[sj.NODE_FILE].text
    assert "export HF_HUB_OFFLINE=1\n" in text
    assert "--tensor-parallel-size 2" in text and "--distributed-executor-backend mp" in text
    hub = sr.render_slurm(deployment(), context()).files[sj.NODE_FILE].text
    assert "HF_HUB_OFFLINE" not in hub


def test_user_env_wins_over_interface_and_workarounds() -> None:
    d = deployment(
        {"network_interface": "ib0"},
        env={"NCCL_SOCKET_IFNAME": "mlx5", "VLLM_WORKAROUND": "user", "VLLM_HOST_IP": "10.1.1.1"},
    )
    text = sr.render_slurm(d, context()).files[sj.NODE_FILE].text
    exports = dict(re.findall(r"^export (\w+)=(.*)$", text, re.MULTILINE))
    assert exports["NCCL_SOCKET_IFNAME"] == "mlx5" and exports["GLOO_SOCKET_IFNAME"] == "ib0"
    assert exports["VLLM_WORKAROUND"] == "user" and exports["VLLM_HOST_IP"] == "10.1.1.1"
    assert "VLLM_HOST_IP=$(" not in text  # the user's value is not recomputed


@pytest.mark.parametrize("model", ["./models/tiny", "~/models/tiny", "../tiny"])
def test_relative_model_path_refused(model: str) -> None:
    with pytest.raises(st.RenderError, match="relative path"):
        sr.render_slurm(deployment(model={"id": model}), context())


def test_cpu_distribution_entrypoint() -> None:
    r = sr.render_slurm(deployment(), context(engine=engine("vllm-cpu")))
    assert (
        "-m vllm.entrypoints.openai.api_server --model org/tiny-llama" in r.files[sj.NODE_FILE].text
    )


def test_render_is_pure(marker: Path) -> None:
    d = cases(marker)["every_field"]
    assert sr.render_slurm(d, context()) == sr.render_slurm(d, context())


# --- the in-job helper -------------------------------------------------------------------


@pytest.fixture(scope="module")
def helper(rendered: dict[str, Rendered], tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("helper") / sj.HELPER_FILE
    path.write_text(rendered["one_node"].files[sj.HELPER_FILE].text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("hangar_node_helper", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_helper_object_store_size(helper: types.ModuleType) -> None:
    gib = 1024**3
    assert helper.object_store_bytes(4 * gib, 100 * gib, 64 * gib) == 4 * gib
    assert helper.object_store_bytes(4 * gib, 10 * gib, 64 * gib) == 3 * gib
    assert helper.object_store_bytes(4 * gib, 100 * gib, 2 * gib) == int(2 * gib * 0.95)
    assert helper.object_store_bytes(4 * gib, None, 1024) == helper.RAY_MIN_OBJECT_STORE


def test_helper_endpoint_atomic(helper: types.ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "endpoint.json"
    helper.write_endpoint(str(out), "10.0.0.1", "8000", "n1", "42")
    assert json.loads(out.read_text()) == {"host": "10.0.0.1", "port": 8000, "node": "n1",
                                           "job_id": "42"}  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["endpoint.json"]


def test_helper_ip(helper: types.ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert helper.node_ip("lo", "") == "127.0.0.1"  # an interface named explicitly
    assert helper.wanted_interfaces("^docker,lo") == ["lo"]
    with pytest.raises(SystemExit):
        helper.node_ip("nosuchif9", "")
    assert "network_interface" in capsys.readouterr().err


# --- executing the rendered scripts with fake Slurm commands ---------------------------

FAKE_SCONTROL = """\
import os, sys
if sys.argv[1:] == ["show", "config"]:
    print("KillWait                = 5 sec")
    sys.exit(0)
assert sys.argv[1:3] == ["show", "hostnames"], sys.argv
print("\\n".join(sys.argv[3].split(",")))
"""

FAKE_SRUN = """\
import json, os, signal, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"] + "/srun.jsonl", "a") as f:
    f.write(json.dumps(args) + "\\n")
opts, i = {}, 0
while args[i].startswith("-"):
    key, _, value = args[i].partition("=")
    if key == "-w":
        value, i = args[i + 1], i + 1
    opts[key] = value
    i += 1
command = args[i:]
nodes = opts["-w"].split(",") if "-w" in opts else os.environ["FAKE_NODES"].split(",")
procs = []
for rank, node in enumerate(nodes):
    tmp = os.path.join(os.environ["FAKE_TMP"], node)
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, SLURMD_NODENAME=node, SLURM_NODEID=str(rank), SLURM_TMPDIR=tmp,
               SLURM_GPUS_ON_NODE=os.environ["FAKE_GPUS"])
    out = open(opts["--output"].replace("%N", node), "a")
    procs.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))
# Like srun: SIGUSR2 is forwarded to the tasks, its own SIGTERM kills them (SIGKILL).
signal.signal(signal.SIGUSR2, lambda *_: [p.send_signal(signal.SIGUSR2) for p in procs])
signal.signal(signal.SIGTERM, lambda *_: [p.send_signal(signal.SIGKILL) for p in procs])
sys.exit(max(p.wait() for p in procs))
"""

FAKE_PYTHON = """\
import json, os, signal, sys, time
args = sys.argv[1:]
if len(args) > 1 and args[0].endswith("hangar_node.py") and args[1] == "ip":
    print(json.loads(os.environ["FAKE_IPS"])[os.environ["SLURMD_NODENAME"]])
    sys.exit(0)
if len(args) > 1 and args[0].endswith("hangar_node.py") and args[1] != "ray-wait":
    os.execv(os.environ["REAL_PYTHON"], [os.environ["REAL_PYTHON"], *args])
keep = json.loads(os.environ["FAKE_KEEP_ENV"])
record = {"node": os.environ.get("SLURMD_NODENAME"), "argv": args,
          "env": {k: os.environ.get(k) for k in keep}}
with open(os.environ["FAKE_LOG"] + "/python.jsonl", "a") as f:
    f.write(json.dumps(record) + "\\n")
if args[1:2] == ["ray-wait"]:  # like the real gate: until every node's Ray has started
    nodes = int(next(a for a in args if a.startswith("--nodes=")).split("=")[1])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(os.environ["FAKE_LOG"] + "/python.jsonl") as f:
            if sum('"ray.scripts.scripts"' in line for line in f) >= nodes:
                sys.exit(0)
        time.sleep(0.1)
    sys.exit(1)
if args[:3] == ["-m", "ray.scripts.scripts", "start"]:  # --block: until signalled
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.1)
    sys.exit(3)
"""

KEEP_ENV = [
    "PLAIN", "MULTILINE", "HANGAR_RUN_ID", "VLLM_HOST_IP", "RAY_ADDRESS", "TMPDIR", "RAY_TMPDIR",
    "VLLM_CACHE_ROOT", "HF_TOKEN", "VLLM_WORKAROUND", "RAY_AUTH_MODE", "HF_HUB_OFFLINE",
]  # fmt: skip
NODES = {"n1": "10.9.0.1", "n2": "10.9.0.2"}


def _fake_bin(root: Path) -> Path:
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name, body in (("scontrol", FAKE_SCONTROL), ("srun", FAKE_SRUN), ("python", FAKE_PYTHON)):
        path = bin_dir / name
        path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
        path.chmod(0o755)
    return bin_dir


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # Ray's temp path limit (36 characters) rules out pytest's long tmp_path as tmp root.
    path = Path(tempfile.mkdtemp(prefix="hgt", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def with_python(d: Deployment, python: Path) -> Deployment:
    """The deployment with target.slurm.python set (the compute nodes' interpreter)."""
    data = d.model_dump(mode="json")
    data["target"]["slurm"]["python"] = str(python)
    return Deployment.model_validate(data)


def _run_job(d: Deployment, root: Path, short_tmp: Path, marker: Path) -> dict[str, Any]:
    # A run dir name cannot hold "/": its payload creates a relative file, looked for below.
    run_dir = root / "run dir $(touch hgmark) `touch hgmark` ; touch hgmark 'q' \"dq\" ü"
    run_dir.mkdir()
    bin_dir = _fake_bin(root)
    d = with_python(d, bin_dir / "python")
    r = sr.render_slurm(d, context(run_dir=run_dir))
    for name, f in r.files.items():
        (run_dir / name).write_text(f.text, encoding="utf-8")
    logs = root / "logs"
    logs.mkdir()
    nodes = list(NODES)[: d.resources.nodes]
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(root),
        "SLURM_JOB_NODELIST": ",".join(nodes),
        "SLURM_JOB_ID": "42",
        "SLURMD_NODENAME": nodes[0],
        "FAKE_NODES": ",".join(nodes),
        "FAKE_IPS": json.dumps(NODES),
        "FAKE_TMP": str(short_tmp),
        "FAKE_GPUS": str(d.resources.gpus),
        "FAKE_LOG": str(logs),
        "FAKE_KEEP_ENV": json.dumps(KEEP_ENV),
        "REAL_PYTHON": sys.executable,
        "HF_TOKEN": SECRET,  # as the submitting shell passes it (sbatch --export=ALL)
    }
    done = subprocess.run(
        ["bash", str(run_dir / sj.JOB_FILE)], check=False, cwd=run_dir, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    node_logs = {p.name: p.read_text() for p in run_dir.glob("node-*.log")}
    assert done.returncode == 0, (done.stdout, done.stderr, node_logs)
    records = [json.loads(ln) for ln in (logs / "python.jsonl").read_text().splitlines()]
    return {
        "rendered": r, "run_dir": run_dir, "records": records, "stdout": done.stdout,
        "node_logs": node_logs, "srun": (logs / "srun.jsonl").read_text().splitlines(),
    }  # fmt: skip


def _expand(argv: list[str], node: str) -> list[str]:
    values = {"HANGAR_HEAD_IP": NODES["n1"], "HEAD_IP": NODES["n1"], "VLLM_HOST_IP": NODES[node]}
    return [re.sub("\x00([A-Z_]+)\x00", lambda m: values.get(m[1], "\x00"), a) for a in argv]


def _matches(expected: list[str], got: list[str]) -> bool:
    # \x00 stands for a value only the job knows (object-store size, Ray's PID): digits.
    return len(expected) == len(got) and all(
        re.fullmatch(re.escape(e).replace("\x00", r"\d+"), g) for e, g in zip(expected, got)
    )


def _assert_common(result: dict[str, Any], d: Deployment, marker: Path, short_tmp: Path) -> None:
    assert not marker.exists(), "a payload ran"
    assert not list(result["run_dir"].parent.rglob("hgmark")), "a payload ran"
    endpoint = json.loads((result["run_dir"] / "endpoint.json").read_text())
    assert endpoint == {"host": NODES["n1"], "port": d.target.port, "node": "n1", "job_id": "42"}
    for name, text in result["node_logs"].items():
        assert re.search(r"^hangar: ulimit -v \S+ -n \d+ on n\d$", text, re.MULTILINE), text
    assert not [p for p in short_tmp.rglob("hg42.*")], "a node temp dir was left behind"
    for rec in result["records"]:
        env = rec["env"]
        assert env["HANGAR_RUN_ID"] == "20261201-120000-abcd"
        assert env["VLLM_HOST_IP"] == NODES[rec["node"]]
        assert env["HF_TOKEN"] == SECRET  # reached the job through the environment only
        assert env["TMPDIR"] == env["RAY_TMPDIR"] == f"{short_tmp}/{rec['node']}/hg42.0"
        for name in ("PLAIN", "MULTILINE"):
            assert env[name] == d.env.get(name)


def test_execute_hostile_ray_job(tmp_path: Path, short_tmp: Path, marker: Path) -> None:
    d = cases(marker)["hostile"]
    result = _run_job(d, tmp_path, short_tmp, marker)
    _assert_common(result, d, marker, short_tmp)
    ctx = result["rendered"]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for rec in result["records"]:
        kind = "ray" if rec["argv"][:2] == ["-m", "ray.scripts.scripts"] else "vllm"
        kind = "gate" if rec["argv"][1:2] == ["ray-wait"] else kind
        by_kind.setdefault(kind, []).append(rec)
    run_ctx = context(run_dir=result["run_dir"])
    dd = with_python(d, tmp_path / "bin" / "python")
    head = next(r for r in by_kind["ray"] if r["node"] == "n1")
    worker = next(r for r in by_kind["ray"] if r["node"] == "n2")
    assert _matches(_expand(sa.ray_head_argv(dd, run_ctx), "n1")[1:], head["argv"])
    assert _matches(_expand(sa.ray_worker_argv(dd, run_ctx), "n2")[1:], worker["argv"])
    (gate,) = by_kind["gate"]
    assert gate["node"] == "n1"
    assert _matches(_expand(sa.ray_gate_argv(dd, run_ctx), "n1")[1:], gate["argv"])
    (serve,) = by_kind["vllm"]
    assert serve["node"] == "n1" and serve["env"]["RAY_ADDRESS"] == f"{NODES['n1']}:6379"
    assert serve["argv"] == _expand(sa.serve_argv(dd, run_ctx, backend="ray"), "n1")[1:]
    assert d.model.id in serve["argv"] and f"--chat-template={d.name}" in serve["argv"]
    assert serve["env"]["RAY_AUTH_MODE"] == "disabled"
    assert ctx.argv[-1] == str(result["run_dir"] / "job.sbatch")


def test_execute_mp_job(tmp_path: Path, short_tmp: Path, marker: Path) -> None:
    d = cases(marker)["two_nodes_mp"].model_copy(
        update={"env": {"PLAIN": hostile_text(marker), "MULTILINE": "a\nb $(touch x)"}}
    )
    result = _run_job(d, tmp_path, short_tmp, marker)
    _assert_common(result, d, marker, short_tmp)
    dd = with_python(d, tmp_path / "bin" / "python")
    expected = sa.mp_rank_argvs(dd, context(run_dir=result["run_dir"]))
    got = {rec["node"]: rec["argv"] for rec in result["records"]}
    assert got == {"n1": _expand(expected[0], "n1")[1:], "n2": _expand(expected[1], "n2")[1:]}
    (srun,) = result["srun"]
    assert "--kill-on-bad-exit=1" in srun and "--wait=30" in srun


def test_execute_single_node_job(tmp_path: Path, short_tmp: Path, marker: Path) -> None:
    d = cases(marker)["one_node"].model_copy(
        update={"env": {"PLAIN": hostile_text(marker), "HF_TOKEN": SECRET}}
    )
    result = _run_job(d, tmp_path, short_tmp, marker)
    _assert_common(result, d, marker, short_tmp)
    (serve,) = result["records"]
    assert serve["argv"][:4] == ["-m", "vllm.entrypoints.cli.main", "serve", "org/tiny-llama"]
    assert serve["argv"][-1] == "--wk" and "--host" in serve["argv"]


# --- the readiness gate against a real Ray head ------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_real_ray_accepts_the_head_line_and_the_gate_counts(
    tmp_path: Path, short_tmp: Path, helper: types.ModuleType
) -> None:
    """The rendered head options start a real Ray 2.60 head (fake GPUs, as Slurm GRES would
    give), and the gate passes for what registered and names what is missing otherwise."""
    ray_env = pytest.importorskip("support.ray_env")
    python = ray_env.vllm_ray_python()
    agent_port = _free_port()
    d = deployment(
        {"multinode": "ray", "ray_port": _free_port(),
         "ray_head_args": [f"--dashboard-agent-listen-port={agent_port}"]},
        resources={"nodes": 2, "gpus": 2},
    )  # fmt: skip
    d = with_python(d, python)
    ctx = context(run_dir=tmp_path)
    (tmp_path / sj.HELPER_FILE).write_text(
        sr.render_slurm(d, ctx).files[sj.HELPER_FILE].text, encoding="utf-8"
    )
    ip = helper.node_ip("", "")
    values = {"VLLM_HOST_IP": ip, "HANGAR_HEAD_IP": ip, "OBJECT_STORE_BYTES": str(128 * 1024**2)}
    head_argv = [re.sub("\x00([A-Z_]+)\x00", lambda m: values[m[1]], a)
                 for a in sa.ray_head_argv(d, ctx)]  # fmt: skip
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RAY_TMPDIR": str(short_tmp),
        "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
    }  # fmt: skip
    log = (tmp_path / "head.log").open("w")
    head = subprocess.Popen(
        head_argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()  # the child holds its own copy
    try:

        def gate(nodes: int, timeout: int) -> subprocess.CompletedProcess[str]:
            values.update(RAY_PID=str(head.pid))
            argv = [re.sub("\x00([A-Z_]+)\x00", lambda m: values[m[1]], a)
                    for a in sa.ray_gate_argv(d, ctx)]  # fmt: skip
            argv = [a for a in argv if not a.startswith(("--nodes=", "--timeout=", "--gpus="))]
            argv += [f"--nodes={nodes}", f"--gpus={2 * nodes}", f"--timeout={timeout}"]
            return subprocess.run(
                argv, env=env, check=False, capture_output=True, text=True, timeout=timeout + 60
            )

        ready = gate(1, 120)
        assert ready.returncode == 0, (ready.stderr, (tmp_path / "head.log").read_text())
        assert f"hangar: Ray ready: 1 nodes, 2 GPUs: {ip} (2 GPU)" in ready.stdout
        missing = gate(2, 3)
        assert missing.returncode == 1
        assert "1 of 2 nodes alive, 2 of 4 GPUs" in missing.stderr
        assert "missing: 1 node(s), 2 GPU(s)" in missing.stderr
    finally:
        head.terminate()  # ray start --block stops its own children on SIGTERM
        try:
            head.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)  # the session this test started


_QUOTE_HOSTILE = [
    "x \\",
    "x \\\\",
    "\\",
    "\\'",
    "a\\$b",
    "a\\`b`",
    "it's \\",
    "$(touch /tmp/hangar-q-marker) `id` \\",
    "two\nlines \\",
    "'\"\\\n$HOME\\",
    "plain",
    "",
]


@pytest.mark.parametrize("value", _QUOTE_HOSTILE)
def test_q_round_trips_through_bash_and_passes_shellcheck(
    value: str, shellcheck: str, tmp_path: Path
) -> None:
    """Issue 13 review: a value ending with a backslash made shellcheck report SC1003."""
    script = tmp_path / "q.sh"
    script.write_text(f"#!/bin/bash\nprintf '%s' {st.q(value)}\n", encoding="utf-8")
    done = subprocess.run(["bash", str(script)], check=True, capture_output=True)
    assert done.stdout.decode() == value
    checked = subprocess.run(
        [shellcheck, "-S", "style", str(script)], check=False, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout


def test_served_name_ending_with_a_backslash_renders_shellcheck_clean(
    shellcheck: str, tmp_path: Path
) -> None:
    d = deployment(
        {"multinode": "mp"},
        model={"id": "org/tiny-llama", "served_name": "x \\"},
        resources={"gpus": 2, "nodes": 2},
        parallel={"tensor": 4},
    )
    files = sr.render_slurm(d, context()).files
    paths = []
    for name in (sj.NODE_FILE, sj.JOB_FILE):
        path = tmp_path / name
        path.write_text(files[name].text, encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run(
        [shellcheck, "-S", "style", "-s", "bash", *paths],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout
