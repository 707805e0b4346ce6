"""Hostile input through the real CLI (a subprocess per command): one clear line, the
right exit code, no traceback, nothing half-written and no secret on disk.

Each test pins one issue found by running ``hangar`` against bad files, odd names and
secrets; the issue is named in the test's docstring.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.launch.conftest import make_fake_engine

LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "vocab_size": 32000,
    "intermediate_size": 11008,
    "torch_dtype": "bfloat16",
}


def hangar(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``hangar ARGS`` in a subprocess; HANGAR_HOME comes from the suite's autouse fixture."""
    return subprocess.run(
        [sys.executable, "-m", "hangar", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def expect_error(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """Exit ``code``, no traceback or internal error, and every needle in stderr."""
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err and "internal error" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def model_dir(root: Path, config_text: str, name: str = "model") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(config_text)
    return folder


def llama_dir(root: Path, name: str = "model") -> Path:
    return model_dir(root, json.dumps(LLAMA), name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------ plan / models


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_plan_refuses_non_finite_memory_utilization(value: str) -> None:
    """plan --gpu-memory-utilization nan crashed with 'cannot convert float NaN to integer'."""
    proc = hangar("plan", "Qwen/Qwen3-8B", "--gpu", "H100", "--gpu-memory-utilization", value)
    expect_error(proc, 2, "--gpu-memory-utilization", "not a finite number")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", None),  # RecursionError
        (json.dumps(LLAMA).replace("4096", "NaN", 1), "hidden_size"),  # ValueError
        (json.dumps(LLAMA).replace("4096", "1e400", 1), "hidden_size"),  # OverflowError
        (json.dumps(LLAMA).replace("32000", "1e300", 1), "vocab_size"),  # float overflow
    ],
    ids=["deep-nesting", "nan", "infinity", "huge"],
)
def test_config_json_numbers_and_nesting_name_the_file(
    tmp_path: Path, text: str, field: str | None
) -> None:
    """A config.json nested 100k deep or holding NaN / 1e400 was an internal error (exit 3)."""
    folder = model_dir(tmp_path, text)
    for command in (["models", "show", str(folder)], ["plan", str(folder), "--gpu", "H100"]):
        err = expect_error(hangar(*command), 1, f"{folder}/config.json")
        if field:
            assert f"field '{field}'" in err


def test_catalog_configs_with_infinity_in_lists_still_load() -> None:
    """The finite-number check leaves lists alone: Nemotron-H's time_step_limit holds Infinity."""
    proc = hangar("models", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert any("Nemotron-H" in row["id"] for row in json.loads(proc.stdout))


def test_empty_model_id_is_not_the_current_directory() -> None:
    """plan '' resolved to '.' and complained about ./config.json."""
    expect_error(hangar("plan", "", "--gpu", "H100"), 1, "the model is empty")


def test_markup_like_names_are_printed_as_text(tmp_path: Path) -> None:
    """A model directory named '[/]x' crashed models show / plan / support with a MarkupError,
    and '--dtype [red]x' vanished from plan's printed launch command."""
    folder = llama_dir(tmp_path, "[/]x")
    shown = hangar("models", "show", str(folder))
    assert shown.returncode == 0 and f"{folder}" in shown.stdout, shown.stderr
    planned = hangar("plan", str(folder), "--gpu", "H100", "--kv-cache-dtype", "[red]x")
    assert "[red]x" in planned.stdout and "[mha]" in planned.stdout, planned.stderr
    # --dtype is a closed choice now: a markup-looking value is a usage error, not echoed
    assert hangar("plan", str(folder), "--gpu", "H100", "--dtype", "[red]x").returncode == 2
    support = hangar("support", str(folder))
    assert support.returncode == 0 and "[/]x" in support.stdout, support.stderr


# ------------------------------------------------------------------ deployment files


def test_binary_deployment_file_names_the_file(tmp_path: Path) -> None:
    """A non-UTF-8 hangar.toml was 'internal error: UnicodeDecodeError' in preflight and
    workarounds check."""
    bad = tmp_path / "hangar.toml"
    bad.write_bytes(b"\xa1\xff\x00binary" * 50)
    expect_error(hangar("preflight", str(bad)), 1, f"{bad}: not a text file")
    expect_error(hangar("workarounds", "check", str(bad)), 1, f"{bad}: not a text file")


def test_layout_flags_that_do_not_fit_are_one_line(tmp_path: Path) -> None:
    """--tp 4 on one GPU was a raw pydantic ValidationError (exit 3); init wrote nothing
    then and must still write nothing."""
    expect_error(
        hangar("preflight", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "4"),
        2,
        "command-line flags: parallel layout needs 4 GPUs",
    )
    out = tmp_path / "hangar.toml"
    proc = hangar(
        "init",
        "--no-input",
        "--model",
        "Qwen/Qwen3-8B",
        "--gpu",
        "H100",
        "--tp",
        "4",
        "-o",
        str(out),
    )
    err = expect_error(proc, 2, "parallel layout needs 4 GPUs")
    assert "Value error" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('[model]\nid = "m"\nserved_name = "a\\u0000b"\n', "model.served_name"),
        ('name = "two\\nlines"\n[model]\nid = "m"\n', "name"),
        ('[model]\nid = "m"\n[env]\nFOO = "a\\u0000b"\n', "env"),
        ('[model]\nid = "m"\n[target.local]\nhost = "127.0.0.1\\n"\n', "target.local.host"),
        ('[model]\nid = "m"\n[target.local]\nport = true\n', "target.local.port"),
        (
            '[model]\nid = "m"\n[serve]\ngpu_memory_utilization = nan\n',
            "serve.gpu_memory_utilization",
        ),
        (
            '[model]\nid = "m"\n[target.local]\nready_timeout_s = inf\n',
            "target.local.ready_timeout_s",
        ),
    ],
    ids=["nul-argv", "newline-name", "nul-env", "newline-host", "bool-port", "nan", "inf"],
)
def test_deployment_values_the_kernel_or_a_status_line_cannot_take(
    tmp_path: Path, body: str, field: str
) -> None:
    """NUL in served_name/env crashed launch at Popen ('embedded null byte') after recording
    a run; a newline in name broke status lines; port = true became port 1."""
    file = tmp_path / "d.toml"
    file.write_text(body)
    expect_error(hangar("preflight", str(file)), 1, f"{file}: field '{field}'")


@pytest.mark.parametrize("args", [["--api-key", "sk-SECRET"], ["--hf-token=hf_SECRET"]])
def test_secret_flags_are_refused_in_extra_args(tmp_path: Path, args: list[str]) -> None:
    """extra_args = ["--api-key", "sk-..."] reached launch.json, the runs store, the
    deployment record, ps and vLLM's own 'non-default args' log line."""
    file = tmp_path / "d.toml"
    file.write_text(f'[model]\nid = "m"\n[serve]\nextra_args = {json.dumps(args)}\n')
    err = expect_error(hangar("preflight", str(file)), 1, "field 'serve.extra_args'")
    assert "SECRET" not in err and ("VLLM_API_KEY" in err or "HF_TOKEN" in err)


def test_flags_that_only_look_like_secrets_are_kept(tmp_path: Path) -> None:
    file = tmp_path / "d.toml"
    args = [
        "--tokenizer", "t", "--max-num-batched-tokens", "8192", "--ssl-keyfile", "/k",
        "--return-tokens-as-token-ids", "--hf-token",  # switches; the last uses the cached login
    ]  # fmt: skip
    file.write_text(f'[model]\nid = "m"\n[serve]\nextra_args = {json.dumps(args)}\n')
    proc = hangar("preflight", str(file), "--json")
    assert "extra_args" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["findings"]


def test_unknown_gpu_in_a_deployment_names_the_field(tmp_path: Path) -> None:
    file = tmp_path / "d.toml"
    file.write_text('[model]\nid = "m"\n[resources]\ngpu = "nope"\n')
    expect_error(hangar("preflight", str(file)), 1, "resources.gpu", "unknown GPU 'nope'")


# ------------------------------------------------------------------ engines registry


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("engines = [1]\n", "field 'engines'"),
        ('engines = "x"\n', "field 'engines'"),
        ("[engines]\nfoo = 1\n", "field 'engines.foo'"),
        ("history = 5\n", "field 'history'"),
        (
            '[engines.x]\nname = "y"\nkind = "python"\npython = "/p"\ncreated = "t"\nupdated = "t"\n',
            "field 'engines.x.name'",
        ),
    ],
    ids=["engines-list", "engines-string", "entry-int", "history-int", "name-mismatch"],
)
def test_engines_toml_of_the_wrong_shape(hangar_home: Path, body: str, needle: str) -> None:
    """A registry whose tables are lists/strings/ints was an AttributeError/TypeError (exit 3);
    an entry's name differing from its key silently renamed the engine."""
    registry = hangar_home / "config" / "engines.toml"
    registry.parent.mkdir(parents=True)
    registry.write_text(body)
    for command in (["engines", "list"], ["engines", "inspect", "x"]):
        expect_error(hangar(*command), 1, f"{registry}: ", needle)


def test_unreadable_registry_files(hangar_home: Path, tmp_path: Path) -> None:
    """A binary engines.toml / hangar-engines.toml (UnicodeDecodeError) or a directory in its
    place (IsADirectoryError) was an internal error."""
    registry = hangar_home / "config" / "engines.toml"
    registry.mkdir(parents=True)
    expect_error(hangar("engines", "list"), 1, f"{registry}: cannot read")
    registry.rmdir()
    registry.write_bytes(b"\xee\xff\x00" * 100)
    expect_error(hangar("engines", "list"), 1, f"{registry}: not a text file")
    registry.unlink()
    project = tmp_path / "hangar-engines.toml"
    project.write_bytes(b"\xbd\xff\x00" * 100)
    expect_error(hangar("engines", "list", cwd=tmp_path), 1, f"{project}: not a text file")


def test_engines_add_refuses_hostile_image_and_names(tmp_path: Path, hangar_home: Path) -> None:
    """--image 'bad image $(touch X)' was registered as is; a name with a final newline
    passed the name check ('$' matches before a trailing newline)."""
    marker = tmp_path / "pwned"
    for image in (f"bad image $(touch {marker})", "reg/[/]:x", "x;rm -rf /", "vllm\n"):
        expect_error(hangar("engines", "add", "img", "--image", image), 1, "field '--image'")
    expect_error(
        hangar("engines", "add", "stable\n", "--python", sys.executable), 2, "field 'NAME'"
    )
    assert not marker.exists()
    assert not (hangar_home / "config" / "engines.toml").exists()
    ok = hangar("engines", "add", "img", "--image", "vllm/vllm-openai:v0.33.0")
    assert ok.returncode == 0 and "vLLM 0.33.0" in ok.stdout, ok.stderr


def test_engines_list_prints_markup_like_paths(tmp_path: Path) -> None:
    """An interpreter path holding '[/]' crashed `engines list` with a MarkupError."""
    odd = tmp_path / "[/]env" / "bin"
    odd.mkdir(parents=True)
    (odd / "python").symlink_to(sys.executable)
    added = hangar("engines", "add", "odd", "--python", str(odd / "python"))
    assert added.returncode == 0, added.stderr
    listed = hangar("engines", "list", env={"COLUMNS": "400"})  # the whole path in its cell
    assert listed.returncode == 0 and "[/]env" in listed.stdout, listed.stderr


# ------------------------------------------------------------------ runs and evals store


def _record_run(run_id: str, log: Path) -> None:
    """One ended run in the store, as launch leaves it (no process behind it)."""
    from hangar.launch.runs import open_store
    from hangar.store.runs import RunRecord, insert_run

    log.write_text("INFO the log of run\n")
    insert_run(
        open_store(),
        RunRecord(
            id=run_id,
            label="m",
            base_url="http://127.0.0.1:1",
            log_path=str(log),
            run_dir=str(log.parent),
            deployment_json="{}",
            engine="e",
            status="stopped",
            started_at=time.time(),
        ),
    )


@pytest.mark.parametrize("ref", ["%", "_", "a%", "________", ""])
def test_run_refs_are_not_sql_patterns(tmp_path: Path, ref: str) -> None:
    """`hangar stop %` (or '') stopped the only recorded run: the prefix went into LIKE."""
    _record_run("ab12cd34", tmp_path / "server.log")
    for command in ("logs", "stop"):
        expect_error(hangar(command, ref), 1, "run")
    shown = hangar("logs", "ab12")
    assert shown.returncode == 0 and "the log of run" in shown.stdout, shown.stderr


def test_empty_eval_ref_matches_nothing() -> None:
    """compare '' latest compared the latest eval with itself ('' was a LIKE '%' prefix)."""
    expect_error(hangar("compare", "", "latest"), 1, "the eval id is empty")


def test_corrupt_store_names_the_file(hangar_home: Path) -> None:
    """A non-SQLite file (or a directory) in the store's place was a DatabaseError (exit 3)."""
    store = hangar_home / "state" / "hangar.sqlite3"
    store.parent.mkdir(parents=True)
    store.write_bytes(os.urandom(4096))
    for command in (["status"], ["compare", "latest", "latest"], ["clean"]):
        expect_error(hangar(*command), 1, f"{store}: cannot open Hangar's store")
    store.unlink()
    store.mkdir()
    expect_error(hangar("status"), 1, f"{store}: cannot open Hangar's store")


# ------------------------------------------------------------------ launch


def test_launch_with_an_engine_that_cannot_start(tmp_path: Path) -> None:
    """An engine file without exec permission, or with a broken #! line, raised
    PermissionError / FileNotFoundError from Popen (exit 3) and left the run 'starting'."""
    model = llama_dir(tmp_path)
    no_exec = tmp_path / "noexec-python"
    shutil.copy(sys.executable, no_exec)
    no_exec.chmod(0o644)
    bad_shebang = tmp_path / "bad-python"
    bad_shebang.write_text("#!/nonexistent/interpreter\n")
    bad_shebang.chmod(0o755)
    for engine in (no_exec, bad_shebang):
        proc = hangar(
            "launch", str(model), "--engine", str(engine), "--port", str(free_port()), "--force"
        )
        expect_error(proc, 1, f"cannot start {engine}")
    rows = json.loads(hangar("status", "--all", "--json").stdout)
    assert [r["status"] for r in rows] == ["failed", "failed"]


def test_a_non_python_engine_is_reported_not_crashed(tmp_path: Path) -> None:
    """engine = /bin/echo made the site-packages probe json.loads its output (exit 3)."""
    echo = shutil.which("echo")
    assert echo is not None
    proc = hangar("preflight", str(llama_dir(tmp_path)), "--engine", echo, "--json")
    assert proc.returncode == 1, proc.stderr
    ids = {f["id"] for f in json.loads(proc.stdout)["findings"]}
    assert "host.engine.no_vllm" in ids


SECRETS = ("hf_SECRETabc", "sk-SECRET", "sk-ENVSECRET", "hf_ENVSECRET", "pw-ENVSECRET")


def test_secrets_reach_no_file_hangar_writes(tmp_path: Path, hangar_home: Path) -> None:
    """Shell secrets and [env] secrets of a real launch (fake engine) appear in no file
    under HANGAR_HOME: launch.json, the deployment record, the store, the log."""
    engine = make_fake_engine(tmp_path / "engine")
    model = llama_dir(tmp_path, "we'ird $(touch pwned) model")
    file = tmp_path / "hangar.toml"
    file.write_text(
        f"engine = {json.dumps(str(engine))}\n"
        f"[model]\nid = {json.dumps(str(model))}\nserved_name = \"srv '$(x)'\"\n"
        '[env]\nVLLM_API_KEY = "sk-ENVSECRET"\nHF_TOKEN = "hf_ENVSECRET"\n'
        'MY_PASSWORD = "pw-ENVSECRET"\n'
        f"[target.local]\nport = {free_port()}\nready_timeout_s = 60\nstop_grace_s = 5\n"
    )
    shell = {"HF_TOKEN": "hf_SECRETabc", "OPENAI_API_KEY": "sk-SECRET"}
    launched = hangar("launch", str(file), env=shell)
    assert launched.returncode == 0, launched.stderr
    run_id = launched.stdout.split()[1]
    try:
        status = hangar("status", "--json", env=shell)
        assert json.loads(status.stdout)[0]["id"] == run_id
        written = [p for p in hangar_home.rglob("*") if p.is_file()]
        assert any(p.name == "launch.json" for p in written)
        _assert_no_secret(p for p in written if p.name != "fake-env.json")
        _assert_no_secret_in_store(hangar_home / "state" / "hangar.sqlite3")
    finally:
        assert hangar("stop", run_id).returncode == 0
    assert not (tmp_path / "pwned").exists() and not (model / "pwned").exists()
    _assert_no_secret(p for p in hangar_home.rglob("*") if p.is_file())
    run_dir = hangar_home / "state" / "runs" / run_id
    assert run_dir.stat().st_mode & 0o077 == 0


def _assert_no_secret(files: object) -> None:
    for path in files:  # type: ignore[attr-defined]
        data = Path(path).read_bytes()
        leaked = [s for s in SECRETS if s.encode() in data]
        assert not leaked, (path, leaked)


def _assert_no_secret_in_store(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT * FROM runs").fetchall()
    text = json.dumps([list(r) for r in rows])
    assert not [s for s in SECRETS if s in text]


# ------------------------------------------------------------------ workarounds


def test_workarounds_check_refuses_what_it_cannot_check(tmp_path: Path) -> None:
    """--vllm-version bogus and an unreadable --model answered 'no workaround applies'."""
    expect_error(hangar("workarounds", "check", "--vllm-version", "bogus"), 2, "'bogus'")
    expect_error(hangar("workarounds", "review", "--vllm-version", "bogus"), 2, "'bogus'")
    missing = tmp_path / "missing"
    expect_error(hangar("workarounds", "check", "--model", str(missing)), 1, "field '--model'")


# ------------------------------------------------------------------ output files


def test_unwritable_outputs_are_one_line(tmp_path: Path) -> None:
    """report -o DIR / -o /proc/x and init -o /proc/x were IsADirectoryError /
    FileNotFoundError from the atomic write (exit 3)."""
    stored = hangar("eval", f"http://127.0.0.1:{free_port()}", "--suite", "smoke", "--timeout", "2")
    assert stored.returncode == 1, stored.stderr  # unreachable: stored as a failed eval
    expect_error(hangar("report", "latest", "-o", str(tmp_path)), 2, "is a directory")
    expect_error(hangar("report", "latest", "-o", "/proc/x.html"), 1, "/proc/x.html: cannot write")
    init = hangar("init", "--no-input", "--model", "m", "-o", "/proc/hangar.toml")
    expect_error(init, 1, "/proc/hangar.toml: cannot write")
    compared = hangar("compare", "latest", "latest")
    assert compared.returncode == 0 and "no performance points" in compared.stdout


def test_index_url_with_credentials_is_refused_and_not_stored(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "engines", "add", "x", "--vllm", "0.33.0",
         "--index-url", "https://user:TOKEN123@mirror.example/simple"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "HANGAR_HOME": str(tmp_path)},
    )
    assert done.returncode == 2 and "credentials" in done.stderr and "TOKEN123" not in done.stderr
    assert not any("TOKEN123" in p.read_text(errors="ignore") for p in tmp_path.rglob("*") if p.is_file())


def test_malformed_eval_url_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hangar", "eval", "http://[::1"], capture_output=True, text=True,
        timeout=60, check=False, env={**os.environ, "HANGAR_HOME": str(tmp_path)},
    )
    assert done.returncode == 2 and "not a valid server URL" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ terminal escapes (issue 13)

ESC_ARCH = "Llama\x1b]0;owned\x07\x1b[2J\u202eForCausalLM"


def test_escape_sequences_from_config_json_are_shown_not_sent(tmp_path: Path) -> None:
    """An architecture name holding ESC sequences reached the terminal raw (plan, models
    show, and an error line quoting it)."""
    folder = model_dir(tmp_path, json.dumps({**LLAMA, "architectures": [ESC_ARCH]}))
    for command in (["plan", str(folder), "--gpu", "H100"], ["models", "show", str(folder)]):
        proc = hangar(*command)
        assert proc.returncode == 0, proc.stderr
        assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
        assert "\\x1b" in proc.stdout or "\\\\x1b" in proc.stdout, proc.stdout
    bad = model_dir(tmp_path, json.dumps({**LLAMA, "hidden_size": "\x1b[2J"}), "bad")
    proc = hangar("plan", str(bad), "--gpu", "H100")
    assert proc.returncode == 1 and "\x1b" not in proc.stderr and "\\x1b" in proc.stderr


def test_escape_sequences_in_server_model_ids_are_shown_not_sent() -> None:
    """A /v1/models id from the server was printed raw by hangar eval."""
    sys.path.insert(0, str(Path(__file__).parent / "evaluation"))
    from fake_server import FakeServer

    server = FakeServer().start()
    try:
        server.behaviour.replies["/v1/models"] = {"object": "list", "data": [{"id": ESC_ARCH}]}
        proc = hangar("eval", server.url, "--suite", "smoke")
    finally:
        server.stop()
    assert proc.returncode == 1, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr and "\u202e" not in proc.stdout
    assert "\\x1b" in proc.stdout


# ------------------------------------------------------------------ doctor inputs (issue 13)

HEADS = "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).\n"


def test_doctor_dir_with_one_empty_file_reads_the_others(tmp_path: Path) -> None:
    """One empty .err next to the real log rejected the whole directory."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "job.err").write_text("")
    (tmp_path / "logs" / "job.out").write_text(HEADS)
    proc = hangar("doctor", str(tmp_path / "logs"), "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["causes"][0]["cause"] == "tp_heads_divisibility"
    (tmp_path / "logs" / "job.out").write_text("")
    expect_error(hangar("doctor", str(tmp_path / "logs")), 2, "only empty log files")


def test_doctor_empty_stdin_is_named_stdin_not_a_temp_path() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hangar", "doctor", "-"],
        input="", capture_output=True, text=True, timeout=60, check=False,
    )
    err = expect_error(proc, 2, "<stdin>: is empty")
    assert "hangar-doctor-" not in err and "/tmp" not in err


# ------------------------------------------------------------------ no network (issue 13)


def test_unreachable_hub_is_said_at_once_without_retry_noise() -> None:
    """support/plan for a model off the catalog spent 24 s in hub retries and printed pages
    of retry warnings; one probe now finds the hub unreachable and says so."""
    env = {"HF_HUB_OFFLINE": "", "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
    planned = hangar("plan", "org/not-in-the-catalog", "--gpu", "H100", env=env)
    err = expect_error(planned, 1, "the hub was not asked", "Connection refused")
    assert err.count("\n") == 1
    support = hangar("support", "Qwen/Qwen3-8B", env=env)
    assert support.returncode == 0, support.stderr
    note = f"note: Hugging Face hub not reachable ({env['HF_ENDPOINT'][7:]}: Connection refused)"
    assert support.stderr.strip().splitlines() == [f"{note}; model card not fetched"]
