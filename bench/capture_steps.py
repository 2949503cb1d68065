"""Where tltrace's CPU goes in one sm_90a lowering: exclusive per-thread CPU of each capture step.

    PYTHONPATH=<tree> python bench/capture_steps.py [--reps 7] [--mode records|html] [--json OUT] [--split-print]
        [--kernel upstream [--config block_M=128,block_N=256,...] [--mnk 4096]]

One process (bench/capture_cost.py's kernel and target, as bench/lowering_cpu.py). Each step
below is one of tltrace's own functions, wrapped for the measurement only (tltrace's, never
TileLang's) with `time.thread_time()` on whatever thread runs it (the worker, or the compiling
thread for the hooks marked so): a step's time excludes the wrapped steps it calls, so the
rows add up. Untraced and traced lowerings alternate, rep by rep; the wrapping is put on after
the first traced rep (warm-up). Steps that a tree does not have are left out (an older tree
runs it too, for a before/after table). Medians are not taken per step: sums over the reps
divided by the reps.

`--split-print` splits the print row (issue 51, round 4): the tag walk and the tag strip get rows
of their own, and what stays in the print row is TVM's printer (the FFI call, with the GIL
released) and its config.

`--kernel upstream --config ...` (issue 51, round 5): the upstream autotuner's own kernel
(bfloat16, 4096^3 unless `--mnk`) for one config of its grid, lowered for sm_90a with its
device codegen recorded, as each of the autotuner's GPU compiles is (without nvcc).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from capture_cost import add_kernel_args, kernel_of  # noqa: E402

# (module, attribute path, label); "main:" labels run on the compiling thread.
STEPS = [
    ("tltrace.sourcemap.lines", "print_module", "print (with the source map's line tags)"),
    ("tltrace.sourcemap.compose", "ModulePrinter.__call__", "print: per-function reuse (rule, compose)"),
    ("tltrace.session.snapshot", "TextCache.resolve", "reuse rule, module rebuild, equality rule"),
    ("tltrace.session.capture", "line_changes", "+/- counts (passes)"),
    ("tltrace.session.codegen_call", "count_changes", "+/- counts (codegen records)"),
    ("tltrace.session.capture", "text_hash", "text hashes"),
    # round 6: the UTF-8 encoded once, for the hash and the pack; the record path's body
    ("tltrace.session.capture", "utf8_hash", "text hashes"),
    ("tltrace.session.store", "RunStore.put_text", "store: pack buffer"),
    ("tltrace.session.store", "RunStore._flush", "store: pack writes"),
    ("tltrace.session.store", "RunStore.append_record", "store: records.jsonl"),
    ("tltrace.session.store", "RunStore.write_manifest", "store: manifest.json"),
    ("tltrace.sourcemap.recorder", "SourceMapRecorder.refine", "call-site refinement"),
    ("tltrace.sourcemap.recorder", "SourceMapRecorder.recorded", "sourcemap.jsonl"),
    ("tltrace.sourcemap.recorder", "SourceMapRecorder._codegen_map", "codegen source map"),
    ("tltrace.layouts.recorder", "LayoutsRecorder._look", "layouts"),
    ("tltrace.facts.recorder", "FactsRecorder.ended", "facts"),
    ("tltrace.rerun.capture", "ReproRecorder.attach", "reproducer files"),
    ("tltrace.rerun.capture", "ReproRecorder._look_for_target", "reproducer target"),
    ("tltrace.session.capture", "TraceSession._emit_now", "listeners"),
    # --mode html: the report listener's parts (issue 51, round 5); what is left is in "listeners"
    ("tltrace.render.pages", "_deflate", "html: deflate"),
    ("tltrace.render.pages", "Packer.chunk", "html: chained chunk (deflate stream or the rest)"),
    ("tltrace.render.pages", "script_json", "html: JSON encoding"),
    ("tltrace.render.sourcemap", "ReportMaps.chunks", "html: source-map chunks"),
    ("tltrace.render.html", "_Report.append", "html: file writes"),
    ("tltrace.render.html", "_Report.meta_if_changed", "html: meta chunk"),
    ("tltrace.render.html", "text_value", "html: text chunks (deltas)"),
    ("tltrace.render.html", "record_value", "html: record chunks"),
    ("tltrace.render.index", "index_row", "html: the index's rows"),
    ("tltrace.session.capture", "TraceSession._header", "manifest header"),
    ("tltrace.session.capture", "TraceSession._ensure_store", "run directory, liveness, notes"),
    ("tltrace.session.capture", "TraceSession._record_pass", "record a pass (the rest)"),
    ("tltrace.session.capture", "TraceSession.add_record", "store a record (the rest)"),
    ("tltrace.session.capture", "TraceSession._store_record", "store a record (the rest)"),
    ("tltrace.session.capture", "TraceSession._finish", "finish the run (the rest)"),
    ("tltrace.session.tool", "_Observer.pass_started", "main: pass started (snapshot, hooks)"),
    ("tltrace.session.tool", "_Observer.pass_finished", "main: pass finished (snapshot, job)"),
    ("tltrace.session.worker", "Worker.submit", "main: job hand-off"),
]

# --split-print: the print row's Python parts, each a row of its own.
PRINT_PARTS = [
    ("tltrace.sourcemap.lines", "_tags", "print: the tag walk"),
    ("tltrace.sourcemap.lines", "strip_tags", "print: the tag strip"),
]

_acc: dict[str, float] = defaultdict(float)
_calls: dict[str, int] = defaultdict(int)
_tls = threading.local()


def _wrap(owner: object, attr: str, label: str) -> bool:
    try:
        raw = inspect.getattr_static(owner, attr)
    except AttributeError:
        return False
    fn = getattr(owner, attr)
    clock = time.thread_time

    def timed(*a, **k):
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        t0 = clock()
        stack.append(0.0)
        try:
            return fn(*a, **k)
        finally:
            spent = clock() - t0
            inner = stack.pop()
            _acc[label] += spent - inner
            _calls[label] += 1
            if stack:
                stack[-1] += spent

    setattr(owner, attr, staticmethod(timed) if isinstance(raw, staticmethod) else timed)
    return True


def _wrap_all(steps: list[tuple[str, str, str]]) -> list[str]:
    done = []
    for module, path, label in steps:
        try:
            owner: object = importlib.import_module(module)
        except ImportError:
            continue
        *parents, attr = path.split(".")
        try:
            for p in parents:
                owner = getattr(owner, p)
        except AttributeError:
            continue
        if _wrap(owner, attr, label):
            done.append(label)
    return done


def measure(reps: int, mode: str, steps: list[tuple[str, str, str]] = STEPS, func=None) -> dict:
    from capture_cost import configure, sm90a_lowerer

    from tltrace.session import worker

    lower = sm90a_lowerer(func)
    clock = time.thread_time
    base: dict[str, list[float]] = {"cpu": [], "main": []}
    traced: dict[str, list[float]] = {"cpu": [], "main": []}
    wrapped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-steps-") as td:
        for rep in range(reps + 1):
            with contextlib.redirect_stdout(io.StringIO()):
                c0, m0 = time.process_time(), clock()
                lower()
                c1, m1 = time.process_time(), clock()
            if rep:
                base["cpu"].append(c1 - c0)
                base["main"].append(m1 - m0)
            if rep == 1:
                _acc.clear()
                _calls.clear()
                wrapped = _wrap_all(steps)
            enter, leave = configure(mode, Path(td) / str(rep))
            with contextlib.redirect_stdout(io.StringIO()):
                enter()
                try:
                    c0, m0 = time.process_time(), clock()
                    lower()
                    worker.drain()
                    c1, m1 = time.process_time(), clock()
                finally:
                    leave()
            if rep:
                traced["cpu"].append(c1 - c0)
                traced["main"].append(m1 - m0)
            print(f"rep {rep}/{reps}", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in base.items()}
    return {
        "reps": reps,
        "mode": mode,
        "untraced_cpu_ms": med["cpu"] * 1e3,
        "untraced_thread_ms": med["main"] * 1e3,
        "traced_cpu_ms": statistics.median(traced["cpu"]) * 1e3,
        "traced_thread_ms": statistics.median(traced["main"]) * 1e3,
        "steps": {k: (v / reps * 1e3, _calls[k] / reps) for k, v in _acc.items()},
        "wrapped": wrapped,
    }


def table(res: dict) -> str:
    unit = res["untraced_thread_ms"]
    added = res["traced_cpu_ms"] - res["untraced_cpu_ms"]
    kernel = f" ({res['kernel']})" if res.get("kernel") else ""
    lines = [
        f"`bench/capture_steps.py --reps {res['reps']} --mode {res['mode']}`{kernel}: untraced compiling thread "
        f"{unit:.0f} ms; traced process CPU {res['traced_cpu_ms']:.0f} ms, added {added:.0f} ms "
        f"({added / unit:.3f}x; the wrapping's own cost included)",
        "",
        "| step | CPU per lowering (ms) | / untraced thread | calls |",
        "|---|---:|---:|---:|",
    ]
    rows = sorted(res["steps"].items(), key=lambda kv: -kv[1][0])
    for label, (ms, calls) in rows:
        lines.append(f"| {label} | {ms:.2f} | {ms / unit:.4f}x | {calls:.0f} |")
    total = sum(ms for ms, _ in res["steps"].values())
    lines.append(f"| all steps | {total:.2f} | {total / unit:.4f}x | |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--mode", default="records", choices=("records", "html"))
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument("--split-print", action="store_true", help="the tag walk and strip as rows of their own")
    add_kernel_args(ap)
    a = ap.parse_args(argv)
    res = measure(a.reps, "tltrace " + a.mode, STEPS + PRINT_PARTS if a.split_print else STEPS, kernel_of(a))
    if a.kernel == "upstream":
        res["kernel"] = f"upstream {a.config} at {a.mnk}^3"
    if a.json is not None:
        a.json.write_text(json.dumps(res, indent=1))
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
