"""What the layouts recorder costs per compile, and how fast the Layouts view opens (issue 30).

    PYTHONPATH=<tree> python bench/layouts_cost.py [--reps 3]

Compile-only CUDA gemms for sm_90a and sm_80 (tilelang.lower, 256^3, 128x128x32 tiles, 3
stages), traced with records only and --sync (every job on the compiling thread, so the
recorder's worker time is measured where it runs). Per compile: the recorder's hooks on the
compiling thread (none per pass since issue 51's round 4: 0), its worker work (`pass_input`:
reading the layout maps off the snapshots), the whole compile traced with and without the recorder, and the `layouts`
field's bytes (compact JSON). Then a report with a 256x256 fragment opened in headless
Chromium: ms from the button's click to the labelled window drawn (median of 5).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def gemm(arch: str):
    """tests/_kernels.py's transposed-B pipelined GEMM (MATMUL), 256 cubed in 128x128x32 tiles, 3 stages."""
    import tilelang
    from tilelang import tvm

    from tests._kernels import MATMUL, load_script

    script = Path(tempfile.mkdtemp(prefix="tltrace-bench-layouts-")) / "matmul.py"
    main = load_script(script, MATMUL).matmul(256, 256, 256, 128, 128, 32, 3, 128)

    target = tvm.target.Target({"kind": "cuda", "arch": arch})

    def run() -> None:
        with target:
            tilelang.lower(main, target=target)

    return run


def timed_factory(times: dict[str, float]):
    from tltrace.layouts.recorder import LayoutsRecorder

    class Timed(LayoutsRecorder):
        # The recorder looks at each input on the worker (`pass_input`): its compiling thread
        # column stays 0 (it has no compiling-thread hook per pass since issue 51's round 4).
        def pass_input(self, event, before):
            t0 = time.thread_time()
            super().pass_input(event, before)
            times["worker"] += time.thread_time() - t0

        def value(self):
            v = super().value()
            times["bytes"] = len(json.dumps(v, separators=(",", ":"))) if v else 0
            return v

    return lambda settings: Timed()


def compile_cost(reps: int) -> list[str]:
    import tltrace
    from tltrace.session import recorder

    lines = [
        "| compile | recorder, compiling thread (ms) | recorder, worker (ms) | compile traced, with / without the recorder (ms) | `layouts` bytes |",
        "|---|---:|---:|---:|---:|",
    ]
    for arch in ("sm_90a", "sm_80"):
        run = gemm(arch)
        rows: dict[str, list[float]] = {"thread": [], "worker": [], "with": [], "without": [], "bytes": []}
        for _ in range(reps):
            for on in (True, False):
                times = {"thread": 0.0, "worker": 0.0, "bytes": 0}
                with tempfile.TemporaryDirectory() as td:
                    tltrace.enable(mode="terminal", trace_dir=td, quiet=True, sync=True)
                    if on:
                        recorder.register("layouts", timed_factory(times))
                    else:
                        recorder.unregister("layouts")
                    t = time.perf_counter()
                    run()
                    wall = time.perf_counter() - t
                    tltrace.disable()
                rows["with" if on else "without"].append(wall * 1e3)
                if on:
                    rows["thread"].append(times["thread"] * 1e3)
                    rows["worker"].append(times["worker"] * 1e3)
                    rows["bytes"].append(times["bytes"])
        med = {k: statistics.median(v) for k, v in rows.items()}
        lines.append(
            f"| {arch} gemm | {med['thread']:.2f} | {med['worker']:.2f} | {med['with']:.0f} / {med['without']:.0f} | {med['bytes']:.0f} |"
        )
    return lines


def view_open() -> list[str]:
    from playwright.sync_api import sync_playwright

    from tests.test_layouts_browser import BIG
    from tltrace.history.report_reads import compile_report
    from tltrace.render.html import write_report

    recorded = HERE.parent / "tests" / "data" / "traces" / "elementwise_add"
    with tempfile.TemporaryDirectory() as td:
        import shutil

        shutil.copytree(recorded, Path(td) / "elementwise_add", symlinks=True)
        runs = Path(td) / "elementwise_add" / ".run_records"
        run = sorted(p for p in runs.iterdir() if (p / "manifest.json").is_file())[0]
        m = json.loads((run / "manifest.json").read_text())
        m["layouts"] = {
            "version": 1,
            "snapshots": [{"record": 1, "pass": "P", "funcs": [{"func": "main", "layouts": [BIG]}]}],
        }
        (run / "manifest.json").write_text(json.dumps(m))
        write_report(compile_report(run))
        ms = []
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            for _ in range(5):
                page = b.new_page()
                page.goto((run / "report.html").as_uri())
                page.wait_for_selector("#tl-layouts-btn")
                ms.append(page.evaluate(
                    "() => { const t = performance.now(); document.getElementById('tl-layouts-btn').click();"
                    " document.querySelector('.tl-lay-win td'); return performance.now() - t; }"
                ))  # fmt: skip
                page.close()
            b.close()
    return [
        f"256x256 fragment: the Layouts view drawn {statistics.median(ms):.0f} ms after the click (median of 5; canvas of 65,536 cells and a 16x16 labelled window)"
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    import tilelang  # noqa: F401

    from tltrace.tracing import recorders

    recorders.register_defaults()
    print("\n".join(compile_cost(a.reps)))
    print()
    print("\n".join(view_open()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
