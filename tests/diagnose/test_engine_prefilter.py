"""The prefilter's needles (issue 11 item 7): a regex's literal *set*, read from its parse
tree, must be sound (every line the regex matches holds one of its needles) and more
selective than its single longest literal run where that run is a common word."""

from __future__ import annotations

from pathlib import Path

import pytest

from hangar.diagnose import reader
from hangar.diagnose.knowledge import load
from hangar.diagnose.prefilter import literal_set, needles_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (
            r"NCCL INFO (?:Bootstrap|NET/Socket) : Using (?:\[\d+\])?(?:lo|docker\d*):",
            ("NCCL INFO Bootstrap : Using ", "NCCL INFO NET/Socket : Using "),
        ),
        (r"models?'s max seq len", ("model's max seq len", "models's max seq len")),
        (
            r"CUDA error: (?:out of memory|an illegal)",
            ("CUDA error: an illegal", "CUDA error: out of memory"),
        ),
        (r"^hangar: ulimit -v \d+", ("hangar: ulimit -v ",)),
        (r"(foo \d+ barbaz|quxquux \d+)", (" barbaz", "quxquux ")),
        (r"(?i)ignore case", ()),  # case-folded needles would be needed: the anchor stays
        (r"a\d+bc", ("bc",)),  # the longest run when nothing expands
    ],
)
def test_literal_set_of_a_regex(regex: str, expected: tuple[str, ...]) -> None:
    assert literal_set(regex) == expected


def test_a_long_anchor_is_kept_over_a_wider_set() -> None:
    # Past 16 characters an anchor rarely selects healthy lines; one needle beats three.
    regex = r"Failed to infer device type because of (?:Socket|IB|OFI)"
    assert needles_for(regex, "Failed to infer device type because of ") == (
        "Failed to infer device type because of ",
    )


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(FIXTURES.rglob("*.log")):
        for raw in path.read_bytes().splitlines():
            lines.append(reader.clean(raw))
    return lines


def test_every_line_a_regex_matches_holds_one_of_its_needles() -> None:
    # Soundness over every real log of the fixtures: the legacy anchor selects the candidate
    # lines (it is contained in every match by construction), the needles must cover them.
    patterns = load().patterns
    lines = _corpus_lines()
    assert len(lines) > 1000
    checked = 0
    for pattern in patterns:
        for line in (x for x in lines if pattern.anchor in x):
            if pattern.regex.search(line):
                checked += 1
                assert any(n in line for n in pattern.needles), (pattern.regex.pattern, line)
    assert checked > 500


def test_nccl_info_lines_of_a_healthy_run_select_only_patterns_that_match_them() -> None:
    # A third of an NCCL_DEBUG=INFO log is 'NCCL INFO Channel ...': a needle as bare as
    # 'NCCL INFO ' would send each of them through the full regexes of every such pattern.
    line = "node-1:123:123 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM"
    wasted = [
        (p.signature, p.needles)
        for p in load().patterns
        if p.role == "patterns" and any(n in line for n in p.needles) and not p.regex.search(line)
    ]
    assert wasted == []


class _OldHyperscan:
    """A hyperscan module whose compile predates literal databases (it refuses the keyword)."""

    HS_MODE_BLOCK = 1

    class Database:
        def __init__(self, mode: int) -> None:
            self.mode = mode

        def compile(self, expressions: list[bytes], **options: object) -> None:
            if "literal" in options:
                raise TypeError("compile() got an unexpected keyword argument 'literal'")


def test_a_hyperscan_that_refuses_the_literals_falls_back_to_teddy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hangar.diagnose import prefilter

    monkeypatch.setattr(prefilter, "HYPERSCAN", _OldHyperscan)
    selector = prefilter.LineSelector(["Cannot allocate memory", "Address already in use"])
    data = b"ok\nOSError: [Errno 98] Address already in use\nok\n"
    assert {data.rfind(b"\n", 0, p) + 1 for p in selector.starts(data)} == {3}
