"""Diff alignment timing (issue 10): the one engine, in Python and in headless Chromium.

Times `tltrace.diff` (Python) and its browser twin (`assets/diff.js`, what the report runs
when a pass is opened) on two pairs: a 5,000-line IR pair built from the real IR corpus
(bench/diff.py's `big_pair`), and the largest real before/after pair of that corpus.

    python bench/align.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

HEADING = "## Diff alignment"
TARGET_MS = 50.0


def largest_real_pair() -> tuple[str, str, str] | None:
    """(label, before, after): the corpus pair with the most lines, or None without a corpus."""
    best = None
    for f in sorted((ROOT / "tests" / "data" / "diff_corpus").glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        for entry in data["pairs"]:
            hb, ha = entry[-2], entry[-1]
            before, after = data["texts"][hb], data["texts"][ha]
            n = before.count("\n") + after.count("\n")
            if best is None or n > best[0]:
                best = (n, f"{f.stem}: {' '.join(str(x) for x in entry[:-2])}", before, after)
    return None if best is None else best[1:]


def section() -> str:
    try:
        import diff as engine_bench  # bench/diff.py, with the engine (tltrace/diff/)
        from tltrace.diff import diff
    except ImportError as exc:
        return f"{HEADING}\n\nSkipped: the diff engine is not here ({exc}).\n"
    pairs = [("5,000-line pair from the corpus", *engine_bench.big_pair())]
    real = largest_real_pair()
    if real:
        pairs.append((f"largest real pair ({real[0]})", real[1], real[2]))
    lines = [
        HEADING,
        "",
        f"Median of {engine_bench.REPS} alignments (`tltrace.diff.diff(...).rows` in Python; "
        "`TLDiff.align` in headless Chromium, after one warm-up), on the pair built by `bench/diff.py` "
        "(every changed pass of the examples' real IR, concatenated with renamed buffers) and on the "
        "largest real pair of the corpus `tests/data/diff_corpus/`.",
        "",
        "| pair | lines before / after | rows (kinds) | Python ms | Chromium ms |",
        "|---|---:|---|---:|---:|",
    ]
    budget = []
    for label, before, after in pairs:
        d = diff(before, after)
        kinds: dict[str, int] = {}
        for r in d.rows:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        py = engine_bench.python_ms(before, after)
        try:
            ch = engine_bench.chromium_ms(before, after)
        except Exception as exc:  # no Chromium here
            ch = None
            print(f"bench/align.py: Chromium timing skipped: {exc}", file=sys.stderr)
        kinds_s = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        ch_s = f"{ch:.1f}" if ch is not None else "n/a"
        lines.append(f"| {label} | {len(d.a):,} / {len(d.b):,} | {kinds_s} | {py:.1f} | {ch_s} |")
        if ch is not None and label.startswith("5,000"):
            budget.append((f"diff alignment of a {len(d.a):,}-line IR pair in headless Chromium",
                           f"< {TARGET_MS:.0f} ms", f"{ch:.1f} ms", "ok" if ch < TARGET_MS else "OVER"))
    if budget:
        lines += ["", "| target | limit | measured | verdict |", "|---|---:|---:|---|"]
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in budget]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(section())
