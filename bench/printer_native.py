"""Inside TVM's printer: where its time goes, per native phase, and what each calling form costs (issue 51, round 6).

    PYTHONPATH=<tree> python bench/printer_native.py [--reps 15] [--perf] [--perf-reps 40]

One traced sm_90a lowering (bench/capture_cost.py's kernel, records mode) gives the modules that
tltrace's printer printed (`lines.print_module`, wrapped to keep them: bench/print_contention.py)
and, walked again, their tags. Then, on this thread, in a quiet loop:

* **Calling forms** (this thread's CPU per pass over all the modules, the forms alternating rep by
  rep): a plain `str(mod)`, `mod.script()`, tltrace's call (`mod.script(obj_to_annotate=dict)`), the
  tags as an FFI Map built beforehand, and TVM's config made in C++ with only the tags
  (`node.PrinterConfig`). Every annotated form's texts are checked equal to tltrace's call's.
* **`--perf`**: `perf record --call-graph dwarf` on this process while the annotated loop runs, each
  sample put in the first phase found on its stack (`PHASES`: IR -> Doc, its var-definition scan,
  Doc -> text, the Doc tree freed, the text handed to Python, the config), and the allocator's
  share of the samples' own functions (glibc malloc and free: spread over every phase). Needs
  `perf` and `kernel.perf_event_paranoid` <= 2.
* **`--calls`**: the capture's `TextCache.resolve` calls of a traced lowering (`--sync`, the second
  of two), by what answered each (capture_steps.py's row "reuse rule, module rebuild, equality
  rule"), with their thread CPU, the prints included.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other benchmarks' helpers

# (a function on the sample's stack, the phase): the first that matches names the sample's phase.
PHASES = [
    ("DocToPythonScript", "Doc -> text (DocToPythonScript)"),
    ("SetCommonPrefix", "IR -> Doc: the var-definition scan (SetCommonPrefix)"),
    ("PyBytes_FromStringAndSize", "the text handed to Python (bytes, str)"),
    ("PyUnicode_Decode", "the text handed to Python (bytes, str)"),
    ("Docsify", "IR -> Doc: dispatch per node, frames, names (IRDocsifier)"),
    ("IRDocsifier", "IR -> Doc: dispatch per node, frames, names (IRDocsifier)"),
    ("Deleter_", "the Doc tree and frames freed"),
    ("PrinterConfig", "the config (PrinterConfig from a dict)"),
    ("TVMScriptPrinter::Script", "the printer, the rest"),
]
PYTHON = "Python (the loop, the tags' dict, tvm_ffi)"
CUT = "stack cut short"
ALLOCATOR = (
    "malloc",
    "_int_free",
    "libc_free",
    "cfree",
    "consolidate",
    "unlink_chunk",
    "operator new",
    "operator delete",
)


def phase(frames: list[str]) -> str:
    """The phase of one sample (its stack's function names, innermost first)."""
    for key, label in PHASES:
        if any(key in f for f in frames):
            return label
    return PYTHON if any("_PyEval_EvalFrameDefault" in f for f in frames) else CUT


def classify(script: str) -> tuple[collections.Counter, int, int]:
    """(samples per phase, samples, samples whose own function is the allocator's) of `perf script`
    output (`-F ip,sym`: one block per sample, a frame a line, innermost first)."""
    per: collections.Counter = collections.Counter()
    total = alloc = 0
    for block in script.split("\n\n"):
        frames = [ln.strip() for ln in block.strip().split("\n") if ln.strip()]
        if not frames:
            continue
        total += 1
        per[phase(frames)] += 1
        alloc += any(k in frames[0] for k in ALLOCATOR)
    return per, total, alloc


def printed() -> tuple[list, list]:
    """(the modules one traced lowering printed, their tags), the tags walked as tltrace does."""
    from print_contention import traced_modules

    from tltrace.sourcemap import lines

    mods = traced_modules()
    held = lines.Tags()
    return mods, [lines._tags(m, held)[0] for m in mods]


def forms(mods: list, tags: list) -> dict[str, Any]:
    import tvm_ffi  # type: ignore[import-not-found]

    node_cfg = tvm_ffi.get_global_func("node.PrinterConfig")
    node_script = tvm_ffi.get_global_func("node.TVMScriptPrinterScript")
    maps = [tvm_ffi.Map(t) for t in tags]
    pairs = list(zip(mods, tags))
    return {
        "str(mod), plain": lambda: [str(m) for m in mods],
        "mod.script(), plain": lambda: [m.script() for m in mods],
        "mod.script(obj_to_annotate=dict): tltrace's": lambda: [
            m.script(obj_to_annotate=t) for m, t in pairs
        ],
        "the same, the tags' Map built beforehand": lambda: [
            m.script(obj_to_annotate=t) for m, t in zip(mods, maps)
        ],
        "node.PrinterConfig({obj_to_annotate}): C++ defaults": lambda: [
            node_script(m, node_cfg({"obj_to_annotate": t})) for m, t in pairs
        ],
    }


def time_forms(mods: list, tags: list, reps: int) -> dict[str, list[float]]:
    table = forms(mods, tags)
    ref = table["mod.script(obj_to_annotate=dict): tltrace's"]()
    for label, f in table.items():
        if "plain" not in label and f() != ref:
            raise SystemExit(f"printer_native.py: {label} printed other texts")
    rows: dict[str, list[float]] = {label: [] for label in table}
    for _ in range(reps):
        for label, f in table.items():
            t0 = time.thread_time()
            f()
            rows[label].append((time.thread_time() - t0) * 1e3)
    return rows


def perf_phases(mods: list, tags: list, reps: int) -> None:
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("printer_native.py: --perf needs perf on PATH")
    pairs = list(zip(mods, tags))
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-perf-") as td:
        data = str(Path(td) / "perf.data")
        cmd = [
            perf,
            "record",
            "-F",
            "1000",
            "--call-graph",
            "dwarf,65528",
            "-p",
            str(os.getpid()),
            "-o",
            data,
        ]
        rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # perf attached
        t0 = time.thread_time()
        for _ in range(reps):
            for m, t in pairs:
                m.script(obj_to_annotate=t)
        per_rep = (time.thread_time() - t0) * 1e3 / reps
        rec.send_signal(signal.SIGINT)
        rec.wait()
        out = subprocess.run(
            [perf, "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True
        ).stdout
    per, total, alloc = classify(out)
    if not total:
        raise SystemExit("printer_native.py: perf recorded no samples (kernel.perf_event_paranoid?)")
    print(f"{total} samples; the annotated loop {per_rep:.1f} ms a pass (under perf)")
    print("| phase (samples on its stack) | share | ms of a pass |")
    print("|---|---:|---:|")
    for label, n in per.most_common():
        print(f"| {label} | {100 * n / total:.1f}% | {per_rep * n / total:.1f} |")
    print(
        f"| of all samples, the allocator's own (malloc, free: in every phase) | {100 * alloc / total:.1f}% | {per_rep * alloc / total:.1f} |"
    )


def resolve_calls() -> dict[str, list[float]]:
    """{kind: [calls, thread CPU in ms]} of the TextCache.resolve calls of one traced lowering."""
    from capture_cost import lower_configured, sm90a_lowerer

    from tltrace.session import snapshot

    cache = snapshot.TextCache
    resolve, text = cache.resolve, cache.text
    rows: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    answer: list[str] = []

    def timed_resolve(self: Any, side: Any) -> Any:
        kind = "its text already there" if side.text is not None else None
        kind = kind or ("not a module: printed as it is" if side.head is None else None)
        t0 = time.thread_time()
        try:
            return resolve(self, side)
        finally:
            row = rows[kind or (answer.pop() if answer else "?")]
            row[0] += 1
            row[1] += (time.thread_time() - t0) * 1e3

    def kept_text(self: Any, head: Any) -> Any:
        printed, skips, last = self.printed, self.equal_skips, self._head
        out = text(self, head)
        if self.printed > printed:
            answer.append("printed (the rule said changed, or the first)")
        elif self.equal_skips > skips:
            answer.append("module rebuilt, equal by the rule")
        elif last is not None and snapshot._same_obj(head[1], last[1]):
            answer.append("the same function map")
        else:
            answer.append("the same functions, or their same fields")
        return out

    lower = sm90a_lowerer()
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-calls-") as td:
        for rep in range(2):  # the second: the first takes the printer's checks (once a process)
            rows.clear()
            cache.resolve, cache.text = timed_resolve, kept_text  # type: ignore[method-assign]
            try:
                lower_configured("tltrace records --sync", Path(td) / str(rep), lower)
            finally:
                cache.resolve, cache.text = resolve, text  # type: ignore[method-assign]
    return dict(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15, help="passes per calling form")
    ap.add_argument("--perf", action="store_true", help="the native phases of the annotated print, by perf")
    ap.add_argument("--perf-reps", type=int, default=40)
    ap.add_argument("--calls", action="store_true", help="the capture's resolve calls of a lowering, by kind")
    a = ap.parse_args(argv)
    os.environ["TILELANG_DISABLE_CACHE"] = "1"  # before TileLang's first import (in the helpers)
    if a.calls:
        print("| TextCache.resolve, answered by | calls | thread CPU (ms, prints included) |")
        print("|---|---:|---:|")
        for kind, (n, ms) in sorted(resolve_calls().items(), key=lambda kv: -kv[1][1]):
            print(f"| {kind} | {n} | {ms:.2f} |")
    mods, tags = printed()
    size = sum(len(str(m)) for m in mods)
    print(
        f"{len(mods)} modules printed by one sm_90a lowering, {size} bytes of text; {a.reps} passes per form"
    )
    print("| calling form (thread CPU per pass, ms) | min | median |")
    print("|---|---:|---:|")
    for label, vals in time_forms(mods, tags, a.reps).items():
        print(f"| {label} | {min(vals):.1f} | {statistics.median(vals):.1f} |")
    if a.perf:
        perf_phases(mods, tags, a.perf_reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
