"""Alignment timing: the diff engine on a 5,000-line IR pair, in Python, node and headless Chromium.

The pair is built from real IR (the corpus under tests/data/diff_corpus/): every changed pass of
the three examples, concatenated with renamed buffers until each side has about 5,000 lines, so
the edits are the passes' own (re-indents, wrapped blocks, rewritten lines). Prints milliseconds
(median of 9; the first run warms the JIT).

    python bench/diff.py
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

REPS = 9


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


def python_ms(before: str, after: str) -> float:
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        _ = diff(before, after).rows
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


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
  return times[Math.floor(times.length / 2)];
}
"""


def node_ms(before: str, after: str) -> float | None:
    node = shutil.which("node")
    if node is None:
        return None
    js = resources.files("tltrace.render").joinpath("assets/diff.js")
    script = ("var TLDiff = require(process.argv[1]);" + JS_TIMER +
              "var d = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              f"process.stdout.write(String(tlTime(d[0], d[1], {REPS})));")
    with resources.as_file(js) as path:
        out = subprocess.run([node, "-e", script, str(path)], input=json.dumps([before, after]),
                             capture_output=True, text=True, check=True)
    return float(out.stdout)


def chromium_ms(before: str, after: str) -> float | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    engine = resources.files("tltrace.render").joinpath("assets/diff.js").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "t.html"
        page_path.write_text("<!DOCTYPE html><meta charset=utf-8><script>" + engine + JS_TIMER + "</script>",
                             encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
            page = browser.new_page()
            page.goto(page_path.as_uri())
            ms = page.evaluate("([a, b, n]) => tlTime(a, b, n)", [before, after, REPS])
            browser.close()
    return float(ms)


def main() -> None:
    before, after = big_pair()
    d = diff(before, after)
    kinds: dict[str, int] = {}
    for r in d.rows:
        kinds[r.kind] = kinds.get(r.kind, 0) + 1
    print(f"pair: {len(d.a)} / {len(d.b)} lines; rows: {kinds}")
    print(f"python  {python_ms(before, after):7.1f} ms")
    n = node_ms(before, after)
    print(f"node    {n:7.1f} ms" if n is not None else "node    (not installed)")
    c = chromium_ms(before, after)
    print(f"chromium{c:7.1f} ms" if c is not None else "chromium (playwright missing)")


if __name__ == "__main__":
    main()
