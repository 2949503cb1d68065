"""Where a traced start-up's extra time goes: cProfile of `python EMPTY` and `tltrace run --quiet EMPTY`.

    python bench/startup_diff.py EMPTY_SCRIPT TRACE_DIR [--top 40]

EMPTY_SCRIPT is a script that only imports TileLang. Each is profiled once (cProfile, one process
each); the functions are listed by how much more cumulative time they took traced than plain,
and tltrace's own frames are listed after them.
"""

from __future__ import annotations

import argparse
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path


def _profile(argv: list[str], out: Path) -> pstats.Stats:
    subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), *argv], check=False, capture_output=True
    )
    return pstats.Stats(str(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("script")
    ap.add_argument("trace_dir")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as td:
        plain = _profile([a.script], Path(td) / "plain.prof").stats  # type: ignore[attr-defined]
        traced = _profile(
            ["-m", "tltrace", "run", "--quiet", "--trace-dir", a.trace_dir, a.script],
            Path(td) / "traced.prof",
        ).stats  # type: ignore[attr-defined]
    own = {k: v[2] for k, v in traced.items()}
    own0 = {k: v[2] for k, v in plain.items()}
    print("own s traced - plain, traced, plain, calls plain/traced, function")
    for k in sorted(own, key=lambda k: -(own[k] - own0.get(k, 0.0)))[: a.top]:
        c0 = plain[k][1] if k in plain else 0
        print(
            f"{own[k] - own0.get(k, 0.0):8.3f} {own[k]:8.3f} {own0.get(k, 0.0):8.3f} {c0}/{traced[k][1]}  {k[0]}:{k[1]}({k[2]})"
        )
    print(f"own s in all: traced {sum(own.values()):.3f}, plain {sum(own0.values()):.3f}")
    total = {k: v[3] for k, v in traced.items()}
    base = {k: v[3] for k, v in plain.items()}
    calls = {k: (plain.get(k, (0, 0))[1], v[1]) for k, v in traced.items()}
    # modules' bodies only (`<module>`): where the imports differ, without the CLI's wrappers
    rows = sorted((k for k in total if k[2] == "<module>"), key=lambda k: -(total[k] - base.get(k, 0.0)))
    print("cumulative s traced - plain, traced, plain, calls plain/traced, function")
    for k in rows[: a.top]:
        path, line, fn = k
        print(
            f"{total[k] - base.get(k, 0.0):8.3f} {total[k]:8.3f} {base.get(k, 0.0):8.3f} "
            f"{calls[k][0]}/{calls[k][1]}  {path}:{line}({fn})"
        )
    print("--- functions only the plain run called, by cumulative time")
    for k in sorted((k for k in base if k not in total), key=lambda k: -base[k])[:10]:
        print(f"{base[k]:8.3f}  {k[0]}:{k[1]}({k[2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
