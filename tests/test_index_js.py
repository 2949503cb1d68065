"""Node unit tests for the invocation index's sort and filter (index.js) and profile.js's pure logic.

The rows are the ones render/index.py writes for the recorded traces' compiles (tests/data/traces),
fed as the page reads them: a "running" chunk when each compile starts, its final chunk later.
profile.js's numbers are checked against history/profile.py on the same manifests. One node
process per test; nothing is compiled (the quick loop).
"""

from __future__ import annotations

import json
import math
import statistics
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from tests._node import run_node
from tests._records import REPO, run_dirs
from tltrace.diff.align import split_lines
from tltrace.format.records import RunManifest
from tltrace.history.profile import BACKEND, fmt_seconds, profile, timeline
from tltrace.render.index import index_row

ASSETS = resources.files("tltrace.render").joinpath("assets")


@pytest.fixture(scope="module")
def manifests(recorded: Path) -> list[RunManifest]:
    """Every recorded compile's manifest, in the order the compiles started."""
    out = []
    for script_dir in sorted(p for p in recorded.iterdir() if p.is_dir()):
        for run_dir in run_dirs(script_dir):
            out.append(RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text())))
    out.sort(key=lambda m: m.started or 0)
    assert len(out) >= 8 and any(m.status == "error" for m in out)
    return out


@pytest.fixture(scope="module")
def rows(manifests: list[RunManifest]) -> list[dict[str, Any]]:
    return [index_row(m) for m in manifests]


INDEX = r"""
const fs = require("fs");
const I = require(process.argv[1] + "/index.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
function load(chunks, stale) {
  const rows = [], byId = new Map();
  chunks.forEach(d => I.addRow(rows, byId, Object.assign({}, d)));
  return {rows: rows, processes: I.normalizeRows(rows, stale)};
}
const ids = rs => rs.map(r => r.run_id);
const out = {};
const live = load(feed.chunks, false), stale = load(feed.unfinished, true), fresh = load(feed.unfinished, false);
out.processes = live.processes;
out.loaded = live.rows.map(r => [r.run_id, r.order, r.status, r.process, r.label, r.seconds]);
out.defaultOrder = ids(live.rows.slice().sort(I.comparator(null, 1)));
out.sorted = {};
feed.keys.forEach(k => { out.sorted[k] = [1, -1].map(dir => ids(live.rows.slice().sort(I.comparator(k, dir)))); });
out.filtered = feed.filters.map(f => ids(I.filterRows(live.rows, f[0], f[1])));
out.stale = [stale, fresh].map(s => [s.rows.map(r => r.status), ids(I.filterRows(s.rows, "", "failed")),
  ids(I.filterRows(s.rows, "", "running")), ids(s.rows.slice().sort(I.comparator(null, 1)))]);
process.stdout.write(JSON.stringify(out));
"""

FILTERS = [
    ("", ""),
    ("", "failed"),
    ("", "complete"),
    ("", "running"),
    ("VADD", ""),
    ("layoutinference", ""),
    ("layoutinference", "complete"),
    ("grid 16", "complete"),
    ("no such kernel", ""),
]


def test_index_sort_and_filter_on_the_recorded_rows(rows, tmp_path) -> None:
    started = [{**r, "status": "running", "seconds": None, "failed_at": None} for r in rows]
    # As the index is written: each compile's "running" row when it starts, its final row later.
    chunks = [started[0], started[1], rows[0], *[x for pair in zip(started[2:], rows[1:]) for x in pair]]
    chunks += rows[-1:]
    late = max(i for i, r in enumerate(rows) if r["status"] == "complete")
    unfinished = [c for c in chunks if c is not rows[late]]  # that compile never finished
    keys = ["label", "status", "failed_at", "passes", "changed", "seconds", "order", "run_id"]
    got = run_node(
        INDEX, {"chunks": chunks, "unfinished": unfinished, "keys": keys, "filters": FILTERS}, tmp_path
    )

    ids = [r["run_id"] for r in rows]
    pids = list(dict.fromkeys(r["pid"] for r in rows))
    status = {r["run_id"]: "failed" if r["status"] == "error" else r["status"] for r in rows}
    sig = {r["run_id"]: r["signature"] for r in rows}
    # A later chunk of a run replaced its "running" row in place: one row per compile, in start order.
    assert [x[:2] for x in got["loaded"]] == [[rid, n] for n, rid in enumerate(ids, 1)]
    assert [x[2] for x in got["loaded"]] == [status[i] for i in ids]
    assert [x[3] for x in got["loaded"]] == [f"pid {r['pid']}" for r in rows] and got["processes"] == len(
        pids
    )
    assert [x[4] for x in got["loaded"]] == [sig[i] for i in ids]
    assert [x[5] for x in got["loaded"]] == [_ms(r["seconds"]) for r in rows]

    # Default: failed first, then by process (in first appearance), then start order.
    failed = [i for i in ids if status[i] == "failed"]
    assert failed and got["defaultOrder"][: len(failed)] == failed
    rest = sorted(
        (i for i in ids if i not in failed),
        key=lambda i: (pids.index(rows[ids.index(i)]["pid"]), ids.index(i)),
    )
    assert got["defaultOrder"][len(failed) :] == rest

    shown = {r["run_id"]: r for r in rows}
    for key, (up, down) in got["sorted"].items():

        def value(i: str, key: str = key) -> Any:
            if key == "order":
                return ids.index(i) + 1
            if key == "status":
                return status[i]
            v = shown[i][key]
            return _ms(v) if key == "seconds" else v

        empty = [i for i in ids if value(i) in (None, "")]
        full = [i for i in ids if i not in empty]
        # Empty values last either way; equal values in start order either way.
        assert up == sorted(full, key=lambda i: (value(i), ids.index(i))) + empty, key
        assert down == sorted(full, key=lambda i: (_neg(value(i)), ids.index(i))) + empty, key

    expect = []
    for text, st in FILTERS:
        keep = [
            i
            for i in ids
            if text.lower()
            in f"{sig[i]} {status[i]} {shown[i]['failed_at'] or ''} {shown[i]['kernel']} {i}".lower()
            or text.lower() in f"pid {shown[i]['pid']}"
        ]
        if st == "failed" or st == "complete":
            keep = [i for i in keep if status[i] == st]
        elif st == "running":
            keep = [i for i in keep if status[i] not in ("failed", "complete")]
        expect.append(keep)
    assert got["filtered"] == expect
    assert got["filtered"][5] == failed and got["filtered"][6] == [] and got["filtered"][8] == []

    # A compile that never finished: "incomplete" (counted as failed) once the page is stale, else running.
    (st_status, st_failed, st_running, st_order), (fr_status, fr_failed, fr_running, _) = got["stale"]
    gone = ids[late]
    assert st_status[late] == "incomplete" and fr_status[late] == "running"
    assert st_failed == sorted([*failed, gone], key=ids.index) and st_running == []
    assert fr_failed == failed and fr_running == [gone]
    assert st_order[: len(failed) + 1] == sorted([*failed, gone], key=ids.index)


def _ms(v: float) -> float:
    """Seconds to the millisecond as the index shows them (JS Math.round: halves up)."""
    return math.floor(v * 1000 + 0.5) / 1000


def _neg(v: Any) -> Any:
    """A sort key that reverses `v` (numbers or strings)."""
    if isinstance(v, str):
        return tuple(-ord(c) for c in v) + (1,)  # "a" after "ab" when reversed, as JS's < does
    return -v


PROFILE = r"""
const fs = require("fs");
const P = require(process.argv[1] + "/profile.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = {};
out.parts = feed.compiles.map(c => P.compileParts(c.records, c.meta));
out.compiles = P.compilesOfRows(feed.rows);
out.agg = P.aggregateRows(out.compiles);
out.fmt = feed.seconds.map(P.fmt);
out.lines = feed.texts.map(P.lineCount);
process.stdout.write(JSON.stringify(out));
"""


def test_profile_logic_against_history_profile(manifests, rows, tmp_path) -> None:
    texts = [
        json.loads(f.read_text())["texts"] for f in sorted((REPO / "tests/data/diff_corpus").glob("*.json"))
    ]
    sample = [t for d in texts for t in d.values()][:200] + ["a", "a\n", "a\n\nb", "\n"]
    seconds = [2.5, 1.0, 0.9994, 0.0123, 0.001, 0.0000042, 0.0]
    feed = {
        "compiles": [
            {"records": m.to_json()["records"], "meta": {"started": m.started, "finished": m.finished}}
            for m in manifests
        ],
        "rows": [
            *rows,
            {"run_id": "r", "status": "running"},
            None,
        ],  # unfinished and damaged rows have no times
        "seconds": seconds,
        "texts": sample,
    }
    got = run_node(PROFILE, feed, tmp_path)

    for m, parts in zip(manifests, got["parts"], strict=True):
        t = timeline(m)
        backend = sum(s.duration_s for s in t.slices if s.kind == BACKEND)
        assert parts["exact"] == t.exact
        assert parts["wall"] == pytest.approx(t.wall_s, abs=1e-9)
        recorded = t.top_level_s - backend  # the top-level records (the backend build is a slice of its own)
        assert parts["passes"] + parts["codegen"] == pytest.approx(recorded, abs=1e-9)
        codegen = sum(s.duration_s for s in t.slices if s.depth == 0 and s.kind == "codegen")
        assert parts["codegen"] == pytest.approx(codegen, abs=1e-9)
        assert parts["backend"] == pytest.approx(backend, abs=1e-9)
        untimed = t.wall_s - recorded - backend
        assert parts["untimed"] == pytest.approx(max(0.0, untimed), abs=1e-9)
    assert any(p["backend"] > 0 for p in got["parts"])

    assert [c["run"] for c in got["compiles"]] == [r["run_id"] for r in rows]
    py = {r.name: r for r in profile(manifests).rows}
    agg = got["agg"]
    assert {r["name"] for r in agg} == set(py)
    for r in agg:
        p = py[r["name"]]
        assert r["compiles"] == len(p.per_compile)
        assert r["total"] == pytest.approx(p.total_s, abs=1e-6 * r["compiles"])  # rows store whole µs
        vals = sorted(round(v * 1e6) / 1e6 for v in p.per_compile.values())
        q = statistics.quantiles(vals, n=4, method="inclusive") if len(vals) > 1 else vals * 3
        got_q = [r["min"], r["q1"], r["median"], r["q3"], r["max"]]
        assert got_q == pytest.approx([vals[0], *q, vals[-1]], abs=1e-9)
    for a, b in zip(agg, agg[1:]):  # slowest total first, ties by name
        assert a["total"] > b["total"] - 1e-12 and (a["total"] - b["total"] > 1e-9 or a["name"] < b["name"])

    assert got["fmt"] == [fmt_seconds(s) for s in seconds]
    assert got["lines"] == [len(split_lines(t)) if t else 0 for t in sample]


FACTS_JS = r"""
const fs = require("fs");
const I = require(process.argv[1] + "/index.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const rows = [], byId = new Map();
feed.forEach(d => I.addRow(rows, byId, Object.assign({}, d)));
I.normalizeRows(rows, false);
const ids = rs => rs.map(r => r.run_id);
process.stdout.write(JSON.stringify({
  columns: I.factColumns(rows).map(c => c.key),
  up: ids(rows.slice().sort(I.comparator("f_smem_dynamic", 1))),
  down: ids(rows.slice().sort(I.comparator("f_smem_dynamic", -1))),
  ws: rows.map(r => r.f_warp_specialized),
}));
"""


def test_index_facts_columns_sort(manifests, tmp_path) -> None:
    """Rows with facts (render/index.py INDEX_FACTS) give sortable columns; a row without any sorts last."""
    from dataclasses import replace

    from tltrace.render.index import INDEX_FACTS

    m = manifests[0]
    made = [
        replace(m, run_id="run_a", facts={"values": {"smem_dynamic": 49152, "warp_specialized": True}}),
        replace(m, run_id="run_b", facts={"values": {"smem_dynamic": 16384, "warp_specialized": False}}),
        replace(m, run_id="run_c", facts=None),
    ]
    feed = [index_row(x, x.run_id) for x in made]
    assert feed[0]["facts"] == {"smem_dynamic": 49152, "warp_specialized": True} and "facts" not in feed[2]
    got = run_node(FACTS_JS, feed, tmp_path)
    assert got["columns"] == [f"f_{k}" for k in INDEX_FACTS if k in ("smem_dynamic", "warp_specialized")]
    assert got["up"] == ["run_b", "run_a", "run_c"] and got["down"] == ["run_a", "run_b", "run_c"]
    assert got["ws"] == [1, 0, None]


NARROW = r"""
const I = require(process.argv[1] + "/index.js");
const feed = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const d = I.distinctLabels(feed.labels);
const rows = feed.rows.map(r => Object.assign({}, r));
I.normalizeRows(rows, false);
process.stdout.write(JSON.stringify({shared: d.shared, short: feed.labels.map(l => d.short.get(l)),
  one: [...I.distinctLabels(feed.labels.slice(0, 1)).short.values()],
  counts: rows.map(r => [r.status, r.unfinished, r.passes, r.changed, r.failed])}));
"""


def test_index_narrow_labels_and_unfinished_counts(rows, tmp_path) -> None:
    """What a narrow index shows: signatures without the words all share (a field name goes with its
    value), never without the words that differ; a compile that only started has no counts yet."""
    labels = [
        "gemm 1024x1024 f16 grid 8x8 thr 128 smem 32K #aaaaaa",
        "gemm 1024x1024 f16 grid 16x8 thr 128 smem 32K #bbbbbb",
        "gemm 1024x1024 f16 grid 8x8 thr 128 smem 16K #cccccc",
    ]
    started = {**rows[0], "status": "running", "passes": 0, "changed": 0, "failed": 0}
    got = run_node(NARROW, {"labels": labels, "rows": [started, rows[0]]}, tmp_path)
    assert got["shared"] == ["1024x1024", "f16", "thr 128"]
    assert got["short"] == [
        "gemm grid 8x8 smem 32K #aaaaaa",
        "gemm grid 16x8 smem 32K #bbbbbb",
        "gemm grid 8x8 smem 16K #cccccc",
    ]
    assert got["one"] == labels[:1]  # one compile: nothing is shared with another
    assert got["counts"][0] == ["running", True, None, None, None]  # not "0 passes"
    assert got["counts"][1][1] is False and got["counts"][1][2] == rows[0]["passes"]
