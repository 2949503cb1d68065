"""ncu's own views of a report, read from the CSV ncu prints: the oracles of the hot-lines tests."""

from __future__ import annotations

import csv
import gzip
import json
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "ncu"
KERNEL = "main_kernel"


def recorded_profile(variant: str) -> dict:
    """The recorded report of one variant in the dumper's shape (tests/data/ncu/README.md)."""
    with gzip.open(DATA / f"fa_{variant}_profile.json.gz", "rt") as f:
        return json.load(f)


def profiled_trace(root: Path) -> tuple[Path, dict]:
    """The recorded FlashAttention trace unpacked under `root`, its profile attached and stored as
    `run --ncu` does (runtime/profiled.py): (its run directory, the profile)."""
    from tltrace.runtime import profiled

    with tarfile.open(DATA / "fa_plain_trace.tgz") as t:
        t.extractall(root, filter="data")
    run_dir = next((root / "fa_plain_trace").glob("*/.run_records/run_*"))
    prof = recorded_profile("plain")
    attached, unmatched = profiled.attach(prof, [profiled.load_compile(run_dir)])
    assert unmatched == [] and [a.kernel for a in attached] == [KERNEL]
    profiled.store(run_dir, {KERNEL: list(attached[0].actions)}, prof["source"], [])
    return run_dir, prof


def ncu_view(
    text: str,
) -> tuple[dict[tuple[str, int], int], dict[int, set[tuple[str, int]]], dict[int, int]]:
    """ncu's per-line view: {(file, line): samples}, {address: the lines it is listed under}, {address: samples}."""
    totals: dict[tuple[str, int], int] = {}
    under: dict[int, set[tuple[str, int]]] = defaultdict(set)
    per_addr: dict[int, int] = {}
    path, cur, back = None, None, 0
    for raw in text.splitlines():  # ncu leaves quotes in source lines unescaped: one physical line a row
        row = next(csv.reader([raw]))
        if row and row[0] == "File Path":
            path = row[1]
        elif row and row[0] == "Line No":  # the samples' column, counted from the end of a row
            back = len(row) - row.index("Warp Stall Sampling (All Samples)")
        elif row and row[0].isdigit():
            cur = (path, int(row[0]))
            totals[cur] = int(row[-back])
        elif len(row) > 3 and row[0] == "" and row[2].startswith("0x"):
            under[int(row[2], 16)].add(cur)  # type: ignore[arg-type]
            per_addr[int(row[2], 16)] = int(row[-back])
    return totals, under, per_addr


def expected_cuda(
    ncu: dict[int, int], under: dict[int, set], ours: dict[int, tuple], samples: dict[int, int]
) -> tuple[Counter, int, int]:
    """Per kernel.cu line, what folding should give: ncu's line total, plus the samples of instructions ncu
    lists under no kernel.cu line (inlined from a header: tltrace's SASS map follows the chain out), moved
    for the PCs whose kernel.cu line ncu's table puts elsewhere. Returns (that, moved out of headers, elsewhere)."""
    expect = Counter(ncu)
    moved = other = 0
    for off, lines in under.items():
        cu = {ln for f, ln in lines if f.endswith(".cu")}
        mine = ours[off][0]
        if cu == {mine}:
            continue
        s = samples.get(off, 0)
        expect[mine] += s
        if not cu:
            moved += s
            continue
        other += s
        for ln in cu:
            expect[ln] -= s
    return expect, moved, other
