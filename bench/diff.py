"""Alignment timing: the diff engine on a 5,000-line IR pair, in Python, node and headless Chromium.

The pair is built from real IR (the corpus under tests/data/diff_corpus/): every changed pass of
the three examples, concatenated with renamed buffers until each side has about 5,000 lines, so
the edits are the passes' own (re-indents, wrapped blocks, rewritten lines). Prints milliseconds,
median and best of 15 (the first run warms the JIT; best is what an idle machine gives).

    python bench/diff.py               (python bench/diff.py --markdown: the docs/benchmarks.md section)
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tltrace.diff import diff  # noqa: E402

REPS = 15


def big_pair(target: int = 5000) -> tuple[str, str]:
    pairs = []
    for f in sorted((ROOT / "tests" / "data" / "diff_corpus").glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        pairs += [(data["texts"][hb], data["texts"][ha]) for _, _, hb, ha in data["pairs"]]
    a: list[str] = []
    b: list[str] = []
    k = n = 0
    while n < target:
        before, after = pairs[k % len(pairs)]
        a.append(before.replace("_shared", f"_shared{k}"))
        b.append(after.replace("_shared", f"_shared{k}"))
        n += before.count("\n")
        k += 1
    return "".join(a), "".join(b)


def python_ms(before: str, after: str) -> tuple[float, float]:
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        _ = diff(before, after).rows
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), min(times)


JS_TIMER = """
function tlTime(before, after, reps) {
  var times = [];
  for (var i = 0; i < reps + 1; i++) {
    var t = performance.now();
    var A = TLDiff.splitLines(before), B = TLDiff.splitLines(after);
    TLDiff.align(A, B);
    times.push(performance.now() - t);
  }
  times = times.slice(1).sort(function (x, y) { return x - y; });
  return [times[Math.floor(times.length / 2)], times[0]];
}
"""


def node_ms(before: str, after: str) -> tuple[float, float] | None:
    node = shutil.which("node")
    if node is None:
        return None
    js = resources.files("tltrace.render").joinpath("assets/diff.js")
    script = (
        "var TLDiff = require(process.argv[1]);"
        + JS_TIMER
        + "var d = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        f"process.stdout.write(JSON.stringify(tlTime(d[0], d[1], {REPS})));"
    )
    with resources.as_file(js) as path:
        out = subprocess.run(
            [node, "-e", script, str(path)],
            input=json.dumps([before, after]),
            capture_output=True,
            text=True,
            check=True,
        )
    med, best = json.loads(out.stdout)
    return med, best


def chromium_ms(before: str, after: str) -> tuple[float, float] | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    engine = resources.files("tltrace.render").joinpath("assets/diff.js").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "t.html"
        page_path.write_text(
            "<!DOCTYPE html><meta charset=utf-8><script>" + engine + JS_TIMER + "</script>", encoding="utf-8"
        )
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
            )
            page = browser.new_page()
            page.goto(page_path.as_uri())
            med, best = page.evaluate("([a, b, n]) => tlTime(a, b, n)", [before, after, REPS])
            browser.close()
    return med, best


def cases() -> list[tuple[str, str, str]]:
    before, after = big_pair()
    wrapped = "def wrapper():\n" + "".join("    " + line + "\n" for line in before.splitlines())
    rewritten = "".join(f"v{i} = T.float32({i}) * w_{i % 7}\n" for i in range(len(before.splitlines())))
    return [
        ("real passes", before, after),
        ("all re-indented", before, wrapped),
        ("all rewritten", before, rewritten),
    ]


def measure() -> str:
    """Return the markdown section for docs/benchmarks.md (bench/run.py calls this)."""
    lines = [
        "## Diff alignment (5,000-line IR pairs, `bench/diff.py`)",
        "",
        "Time to align one pair with the diff engine: `tltrace/diff/` in Python (terminal, `show`, "
        "`lower_trace`) and its twin `assets/diff.js` in node and in headless Chromium (the report aligns "
        f"a pass when it is opened). Median and best of {REPS} runs, ms. *real passes*: every changed pass "
        "of the examples' CPU compiles, concatenated; *all re-indented*: the whole text wrapped in one "
        "block; *all rewritten*: no line in common (the worst case).",
        "",
        "| pair | rows | Python | node | Chromium |",
        "|---|---|---:|---:|---:|",
    ]
    for label, before, after in cases():
        d = diff(before, after)
        kinds: dict[str, int] = {}
        for r in d.rows:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        cells = []
        for got in (python_ms(before, after), node_ms(before, after), chromium_ms(before, after)):
            cells.append(f"{got[0]:.1f} / {got[1]:.1f}" if got is not None else "-")
        rows = ", ".join(f"{n} {k}" for k, n in kinds.items())
        lines.append(f"| {label} ({len(d.a):,} / {len(d.b):,} lines) | {rows} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    print(f"median / best of {REPS}, ms")
    for label, before, after in cases():
        d = diff(before, after)
        kinds: dict[str, int] = {}
        for r in d.rows:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        print(f"{label}: {len(d.a)} / {len(d.b)} lines; rows: {kinds}")
        for name, got in (
            ("python", python_ms(before, after)),
            ("node", node_ms(before, after)),
            ("chromium", chromium_ms(before, after)),
        ):
            print(
                f"  {name:9s}" + (f"{got[0]:7.1f} {got[1]:7.1f}" if got is not None else "  (not available)")
            )


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        print(measure())
    else:
        main()
