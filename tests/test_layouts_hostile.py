"""`show --layouts --at / --thread` on crafted layouts (issue 49): one line on stderr, exit 3.

A recorded compile's manifest gets layouts nobody's TileLang made: expressions nested past any
recursion limit, a division by zero, a shape of 1e30 elements, a replicate count of a
billion, a buffer too big to walk. Each question about them is refused in one line with the
exit code of a damaged record (tltrace/errors.py), never a traceback; an honest layout next
to them still answers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tltrace.errors import EXIT_RECORDS, EXIT_USAGE
from tltrace.layouts import check, model

from ._records import recorded_add_with, require_tltrace_executable


def frag(name: str, **kw: Any) -> dict[str, Any]:
    e = {
        "buffer": name, "scope": "local.fragment", "dtype": "float32", "shape": [16, 16], "kind": "fragment",
        "input_shape": [16, 16], "output_shape": [8], "vars": ["_i", "_j"], "index": ["_j % 8"],
        "thread": "_i * 2 + _j // 8", "replicate": 1, "thread_range": [64, 32], "blocks": ["b"],
    }  # fmt: skip
    e.update(kw)
    return e


CRAFTED = [
    frag("Deep", thread="(" * 2000 + "_i" + ")" * 2000),
    frag("Chain", index=["+".join(["_j"] * 3000)]),
    frag("Zero", thread="_i // 0"),
    frag("Wrap", index=["_i * 4294967296 * 4294967296"], output_shape=[8]),
    frag("Huge", input_shape=[10**30, 10**30, 10**30], shape=[10**30] * 3),
    frag("Float", input_shape=[1e30, 1e30]),
    frag("Reps", vars=["_rep", "_i", "_j"], replicate=10**9),
    frag("Range", thread_range=[-5, 10**12]),
    frag("Wide", input_shape=[8192, 4096], shape=[8192, 4096]),
    frag("Nums", index=[7], output_shape=["x"]),
    frag("Good"),
    frag("Esc\x1b]0;owned\x07\n\rtltrace: error: forged\u2028"),
    frag("U" + "x" * 9000, thread="_i + " + "y" * 9000),
    frag("Digit", thread="\u0663 + _i"),
]


@pytest.fixture(scope="module")
def work(recorded: Path, tmp_path_factory) -> Path:
    layouts = {
        "version": 1,
        "snapshots": [{"record": 3, "pass": "P", "funcs": [{"func": "main", "layouts": CRAFTED}]}],
        "failed": None,
    }
    dest = tmp_path_factory.mktemp("hostile") / "traces"
    recorded_add_with(recorded, dest, layouts=layouts)
    return dest


def show(td: Path, *args: str) -> subprocess.CompletedProcess:
    exe = require_tltrace_executable()
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [exe, "show", "--trace-dir", str(td), "elementwise_add", "-1", "--layouts", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def one_line(res: subprocess.CompletedProcess, code: int) -> str:
    assert res.returncode == code and res.stdout == "", res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr and len(lines[0]) < 400, res.stderr
    return lines[0]


@pytest.mark.parametrize(
    "name, words",
    [
        ("Deep", "nested deeper than 64"),
        ("Chain", "nested deeper than 64"),
        ("Zero", "division by zero"),
        ("Wrap", "beyond 9007199254740991"),
        ("Huge", "more than 9007199254740991 elements"),
        ("Float", "not a positive size"),
        ("Reps", "replicate"),
        ("Range", "thread_range"),
        ("Nums", "output_shape"),
    ],
)
def test_at_on_a_crafted_layout_is_one_line_exit_3(work: Path, name: str, words: str) -> None:
    line = one_line(show(work, "--at", name, "1,1"), EXIT_RECORDS)
    assert f"the recorded layout of {name} cannot be evaluated" in line and words in line, line


def test_thread_on_crafted_layouts(work: Path) -> None:
    """--thread walks every fragment: the first crafted one stops it, in one line; a buffer too
    big to walk says so; the honest layout answers --at and names physical threads."""
    line = one_line(show(work, "--thread", "64"), EXIT_RECORDS)
    assert "Deep" in line and "nested deeper" in line, line
    res = show(work, "--at", "Wide", "8000,4000")  # one element of a big buffer: answered
    assert res.returncode == 0 and "register" in res.stdout, res
    res = show(work, "--at", "Good", "3,9")
    assert res.returncode == 0 and res.stdout.startswith("Good[3,9]: thread 71 register 1 "), res
    one_line(show(work, "--at", "Good", "16,0"), EXIT_USAGE)  # outside the shape: the question's fault


def test_a_buffer_too_big_to_walk() -> None:
    """--thread walks the whole buffer: past check.MAX_CELLS it refuses (one element still answers)."""
    wide = next(e for e in CRAFTED if e["buffer"] == "Wide")
    with pytest.raises(check.LayoutError, match="more than the 16777216 walked"):
        model.held_by(wide, 64)
    assert model.at(wide, [8191, 4095])["thread"] == [64 + 8191 * 2 + 4095 // 8]


ESC_NAME = "Esc\x1b]0;owned\x07\n\rtltrace: error: forged\u2028"
SPELT = "Esc^[]0;owned^G^J^Mtltrace: error: forged<U+2028>"


def test_a_crafted_buffer_name_is_spelt_on_one_line(work: Path) -> None:
    """A buffer name with ESC, BEL, a newline, a CR and U+2028: `--at`, `--thread`, the table and
    an error naming it print it as render/visible.py spells it, one line, never the raw bytes."""
    res = show(work, "--at", ESC_NAME, "1,1")
    assert res.returncode == 0 and res.stdout.count("\n") == 1, res
    assert SPELT + "[1,1]: thread 66 register 1 " in res.stdout and f"of {SPELT}'s threads" in res.stdout, res
    res = show(work)  # the table
    assert res.returncode == 0 and SPELT in res.stdout, res
    line = one_line(show(work, "--at", "Nope", "1,1"), EXIT_USAGE)
    assert SPELT in line and line.endswith(")"), line  # the list of layouts goes on past the name
    for res in (show(work, "--at", ESC_NAME, "1,1"), show(work)):
        raw = res.stdout + res.stderr
        assert not any(c in raw for c in "\x1b\x07\r\u2028"), res


def test_long_names_and_expressions_are_cut(work: Path) -> None:
    """A 9,000-character name or expression: the error line and the table's rows stay short."""
    line = one_line(show(work, "--at", "U" + "x" * 9000, "1,1"), EXIT_RECORDS)
    assert "unknown variable" in line, line
    res = show(work)
    assert res.returncode == 0 and max(map(len, res.stdout.splitlines())) < 1000, max(
        map(len, res.stdout.splitlines())
    )


def test_only_ascii_digits_are_literals(work: Path) -> None:
    """U+0663 (ARABIC-INDIC DIGIT THREE) is no literal: the report's JavaScript twin reads \\d as ASCII."""
    line = one_line(show(work, "--at", "Digit", "1,1"), EXIT_RECORDS)
    assert "cannot read" in line, line
