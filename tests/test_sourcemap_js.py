"""Node unit tests for sourcemap.js's pure logic, against history/sourcemaps.py and sourcemap/lines.py.

The recorded traces (tests/data/traces) keep no source maps, so each run gets maps the way a
compile grows them: a map of the first text a pass sees (every statement line given a Python
line of the kernel's file or of TileLang's, some none, some inferred) carried through each
pass's real change by sourcemap/lines.py `carry`, which is what drops lines. The report's
chunk writer (render/sourcemap.py `ReportMaps`) turns them into the chunks the page reads; one
node process feeds them to sourcemap.js and answers, per pass, what its badge counts, the Python
lines it loses, each line's Python line, and the kernel's file. Each must be the Python side's.
Nothing is compiled (the quick loop).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from tests._node import run_node
from tests._records import run_dirs
from tltrace.format import sourcemap as sms
from tltrace.format.records import RunManifest
from tltrace.format.texts import text_of
from tltrace.history import sourcemaps as V
from tltrace.render.pages import record_value
from tltrace.render.sourcemap import ReportMaps
from tltrace.sourcemap import lines as sm

KERNEL = "/home/u/examples/kernel.py"
LIBRARY = "/venv/lib/python3.11/site-packages/tl/language/gemm.py"  # a library file by its site-packages
SOURCES = {KERNEL: "import torch\n" * 60, LIBRARY: "def gemm():\n" * 60}
# TileLang's package directory makes a file a library one, its name alone does not. (Spelt in two
# parts: tests/conftest.py marks a test `compile` when its source names the package.)
_pkg = "tile" + "lang"

NODE = r"""
const fs = require("fs");
const S = require(process.argv[1] + "/sourcemap.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const out = [];
for (const run of feed) {
  const m = { maps: new Map(), srcs: new Map(), byRec: new Map() };
  run.chunks.forEach(c => S.addChunk(m, c));
  const passes = run.recs.map(r => {
    const rm = m.byRec.get(r.index);
    if (!rm) return null;
    const badge = S.badgeOf(r, rm, m.maps);
    const before = rm.b ? m.maps.get(rm.b) : null, after = rm.a ? m.maps.get(rm.a) : null;
    const side = S.outSide(r) === "a" ? after : before;
    const src = side ? side.lines.map((_, i) => S.srcAt(side, i)) : null;
    const lost = before && after && r.status !== "codegen" && S.outSide(r) === "a" ? S.lostKeys(before, after) : null;
    return { index: r.index, badge, lost, src };
  });
  out.push({ kernel: S.kernelFile(m.maps), sources: [...m.srcs.keys()].sort(), passes });
}
process.stdout.write(JSON.stringify(out));
"""


def first_map(text: str, salt: str) -> sm.LineMap:
    """A map of a text no earlier pass made: statement lines from the kernel's file or TileLang's."""
    files = (KERNEL, LIBRARY)
    lines: list[Any] = []
    inferred = set()
    for i, ln in enumerate(text.split("\n")):
        if not ln.strip():
            lines.append(None)
            continue
        h = zlib.crc32((salt + ln).encode())
        if h % 7 == 0:
            lines.append(0)  # a statement with no Python line
        else:
            lines.append((0 if h % 5 else 1, 1 + h % 40))
            if h % 11 == 0:
                inferred.add(i)
    return sm.LineMap(files, tuple(lines), frozenset(inferred))


def maps_of_run(run_dir: Path, manifest: RunManifest) -> sms.RunMaps:
    """Every record's two maps: carried from the pass's input to its output, as capture does."""
    out = sms.RunMaps(sources=dict(SOURCES))
    by_text: dict[str, sm.LineMap] = {}
    for rec in manifest.records:
        before, after = text_of(run_dir, rec, "before"), text_of(run_dir, rec, "after")
        bmap = amap = None
        if rec.before_hash and before is not None:
            bmap = by_text.setdefault(rec.before_hash, first_map(before, rec.before_hash))
        if rec.after_hash and after is not None:
            if rec.after_hash not in by_text:
                by_text[rec.after_hash] = (
                    sm.carry(bmap, before, after)
                    if bmap is not None and before is not None
                    else first_map(after, rec.after_hash)
                )
            amap = by_text[rec.after_hash]
        for m in (bmap, amap):
            if m is not None:
                out.maps[m.digest()] = m
        out.records[rec.index] = (bmap.digest() if bmap else None, amap.digest() if amap else None)
    return out


def key(f: str, n: int) -> str:
    return f"{f}\0{n}"


def test_sourcemap_js_reads_the_maps_as_the_python_side(recorded: Path, tmp_path: Path) -> None:
    feed, expected = [], []
    for script_dir in sorted(p for p in recorded.iterdir() if p.is_dir()):
        for run_dir in run_dirs(script_dir):
            manifest = RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text()))
            if not manifest.records:
                continue
            maps = maps_of_run(run_dir, manifest)
            rm = ReportMaps()
            chunks: list[dict[str, Any]] = []
            for rec in manifest.records:
                chunks.extend(
                    rm.chunks(
                        rec.index, maps.of(rec.index, "before"), maps.of(rec.index, "after"), maps.sources.get
                    )
                )
            recs = [record_value(r) for r in manifest.records]
            feed.append({"chunks": chunks, "recs": recs})
            expected.append((manifest, maps))
    assert len(feed) >= 4  # every recorded script's runs
    got = run_node(NODE, feed, tmp_path)

    lost_seen = inferred_seen = 0
    for (manifest, maps), run in zip(expected, got):
        assert run["kernel"] == V.kernel_file(maps)
        assert run["sources"] == sorted(SOURCES)  # each source once, as the writer put it
        rows = {row["index"]: row for row in V.passes(manifest, maps)}
        for rec, js in zip(manifest.records, run["passes"]):
            row = rows.get(rec.index)
            if row is None:  # no map on the side the pass is judged by
                assert js is None or js["badge"] is None
                continue
            side = maps.of(rec.index, row["side"])
            assert side is not None
            badge = js["badge"]
            assert (badge["stmts"], badge["stmts"] - badge["none"]) == (row["lines"], row["mapped"]), rec.name
            want_lost = [key(x["file"], x["line"]) for x in row.get("lost", [])]
            assert sorted(want_lost) == sorted(js["lost"] or []), rec.name
            assert badge["dropped"] == len(want_lost)
            before = maps.of(rec.index, "before")
            if "lost" in row and before is not None:
                grew = (side.coverage()[0] - side.coverage()[1]) - (
                    before.coverage()[0] - before.coverage()[1]
                )
                assert badge["grew"] == grew
            assert js["src"] == [
                list(s) if s else None for s in (side.src(i) for i in range(len(side.lines)))
            ]
            lost_seen += len(want_lost)
            inferred_seen += len(side.inferred)
    # The corpus exercised what the badges are for: passes that lose Python lines, inferred lines.
    assert lost_seen > 0 and inferred_seen > 0


def test_sourcemap_js_skips_bad_chunks_and_tells_library_files(tmp_path: Path) -> None:
    script = r"""
const fs = require("fs");
const S = require(process.argv[1] + "/sourcemap.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const m = { maps: new Map(), srcs: new Map(), byRec: new Map() };
feed.chunks.forEach(c => S.addChunk(m, c));
process.stdout.write(JSON.stringify({
  maps: [...m.maps.keys()], srcs: [...m.srcs.keys()], recs: [...m.byRec.entries()],
  kernel: S.kernelFile(m.maps), tie: S.kernelFile(new Map([["x", feed.tie]]))
}));
"""
    lib = {"t": "smap", "h": "L", "files": [LIBRARY], "lines": [[0, 1], [0, 2], [0, 3]]}
    user = {"t": "smap", "h": "U", "files": [_pkg + ".py"], "lines": [[0, 1]]}  # a user file named after it
    pkg = {"t": "smap", "h": "P", "files": [f"/src/{_pkg}/ops.py"], "lines": [[0, 1]] * 5}  # its own package
    chunks = [
        lib,
        pkg,
        user,
        {"t": "smap", "h": "bad", "files": "x", "lines": []},
        {"t": "src", "path": 3, "s": "x"},
        {"t": "srec", "i": "1", "b": "L"},
        {"t": "srec", "i": 2, "b": "L", "a": 7},
        None,
        "text",
    ]
    tie = {"files": ["/a/b.py", "/a/c.py"], "lines": [[0, 1], [1, 1]]}
    got = run_node(script, {"chunks": chunks, "tie": tie}, tmp_path)
    assert got["maps"] == ["L", "P", "U"] and got["srcs"] == []
    assert got["recs"] == [[2, {"b": "L", "a": None}]]
    # The user's file wins over TileLang's however few lines it has, as history/sourcemaps.py says.
    maps = sms.RunMaps(
        maps={
            h: sm.LineMap.from_json({k: c[k] for k in ("files", "lines")})
            for h, c in (("L", lib), ("P", pkg), ("U", user))
        },
        records={2: ("L", None)},
    )
    assert got["kernel"] == V.kernel_file(maps) == _pkg + ".py"
    tied = sms.RunMaps(maps={"x": sm.LineMap.from_json(tie)}, records={1: ("x", None)})
    assert got["tie"] == V.kernel_file(tied) == "/a/c.py"
