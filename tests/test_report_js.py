"""Node unit tests for the report pages' pure parts (core.js, report-view.js), as diff.js has."""

from __future__ import annotations

import json
from importlib import resources

from tests._node import run_node

ASSETS = resources.files("tltrace.render").joinpath("assets")

SCRIPT = r"""
const dir = process.argv[1];
const C = require(dir + "/core.js"), V = require(dir + "/report-view.js"), D = require(dir + "/diff.js");
const out = {};
out.safe = ["run_1", "a.b-c", ".", "..", "../x", "a/b", "", 5].map(C.safeId);
out.theme = [C.initialTheme("dark", false), C.initialTheme("light", true), C.initialTheme("x", true), C.initialTheme(null, false)];
out.chunks = ['{"t":"rec"}', '{"t":"re', "[1]", "null", "3"].map(t => C.parseChunk(t) !== null);
out.durations = [2.5, 0.0123, 0.0000042, null].map(V.fmtDuration);
out.lines = [C.splitLines("a\nb\n"), C.splitLines("a"), C.splitLines(""), C.splitLines(null)];
const A = ["x", "y", "z"], B = ["x", "  y", "w", "z"];
out.rows = V.lineDiff(D.align, A, B, []).map(r => [r.kind, r.a, r.b]);
out.anchored = V.lineDiff(D.align, ["p", "q", "r"], ["q", "p", "r"], [[1, 0]]).map(r => [r.kind, r.a, r.b, !!r.anchor]);
const same = []; for (let i = 0; i < 30; i++) same.push({kind: "same", a: i, b: i});
same[15] = {kind: "change", a: 15, b: 15};
out.shown = Array.from(V.defaultShown(same, {all: false, ignoreWs: false, context: 3, minFold: 4}));
out.shownSmallGap = Array.from(V.defaultShown(same.slice(10, 22), {all: false, ignoreWs: false, context: 3, minFold: 4}));
const re = [{kind: "same", a: 0, b: 0}, {kind: "reindent", a: 1, b: 1}];
out.reQuiet = [true, false].map(ws => Array.from(V.defaultShown(re.concat(same.slice(0, 10)), {all: false, ignoreWs: ws, context: 1, minFold: 1})));
const texts = new Map([["h1", "a foo"], ["h2", "a bar"], ["h3", "foo bar"]]);
const recs = [
  {status: "changed", before_hash: "h1", after_hash: "h2"},
  {status: "changed", before_hash: "h2", after_hash: "h3"},
  {status: "noop", before_hash: "h3", after_hash: "h3"},
  {status: "failed", before_hash: "h3"}
];
out.search = V.searchHits(recs, texts, "foo");
texts.set("cu", "tma_load(x)"); texts.set("ptx", "cp.async.bulk.tensor"); texts.set("sass", "UTMALDG tma_load");
const staged = [
  {status: "changed", before_hash: "h1", after_hash: "cu"},
  {status: "changed", role: "ptx", before_hash: "cu", after_hash: "ptx"},
  {status: "changed", role: "sass", before_hash: "cu", after_hash: "sass"},
  {status: "failed", role: "ptx", before_hash: "cu"}
];
out.searchStages = V.searchHits(staged, texts, "tma_load");
process.stdout.write(JSON.stringify(out));
"""


def test_pure_parts() -> None:
    got = run_node(SCRIPT)
    assert got["safe"] == [True, True, False, False, False, False, False, False]
    assert got["theme"] == ["dark", "light", "dark", "light"]
    assert got["chunks"] == [True, False, False, False, False]  # a cut chunk, a list, null: damaged
    assert got["durations"] == ["2.50 s", "12.3 ms", "4 \u00b5s", ""]
    assert got["lines"] == [["a", "b"], ["a"], [""], None]
    assert got["rows"] == [["same", 0, 0], ["reindent", 1, 1], ["add", None, 2], ["same", 2, 3]]
    # The anchor pairs A's line 1 with B's line 0 whatever the aligner would have chosen.
    assert [r for r in got["anchored"] if r[3]] == [["same", 1, 0, True]]
    shown = got["shown"]
    assert shown[12:19] == [1] * 7 and sum(shown) == 7  # 3 lines of context each side of the change
    assert got["shownSmallGap"] == [1] * 12  # gaps under 4 lines are never folded
    ignored, shown_re = got["reQuiet"]
    assert sum(ignored) == 0 and shown_re[:3] == [1, 1, 1] and sum(shown_re) == 3  # -w: a re-indent is quiet
    assert got["search"] == {
        "hits": [
            {"pos": 0, "kind": "gone"},
            {"pos": 1, "kind": "intro"},
            {"pos": 2, "kind": "has"},
            {"pos": 3, "kind": "has"},
        ],
        "introduced": 1,
        "stages": [],
    }
    # Issue 54: the stages are texts, found or not; the PTX that lacks q does not "remove" it
    assert got["searchStages"] == {
        "hits": [{"pos": 0, "kind": "intro"}],
        "introduced": 1,
        "stages": [{"pos": 1, "found": False}, {"pos": 2, "found": True}, {"pos": 3, "found": False}],
    }


LOGIC = r"""
const dir = process.argv[1];
const C = require(dir + "/core.js"), L = require(dir + "/report-logic.js");
const out = {};
const meta = (status, error) => ({status: status, error: error});
out.state = [
  L.runStateOf(meta("complete"), 9e9, 1000), L.runStateOf(meta("error", "boom"), 0, 1000),
  L.runStateOf(meta("error", "KeyboardInterrupt: ^C"), 0, 1000), L.runStateOf(meta(undefined), 10, 1000),
  L.runStateOf(meta("running"), 5000, 1000), L.runStateOf(meta("exited"), 0, 1000)
];
const recs = [
  {index: 0, name: "tirx.Simplify", phase: "p", status: "noop"},
  {index: 1, name: "LowerTileOp", phase: "p", status: "changed"},
  {index: 2, name: "tirx.Simplify", phase: "p", status: "changed"},
  {index: 3, name: "codegen_device", phase: "codegen", status: "codegen"}
];
const byIndex = new Map(recs.map((r, i) => [r.index, i]));
out.frag = ["LowerTileOp", "lowertileop", "Simplify#2", "tirx.Simplify@2", "LowerTileOp@0", "2", "nope", ""]
  .map(f => L.posOfFragment(recs, byIndex, f, C.resolveRef));
const failed = recs.concat([{index: 4, name: "X", phase: "p", status: "failed"}]);
out.start = [
  L.startPos(recs, {status: "complete"}), L.startPos(failed, {status: "error"}),
  L.startPos(recs, {status: "error"}), L.startPos(recs.slice(0, 1), {}), L.startPos([], {})
];
// The first tile-level change: by what the pass changed (texts by hash), else by name.
const texts = {
  b0: "f:\n  T.func_attr({})\n  for i in T.thread_binding(4):\n    T.copy(A, B)\n",
  a0: "f:\n  T.func_attr({\"target\": 1})\n  for i in T.thread_binding(4):\n    T.copy(A, B)\n",
  a1: "f:\n  T.func_attr({\"target\": 1})\n  for i in T.grid(4):\n    with T.sblock():\n      T.copy(A, B)\n",
  a2: "f:\n  T.func_attr({\"target\": 1})\n  for i in T.grid(4):\n    with T.sblock():\n      B[i] = A[i]\n"
};
const tiles = [
  {index: 0, name: "tirx.BindTarget", phase: "p", status: "changed", before_hash: "b0", after_hash: "a0"},
  {index: 1, name: "MaterializeKernelLaunch", phase: "p", status: "changed", before_hash: "a0", after_hash: "a1"},
  {index: 2, name: "Pass2", phase: "p", status: "changed", before_hash: "a1", after_hash: "a2"},
  {index: 3, name: "LowerTileOp", phase: "p", status: "noop", before_hash: "a2", after_hash: "a2"}
];
const textOf = h => texts[h];
const noTexts = tiles.map(r => Object.assign({}, r, {name: r.index === 2 ? "tl.LowerTileOp" : r.name}));
out.tile = [
  L.startPos(tiles, {status: "complete"}, textOf),  // T.copy moved by 1 (re-indented): not a change; lowered by 2
  L.startPos(noTexts, {status: "complete"}),  // no texts: by name
  L.startPos(tiles, {status: "complete"}),  // no texts, no such name: the first changed
  L.tileLevel(texts.a0, texts.a1), L.tileLevel(texts.a1, texts.a2),
  L.tileLevel("x\n", "x\n  T.sblock_attr({\"layout_map\": {}})\n"), L.tileLevel("  T.gemm(a)\n", "T.gemm(a)\n")
];
out.firstFailed = [L.firstFailed(recs), L.firstFailed(failed)];
out.labels = recs.concat([{status: "weird"}]).map(L.statusLabel);
const steps = [{status: "noop"}, {status: "changed"}, {status: "noop"}, {status: "noop"}, {status: "codegen"},
  {status: "noop"}, {status: "failed"}];
const all = [0, 1, 2, 3, 4, 5, 6];
out.nextChanged = [
  L.nextChanged(steps, all, 1, 1), L.nextChanged(steps, all, 4, -1), L.nextChanged(steps, all, 4, 1),
  L.nextChanged(steps, all, 6, 1), L.nextChanged(steps, all, 1, -1), L.nextChanged(steps, all, -1, 1),
  L.nextChanged(steps, all, -1, -1), L.nextChanged(steps, [0, 2, 3, 4], 0, 1), L.nextChanged(steps, [], 0, 1)
];
const field = (tagName, type, editable) => ({tagName: tagName, type: type, isContentEditable: !!editable});
out.fields = [
  field("INPUT", "search"), field("INPUT", undefined), field("INPUT", "checkbox"), field("BUTTON"),
  field("TEXTAREA"), field("SELECT"), field("DIV", undefined, true), null
].map(L.isTextField);
process.stdout.write(JSON.stringify(out));
"""


def test_report_logic_pure_parts() -> None:
    """report-logic.js: run state, links to passes, the pass a report opens on, which keys are typing."""
    got = run_node(LOGIC)
    # "exited": a rebuilt report of a compile whose process went before its records were written
    # (fresh, yet not running: it read "running" before)
    assert got["state"] == ["complete", "error", "interrupted", "running", "incomplete", "exited"]
    # by name in any case, NAME#k, an old link's name@index, an index; unknown and empty: -1
    assert got["frag"] == [1, 1, 2, 2, -1, 2, -1, -1]
    # failed first; a failure past the last pass opens the last codegen; else the first changed
    assert got["start"] == [1, 4, 3, 0, -1]
    # the first tile-level change: by its changed lines, else the pass name, else the first changed
    assert got["tile"] == [2, 2, 0, False, True, True, False]
    assert got["firstFailed"] == [-1, 4]
    assert got["labels"] == ["no-op", "changed", "changed", "codegen", "weird"]
    # n/p: the next or previous pass that is not a no-op, in the visible order; none past either end
    assert got["nextChanged"] == [4, 1, 6, -1, -1, 1, 6, 4, -1]
    assert got["fields"] == [True, True, False, False, True, True, True, False]


INFLATE = r"""
const U = require(process.argv[1] + "/unpack.js");
const cases = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const out = cases.map((z) => {
  try { return Buffer.from(U.inflate(Uint8Array.from(Buffer.from(z, "hex")))).toString("hex"); }
  catch (e) { return "error: " + e.message; }
});
process.stdout.write(JSON.stringify(out));
"""


def test_unpack_inflates_what_zlib_deflates(tmp_path) -> None:
    """unpack.js's inflate (the packed report scripts, render/pages.py) against Python's zlib: every
    block type (stored at level 0, fixed Huffman, dynamic), long repeats, text and random bytes;
    a stream cut short or corrupt is an error, never a wrong text."""
    import random
    import zlib

    from tltrace.render.bundle import asset_text, minify_js, script_order

    rnd = random.Random(54)
    js = "".join(minify_js(asset_text(n)) for n in script_order(["report.js"])).encode()
    datas = [js, b"", b"a", rnd.randbytes(70_000), bytes(rnd.choice(b"ab") for _ in range(5000))]
    datas.append("h\u00e9llo \u2713 \U0001f600".encode() * 300)
    cases = []
    for level, strategy in ((0, zlib.Z_DEFAULT_STRATEGY), (1, 0), (9, 0), (9, zlib.Z_FIXED), (9, zlib.Z_RLE)):
        for data in datas:
            z = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strategy)
            cases.append(((z.compress(data) + z.flush()).hex(), data.hex()))
    whole = bytes.fromhex(cases[len(datas) * 2][0])  # the report's script, level 9
    bad = [whole[: len(whole) // 2], whole[:-3], bytes([whole[0] | 6]) + whole[1:]]  # cut; cut; block type 3
    got = run_node(INFLATE, [c[0] for c in cases] + [b.hex() for b in bad], tmp_path)
    assert got[: len(cases)] == [c[1] for c in cases]
    assert all(g.startswith("error: inflate") for g in got[len(cases) :]), got[len(cases) :]


INFLATE_DICT = """
const U = require(process.argv[1] + "/unpack.js");
const cases = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const out = cases.map(([z, d]) => {
  try { return Buffer.from(U.inflate(Uint8Array.from(Buffer.from(z, "hex")), d ? Uint8Array.from(Buffer.from(d, "hex")) : undefined)).toString("hex"); }
  catch (e) { return "error: " + e.message; }
});
process.stdout.write(JSON.stringify(out));
"""


def test_unpack_inflates_a_chained_chunk_with_its_dictionary(tmp_path) -> None:
    """A chained data chunk (render/pages.py Packer) is deflated with the chunks before it as zlib's
    preset dictionary (zdict): unpack.js's inflate, given the same bytes, reads back what zlib
    deflated, copies reaching into the dictionary included; without it the text is not read back."""
    import zlib

    from tltrace.render.pages import Packer, chunk_bodies

    packer = Packer()
    values = [
        {"t": "text", "h": str(i), "s": "for (int i = 0; i < 128; ++i) C_l[i] = 0.f;\n" * (20 + i)}
        for i in range(4)
    ]
    page = b"".join(packer.chunk(v) for v in values)
    assert page.count(b'type="tl/zc"') == 4
    bodies = chunk_bodies(page)  # zlib, the oracle, with the dictionary it was made with
    assert [json.loads(b) for b in bodies] == values
    cases, history = [], b""
    for body in bodies:
        z = (
            zlib.compressobj(9, zlib.DEFLATED, -15, zdict=history)
            if history
            else zlib.compressobj(9, zlib.DEFLATED, -15)
        )
        cases.append(((z.compress(body) + z.flush()).hex(), history.hex(), body.hex()))
        history = (history + body)[-32768:]
    got = run_node(INFLATE_DICT, [[c[0], c[1]] for c in cases] + [[cases[-1][0], ""]], tmp_path)
    assert got[: len(cases)] == [c[2] for c in cases]
    assert got[-1] != cases[-1][2]  # the last chunk's copies reach into its dictionary


def test_unpack_inflates_the_packers_chunks_across_its_window(tmp_path) -> None:
    """The Packer's chained chunks are the parts of one deflate stream (each ends at a sync flush and
    an empty final block): unpack.js's inflate reads each alone, given the last 32 KB of the chained
    JSON before it as the dictionary, over more than a window of chunks whose copies reach far back;
    Python's zlib (chunk_bodies) reads the same, and a chunk given no dictionary does not read back."""
    import base64
    import random
    import re

    from tltrace.render.pages import Packer, chunk_bodies

    rnd = random.Random(51)
    lines = [f"C_l[{rnd.randrange(1 << 20)}] = A[{rnd.randrange(1 << 20)}] * 0.5f;" for _ in range(400)]
    values = [
        {"t": "text", "h": str(i), "s": "\n".join(rnd.choice(lines) for _ in range(60))} for i in range(40)
    ]
    packer = Packer()
    page = b"".join(packer.chunk(v) for v in values[:20]) + b"".join(packer.batches(values[20:], 8000))
    bodies = chunk_bodies(page)  # zlib: the oracle
    got_values = [v for b in bodies for v in (json.loads(b) if b.startswith(b"[") else [json.loads(b)])]
    assert got_values == values
    assert sum(map(len, bodies)) > 2 * 32768  # the chain is longer than deflate's window
    packed = re.findall(rb'<script type="tl/zc" class="tl-d">([^<]*)</script>', page)
    assert len(packed) == len(bodies)
    cases, history = [], b""
    for z in packed:
        cases.append([base64.b64decode(z).hex(), history.hex()])
        history = (history + bodies[len(cases) - 1])[-32768:]
    got = run_node(INFLATE_DICT, cases + [[cases[-1][0], ""]], tmp_path)
    assert got[: len(cases)] == [b.hex() for b in bodies]
    assert got[-1] != bodies[-1].hex()  # its copies reach into the chunks before it
