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
# Largest IR pairs of the GPU traces (FlashAttention, MLA decode), fetched from bench/gpu.sh's
# check part: generated from upstream code, so kept out of git with the upstream copies.
PAIRS = ROOT / ".upstream" / "pairs"
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


def _median_best(t) -> tuple[float, float]:
    """bench/diff.py's timers give a median, or (median, best)."""
    if t is None:
        raise RuntimeError("not available")
    return (float(t[0]), float(t[1])) if isinstance(t, tuple) else (float(t), float(t))


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
    for f in sorted(PAIRS.glob("*.json")):  # brought back from the GPU machine (bench/gpu.sh check)
        data = json.loads(f.read_text(encoding="utf-8"))
        pairs.append((f"largest GPU pair ({data['label']})", data["before"], data["after"]))
    lines = [
        HEADING,
        "",
        f"Median (best) of {engine_bench.REPS} alignments, ms (`tltrace.diff.diff(...).rows` in Python; "
        "`TLDiff.align` in headless Chromium, after one warm-up), on the pair built by `bench/diff.py` "
        "(every changed pass of the examples' real IR, concatenated with renamed buffers) and on the "
        "largest real pair of the corpus `tests/data/diff_corpus/`.",
        "",
        "| pair | lines before / after | rows (kinds) | Python | Chromium |",
        "|---|---:|---|---:|---:|",
    ]
    budget = []
    for label, before, after in pairs:
        d = diff(before, after)
        kinds: dict[str, int] = {}
        for r in d.rows:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        py, py_best = _median_best(engine_bench.python_ms(before, after))
        try:
            ch, ch_best = _median_best(engine_bench.chromium_ms(before, after))
        except Exception as exc:  # no Chromium here
            ch = ch_best = None
            print(f"bench/align.py: Chromium timing skipped: {exc}", file=sys.stderr)
        kinds_s = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        ch_s = f"{ch:.1f} ({ch_best:.1f})" if ch is not None else "n/a"
        lines.append(
            f"| {label} | {len(d.a):,} / {len(d.b):,} | {kinds_s} | {py:.1f} ({py_best:.1f}) | {ch_s} |"
        )
        if ch is not None and label.startswith("5,000"):
            budget.append(
                (
                    f"diff alignment of a {len(d.a):,}-line IR pair in headless Chromium",
                    f"< {TARGET_MS:.0f} ms",
                    f"{ch:.1f} ms",
                    "ok" if ch < TARGET_MS else "OVER",
                )
            )
    if budget:
        lines += ["", "| target | limit | measured | verdict |", "|---|---:|---:|---|"]
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in budget]
    return "\n".join(lines) + "\n"


def find_largest(root: Path) -> dict | None:
    """The changed pass (not codegen) with the most lines, in any trace under `root`."""
    from tltrace.format.records import RunManifest

    best = None
    for m in root.rglob("manifest.json"):
        if m.parent.parent.name != ".run_records":
            continue
        try:
            manifest = RunManifest.from_json(json.loads(m.read_text()))
        except (OSError, ValueError, TypeError, KeyError):
            continue
        for rec in manifest.records:
            bf, af = rec.before_file, rec.after_file
            if rec.status != "changed" or not bf or not af or not af.endswith(".tir"):
                continue
            try:
                before, after = (m.parent / bf).read_text(), (m.parent / af).read_text()
            except OSError:
                continue
            n = before.count("\n") + after.count("\n")
            if best is None or n > best[0]:
                label = f"{manifest.script}: {rec.index} {rec.name}"
                best = (n, {"label": label, "before": before, "after": after})
    return None if best is None else best[1]


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--find-largest",
        type=Path,
        metavar="DIR",
        help="write the largest changed IR pair of the traces under DIR to --out, and time it in Python",
    )
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    if a.find_largest:
        pair = find_largest(a.find_largest)
        if pair is None:
            print(f"bench/align.py: no changed pass under {a.find_largest}", file=sys.stderr)
            return 1
        try:
            import diff as engine_bench

            pair["python_ms"] = _median_best(engine_bench.python_ms(pair["before"], pair["after"]))
        except ImportError:
            pass
        text = json.dumps(pair)
        if a.out:
            a.out.write_text(text)
        print(
            pair["label"],
            pair["before"].count("\n"),
            "/",
            pair["after"].count("\n"),
            "lines",
            pair.get("python_ms", ""),
        )
        return 0
    print(section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
