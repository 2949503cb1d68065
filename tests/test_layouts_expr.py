"""layouts-expr.js against tltrace/layouts/expr.py and model.py, on a corpus (the quick loop; nothing compiles).

The corpus: every layout recorded from compile-only sm_90a and sm_80 compiles
(tests/data/layouts/recorded.json: swizzled shared buffers, fragments, replicated ones), each
answered at every element in Python and in node, and random expressions of `+ - * // %`
evaluated on random values in both. The numpy path and the plain one agree too.
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests._node import run_node
from tests._records import REPO
from tltrace.layouts import expr, model

RECORDED = REPO / "tests" / "data" / "layouts" / "recorded.json"

RUN = r"""
const fs = require("fs");
const X = require(process.argv[1] + "/layouts-expr.js");
const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = {exprs: job.exprs.map(c => { try { return X.evaluate(X.parse(c.text), c.env); } catch (e) { return "error"; } })};
out.entries = job.entries.map(e => {
  const c = X.compile(e.entry);
  const cells = e.cells.map(idx => X.at(c, idx));
  const conf = e.entry.kind === "fragment" ? null : ["row", "col"].map(a => X.conflicts(c, a, []));
  return {cells: cells, conflicts: conf};
});
process.stdout.write(JSON.stringify(out));
"""


def entries() -> list[dict[str, Any]]:
    return json.loads(RECORDED.read_text())["entries"]


def random_expr(rng: random.Random, depth: int = 0) -> str:
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(["_i", "_j", "_rep", str(rng.randint(0, 40))])
    op = rng.choice(["+", "-", "*", "//", "%"])
    a = random_expr(rng, depth + 1)
    b = str(rng.randint(1, 64)) if op in ("//", "%") else random_expr(rng, depth + 1)
    text = f"{a} {op} {b}"
    return f"({text})" if rng.random() < 0.5 else text


def all_cells(e: dict[str, Any]) -> list[list[int]]:
    shape = e["input_shape"]
    if len(shape) == 1:
        return [[i] for i in range(shape[0])]
    lead = [0] * (len(shape) - 2)
    cells = [[*lead, r, c] for r in range(shape[-2]) for c in range(shape[-1])]
    if lead:  # and the last slice
        last = [d - 1 for d in shape[:-2]]
        cells += [[*last, r, c] for r in range(0, shape[-2], 7) for c in range(shape[-1])]
    return cells


def run_job(job: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    return run_node(RUN, job, tmp_path)


def python_value(text: str, env: dict[str, int]) -> Any:
    try:
        return expr.value(text, env)
    except expr.ExprError:
        return "error"


# Crafted expressions (issue 49): each is an ExprError in Python and an error in node, never a
# RecursionError, a ZeroDivisionError, a 10,000-digit integer or an int64 that wraps.
HOSTILE = [
    "(" * 5000 + "_i" + ")" * 5000,  # parentheses nested past any recursion limit
    "+".join(["_i"] * 3000),  # a chain 3000 deep: a tree evaluate would recurse through
    "(" * 65 + "_i" + ")" * 65,  # one past MAX_DEPTH parentheses
    "_i // 0",
    "_i % (_j - _j)",  # a zero divisor computed, not written
    "9" * 5000,  # past int()'s digit limit
    "9007199254740992",  # MAX_INT + 1
    "_i * 4294967296 * 4294967296",  # 2**64 * _i: wraps in int64
    "_j * 3037000500 * 3037000500 - _j * 3037000500 * 3037000500",  # wraps, and would cancel
    "_i " + "+ 1 " * 6000,  # longer than MAX_TEXT
]


def test_js_answers_as_python_on_the_corpus(tmp_path: Path) -> None:
    rng = random.Random(30)
    exprs = []
    for _ in range(600):
        env = {"_i": rng.randint(0, 300), "_j": rng.randint(0, 300), "_rep": rng.randint(0, 7)}
        exprs.append({"text": random_expr(rng), "env": env})
    for e in entries():
        for text in [*e["index"], e.get("thread") or "0"]:
            exprs.append({"text": text, "env": {v: rng.randint(0, 127) for v in e["vars"]}})
    bads = ["T.min(_i, 3)", "_i < 3", "_i +", "(_i", "_i ) ", "T.Cast('int32', _i)", "_k", *HOSTILE]
    for bad in bads:
        exprs.append({"text": bad, "env": {"_i": 1, "_j": 3}})
    within = "(" * 64 + "_i" + ")" * 64  # MAX_DEPTH parentheses: still evaluated
    exprs.append({"text": within, "env": {"_i": 5}})
    jobs = [{"entry": e, "cells": all_cells(e)} for e in entries()]
    out = run_job({"exprs": exprs, "entries": jobs}, tmp_path)
    want = [python_value(c["text"], c["env"]) for c in exprs]
    assert out["exprs"] == want
    assert want[-len(bads) - 1 : -1] == ["error"] * len(bads) and want[-1] == 5
    assert len({json.dumps(w) for w in want}) > 100  # the corpus is not degenerate
    for job, got in zip(jobs, out["entries"]):
        e = job["entry"]
        py = [model.at(e, idx) for idx in job["cells"]]
        assert got["cells"] == py, e["buffer"]
        if e["kind"] != "fragment":
            assert got["conflicts"] == [model.conflicts(e, a) for a in ("row", "col")], e["buffer"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expressions_are_expr_errors_on_arrays_too(text: str) -> None:
    """The numpy path (a whole grid at once) refuses what the element path refuses."""
    np = expr.numpy()
    if np is None:
        pytest.skip("numpy is not installed")
    env = {"_i": np.arange(4, dtype=np.int64)[:, None] + 1, "_j": np.arange(3, dtype=np.int64)[None, :] + 1}
    with pytest.raises(expr.ExprError):
        expr.value(text, env)


@pytest.mark.parametrize("i", range(len(json.loads(RECORDED.read_text())["entries"])))
def test_numpy_and_plain_grids_agree(i: int, monkeypatch) -> None:
    e = entries()[i]
    lead = tuple(d - 1 for d in e["input_shape"][:-2])
    fast = model.grid(e, lead)
    monkeypatch.setattr(expr, "numpy", lambda: None)
    assert model.grid(e, lead) == fast
    cell = [*lead, 1, 2] if len(e["input_shape"]) > 1 else [3]
    got = model.at(e, cell)
    if e["kind"] == "fragment":
        r, c = (0, 3) if len(e["input_shape"]) == 1 else (1, 2)
        assert (
            got["thread"] == [t[r][c] for t in fast["thread"]] and got["register"] == fast["register"][r][c]
        )
        assert len(got["thread"]) == (e["replicate"] if model.rep_var(e) else 1)
    else:
        assert got["offset"] == fast["offset"][1][2] and got["bank"] == fast["bank"][1][2]


def test_changed_names_the_buffers_that_differ() -> None:
    es = entries()
    a = {
        "version": 1,
        "snapshots": [{"record": 3, "pass": "P", "funcs": [{"func": "main", "layouts": es[:3]}]}],
    }
    b = {
        "version": 1,
        "snapshots": [
            {"record": 3, "pass": "P", "funcs": [{"func": "main", "layouts": [es[3], es[1], es[4]]}]}
        ],
    }
    got = {(c["buffer"], c["change"]) for c in model.changed(a, b)}
    assert got == {("A_s", "changed"), ("C_l", "changed")}
    assert model.changed(a, a) == []
    assert {c["change"] for c in model.changed(a, None)} == {"removed"}


CHANGED = r"""
const fs = require("fs");
const X = require(process.argv[1] + "/layouts-expr.js");
const pairs = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(pairs.map(p => X.changed(p[0], p[1]))));
"""


def test_js_changed_is_the_twin_of_changed_final(tmp_path: Path) -> None:
    """layouts-expr.js's `changed` (the report's comparison) names what model.changed_final names,
    in its order, on random pairs of final lists drawn from the corpus: a field changed, a buffer
    added or removed, two functions, a function without a name, the entries' own extras ignored."""
    rng = random.Random(31)
    es = entries()
    pairs = []
    for _ in range(120):
        side = []
        for e in rng.sample(es, rng.randint(0, len(es))):
            e = {**e, "func": rng.choice(["main", "main", "other", None]), "record": rng.randint(0, 9)}
            side.append(e)
        other = []
        for e in side:
            roll = rng.random()
            if roll < 0.15:
                continue  # removed
            e = {**e, "pass": "P"}  # not a layout field: no change
            if roll < 0.35:
                key = rng.choice(["thread", "replicate", "input_shape", "index", "thread_range", "kind"])
                e[key] = rng.choice([None, "_i % 7", 3, [4, 4], ["_i"]])
            elif roll < 0.45:
                e.pop(rng.choice(["replicate", "thread_range", "thread"]), None)
            other.append(e)
        if rng.random() < 0.5:
            other.append({**rng.choice(es), "func": "added", "record": 1})
        rng.shuffle(other)
        pairs.append([side, other])
    got = run_node(CHANGED, pairs, tmp_path)
    want = [model.changed_final(a, b) for a, b in pairs]
    assert got == json.loads(json.dumps(want))
    kinds = {c["change"] for w in want for c in w}
    assert kinds == {"changed", "added", "removed"} and sum(not w for w in want) >= 1  # not degenerate


def test_held_by_reads_at_the_other_way(monkeypatch) -> None:
    """`held_by` (numpy and element by element) lists exactly the cells whose `at` names the thread,
    for threads of every recorded fragment and one past each end (replicated ones too)."""
    for e in entries():
        if e["kind"] != "fragment":
            continue
        first, count = e["thread_range"]
        want: dict[int, set] = {}
        g = model.grid(e)  # at's answers, a whole grid at once (the corpus' fragments are 1-D or 2-D)
        for r, c in itertools.product(range(g["rows"]), range(g["cols"])):
            idx = (r, c) if len(e["input_shape"]) == 2 else (c,)
            for rep in g["thread"]:
                want.setdefault(rep[r][c], set()).add((idx, g["register"][r][c]))
        assert min(want) == first and max(want) == first + count - 1, e["buffer"]
        for t in [
            first - 1,
            *random.Random(e["buffer"]).sample(range(first, first + count), 8),
            first + count,
        ]:
            fast = model.held_by(e, t)
            assert {(tuple(x["index"]), x["register"]) for x in fast["elements"]} == want.get(t, set())
            assert fast["logical_thread"] == (t - first if t in want else None)
        fast = model.held_by(e, first + count - 1)
        with monkeypatch.context() as m:
            m.setattr(expr, "numpy", lambda: None)
            assert model.held_by(e, first + count - 1) == fast


CHECK = r"""
const fs = require("fs");
const X = require(process.argv[1] + "/layouts-expr.js");
const job = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(job.map(e => {
  try { return X.at(X.compile(e), [1, 1]); } catch (err) { return "error"; }
})));
"""


def test_js_refuses_the_crafted_entries_python_refuses(tmp_path: Path) -> None:
    """layouts-expr.js's `compile` + `at` and check.py + model.at on tests/test_layouts_hostile.py's
    crafted entries: the same ones refused, the same answer from the honest one."""
    from tests.test_layouts_hostile import CRAFTED

    want = []
    for e in CRAFTED:
        try:
            want.append(model.at(e, [1, 1]))
        except expr.ExprError:
            want.append("error")
    assert run_node(CHECK, CRAFTED, tmp_path) == json.loads(json.dumps(want))
    assert want.count("error") == len(CRAFTED) - 3  # all but Wide, Good and the Esc... name
