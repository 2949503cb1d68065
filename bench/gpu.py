"""GPU benchmark: TileLang's upstream gemm autotuner (full 288-config grid), traced and not.

Runs on the CUDA machine through `bench/gpu.sh`; the upstream example is read from
`.upstream/examples/gemm/example_gemm_autotune.py` (ignored by git; see docs/benchmarks.md
for where it comes from), or from `$TLTRACE_UPSTREAM/examples/...`.

    python bench/gpu.py autotune --out DIR [--modes untraced,quiet,html] [--budget 540] [--tag a]
    python bench/gpu.py summarize DIR_OR_JSON... [--index INDEX.html] [--pool] > bench/results/gpu_autotune.md
    python bench/gpu.py autotune --dry-run        # print what it would run, run nothing

`autotune` writes into DIR: `autotune-TAG.json` (raw, for `summarize`), `autotune-TAG.md`
(the table), and `index-TAG.html` (html mode's `<script>/report.html`, to time it in
Chromium here, since the GPU machine has none). With `--keep-trace DIR2` the trace dirs
stay in DIR2 (`tests/test_gpu_upstream.py` checks them: every compile kept, one
invocation id, distinct signatures, the index names every compile).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import autotune  # noqa: E402

UPSTREAM = Path(os.environ.get("TLTRACE_UPSTREAM") or REPO / ".upstream")
AUTOTUNE_EXAMPLE = "examples/gemm/example_gemm_autotune.py"
# The upstream script's own arguments: --use_autotune runs the autotuner over get_configs()'
# full grid (3 block_M x 3 block_N x 2 block_K x 4 stages x 2 thread counts x 2 rasterizations).
DEFAULT_ARGS = ["--use_autotune"]


def _run_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        lo, hi = int(first), int(last or first)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected FIRST-LAST (e.g. 1-4), got {text!r}") from None
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError(f"expected 1 <= FIRST <= LAST, got {text!r}")
    return lo, hi


def upstream(rel: str) -> Path:
    return UPSTREAM / rel


def run_autotune(a: argparse.Namespace) -> int:
    script = upstream(AUTOTUNE_EXAMPLE)
    args = a.args.split() if a.args is not None else DEFAULT_ARGS
    if a.configs:
        # An even subset of the grid, through a loader of the unmodified example (bench/upstream_autotune.py).
        if not script.is_file() and not a.dry_run:
            print(
                f"bench/gpu.py: error: {script} is missing (copy .upstream/ into the checkout and carry it)",
                file=sys.stderr,
            )
            return 2
        script = Path(__file__).resolve().parent / "upstream_autotune.py"
        args = ["--configs", str(a.configs), *(a.args.split() if a.args is not None else [])]
    modes = a.modes.split(",")
    if a.dry_run:
        for m in modes:
            argv, env = autotune.command(m, script, args, Path("TRACE_DIR"))
            extra = {k: env[k] for k in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR") if k in env}
            print(m, extra, " ".join(argv))
        return 0
    if not script.is_file():
        print(
            f"bench/gpu.py: error: {script} is missing (copy .upstream/ into the checkout and carry it)",
            file=sys.stderr,
        )
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(a.keep_trace) if a.keep_trace else out / f"work-{a.tag}"
    res = autotune.measure(
        script,
        args,
        reps=a.reps,
        modes=modes,
        label="H200, upstream gemm autotuner" + (f", {a.configs} configs" if a.configs else ""),
        browser=False,
        work=work,
        budget_s=a.budget,
        keep_dirs=True,
        part=a.tag,
        log=lambda s: print(s, flush=True),
        timeline=(out / f"timeline-{a.tag}.jsonl") if a.configs else None,
        runs=a.runs,
    )
    import socket

    res.machine = socket.gethostname()
    (out / f"autotune-{a.tag}.json").write_text(json.dumps(res.to_json(), indent=1))
    (out / f"autotune-{a.tag}.md").write_text(autotune.table(res))
    index = work / "html" / script.stem / "report.html"
    if index.exists():
        shutil.copyfile(index.resolve(), out / f"index-{a.tag}.html")
    if not a.keep_trace:
        shutil.rmtree(work, ignore_errors=True)
    tl = out / f"timeline-{a.tag}.jsonl"
    if tl.exists():
        import timeline

        (out / f"timeline-{a.tag}.md").write_text(timeline.summarize(tl))
        print(timeline.summarize(tl))
    print(autotune.table(res))
    print(autotune.budget_table(autotune.budgets(res, time_is_target=True)))
    return 0 if all(i.returncode == 0 for i in res.invocations) else 1


def summarize(a: argparse.Namespace) -> int:
    files: list[Path] = []
    for p in map(Path, a.paths):
        files += sorted(p.glob("autotune-*.json")) if p.is_dir() else [p]
    if not files:
        print("bench/gpu.py: error: no autotune-*.json given", file=sys.stderr)
        return 2
    parts = [autotune.Result.from_json(json.loads(f.read_text())) for f in files]
    res = parts[0]
    for other in parts[1:]:
        res.merge(other)
    if a.pool:
        # Parts that run slices of one interleaved schedule (gpu.sh's RUNS) are one measurement: every mode's
        # median over all of them, each ratio against the untraced runs of all of them.
        for inv in res.invocations:
            inv.part = ""
        res.reps = max(sum(i.mode == m for i in res.invocations) for m in {i.mode for i in res.invocations})
    res.label = "H200, upstream gemm autotuner"
    indexes = [f.with_name(f"index-{f.stem.removeprefix('autotune-')}.html") for f in files]
    for index in [*(Path(i) for i in a.index or []), *indexes]:
        if index.exists() and "ms" not in res.open_ms.get("html", {}):
            res.open_ms["html"] = autotune.open_report(index)
    note = (
        "Run on the GPU machine by `bench/gpu.sh` in parts of at most 10 minutes (one device call each); "
        + (
            "the parts run slices of one interleaved schedule (RUNS) and are pooled: every median is over "
            "all parts' runs, every ratio against all parts' untraced runs"
            if a.pool
            else "each part's times are against its own untraced run"
        )
        + ", bytes against the built-in's from any part."
    )
    print(autotune.table(res).replace("\n\n", f"\n\n{note}\n\n", 1))
    rows = autotune.budgets(res, time_is_target=True)
    if rows:
        print(autotune.budget_table(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("autotune", help="time the upstream autotuner")
    p.add_argument("--out", default=os.environ.get("OUT") or "tmp/gpu-out")
    p.add_argument(
        "--modes", default="untraced,quiet,html", help="comma-separated: " + ", ".join(autotune.MODES)
    )
    p.add_argument("--reps", type=int, default=1)
    p.add_argument(
        "--runs",
        type=_run_range,
        metavar="FIRST-LAST",
        help="only these runs (1-based) of the reps x modes interleaved schedule, so that several calls "
        "make one measurement (summarize --pool joins them)",
    )
    p.add_argument("--budget", type=float, default=540.0, help="seconds; reps that would not fit are skipped")
    p.add_argument("--tag", default="a", help="names this part's files")
    p.add_argument("--args", help=f"the example's arguments [default: {' '.join(DEFAULT_ARGS)}]")
    p.add_argument("--keep-trace", help="keep the trace dirs here (for tests/test_gpu_upstream.py)")
    p.add_argument(
        "--configs", type=int, help="an even subset of N configs of the grid (bench/upstream_autotune.py)"
    )
    p.add_argument("--dry-run", action="store_true")
    s = sub.add_parser(
        "summarize", help="markdown section from the parts' JSON (run here, after the GPU runs)"
    )
    s.add_argument("paths", nargs="+")
    s.add_argument("--index", action="append", help="an index report to time in Chromium")
    s.add_argument(
        "--pool",
        action="store_true",
        help="one measurement across the parts (RUNS): medians and ratios over all their runs",
    )
    a = ap.parse_args(argv)
    return run_autotune(a) if a.cmd == "autotune" else summarize(a)


if __name__ == "__main__":
    sys.exit(main())
