"""What `--remarks` and the call site cost (issue 31).

    PYTHONPATH=<tree> python bench/remarks.py [--reps 5] [--kernels 6] > bench/results/remarks.md

1. Compile time of a script that compiles KERNELS CPU elementwise adds (target c, cython),
   under `tltrace run -q` (records only) without and with `--remarks` and `--remarks=vectorize`,
   and untraced; each configuration a fresh process, interleaved, REPS times; the script times
   its own compiles (the process start and tltrace's start are left out). Medians.
2. The capture itself, in one process: one top-level pass's pair of callbacks on the remarks
   recorder (fd 2 to a temporary file and back, the text read and written on) with nothing
   written, and with 1 KiB written; and the call-site walk (session/callsite.call_site) from
   a stack 10 and 40 user frames deep. Medians of many.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
sys.path.insert(0, str(TREE))
from bench_common import median_s  # noqa: E402

from tests._kernels import ADD  # noqa: E402

SCRIPT = (
    "import json, sys, time\n"
    + ADD  # tests/_kernels.py: the elementwise add
    + """


funcs = [make_add(64 * (i + 1)) for i in range(int(sys.argv[1]))]
t0 = time.perf_counter()
for f in funcs:
    tilelang.compile(f, target="c", execution_backend="cython")
print("BENCH", json.dumps(time.perf_counter() - t0))
"""
)

CONFIGS = {
    "untraced": None,
    "tltrace -q": [],
    "tltrace -q --remarks": ["--remarks"],
    "tltrace -q --remarks=vectorize": ["--remarks=vectorize"],
}


def _run(d: Path, extra: list[str] | None, kernels: int) -> tuple[float, int]:
    env = dict(os.environ, TILELANG_DISABLE_CACHE="1", PYTHONPATH=str(TREE))
    env.pop("TL_LOWER_TRACE", None)
    if extra is None:
        cmd = [sys.executable, "k.py", str(kernels)]
    else:
        cmd = [
            sys.executable,
            "-m",
            "tltrace",
            "run",
            "-q",
            "--trace-dir",
            "T",
            "--keep",
            "1",
            *extra,
            "k.py",
        ]
        cmd.append(str(kernels))
    p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=600)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("BENCH"))
    return json.loads(line.split(" ", 1)[1]), len(p.stderr.encode())


def _median_us(fn, n: int) -> float:
    return median_s(fn, n) * 1e6


def capture_costs() -> list[tuple[str, float]]:
    sys.path.insert(0, str(TREE))
    from tltrace.callsites.stack import call_site
    from tltrace.remarks.recorder import RemarksRecorder
    from tltrace.session.recorder import PassEvent

    ev = PassEvent(1, "tl.Bench", "pipeline_c", 0, None)
    out = []
    saved = os.dup(2)
    sink = os.open(os.devnull, os.O_WRONLY)
    os.dup2(sink, 2)  # the text written on goes nowhere
    try:
        r = RemarksRecorder(())

        def silent() -> None:
            r.pass_started(ev, None)  # type: ignore[arg-type]
            r.pass_finished(ev)

        kib = b"x" * 1023 + b"\n"

        def loud() -> None:
            r.pass_started(ev, None)  # type: ignore[arg-type]
            os.write(2, kib)
            r.pass_finished(ev)

        out.append(("remarks: one top-level pass, nothing written (µs)", _median_us(silent, 2000)))
        out.append(("remarks: one top-level pass, 1 KiB written (µs)", _median_us(loud, 2000)))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(sink)

    def deep(n: int):
        if n == 0:
            return _median_us(call_site, 2000)
        return deep(n - 1)

    out.append(("call site: the walk, 10 user frames (µs)", deep(10)))
    out.append(("call site: the walk, 40 user frames (µs)", deep(40)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kernels", type=int, default=6)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "k.py").write_text(SCRIPT)
        _run(d, None, 1)  # warm the file cache
        times: dict[str, list[float]] = {k: [] for k in CONFIGS}
        err: dict[str, int] = {}
        for _ in range(a.reps):
            for name, extra in CONFIGS.items():
                t, n = _run(d, extra, a.kernels)
                times[name].append(t)
                err[name] = n
    base = statistics.median(times["tltrace -q"])
    untraced = statistics.median(times["untraced"])
    print(f"Compile time of {a.kernels} CPU elementwise adds (target c, cython), median of {a.reps}; ")
    print("each configuration a fresh process, interleaved.\n")
    print("| configuration | compile s | vs tltrace -q | vs untraced | stderr bytes |")
    print("|---|---:|---:|---:|---:|")
    for name in CONFIGS:
        m = statistics.median(times[name])
        print(f"| {name} | {m:.3f} | {m / base:.3f}x | {m / untraced:.3f}x | {err[name]} |")
    print("\n| the capture alone (one process) | median |")
    print("|---|---:|")
    for label, us in capture_costs():
        print(f"| {label} | {us:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
