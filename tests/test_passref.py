"""The one pass-name grammar: tltrace/format/passref.py and its twin in the report (core.js), on the same cases.

Pure: a list of (index, name, phase) and references; the JS side runs under node.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from importlib import resources

from tests._node import node
from tltrace.format import passref


@dataclass(frozen=True)
class Rec:
    index: int
    name: str
    phase: str


RECS = [
    Rec(0, "tl.transform.Simplify", "tl"),
    Rec(1, "LowerTileOp", "tl"),
    Rec(2, "tl.transform.Simplify", "tl"),
    Rec(3, "tirx.BindTarget", "tir"),
    Rec(4, "tl.transform.Simplify", "tir"),
    Rec(5, "LayoutInference", "tl"),
    Rec(6, "LayoutReducer", "tl"),
    Rec(7, "codegen", "codegen"),
    Rec(8, "odd/name#2", "tl"),
]

CASES = [
    "3",
    "99",
    "LowerTileOp",
    "lowertileop",
    "LOWERTILEOP#1",
    "tl.transform.Simplify",
    "tl.transform.Simplify#2",
    "Simplify",
    "simplify#3",
    "Simplify#4",
    "Simplify#0",
    "tir/Simplify",
    "TL/simplify#2",
    "BindTarget",
    "bind",
    "Layout",
    "LayoutInf",
    "nothing",
    "",
    "#2",
    "odd/name#2",
    "odd/name",
]


def test_resolve_rules() -> None:
    r = passref.resolve(RECS, "Simplify")
    assert (r.pos, r.matches, r.others) == (0, (0, 2, 4), 2)  # the first, and it says there are others
    assert passref.resolve(RECS, "simplify#3").pos == 4
    assert passref.resolve(RECS, "Simplify#3").others == 0  # named an occurrence: nothing to say
    assert passref.resolve(RECS, "lowertileop").pos == 1  # any case
    assert passref.resolve(RECS, "tir/Simplify").pos == 4
    assert passref.resolve(RECS, "BindTarget").pos == 3  # the end of a dotted name
    assert passref.resolve(RECS, "3").pos == 3
    bad = passref.resolve(RECS, "Layout")
    assert bad.pos == -1 and "LayoutInference" in (bad.error or "") and "LayoutReducer" in (bad.error or "")
    assert "ran 3 time(s)" in (passref.resolve(RECS, "Simplify#4").error or "")
    for pos in range(len(RECS)):  # a link names its pass
        assert passref.resolve(RECS, passref.ref_of(RECS, pos)).pos == pos


NODE = r"""
const C = require(process.argv[1]);
let input = "";
process.stdin.on("data", d => input += d);
process.stdin.on("end", () => {
  const {recs, cases} = JSON.parse(input);
  const out = cases.map(c => { const r = C.resolveRef(recs, c); return [r.pos, r.matches, r.error === null]; });
  const refs = recs.map((_, i) => C.refOf(recs, i));
  process.stdout.write(JSON.stringify({out, refs}));
});
"""


def test_report_resolves_as_the_cli_does() -> None:
    core = resources.files("tltrace.render").joinpath("assets", "core.js")
    with resources.as_file(core) as path:
        proc = subprocess.run(
            [node(), "-e", NODE, str(path)],
            input=json.dumps({"recs": [r.__dict__ for r in RECS], "cases": CASES}),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    got = json.loads(proc.stdout)
    for case, (pos, matches, ok) in zip(CASES, got["out"]):
        want = passref.resolve(RECS, case)
        assert (pos, tuple(matches), ok) == (want.pos, want.matches, want.error is None), case
    assert got["refs"] == [passref.ref_of(RECS, i) for i in range(len(RECS))]
