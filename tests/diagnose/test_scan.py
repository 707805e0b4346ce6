"""Streaming, clean-up, folding of per-rank duplicates, and root-cause-first ranking."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import pytest

from hangar.diagnose import UnreadableLog, diagnose_paths, diagnose_text, reader
from hangar.diagnose.scan import NAME_FLOOR

HEADS = "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8)."


def test_gzip_ansi_crlf_and_prefixes(tmp_path: Path) -> None:
    body = (
        "INFO 01-01 00:00:00 [api_server.py:1] starting\r\n"
        f"\x1b[36m(EngineCore_DP0 pid=42)\x1b[0m {HEADS}\r\n"
    )
    path = tmp_path / "vllm.log.gz"
    path.write_bytes(gzip.compress(body.encode()))
    top = diagnose_paths([path]).causes[0]
    assert top.cause == "tp_heads_divisibility"
    assert top.evidence[0].line == 2
    assert top.evidence[0].text.startswith("ValueError: Total number")  # prefix and colour gone


def test_same_error_from_every_rank_folds_into_one_line() -> None:
    lines = [
        f"(Worker_TP{r} pid={100 + r}) ERROR 05-01 10:00:0{r} [multiproc_executor.py:597] "
        "RuntimeError: CUDA error: peer access is not supported between these two devices"
        for r in range(8)
    ]
    top = diagnose_text("\n".join(lines)).causes[0]
    assert top.cause == "nccl_p2p"
    assert len(top.evidence) == 1
    assert top.repeats == 8


def test_line_numbers_survive_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64)
    filler = "".join(f"INFO line {i} nothing to see here\n" for i in range(200))
    path = tmp_path / "big.log"
    path.write_text(filler + HEADS + "\n" + filler)
    diagnosis = diagnose_paths([path])
    assert diagnosis.causes[0].evidence[0].line == 201
    assert diagnosis.lines_scanned == 401


def test_first_cause_not_last_symptom_ulimit() -> None:
    log = (
        "$ ulimit -a\n"
        "virtual memory              (kbytes, -v) 33554432\n"
        "INFO 01-01 00:00:01 [gpu_model_runner.py:1] Starting to load model\n"
        "OSError: [Errno 12] Cannot allocate memory\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n"
        "RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    causes = diagnose_text(log).causes
    assert causes[0].cause == "ulimit_mmap"
    assert all(c.cause != "other" for c in causes)  # the fallback is dropped


def test_first_cause_not_last_symptom_ray_ip() -> None:
    log = (
        "INFO worker.py:1654 -- Connecting to existing Ray cluster at address: 10.0.0.1:6379...\n"
        "WARNING ray_utils.py:352] Tensor parallel size (16) exceeds available GPUs (8).\n"
        "export VLLM_HOST_IP=10.0.0.2\n"
        "ValueError: World size (16) is larger than the number of available GPUs (8) in this node.\n"
    )
    assert diagnose_text(log).causes[0].cause == "ray_cluster"


def test_healthy_log_has_no_cause() -> None:
    log = "INFO 01-01 api_server.py] Started server process\nINFO:     Application startup complete.\n"
    assert diagnose_text(log).healthy


def test_unknown_traceback_names_nothing_and_keeps_the_guess_apart() -> None:
    # A traceback header alone (its exception line cut off) is a guess below the naming
    # floor (scan.NAME_FLOOR): "unknown".
    log = 'Traceback (most recent call last):\n  File "x.py", line 1\n'
    diagnosis = diagnose_text(log)
    assert diagnosis.causes == ()
    guess = diagnosis.unconfirmed[0]
    assert guess.cause == "other" and guess.confidence < NAME_FLOOR
    assert "unconfirmed" not in diagnosis.model_dump(mode="json")  # not in the JSON contract


def test_an_unknown_exception_is_an_unnamed_failure_just_above_the_floor() -> None:
    # The exception line is a failure no signature knows: `other` (outside the taxonomy),
    # not `unknown` (no failure at all), at the floor, with the line as its evidence.
    log = 'Traceback (most recent call last):\n  File "x.py", line 1\nZeroDivisionError: division by zero\n'
    top = diagnose_text(log).top
    assert top is not None and (top.cause, top.signature) == ("other", "unrecognised_failure")
    assert NAME_FLOOR <= top.confidence < 0.5  # --llm is still asked
    assert [e.text for e in top.evidence] == ["ZeroDivisionError: division by zero"]


@pytest.mark.parametrize(
    "line",
    [
        "thread 'main' panicked at src/main.rs:2:5:",  # Rust std
        "panic: runtime error: invalid memory address or nil pointer dereference",  # Go
        "terminate called after throwing an instance of 'c10::Error'",  # libstdc++
        "Segmentation fault (core dumped)",  # bash
        "slurmstepd: error: execve(): vllm: No such file or directory",  # Slurm
        "FATAL:   container creation failed: mount hook function failure",  # Apptainer
        "Main process exited, code=exited, status=1/FAILURE",  # systemd
        "F0101 00:00:00.000000  1 node.cc:12] Check failed: ok == true",  # glog CHECK
    ],
)
def test_each_runtimes_failure_form_is_an_unnamed_failure(line: str) -> None:
    top = diagnose_text(line + "\n").top
    assert top is not None and top.cause == "other", (line, top)


@pytest.mark.parametrize(
    "log",
    [
        "INFO 01-01 00:00:00 [api_server.py:1] Started server process\n",
        "WARNING 01-01 00:00:00 [utils.py:1] Found ulimit of 1024 ... [Errno 1] Operation not permitted\n",
        # a request error in a log where the server answers requests: taken as handled
        'ValueError: bad request\nINFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n',
    ],
)
def test_no_failure_is_no_unnamed_failure(log: str) -> None:
    assert diagnose_text(log).causes == ()


def test_directory_input_and_bad_inputs(tmp_path: Path) -> None:
    (tmp_path / "job.err").write_text(HEADS + "\n")
    (tmp_path / "job.out").write_text("INFO fine\n")
    assert diagnose_paths([tmp_path]).causes[0].cause == "tp_heads_divisibility"
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "bin.log").write_bytes(b"\x7fELF\x00\x00\x01")
    whole = gzip.compress("".join(f"INFO step {i}\n" for i in range(20000)).encode())
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    for name in ("empty.log", "bin.log", "cut.log.gz", "missing.log"):
        with pytest.raises(UnreadableLog) as info:
            diagnose_paths([tmp_path / name])
        assert info.value.exit_code == 2


@pytest.mark.parametrize("backend", ["teddy", "hyperscan"])
def test_line_selector_selects_every_line_that_holds_an_anchor(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Teddy: the anchors that contain no other one, in groups of 64, leftmost-first;
    # Hyperscan: every needle in one database reporting match ends. Overlapping and nested
    # anchors on one line must still select that line.
    import random

    from hangar.diagnose import prefilter
    from hangar.diagnose.knowledge import load

    if backend == "teddy":
        monkeypatch.setattr(prefilter, "HYPERSCAN", None)
    elif prefilter.HYPERSCAN is None:
        pytest.skip("hyperscan is not installed (optional: pip install hyperscan)")
    texts = load().anchors()
    chosen = prefilter.selectors(texts)
    assert all(any(sel in a for sel in chosen) for a in texts) and len(chosen) < len(texts)
    selector = prefilter.line_selector(texts)
    assert prefilter.backend() == backend
    anchors = [a.encode() for a in texts]
    rng = random.Random(7)
    lines = []
    for _ in range(400):
        parts = [rng.choice(anchors) if rng.random() < 0.3 else b"noise %d" % rng.randint(0, 99)]
        parts += [rng.choice(anchors)[: rng.randint(1, 8)] for _ in range(2)]
        lines.append(b" ".join(parts))
    data = b"\n".join(lines) + b"\n"
    selected = {data.rfind(b"\n", 0, pos) + 1 for pos in selector.starts(data)}
    offset = 0
    for line in lines:
        if any(a in line for a in anchors):
            assert offset in selected, line
        offset += len(line) + 1


def test_mapped_threaded_scan_equals_streamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A big plain file is memory-mapped and scanned in growing pieces with the search one
    # piece ahead in a thread; gzip is streamed in chunks. Both must give the same answer,
    # line numbers included.
    from hangar.diagnose import buffers

    monkeypatch.setattr(buffers, "BIG_INPUT", 1)
    monkeypatch.setattr(buffers, "FIRST_PIECE", 64)
    monkeypatch.setattr(buffers, "LAST_PIECE", 512)
    filler = "".join(f"INFO line {i} Avg prompt throughput: 1 tokens/s\n" for i in range(300))
    body = (
        "virtual memory (kbytes, -v) 1000\n"
        + filler
        + "OSError: [Errno 12] Cannot allocate memory\n"
        + filler
    )
    plain, packed = tmp_path / "big.log", tmp_path / "big.log.gz"
    plain.write_text(body)
    packed.write_bytes(gzip.compress(body.encode()))
    mapped, streamed = diagnose_paths([plain]), diagnose_paths([packed])
    assert mapped.causes and mapped.causes[0].cause == "ulimit_mmap"
    assert [f.evidence for f in mapped.causes] == [
        tuple(e.model_copy(update={"file": str(plain)}) for e in f.evidence)
        for f in streamed.causes
    ]
    assert mapped.lines_scanned == streamed.lines_scanned == 602


def test_a_healthy_serving_log_selects_almost_no_lines(tmp_path: Path) -> None:
    # Speed guard (issue 11: >= 0.9x grep's throughput): the lines a long healthy log repeats
    # (requests, throughput, NCCL channel setup) retire the anchors they match early; an
    # anchor that keeps selecting them without matching (e.g. a `requires_any` on the bare
    # 'NCCL INFO ') would run Python on every such line.
    from hangar.diagnose import buffers, reader
    from hangar.diagnose.knowledge import load
    from hangar.diagnose.scan import Scanner

    class Counting(Scanner):
        selected = 0

        def _match_line(
            self, name: str, order: int, line_no: int, raw: bytes, above: Callable[[], bytes]
        ) -> None:
            self.selected += 1
            super()._match_line(name, order, line_no, raw, above)

    lines = [
        'INFO:     127.0.0.1:4{i} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        (
            "(APIServer pid=7) INFO 05-10 15:52:0{d} [loggers.py:123] Engine 000: Avg prompt "
            "throughput: 1{i}.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 1 reqs"
        ),
        "node-{d}:{i}:{i} [{d}] NCCL INFO Channel 00/0 : {d}[{d}] -> 1[1] via P2P/CUMEM",
        (
            "(Worker_TP{d} pid={i}) INFO 05-10 15:51:0{d} [gpu_model_runner.py:1164] Starting to "
            "load model /models/Qwen3-32B..."
        ),
        (
            "(EngineCore_DP0 pid={i}) INFO 05-10 15:52:0{d} [kv_cache_utils.py:634] GPU KV cache "
            "size: {i},880 tokens"
        ),
    ]
    text = "".join(lines[i % 5].format(i=i, d=i % 8) + "\n" for i in range(60_000))
    path = tmp_path / "serving.log"
    path.write_text(text)
    scanner = Counting(load())
    scanner.feed_buffer(reader.Source(str(path), path), text.encode())
    assert scanner.diagnosis().causes == ()
    assert scanner.selected < buffers.FIRST_PIECE // 20, scanner.selected


def test_a_cause_as_a_verdict_keeps_its_fix_and_first_line() -> None:
    log = "INFO start\nValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).\n"
    top = diagnose_text(log).causes[0]
    verdict = top.as_finding()
    assert (verdict.id, verdict.severity, verdict.source) == (
        f"doctor.{top.cause}",
        "error",
        "doctor",
    )
    assert verdict.fix == top.fix and verdict.message == top.explanation
    assert verdict.evidence.endswith(":2: " + top.evidence[0].text)


PASTED = (
    "OSError: Can't load tokenizer for 'org/model'. If you were trying to load it from "
    "'https://huggingface.co/models', make sure you don't have a local directory with the same name."
)


@pytest.mark.parametrize(
    "typeset",
    [
        PASTED.replace("'", "&#39;"),  # a page's escaped markup
        PASTED.replace("'", "\u2019"),  # a forum editor's typographic quotes
        "> " + PASTED,  # quoted in a reply
        "&gt; " + PASTED.replace("'", "&#x27;").replace(" ", "\u00a0", 3),
    ],
)
def test_a_log_copied_out_of_a_web_page_reads_as_the_plain_one(typeset: str) -> None:
    plain = diagnose_text(f"INFO starting\n{PASTED}\n").causes[0]
    pasted = diagnose_text(f"INFO starting\n{typeset}\n").causes[0]
    assert (pasted.cause, pasted.signature) == (plain.cause, plain.signature)
    assert pasted.evidence[0].line == 2


def test_untypeset_keeps_lines_and_leaves_plain_text_alone() -> None:
    assert reader.untypeset(b"plain 'ascii' && more\n") is None
    out = reader.untypeset("a \u2013max-model-len 8\u2013bit\n&amp;lt;\n".encode())
    assert out == "a --max-model-len 8\u2013bit\n&lt;\n".encode()
    assert reader.untypeset(b"&#39;" * (reader._PASTE_MAX_BYTES // 5 + 1)) is None
