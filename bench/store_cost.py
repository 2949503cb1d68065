"""The store's own CPU per sm_90a lowering: a pack per run against an object file and a hard link per text.

    PYTHONPATH=<tree> python bench/store_cost.py [--reps 15]

One process. The upstream GEMM is lowered for sm_90a once, traced (records), and its
records' texts are kept in record order (each record's before, then its after: what the
capture hands the store). Each rep then stores that sequence, interleaved, into a fresh
run directory: `pack` with session/store.RunStore (what tltrace does now: each text's entry
deflated), `pack, plain entries` the same with the entries as written before 2026-12-06, `links` with
the design it replaced (each new text written to `.objects/<hash>` through a temporary and
a rename, an `exists` per new text, a hard link per side: `link_text` of tltrace <= #50); and `export --tir`, the seed's
per-pass files written on demand from the run's pack (what materialising them would cost).
Both encode the text; neither hashes it (the capture does, before the store). CPU is
`time.thread_time()` of the storing thread, the unit the untraced lowering's compiling
thread CPU (median of 3 lowerings). Medians, with min..max over reps. `du bytes`: what the
first rep left on disk (blocks, directories included).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_common import disk_bytes  # noqa: E402


def recorded_texts(lower, sub: Path) -> tuple[list[tuple[str, str, str]], Path]:
    """Lower once with tltrace recording into `sub`; return (rel, text, hash) per record side, in order."""
    from capture_cost import lower_configured

    from tltrace.history.loading import load_run
    from tltrace.history.texts import text_of

    lower_configured("tltrace records", sub, lower)
    (run_dir,) = sub.rglob("run_*")
    out = []
    for rec in load_run(run_dir).require().records:
        for side, rel, digest in (
            ("before", rec.before_file, rec.before_hash),
            ("after", rec.after_file, rec.after_hash),
        ):
            if rel and digest:
                text = text_of(run_dir, rec, side)
                assert text is not None
                out.append((rel, text, digest))
    return out, run_dir


def export_tir(run_dir: Path, out: Path) -> None:
    """`tltrace export RUN --tir DIR` for the run: what writing the seed's files (on demand) costs."""
    from tltrace.history import tir_files
    from tltrace.history.loading import load_run

    tir_files.write_run(load_run(run_dir), out, tir_files.Written())


def store_pack(texts: list[tuple[str, str, str]], root: Path, deflate: bool = True) -> None:
    """session/store.RunStore as tltrace runs it (`deflate`: each text's entry deflated, format/pack.py);
    deflate=False: the plain entries it wrote before 2026-12-06 (a bench patch of the store's one call)."""
    from tltrace.format import pack
    from tltrace.session import store as store_mod

    if not deflate:
        store_mod.packed_entry = lambda digest, data, base=None: pack.entry(digest, data)  # type: ignore[assignment]
    try:
        store = store_mod.RunStore(root)
        store.open()
        for _rel, text, digest in texts:
            store.put_text(text, digest)
        store.close()
    finally:
        store_mod.packed_entry = pack.packed_entry


def store_links(texts: list[tuple[str, str, str]], root: Path) -> None:
    """The replaced design: `.objects/<hash>` written once (temporary + rename), a hard link per side."""
    objects = os.path.join(root, ".run_records", ".objects")
    run_dir = os.path.join(root, ".run_records", "run_x")
    os.makedirs(objects, exist_ok=True)
    os.makedirs(run_dir, exist_ok=True)
    made: set[str] = {run_dir}
    known: set[str] = set()
    for rel, text, digest in texts:
        dest = os.path.join(run_dir, rel)
        d = os.path.dirname(dest)
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        obj = os.path.join(objects, digest)
        if digest not in known:
            if not os.path.exists(obj):
                data = text.encode("utf-8", "surrogatepass")
                tmp = os.path.join(objects, f".{digest}.{os.getpid()}-{threading.get_ident()}.tmp")
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
                os.write(fd, data)
                os.close(fd)
                os.replace(tmp, obj)
            known.add(digest)
        try:
            os.link(obj, dest)
        except FileExistsError:
            os.unlink(dest)
            os.link(obj, dest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args(argv)
    from capture_cost import sm90a_lowerer

    lower = sm90a_lowerer()
    base = []
    for _ in range(3):
        t0 = time.thread_time()
        lower()
        base.append(time.thread_time() - t0)
    unit = statistics.median(base)
    res: dict[str, dict[str, list[float]]] = {
        k: {"cpu": [], "wall": []} for k in ("pack", "pack, plain entries", "links", "export --tir")
    }
    du: dict[str, int] = {}  # what each store left on disk (`du`: blocks, directories included)
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-store-") as td:
        texts, run_dir = recorded_texts(lower, Path(td) / "rec")
        for rep in range(args.reps):
            for name, fn in (
                ("pack", lambda root: store_pack(texts, root)),
                ("pack, plain entries", lambda root: store_pack(texts, root, deflate=False)),
                ("links", lambda root: store_links(texts, root)),
                ("export --tir", lambda root: export_tir(run_dir, root)),
            ):
                root = Path(td) / name.replace(",", "").replace(" ", "_") / str(rep)
                root.mkdir(parents=True)
                c0, w0 = time.thread_time(), time.perf_counter()
                fn(root)
                c1, w1 = time.thread_time(), time.perf_counter()
                res[name]["cpu"].append(c1 - c0)
                res[name]["wall"].append(w1 - w0)
                if rep == 0:
                    du[name] = disk_bytes(root)[1]
    n = len(texts)
    distinct = len({d for _r, _t, d in texts})
    print("## The store's CPU per sm_90a lowering\n")
    print(
        f"`python bench/store_cost.py --reps {args.reps}`: {n} record sides, {distinct} distinct texts; "
        f"unit: the untraced lowering's compiling thread, {unit * 1e3:.0f} ms CPU. Medians (min..max).\n"
    )
    print("| store | CPU (ms) | CPU / untraced thread | wall (ms) | du bytes |")
    print("|---|---:|---:|---:|---:|")
    for name, m in res.items():
        c, w = m["cpu"], m["wall"]
        print(
            f"| {name} | {statistics.median(c) * 1e3:.2f} ({min(c) * 1e3:.2f}..{max(c) * 1e3:.2f}) | "
            f"{statistics.median(c) / unit:.4f}x | {statistics.median(w) * 1e3:.2f} ({min(w) * 1e3:.2f}..{max(w) * 1e3:.2f}) | "
            f"{du.get(name, 0):,} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
