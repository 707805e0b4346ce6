"""Benchmark `hangar doctor` against `grep -E -f` with the same patterns, on one big log.

Generates a realistic multi-rank vLLM log (worker prefixes, INFO/WARNING noise, request
logs, NCCL chatter) with the causal error early and the symptoms late, then times, in the
same run and alternately:
  1. `python -m hangar doctor --json LOG` end to end (a fresh process),
  2. `grep -c -E -f PATTERNS LOG` with every regex of the knowledge base, translated to ERE
     (the target: the doctor at >= 0.9x its throughput), and
  3. `grep -c -F -f NEEDLES LOG` with the prefilter's literals only (a stricter baseline:
     finding the literals, no regex at all),
and prints wall time, MiB/s and the CPU time of each (the box is shared: compare medians, and
CPU seconds when it is loaded). `--doubled-kb` times a synthetic knowledge base of twice the
signatures and anchors as well (every regex again, letters case-swapped: new literals as rare
as the originals). The prefilter is Hyperscan when `hyperscan` is installed, else Teddy groups
(HANGAR_DOCTOR_PREFILTER=teddy forces those). The first doctor run of a fresh HANGAR_HOME
derives the needles and caches them (knowledge.py); the bench's own HANGAR_HOME is fresh, so
run 1 pays that and the median does not. It then prints the doctor's accuracy on the labelled
corpora (top-1, top-3, the misleading subset, "unknown" answers and the precision of named
causes, per-cause confusion tables) and the reliability of the top cause per confidence bin.

    python bench/doctor.py                # ~1 GB
    python bench/doctor.py --size-mb 300  # quicker
    python bench/doctor.py --repeat 3     # alternately, 3 times; medians
    python bench/doctor.py --repeat 3 --doubled-kb --speed-only
    python bench/doctor.py --accuracy-only

Field set 2 (tests/fixtures/logs_field2): both directories are reported always and are
in-sample (its `heldout` one was measured once, 21/33 = 63.6% top-1 on f7e1c20, then read and
relabelled). Field sets 3 and 4 likewise: field set 3's `heldout` was measured once (19/44 on
6a094f3), field set 4 (post-hoc, 14/26 on b33c837) and field set 5 (post-hoc, 13/40 on cd5a9fc),
then each was read and fixed on, so
every set is printed always and is in-sample. A set entered with held_out=True in FIELD_SETS is
printed only with HANGAR_BENCH_HELDOUT=1, for its one measurement by whoever did not tune on it.
A field directory that does not exist yet is named and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def ere_patterns(dest: Path, kb: Any) -> tuple[int, int]:
    """Every knowledge-base regex translated to POSIX ERE (GNU grep); returns (kept, skipped)."""
    kept, skipped = [], 0
    for pattern in kb.patterns:
        ere = (
            pattern.regex.pattern.replace("(?:", "(")
            .replace(r"\d", "[0-9]")
            .replace(r"\S", "[^[:space:]]")
        )
        if "(?" in ere:
            skipped += 1
            continue
        kept.append(ere)
    rejected = _grep_rejects(dest, kept)
    return len(kept), skipped + rejected


def _grep_rejects(dest: Path, kept: list[str]) -> int:
    """Write ``kept`` to ``dest``, dropping each line GNU grep refuses to compile (inside a
    bracket a backslash is literal in ERE, so Python's ``[.\\-@]`` is an invalid range there);
    returns how many were dropped."""
    dropped = 0
    while True:
        dest.write_text("\n".join(kept) + "\n")
        done = subprocess.run(
            ["grep", "-E", "-f", str(dest), "/dev/null"],
            capture_output=True,
            text=True,
            check=False,
        )
        found = re.search(rf"{re.escape(str(dest))}:(\d+):", done.stderr)
        if done.returncode != 2 or found is None:
            return dropped
        del kept[int(found.group(1)) - 1]
        dropped += 1


FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
# (corpus, split, label). The field set's `heldout` split (first measured at d050b2d: 20/21)
# and the post-hoc set's 14 (12/14 at their one measurement) were never tuned on until stop
# 17, when one case of each was read and fixed (logs_field vllm-musa-69, logs_posthoc
# openrlhf-336): both are in-sample since.
CORPORA = (
    ("logs", None, "corpus tests/fixtures/logs (in-sample)"),
    ("logs_heldout", None, "tests/fixtures/logs_heldout (tuned on since aca437f: in-sample)"),
    ("logs_field", "dev", "field set, dev split (in-sample)"),
    (
        "logs_field",
        "heldout",
        "field set, held-out split (20/21 at its one measurement; in-sample since)",
    ),
    ("logs_posthoc", None, "post-hoc set, all 19 (5 fixed after its one measurement: 12/19)"),
    (
        "logs_posthoc",
        "heldout",
        "post-hoc set, the 14 (12/14 at their one measurement; in-sample since)",
    ),
)
HELDOUT_ENV = "HANGAR_BENCH_HELDOUT"
# Field sets collected from public threads, one directory per split, each with a manifest.yaml
# (file, cause, source, repo, date, misleading, note, confirmed_by, split):
# (directory, label, printed only with HANGAR_BENCH_HELDOUT=1).
FIELD_SETS = (
    ("logs_field2/dev", "field set 2, dev (in-sample: signatures written while reading it)", False),
    (
        "logs_field2/heldout",
        "field set 2 held-out (measured once: 21/33 = 63.6% on f7e1c20; in-sample since)",
        False,
    ),
    ("logs_field3/dev", "field set 3, dev (in-sample: signatures written while reading it)", False),
    (
        "logs_field3/heldout",
        "field set 3 held-out (measured once: 19/44 = 43.2% on 6a094f3; in-sample since)",
        False,
    ),
    (
        "logs_field4/heldout",
        "field set 4 post-hoc (measured once: 14/26 = 53.8% on b33c837; in-sample since)",
        False,
    ),
    (
        "logs_field5/heldout",
        "field set 5 post-hoc (measured once: 13/40 = 32.5% on cd5a9fc; in-sample since)",
        False,
    ),
    (
        "logs_field6/heldout",
        "field set 6 post-hoc (measured once: 48/94 = 51.1% on bd4cb54; in-sample since)",
        False,
    ),
    (
        "logs_field7/heldout",
        "field set 7 post-hoc (measured once: 6/10 on f0c4111; in-sample since)",
        False,
    ),
    (
        "logs_field8/heldout",
        "field set 8 post-hoc (measured once: 38/90 = 42.2% on 4c547ce; in-sample since)",
        False,
    ),
    (
        "logs_field9/heldout",
        "field set 9 post-hoc (measured once: 15/39 = 38.5% on 65d2885; in-sample since)",
        False,
    ),
    (
        "logs_field10/heldout",
        "field set 10 post-hoc (measured once: 7/19 = 36.8% on 12124bf; in-sample since stop 22)",
        False,
    ),
    (
        "logs_field11/heldout",
        "field set 11 post-hoc (measured once: 26/51 = 51.0% on 36070ca; in-sample since stop 22)",
        False,
    ),
    (
        "logs_field12/heldout",
        "field set 12 post-hoc (measured once: 57/97 = 58.8% on 777bbeb; in-sample since)",
        False,
    ),
)


def accuracy() -> None:
    from hangar.diagnose.evaluate import load_cases, reliability, score
    from hangar.diagnose.knowledge import load

    kb = load()
    pooled: dict[bool, list[tuple[float, bool]]] = {True: [], False: []}
    for corpus, split, label in CORPORA:
        result = score(FIXTURES / corpus, load_cases(FIXTURES / corpus, split), kb)
        print(result.summary(label))
        if split == "heldout" and corpus == "logs_field":
            print("\n".join(result.table()))
        if corpus == "logs_posthoc" and split is None:  # pooled once: the whole set
            pooled[True] += result.answers
        elif not (corpus == "logs_posthoc" and split == "heldout"):
            pooled[True] += result.answers  # every corpus above is in-sample now
    for folder, label, held_out in FIELD_SETS:
        answers = _field_set(kb, FIXTURES / folder, label, held_out)
        pooled[not held_out] += answers
    print(f"reliability of the top cause, in-sample ({len(pooled[True])} cases pooled):")
    print("\n".join(reliability(pooled[True])))
    print(f"reliability, the held-out split above ({len(pooled[False])} cases):")
    print("\n".join(reliability(pooled[False])))


def _field_set(kb: object, root: Path, label: str, held_out: bool) -> list[tuple[float, bool]]:
    """One field-set directory: top-1, top-3, misleading, unknown, precision, confusion table;
    returns its (confidence, right) answers. A held-out one only with HANGAR_BENCH_HELDOUT=1
    (measured once, by whoever did not tune on it); a directory not collected yet is named
    and skipped."""
    from hangar.diagnose.evaluate import load_cases, score

    if held_out and os.environ.get(HELDOUT_ENV) != "1":
        print(f"{label}: not measured here (set {HELDOUT_ENV}=1, once)")
        return []
    if not (root / "manifest.yaml").is_file():
        print(f"{label}: skipped, no {root.relative_to(FIXTURES.parent.parent)}/manifest.yaml yet")
        return []
    result = score(root, load_cases(root), kb)  # type: ignore[arg-type]
    print(result.summary(label))
    print("\n".join(result.table()))
    return result.answers


def timed(
    argv: list[str], env: dict[str, str]
) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """(wall seconds, CPU seconds of the child: user + system, all its threads), result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def fixed_strings(dest: Path, kb: Any) -> int:
    """The prefilter's needles as `grep -F -f` input: the cost of finding the literals alone,
    a stricter baseline than `grep -E -f` (whose one DFA over a thousand regexes can blow up)."""
    needles = kb.anchors()
    dest.write_text("\n".join(needles) + "\n")
    return len(needles)


# A knowledge base twice as large, for the bench only: every signature again, its regexes'
# letters case-swapped outside escapes, classes and group syntax, so that the copies' anchors
# are new literals as rare as the originals (a log never holds them).
def _swapped(regex: str) -> str:
    out, i = [], 0
    while i < len(regex):
        char = regex[i]
        if char == "\\":
            out.append(regex[i : i + 2])
            i += 2
        elif char == "[":
            end = regex.find("]", i + 2)
            end = len(regex) - 1 if end < 0 else end
            out.append(regex[i : end + 1])
            i = end + 1
        elif regex.startswith("(?", i):
            end = i + 2
            while end < len(regex) and regex[end] not in ":=!)>":
                end += 1
            out.append(regex[i : end + 1])
            i = end + 1
        else:
            out.append(char.swapcase())
            i += 1
    return "".join(out)


def doubled_kb(dest: Path) -> Path:
    """Write the packaged signature files and their case-swapped copies into ``dest``."""
    from importlib import resources

    import yaml

    from hangar.diagnose.knowledge import CAUSES_FILE

    dest.mkdir(parents=True, exist_ok=True)
    root = resources.files("hangar.diagnose") / "data"
    for entry in root.iterdir():
        if not entry.name.endswith(".yaml") or entry.name == CAUSES_FILE:
            continue
        text = entry.read_text(encoding="utf-8")
        (dest / entry.name).write_text(text, encoding="utf-8")
        raw = yaml.safe_load(text)
        raw["signatures"] = [c for c in map(_swapped_signature, raw["signatures"]) if c]
        (dest / f"x2_{entry.name}").write_text(yaml.safe_dump(raw), encoding="utf-8")
    return dest


def _swapped_signature(sig: dict[str, Any]) -> dict[str, Any] | None:
    """The signature's copy, or None where a swapped regex no longer compiles (a group name)."""
    copy = {**sig, "id": sig["id"] + "_x2"}
    for role in ("patterns", "requires", "requires_any", "absent", "context"):
        copy[role] = [_swapped(r) for r in sig.get(role) or []]
        try:
            [re.compile(r) for r in copy[role]]
        except re.error:
            return None
    return copy


DOCTOR_WITH_KB = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from hangar.diagnose import diagnose_paths\n"
    "from hangar.diagnose.knowledge import load_dir\n"
    "d = diagnose_paths([Path(sys.argv[2])], load_dir(Path(sys.argv[1])))\n"
    "print(json.dumps({'causes': [c.model_dump(mode='json') for c in d.causes]}))\n"
)


def speed(
    log: Path, size: int, work: Path, env: dict[str, str], repeat: int, kb_dir: Path | None
) -> str:
    """Doctor, grep -E -f and grep -F -f alternately ``repeat`` times on the same log, with the
    packaged knowledge base or (``kb_dir``) another one; prints each run and the medians;
    returns the doctor's top cause."""
    from hangar.diagnose.knowledge import load, load_dir
    from hangar.diagnose.prefilter import backend

    kb = load() if kb_dir is None else load_dir(kb_dir)
    pats, fixed = work / "patterns.ere", work / "needles.txt"
    kept, skipped = ere_patterns(pats, kb)
    needles = fixed_strings(fixed, kb)
    mb = size / 2**20
    doctor = [sys.executable, "-m", "hangar", "doctor", "--json", str(log)]
    if kb_dir is not None:  # the library in a fresh process: the CLI reads only its own data
        doctor = [sys.executable, "-c", DOCTOR_WITH_KB, str(kb_dir), str(log)]
    print(
        f"log: {mb:.0f} MiB; knowledge base: {len(kb.signatures)} signatures, {len(kb.patterns)} "
        f"regexes, {needles} needles ({'packaged' if kb_dir is None else 'doubled, synthetic'}); "
        f"prefilter {backend()}; grep -E gets {kept} regexes ({skipped} not expressible in ERE)"
    )
    rows: dict[str, list[float]] = {"E": [], "F": [], "E cpu": [], "F cpu": []}
    top = "?"
    for run in range(1, repeat + 1):
        t_doc, c_doc, doc = timed(doctor, env)
        t_e, c_e, grep_e = timed(["grep", "-c", "-E", "-f", str(pats), str(log)], env)
        t_f, c_f, grep_f = timed(["grep", "-c", "-F", "-f", str(fixed), str(log)], env)
        top = _top(doc.stdout)
        rows["E"].append(t_e / t_doc)
        rows["F"].append(t_f / t_doc)
        rows["E cpu"].append(c_e / c_doc)
        rows["F cpu"].append(c_f / c_doc)
        print(
            f"run {run}: hangar doctor {t_doc:6.2f} s {mb / t_doc:7.1f} MiB/s (cpu {c_doc:.2f} s, "
            f"exit {doc.returncode}, top cause {top}); grep -E -f {t_e:6.2f} s (cpu {c_e:.2f} s, "
            f"{grep_e.stdout.decode().strip()} lines); grep -F -f {t_f:6.2f} s (cpu {c_f:.2f} s, "
            f"{grep_f.stdout.decode().strip()} lines)"
        )
    med = {key: statistics.median(values) for key, values in rows.items()}
    print(
        f"median of {repeat}: doctor at {med['E']:.2f}x grep -E -f's throughput (target >= "
        f"0.90x; per CPU second {med['E cpu']:.2f}x), {med['F']:.2f}x grep -F -f's "
        f"(per CPU second {med['F cpu']:.2f}x)"
    )
    return top


def _top(stdout: bytes) -> str:
    causes = json.loads(stdout).get("causes") if stdout else None
    return str(causes[0]["cause"]) if causes else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=1, help="timed runs (median reported)")
    parser.add_argument("--log", type=Path, help="reuse this generated log (from --keep)")
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    parser.add_argument("--accuracy-only", action="store_true", help="skip the speed run")
    parser.add_argument("--speed-only", action="store_true", help="skip the accuracy report")
    parser.add_argument(
        "--doubled-kb",
        action="store_true",
        help="also time a synthetic knowledge base of twice the signatures and anchors",
    )
    args = parser.parse_args()
    if args.accuracy_only:
        accuracy()
        return 0
    if shutil.which("grep") is None:
        print("grep not found", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="hangar-bench-doctor-"))
    try:
        log = args.log or tmp / "vllm-multi-rank.log"
        size = log.stat().st_size if args.log else generate(log, args.size_mb)
        env = {**os.environ, "HANGAR_HOME": str(tmp / "home"), "LC_ALL": "C"}
        top = speed(log, size, tmp, env, args.repeat, None)
        if args.doubled_kb:
            speed(log, size, tmp, env, args.repeat, doubled_kb(tmp / "kb-x2"))
        if args.keep and not args.log:
            shutil.move(str(log), str(tmp.parent / log.name))
            print(f"kept {tmp.parent / log.name}")
        if not args.speed_only:
            accuracy()
        return 0 if top == "ulimit_mmap" else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
