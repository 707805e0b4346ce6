"""Benchmark `hangar doctor` against `grep -E -f` with the same patterns, on one big log.

Generates a realistic multi-rank vLLM log (worker prefixes, INFO/WARNING noise, request
logs, NCCL chatter) with the causal error early and the symptoms late, then times:
  1. `python -m hangar doctor --json LOG` end to end (a fresh process), and
  2. `grep -c -E -f PATTERNS LOG` with every regex of the knowledge base, translated to ERE,
in the same run, and prints MB/s for both and the ratio. It then prints the doctor's
accuracy on the labelled corpora (top-1, top-3, the misleading subset, "unknown" answers and
the precision of named causes, with a per-cause confusion table for the field held-out split).

    python bench/doctor.py                # ~1 GB
    python bench/doctor.py --size-mb 100  # quicker
    python bench/doctor.py --accuracy-only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOISE = [
    (
        "(VllmWorker TP{r} pid={p}) INFO 05-10 15:51:{s:02d} [gpu_model_runner.py:1164] "
        "Starting to load model /models/Qwen3-32B..."
    ),
    (
        "(EngineCore_DP0 pid={p}) INFO 05-10 15:52:{s:02d} [kv_cache_utils.py:634] "
        "GPU KV cache size: {n},880 tokens"
    ),
    'INFO:     127.0.0.1:{p} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    (
        "(APIServer pid={p}) INFO 05-10 15:52:{s:02d} [loggers.py:123] Engine 000: Avg prompt "
        "throughput: {n}.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 12 "
        "reqs, Waiting: 0 reqs, GPU KV cache usage: 3.4%, Prefix cache hit rate: 45.1%"
    ),
    (
        "\x1b[36m(RayWorkerWrapper pid={p}, ip=10.0.0.{r})\x1b[0m WARNING 05-10 15:52:{s:02d} "
        "[custom_all_reduce.py:136] Custom allreduce is disabled because it's not supported on "
        "more than two PCIe-only GPUs."
    ),
    "node-{r}:{p}:{p} [{r}] NCCL INFO Channel 00/0 : {r}[{r}] -> 1[1] via P2P/CUMEM",
    (
        "(Worker_TP{r} pid={p}) WARNING 05-10 15:52:{s:02d} [utils.py:201] Using default MoE "
        "config. Performance might be sub-optimal!"
    ),
]
PROLOG = [
    "+ ulimit -a",
    "core file size              (blocks, -c) 0",
    "virtual memory              (kbytes, -v) 67108864",
    "open files                          (-n) 65536",
]
CAUSE = [
    (
        "(Worker_TP{r} pid={p}) ERROR 05-10 15:51:{s:02d} [multiproc_executor.py:597] "
        "OSError: [Errno 12] Cannot allocate memory"
    ),
]
SYMPTOMS = [
    (
        "(Worker_TP{r} pid={p}) ERROR 05-10 15:59:{s:02d} [multiproc_executor.py:597] "
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    ),
    "(EngineCore_DP0 pid={p}) ERROR 05-10 15:59:{s:02d} [core.py:708] EngineCore failed to start.",
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {{}}",
]


def _lines(templates: list[str], count: int, rng: random.Random) -> str:
    out = []
    for _ in range(count):
        t = rng.choice(templates)
        out.append(
            t.format(
                r=rng.randint(0, 7),
                p=rng.randint(1000, 99999),
                s=rng.randint(0, 59),
                n=rng.randint(1, 999),
            )
        )
    return "\n".join(out) + "\n"


def generate(path: Path, size_mb: int, seed: int = 0) -> int:
    """Write the log; returns its size in bytes."""
    rng = random.Random(seed)
    blocks = [_lines(NOISE, 20000, rng).encode() for _ in range(8)]
    target = size_mb * 2**20
    with path.open("wb") as out:
        out.write(("\n".join(PROLOG) + "\n").encode())
        written = 0
        early = max(target // 100, 1)
        while written < target:
            block = blocks[rng.randrange(len(blocks))]
            out.write(block)
            written += len(block)
            if early and written >= early:
                for rank in range(8):  # every rank prints the same causal error
                    out.write(CAUSE[0].format(r=rank, p=1000 + rank, s=rank).encode() + b"\n")
                early = 0
        out.write(_lines(SYMPTOMS, 24, rng).encode())
    return path.stat().st_size


def ere_patterns(dest: Path) -> tuple[int, int]:
    """Every knowledge-base regex translated to POSIX ERE (GNU grep); returns (kept, skipped)."""
    from hangar.diagnose.knowledge import load

    kept, skipped = [], 0
    for pattern in load().patterns:
        ere = (
            pattern.regex.pattern.replace("(?:", "(")
            .replace(r"\d", "[0-9]")
            .replace(r"\S", "[^[:space:]]")
        )
        if "(?" in ere:
            skipped += 1
            continue
        kept.append(ere)
    dest.write_text("\n".join(kept) + "\n")
    return len(kept), skipped


FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
# (corpus, split, label). Only the field set's `heldout` split was never read while tuning;
# it was first measured at commit d050b2d (20/21) and is re-printed here, never re-tuned.
CORPORA = (
    ("logs", None, "corpus tests/fixtures/logs (in-sample)"),
    ("logs_heldout", None, "tests/fixtures/logs_heldout (tuned on since aca437f: in-sample)"),
    ("logs_field", "dev", "field set, dev split (in-sample)"),
    ("logs_field", "heldout", "field set, held-out split (never tuned on)"),
    ("logs_posthoc", None, "post-hoc set, all 19 (5 fixed after its one measurement: 12/19)"),
    ("logs_posthoc", "heldout", "post-hoc set, the 14 never tuned on"),
)


def accuracy() -> None:
    from hangar.diagnose.evaluate import load_cases, score
    from hangar.diagnose.knowledge import load

    kb = load()
    for corpus, split, label in CORPORA:
        result = score(FIXTURES / corpus, load_cases(FIXTURES / corpus, split), kb)
        print(result.summary(label))
        if split == "heldout" and corpus == "logs_field":
            print("\n".join(result.table()))


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, check=False)
    return time.perf_counter() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    parser.add_argument("--accuracy-only", action="store_true", help="skip the speed run")
    args = parser.parse_args()
    if args.accuracy_only:
        accuracy()
        return 0
    if shutil.which("grep") is None:
        print("grep not found", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="hangar-bench-doctor-"))
    try:
        log, pats = tmp / "vllm-multi-rank.log", tmp / "patterns.ere"
        size = generate(log, args.size_mb)
        kept, skipped = ere_patterns(pats)
        env = {**os.environ, "HANGAR_HOME": str(tmp / "home"), "LC_ALL": "C"}
        t_doc, doc = timed([sys.executable, "-m", "hangar", "doctor", "--json", str(log)], env)
        t_grep, grep = timed(["grep", "-c", "-E", "-f", str(pats), str(log)], env)
        top = json.loads(doc.stdout)["causes"][0]["cause"] if doc.stdout else "?"
        mb = size / 2**20
        print(f"log: {mb:.0f} MiB, {kept} patterns for grep ({skipped} not expressible in ERE)")
        print(
            f"hangar doctor: {t_doc:6.2f} s  {mb / t_doc:8.1f} MiB/s  exit {doc.returncode}  top cause {top}"
        )
        print(
            f"grep -E -f   : {t_grep:6.2f} s  {mb / t_grep:8.1f} MiB/s  "
            f"exit {grep.returncode}  matching lines {grep.stdout.decode().strip()}"
        )
        print(f"ratio doctor/grep time: {t_doc / t_grep:.2f}x")
        if args.keep:
            print(f"kept {log}")
        accuracy()
        return 0 if top == "ulimit_mmap" else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
