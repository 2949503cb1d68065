"""core.js `applyDelta` against render/delta.py, on every (before, after) pair of the recorded corpora.

A report stores a changed pass's output as its changes to the pass's input (render/delta.py
writes them, core.js `applyDelta` rebuilds the text in the page). Here every pair of texts
the recorded traces (tests/data/traces) and the diff corpus (tests/data/diff_corpus) hold is
encoded in Python, then one node process applies every delta, and each result must be the
Python decoder's and the real output text. Nothing is compiled (the quick loop).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests._node import run_node
from tests._records import REPO, run_dirs
from tltrace.diff import line_changes
from tltrace.format.records import RunManifest
from tltrace.format.texts import text_of
from tltrace.render.delta import decode, encode

ASSETS = resources.files("tltrace.render").joinpath("assets")
DIFF_CORPUS = REPO / "tests" / "data" / "diff_corpus"

APPLY = r"""
const fs = require("fs");
const C = require(process.argv[1] + "/core.js");
const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = cases.map(c => C.applyDelta(c.base, c.ops, c.end));
process.stdout.write(JSON.stringify(out));
"""


def recorded_pairs(traces: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """{(before_hash, after_hash): (before, after)} of every record whose input and output both are stored and differ."""
    pairs: dict[tuple[str, str], tuple[str, str]] = {}
    for script_dir in sorted(p for p in traces.iterdir() if p.is_dir()):
        for run_dir in run_dirs(script_dir):
            manifest = RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text()))
            for rec in manifest.records:
                key = (rec.before_hash, rec.after_hash)
                if None in key or key[0] == key[1] or key in pairs:
                    continue
                before, after = text_of(run_dir, rec, "before"), text_of(run_dir, rec, "after")
                assert before is not None and after is not None, (run_dir, rec.index)
                pairs[key] = (before, after)  # type: ignore[index]
    return pairs


def corpus_pairs() -> dict[tuple[str, str], tuple[str, str]]:
    """The diff corpus's (before, after) pairs (tests/data/diff_corpus/*.json, capture.py's format)."""
    pairs: dict[tuple[str, str], tuple[str, str]] = {}
    for f in sorted(DIFF_CORPUS.glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        for _index, _name, bh, ah in data["pairs"]:
            pairs[(bh, ah)] = (data["texts"][bh], data["texts"][ah])
    return pairs


# Edges the corpora may not hold: empty sides, no final newline, blank lines, nothing in common.
EDGES = [
    ("", "a\nb\n"),
    ("a\nb\n", ""),
    ("a\nb", "a\nb\n"),
    ("a\nb\n", "a\nb"),
    ("\n\n", "\n"),
    ("x\n\ny\n", "x\ny\n\n"),
    ("p\nq\nr\n", "s\nt\n"),
    ("one line", "one line\nand two"),
]


def cases_of(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    cases = []
    for before, after in pairs:
        ops = encode(before, after, line_changes(before, after)[2])
        end = after.endswith("\n")
        cases.append({"base": before, "ops": ops, "end": end, "after": after, "py": decode(before, ops, end)})
    return cases


def apply_in_node(cases: list[dict[str, Any]], tmp_path: Path) -> list[str | None]:
    """Run core.js applyDelta over every case in one node process."""
    return run_node(APPLY, [{k: c[k] for k in ("base", "ops", "end")} for c in cases], tmp_path)


@pytest.fixture(scope="module")
def delta_cases(recorded: Path) -> list[dict[str, Any]]:
    rec, corpus = recorded_pairs(recorded), corpus_pairs()
    # Every pass that changes its input, in every corpus, and the codegen pairs (TIR to C) too.
    assert len(rec) >= 30 and len(corpus) >= 30, (len(rec), len(corpus))
    return cases_of(list(rec.values()) + list(corpus.values()) + EDGES)


def test_apply_delta_matches_python_on_every_corpus_pair(delta_cases, tmp_path) -> None:
    got = apply_in_node(delta_cases, tmp_path)
    assert len(got) == len(delta_cases)
    bad = [
        i for i, (c, js) in enumerate(zip(delta_cases, got, strict=True)) if not (js == c["py"] == c["after"])
    ]
    assert bad == [], f"{len(bad)} of {len(got)} deltas differ in core.js, first at case {bad[:1]}"
    # The deltas are real ones: most reuse lines of their base (a copy op), not only literals.
    copies = sum(any(isinstance(op, list) for op in c["ops"]) for c in delta_cases)
    assert copies > len(delta_cases) // 2


def test_a_corrupt_delta_is_caught(delta_cases, tmp_path) -> None:
    """The check above can fail: a delta whose copy op is one line off no longer rebuilds the text."""
    case = next(c for c in delta_cases if any(isinstance(op, list) and op[1] > 1 for op in c["ops"]))
    k = next(i for i, op in enumerate(case["ops"]) if isinstance(op, list) and op[1] > 1)
    i, n = case["ops"][k]
    shifted = [*case["ops"][:k], [i, n - 1], *case["ops"][k + 1 :]]
    bogus = [*case["ops"][:k], [i, 10**6], *case["ops"][k + 1 :]]  # past the base's end: malformed
    corrupt = [
        {**case, "ops": shifted, "py": decode(case["base"], shifted, case["end"])},
        {**case, "ops": bogus, "py": decode(case["base"], bogus, case["end"])},
    ]
    js = apply_in_node(corrupt, tmp_path)
    assert js[0] == corrupt[0]["py"] != case["after"]  # the twins agree, and on a wrong text
    assert js[1] is None and corrupt[1]["py"] is None  # both refuse a copy out of range
