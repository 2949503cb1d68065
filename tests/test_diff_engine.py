"""The diff engine's laws, and the browser twin (assets/diff.js) giving the very same rows.

The corpus under tests/data/diff_corpus/ is every changed pass of real CPU compiles of
examples/gemm.py, softmax.py and elementwise_add.py (capture.py there rebuilds it).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tltrace.diff import (
    ADD,
    CHANGE,
    DELETE,
    REINDENT,
    SAME,
    Row,
    count_changes,
    diff,
    split_lines,
    tokens,
    unified,
    word_diff,
)
from tltrace.diff.words import ALIKE, bag, similarity, words

CORPUS = Path(__file__).parent / "data" / "diff_corpus"
DIFF_JS = resources.files("tltrace.render").joinpath("assets/diff.js")


def corpus_pairs() -> list[tuple[str, str, str]]:
    out = []
    for f in sorted(CORPUS.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        for index, name, hb, ha in data["pairs"]:
            out.append((f"{f.stem}#{index} {name}", data["texts"][hb], data["texts"][ha]))
    return out


def check_laws(before: str, after: str) -> list[Row]:
    """Assert every law of the alignment on one pair; return its rows."""
    d = diff(before, after)
    a, b = split_lines(before), split_lines(after)
    rows = d.rows
    # complete and in order
    assert [r.a for r in rows if r.a is not None] == list(range(len(a)))
    assert [r.b for r in rows if r.b is not None] == list(range(len(b)))
    for r in rows:
        assert r.kind in (SAME, REINDENT, CHANGE, ADD, DELETE)
        assert (r.a is None) == (r.kind == ADD) and (r.b is None) == (r.kind == DELETE)
        if r.kind == SAME:
            assert a[r.a] == b[r.b]
        elif r.kind == REINDENT:
            assert a[r.a] != b[r.b] and a[r.a].lstrip(" \t") == b[r.b].lstrip(" \t")
        elif r.kind == CHANGE:  # a true pair: alike words
            (wa, na), (wb, nb) = bag(a[r.a]), bag(b[r.b])
            assert similarity(wa, na, wb, nb) >= ALIKE
    # between two matched rows, no removed line equals an added one apart from indentation
    gap_a: list[str] = []
    gap_b: list[str] = []
    for r in rows + [Row(SAME, None, None)]:
        if r.kind in (SAME, REINDENT):
            assert not {x.lstrip(" \t") for x in gap_a} & {x.lstrip(" \t") for x in gap_b}
            gap_a, gap_b = [], []
        else:
            if r.a is not None:
                gap_a.append(a[r.a])
            if r.b is not None:
                gap_b.append(b[r.b])
    return rows


@pytest.mark.parametrize("label,before,after", corpus_pairs(), ids=[p[0] for p in corpus_pairs()])
def test_laws_on_real_ir(label, before, after):
    rows = check_laws(before, after)
    assert any(r.kind != SAME for r in rows) or diff(before, after).note


lines_st = st.lists(
    st.sampled_from(
        [
            "x = 1",
            "  x = 1",
            "y = f(x)",
            "    y = f(x)",
            "for i in range(4):",
            "  for i in range(4):",
            "z = f(x, 2)",
            "",
            "T.copy(A, B)",
            "\tq",
        ]
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(lines_st, lines_st, st.booleans(), st.booleans())
def test_laws_on_random_texts(a, b, nl_a, nl_b):
    before = "\n".join(a) + ("\n" if nl_a and a else "")
    after = "\n".join(b) + ("\n" if nl_b and b else "")
    check_laws(before, after)
    d = diff(before, after)
    if before != after:  # never an empty CHANGED: a visible line, or a note saying why there is none
        assert d.unified(context=0) or d.note


def test_wrapping_in_a_block_reads_as_added_lines_and_reindents():
    before = "def f():\n    a = 1\n    b = g(a)\n    return b\n"
    after = "def f():\n    with T.block():\n        a = 1\n        b = g(a)\n    return b\n"
    assert [r.kind for r in diff(before, after).rows] == [SAME, ADD, REINDENT, REINDENT, SAME]
    view = diff(before, after).unified(context=0)
    assert [k for k, _ in view] == ["file", "file", "hunk", ADD, REINDENT, REINDENT]
    assert view[-1][1] == "~        b = g(a)"
    assert diff(before, after).unified(context=0, ignore_whitespace=True)[2:] == [
        ("hunk", "@@ -1,0 +2 @@"),
        (ADD, "+    with T.block():"),
    ]


def test_unrelated_lines_are_not_paired_and_get_no_word_highlights():
    before = "T.copy(B[k * 16, bx * 32], B_shared)\n"
    after = "T.fill(C_local, 0)\n"
    assert [r.kind for r in diff(before, after).rows] == [DELETE, ADD]
    assert [r.kind for r in diff("x = foo(a, 1)\n", "x = foo(a, 2)\n").rows] == [CHANGE]


def test_gemm_layout_inference_is_three_added_lines_and_reindents():
    data = json.loads((CORPUS / "gemm.json").read_text(encoding="utf-8"))
    _, _, hb, ha = next(p for p in data["pairs"] if p[1] == "LayoutInference")
    d = diff(data["texts"][hb], data["texts"][ha])
    kinds = [r.kind for r in d.rows]
    assert kinds.count(REINDENT) >= 10
    assert kinds.count(ADD) == 3
    b = split_lines(data["texts"][ha])
    for r in d.rows:  # T.copy is never drawn as becoming T.fill (or anything else but itself)
        if r.kind == CHANGE:
            assert r.a is not None and r.b is not None
            assert words(d.a[r.a])[:2] == words(b[r.b])[:2]


def test_tokens_respect_tir():
    assert tokens("A_shared[i_1, 0x1F] = 1.5e-3f // 2") == [
        "A_shared",
        "[",
        "i_1",
        ",",
        " ",
        "0x1F",
        "]",
        " ",
        "=",
        " ",
        "1.5e-3f",
        " ",
        "//",
        " ",
        "2",
    ]
    assert "".join(tokens("T.float32(3.25) <= b->c")) == "T.float32(3.25) <= b->c"
    assert "3.25" in tokens("T.float32(3.25)") and "<=" in tokens("a <= b")
    lt, lm, rt, rm = word_diff("C_local[i, j] = A[i]", "C_local[i, j] = B[i]")
    assert [t for t, m in zip(lt, lm) if m] == ["A"] and [t for t, m in zip(rt, rm) if m] == ["B"]


def test_notes_explain_changes_without_visible_lines():
    assert diff("x\n", "x").note == "no newline at end"
    assert diff("x", "x\n").note == "newline added at end"
    assert diff("a = 1 \n", "a = 1\n").note == "whitespace only"
    assert diff("  a\n", "    a\n").note == "whitespace only (re-indented)"
    assert diff("a\n", "b\n").note is None
    lines = unified("x\n", "x", a="A", b="B")
    assert lines == ["--- A", "+++ B", "@@ -1 +1 @@", "-x", "+x", "\\ No newline at end of file"]


def test_counts_and_the_patch_form():
    before, after = "a\n  b\nc\n", "a\n    b\nC\nd\n"
    assert count_changes(before, after) == (3, 2)
    assert count_changes(before, before) == (0, 0)
    patch = unified(before, after, context=1)
    assert patch[2] == "@@ -1,3 +1,4 @@" and "-  b" in patch and "+    b" in patch


# -- the browser twin -------------------------------------------------------------------------------
NODE_RUNNER = r"""
const D = require(process.argv[1]);
let input = "";
process.stdin.on("data", c => input += c);
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([before, after]) => {
    const A = D.splitLines(before), B = D.splitLines(after);
    const rows = D.align(A, B);
    const words = rows.filter(r => r.kind === "change").map(r => {
      const w = D.wordDiff(A[r.a], B[r.b]);
      return [w[0], Array.from(w[1]), w[2], Array.from(w[3])];
    });
    return {rows: rows.map(r => [r.kind, r.a, r.b]), words, note: D.explain(before, after, A, B, rows)};
  });
  process.stdout.write(JSON.stringify(out));
});
"""


def run_js(pairs: list[tuple[str, str]]) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed")
        pytest.skip("node is not installed")
    with resources.as_file(DIFF_JS) as path:
        proc = subprocess.run(
            [node, "-e", NODE_RUNNER, str(path)],
            input=json.dumps(pairs),
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=True,
            timeout=120,
        )
    return json.loads(proc.stdout)


def python_side(before: str, after: str) -> dict:
    d = diff(before, after)
    words = []
    for r in d.rows:
        if r.kind == CHANGE:
            lt, lm, rt, rm = word_diff(d.a[r.a], d.b[r.b])
            words.append([lt, [int(x) for x in lm], rt, [int(x) for x in rm]])
    return {"rows": [[r.kind, r.a, r.b] for r in d.rows], "words": words, "note": d.note}


def random_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Edits of real IR: lines deleted, inserted, re-indented, renamed, blocks wrapped."""
    rng = random.Random(seed)
    texts = [t for _, t, _ in corpus_pairs()]
    out = []
    for _ in range(n):
        lines = split_lines(rng.choice(texts))
        new = list(lines)
        for _ in range(rng.randint(1, 6)):
            if not new:
                break
            i = rng.randrange(len(new))
            op = rng.randrange(5)
            if op == 0:
                del new[i]
            elif op == 1:
                new.insert(i, rng.choice(lines))
            elif op == 2:
                j = min(len(new), i + rng.randint(1, 8))
                new[i:j] = ["    for w in range(2):"] + ["    " + x for x in new[i:j]]
            elif op == 3:
                new[i] = new[i].replace("i", "ii").replace("0", "7")
            else:
                new[i] = "\t" + new[i].lstrip() + " "
        out.append(("\n".join(lines) + "\n", "\n".join(new) + rng.choice(["\n", ""])))
    return out


def test_js_engine_gives_the_python_rows_on_the_corpus_and_on_edits():
    pairs = [(b, a) for _, b, a in corpus_pairs()] + random_pairs(150, seed=7)
    pairs += [
        ("", "x\n"),
        ("x\n", ""),
        ("x\n", "x"),
        ("a \u2028 b\n", "a \u2028 c\n"),
        ("\U0001f600 x = 1\n", "\U0001f600 x = 2\n"),
        (
            "\n".join(f"l{i} = {i}" for i in range(3000)),
            "\n".join(f"l{i} = {i * 7 % 5}" for i in range(3000)),
        ),
    ]
    js = run_js(pairs)
    assert len(js) == len(pairs)
    for (before, after), got in zip(pairs, js):
        assert got == python_side(before, after)
