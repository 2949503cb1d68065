"""Where a traced lowering's extra CPU on the COMPILING thread goes (issue 51, round 6).

    PYTHONPATH=<tree> python bench/compiling_thread.py [--reps 9] [--configs untraced,busy,held,records]

One process, the configurations interleaved per rep (bench/capture_cost.py's sm_90a GEMM),
the worker drained after each lowering. Per configuration, medians over reps, of the
compiling (main) thread only:

- `cpu`: its CPU (`time.thread_time()`);
- `gc`: the CPU of the collections that ran on it (`gc.callbacks`), and their count;
- `vcs`/`ics`: its voluntary and involuntary context switches (/proc/thread-self/status);
- `runq`: the time it waited, runnable, for a core (/proc/thread-self/schedstat).

Configurations:

- `untraced`: no tracing.
- `busy`: no tracing; an unrelated Python thread (bench-busy) runs while the lowering does,
  in chunks of about `--chunk-ms` of allocating Python with a sleep of `--sleep-ms` between
  (the shape of tltrace's worker: it wakes on a hand-off, prints, stores, sleeps), for about
  `--busy-ms` of CPU a lowering (the worker's ~85 ms).
- `busy-noalloc`: the same, but its chunks allocate nothing the collector tracks (integer
  arithmetic): what is left of `busy` is the second thread itself (the GIL, caches, switches).
- `busy-proc`: `busy-noalloc`'s chunks in another process (no GIL shared): what a busy second
  core costs the compiling thread through the machine alone (caches, memory, the hypervisor).
- `held`: traced (records, `--quiet`), but the worker is held until the lowering returns
  (a first job waits on an event): every hook and hand-off of the compiling thread, with no
  second thread running beside it; the jobs then run, and are drained, outside the timing.
- `records`: traced, the worker running beside the lowering, as users run it.
- `seam`: no tltrace; a no-op observer in TileLang's StackedPassInstrument through the public
  seam (`register_pass_instrumentation_tool`): what any tool pays.
- `seam-read`: the same observer reads the module's three fields (tltrace's snapshot) and drops them.
- `seam-hold`: ... and keeps every snapshot until the lowering ends (what the queue and the
  worker's reuse rule do): the compiler's copy-on-write then copies what a pass updates.

Instructions, not time (`--callgrind CFG`, under valgrind): the same warm-up (one traced and one
CFG lowering), then `--reps` lowerings of CFG with callgrind's instrumentation on (switched by
`callgrind_control`), one configuration per process; `--ir-diff A B N` then compares the
compiling thread's instructions of two such runs (the `-01` file of each), per lowering, by
shared object and by function, the garbage collector's apart:

    PYTHONHASHSEED=0 PYTHONPATH=$PWD:$PWD/bench valgrind --tool=callgrind --instr-atstart=no \
        --separate-threads=yes --callgrind-out-file=/tmp/cg-records.%p \
        $(python -c 'import sys; print(sys.executable)') bench/compiling_thread.py --callgrind records --reps 2
    python bench/compiling_thread.py --ir-diff /tmp/cg-untraced.<pid>-01 /tmp/cg-records.<pid>-01 2
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import gc
import io
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import compile_setup  # noqa: E402

compile_setup()


def _thread_counters() -> tuple[int, int, int]:
    """(voluntary, involuntary context switches, run-queue wait ns) of the calling thread."""
    vcs = ics = 0
    with open("/proc/thread-self/status") as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches"):
                vcs = int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches"):
                ics = int(line.split()[1])
    with open("/proc/thread-self/schedstat") as f:
        wait = int(f.read().split()[1])
    return vcs, ics, wait


class _MainGc:
    """The collections that ran on the compiling thread: their count and thread CPU."""

    def __init__(self) -> None:
        self.me = threading.get_ident()
        self.n = 0
        self.s = 0.0
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if threading.get_ident() != self.me:
            return
        if phase == "start":
            self._t0 = time.thread_time()
        else:
            self.n += 1
            self.s += time.thread_time() - self._t0


class _Busy:
    """A second Python thread that runs beside one lowering, the worker's shape (see the module doc)."""

    def __init__(self, budget_s: float, chunk_s: float, sleep_s: float, alloc: bool) -> None:
        self.budget, self.chunk, self.sleep, self.alloc = budget_s, chunk_s, sleep_s, alloc
        self.stop = threading.Event()
        self.used = 0.0
        self.t = threading.Thread(target=self._run, name="bench-busy", daemon=True)

    def _run(self) -> None:
        t0 = time.thread_time()
        keep: list = []
        while not self.stop.is_set() and time.thread_time() - t0 < self.budget:
            end = time.thread_time() + self.chunk
            while time.thread_time() < end:
                if self.alloc:  # records, texts, tuples: what a printer and a store make
                    keep.append([(str(i), i, [i]) for i in range(40)])
                    if len(keep) > 50:
                        keep.clear()
                else:
                    x = 0
                    for i in range(400):
                        x += i * i
            self.stop.wait(self.sleep)
        self.used = time.thread_time() - t0

    def __enter__(self) -> _Busy:
        self.t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.t.join()


def _seam(kind: str):
    """Return (enter, leave) registering a no-op TileLang tool whose observer reads (`read`),
    keeps (`hold`) or ignores (`noop`) each pass's module fields."""
    from tilelang.instrumentation import (  # type: ignore[import-not-found]
        PassEventObserver,
        PassInstrumentationTool,
        StackedPassInstrument,
        current_pass_phase,
        register_pass_instrumentation_tool,
        unregister_pass_instrumentation_tool,
    )

    kept: list = []

    class Obs(PassEventObserver):
        n = 0

        def next_index(self) -> int:
            self.n += 1
            return self.n

        def pass_started(self, mod, event):
            if kind != "noop":
                head = (mod.attrs, mod.functions, getattr(mod, "global_infos", None))
                if kind == "hold":
                    kept.append(head)
            return None

        def pass_finished(self, mod, event, state) -> None:
            if kind != "noop":
                head = (mod.attrs, mod.functions, getattr(mod, "global_infos", None))
                if kind == "hold":
                    kept.append(head)

    class Tool(PassInstrumentationTool):
        def create_pass_instrument(self):
            o = Obs()
            return StackedPassInstrument(
                o, sequence_allocator=o.next_index, phase_provider=current_pass_phase
            )

    def leave() -> None:
        unregister_pass_instrumentation_tool("bench-seam")
        kept.clear()

    return (lambda: register_pass_instrumentation_tool("bench-seam", Tool)), leave


class _BusyProc:
    """`busy-noalloc`'s loop in a child process, started (and ready) before the lowering."""

    CODE = (
        "import sys, time\n"
        "budget, chunk, pause = map(float, sys.argv[1:4])\n"
        "print('ready', flush=True)\n"
        "t0 = time.process_time()\n"
        "while time.process_time() - t0 < budget:\n"
        "    end = time.process_time() + chunk\n"
        "    while time.process_time() < end:\n"
        "        x = 0\n"
        "        for i in range(400):\n"
        "            x += i * i\n"
        "    time.sleep(pause)\n"
    )

    def __init__(self, budget_s: float, chunk_s: float, sleep_s: float) -> None:
        self.args = [str(budget_s), str(chunk_s), str(sleep_s)]
        self.used = 0.0

    def __enter__(self) -> _BusyProc:
        self.p = subprocess.Popen(
            [sys.executable, "-c", self.CODE, *self.args], stdout=subprocess.PIPE, text=True
        )
        assert self.p.stdout is not None
        self.p.stdout.readline()
        return self

    def __exit__(self, *exc: object) -> None:
        self.p.kill()
        self.p.wait()


def measure(a: argparse.Namespace, configs: list[str]) -> dict[str, dict[str, list[float]]]:
    from capture_cost import sm90a_lowerer

    lower = sm90a_lowerer()
    out: dict[str, dict[str, list[float]]] = {c: {} for c in configs}
    clock = _MainGc()
    gc.callbacks.append(clock)
    windows: list[tuple[str, float, float]] = []
    perf = _perf_start(a.perf) if a.perf else None
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-ct-") as td:
        for rep in range(a.reps):
            for i, cfg in enumerate(configs):
                ctx: contextlib.AbstractContextManager = contextlib.nullcontext()
                if cfg == "busy-proc":
                    ctx = _BusyProc(a.busy_ms / 1e3, a.chunk_ms / 1e3, a.sleep_ms / 1e3)
                elif cfg.startswith("busy"):
                    ctx = _Busy(a.busy_ms / 1e3, a.chunk_ms / 1e3, a.sleep_ms / 1e3, cfg == "busy")
                row = out[cfg]

                def timed(
                    cfg: str = cfg, ctx: contextlib.AbstractContextManager = ctx, row: dict = row
                ) -> None:
                    n0, s0 = clock.n, clock.s
                    v0, i0, w0 = _thread_counters()
                    with ctx:
                        t0, m0 = time.thread_time(), time.monotonic()
                        lower()
                        t1, m1 = time.thread_time(), time.monotonic()
                    windows.append((cfg, m0, m1))
                    v1, i1, w1 = _thread_counters()
                    for k, v in (
                        ("cpu", (t1 - t0) * 1e3),
                        ("gc", (clock.s - s0) * 1e3),
                        ("gcn", clock.n - n0),
                        ("vcs", v1 - v0),
                        ("ics", i1 - i0),
                        ("runq", (w1 - w0) / 1e6),
                        ("busy", getattr(ctx, "used", 0.0) * 1e3),
                    ):
                        row.setdefault(k, []).append(v)

                _once(cfg, Path(td) / str(i) / str(rep), timed)
            print(f"rep {rep + 1}/{a.reps}", file=sys.stderr)
    gc.callbacks.remove(clock)
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        perf.wait()
        out["_perf"] = _perf_split(a.perf, windows, a.reps)  # type: ignore[assignment]
    return out


def _perf_start(path: str) -> subprocess.Popen:
    """`perf record` of this (the compiling) thread alone, on CLOCK_MONOTONIC (time.monotonic's clock)."""
    tid = threading.get_native_id()
    cmd = ["perf", "record", "-q", "-F", "2000", "-k", "CLOCK_MONOTONIC", "-t", str(tid), "-o", path]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return p


_SAMPLE = re.compile(r"^\s*([\d.]+):\s+[0-9a-f]+\s+(.*?)\s*\((.*)\)$")


def _perf_split(path: str, windows: list[tuple[str, float, float]], reps: int) -> dict:
    """Samples (ms at 2 kHz, per lowering) by configuration, by shared object and by symbol."""
    text = subprocess.run(
        ["perf", "script", "-i", path, "-F", "time,ip,sym,dso"], capture_output=True, text=True, check=False
    ).stdout
    samples = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            samples.append((float(m[1]), Path(m[3]).name, m[2] or "?"))
    samples.sort()
    stamps = [s[0] for s in samples]
    split: dict[str, dict[str, float]] = {}
    for cfg, m0, m1 in windows:
        row = split.setdefault(cfg, {})
        syms = split.setdefault("sym:" + cfg, {})
        for _, dso, sym in samples[bisect.bisect_left(stamps, m0) : bisect.bisect_right(stamps, m1)]:
            row[dso] = row.get(dso, 0.0) + 0.5 / reps
            syms[f"{dso}:{sym}"] = syms.get(f"{dso}:{sym}", 0.0) + 0.5 / reps
    return split


def _once(cfg: str, sub: Path, lower) -> None:
    """`lower()` once under `cfg` (the module doc's configurations; a busy one is untraced here),
    the worker drained after it."""
    from capture_cost import configure

    from tltrace.session import worker

    if cfg.startswith("seam"):
        enter, leave = _seam(cfg.partition("-")[2] or "noop")
    else:
        enter, leave = configure("tltrace records" if cfg in ("held", "records") else "untraced", sub)
    release = threading.Event()
    with contextlib.redirect_stdout(io.StringIO()):
        enter()
        try:
            if cfg == "held":
                worker.worker().submit(release.wait)
            lower()
            release.set()
            worker.drain()
        finally:
            release.set()
            leave()


def callgrind(cfg: str, reps: int) -> None:
    """`--callgrind`: the warm-up, then `reps` lowerings with callgrind's instrumentation on."""
    from capture_cost import sm90a_lowerer

    lower = sm90a_lowerer()
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-cg-") as td:
        _once("records", Path(td) / "w1", lower)  # the same warm-up in every process
        _once(cfg, Path(td) / "w2", lower)
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True, check=False)
        time.sleep(3)  # callgrind polls for the command
        for i in range(reps):
            _once(cfg, Path(td) / str(i), lower)
        subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], capture_output=True, check=False)
        time.sleep(3)


_GC = re.compile(  # the collector's functions, by file (gcmodule.c) or by name (a build without file names)
    r"gcmodule|gc_collect|traverse|visit_(?:decref|reachable)|MaybeUntrack|type_is_gc|PyObject_IS_GC|VisitInstanceAttributes"
)


def _ir(path: str) -> dict[str, int]:
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", path], capture_output=True, text=True
    ).stdout
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            out[m[2]] = out.get(m[2], 0) + int(m[1].replace(",", ""))
    return out


def ir_diff(a_path: str, b_path: str, n: int) -> str:
    """`--ir-diff`: the compiling thread's instructions, B minus A, millions per lowering."""
    a, b = _ir(a_path), _ir(b_path)
    keys = set(a) | set(b)

    def obj(k: str) -> str:
        m = re.search(r"\[(.*)\]$", k)
        return m[1].rsplit("/", 1)[-1] if m else "?"

    def per(k: str) -> float:
        return (b.get(k, 0) - a.get(k, 0)) / n / 1e6

    lines = [f"instructions of the compiling thread, {b_path} minus {a_path}, M per lowering:", ""]
    lines.append(
        f"    all: {(sum(a.values()) / n / 1e6):.1f} -> {(sum(b.values()) / n / 1e6):.1f} ({sum(map(per, keys)):+.2f})"
    )
    gcd = sum(per(k) for k in keys if _GC.search(k))
    lines.append(f"    the garbage collector: {gcd:+.2f}; the rest: {sum(map(per, keys)) - gcd:+.2f}")
    objs: dict[str, float] = {}
    for k in keys:
        if not _GC.search(k):
            objs[obj(k)] = objs.get(obj(k), 0.0) + per(k)
    lines += [f"    {v:+8.2f} {k}" for k, v in sorted(objs.items(), key=lambda kv: -abs(kv[1]))[:8]]
    lines += ["", "functions (the collector's left out), the largest growth:"]
    rows = sorted(((per(k), k) for k in keys if not _GC.search(k)), reverse=True)[:15]
    lines += [f"    {d:+8.3f} {k[:140]}" for d, k in rows]
    return "\n".join(lines) + "\n"


def table(res: dict[str, dict[str, list[float]]], reps: int) -> str:
    split: Any = res.pop("_perf", None)
    med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in res.items()}
    base = med["untraced"]["cpu"]
    pairs = {
        c: statistics.median(x - u for x, u in zip(d["cpu"], res["untraced"]["cpu"])) for c, d in res.items()
    }
    lines = [
        f"`python bench/compiling_thread.py --reps {reps}` (medians; the compiling thread only)",
        "",
        "| configuration | thread CPU (ms) | vs untraced (ms) | paired, same rep (ms) | GC on it (ms, count) | voluntary / involuntary "
        "switches | run-queue wait (ms) | second thread CPU (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cfg, m in med.items():
        lines.append(
            f"| {cfg} | {m['cpu']:.1f} | {m['cpu'] - base:+.1f} | {pairs[cfg]:+.1f} | {m['gc']:.2f} ({m['gcn']:.0f}) | "
            f"{m['vcs']:.0f} / {m['ics']:.0f} | {m['runq']:.1f} | {m['busy']:.0f} |"
        )
    if split:
        syms = {k[4:]: split.pop(k) for k in list(split) if k.startswith("sym:")}
        dsos = sorted(
            {d for row in split.values() for d in row}, key=lambda d: -split["untraced"].get(d, 0.0)
        )[:10]
        lines += ["", "perf samples on the compiling thread, ms per lowering (means), by shared object:", ""]
        lines += ["| configuration | " + " | ".join(dsos) + " | all |", "|---|" + "---:|" * (len(dsos) + 1)]
        for cfg, row in split.items():
            cells = " | ".join(f"{row.get(d, 0.0):.1f}" for d in dsos)
            lines.append(f"| {cfg} | {cells} | {sum(row.values()):.1f} |")
        base_syms = syms["untraced"]
        for cfg, row in syms.items():
            if cfg == "untraced":
                continue
            diff = sorted(((v - base_syms.get(k, 0.0), k) for k, v in row.items()), reverse=True)[:12]
            lines += ["", f"{cfg}: the symbols that grew most against untraced (ms per lowering):"]
            lines += [f"    {d:+.2f} {k}" for d, k in diff]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--configs", default="untraced,busy,busy-noalloc,held,records")
    ap.add_argument("--busy-ms", type=float, default=85.0)
    ap.add_argument("--chunk-ms", type=float, default=1.0)
    ap.add_argument("--sleep-ms", type=float, default=2.0)
    ap.add_argument("--perf", default=None, help="perf record the compiling thread into this file")
    ap.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval for the run")
    ap.add_argument(
        "--callgrind", default=None, metavar="CFG", help="under callgrind: --reps lowerings of CFG"
    )
    ap.add_argument(
        "--ir-diff", nargs=3, default=None, metavar=("A", "B", "N"), help="compare two callgrind runs"
    )
    a = ap.parse_args(argv)
    if a.ir_diff:
        print(ir_diff(a.ir_diff[0], a.ir_diff[1], int(a.ir_diff[2])))
        return 0
    if a.callgrind:
        callgrind(a.callgrind, a.reps)
        return 0
    if a.switch_interval is not None:
        sys.setswitchinterval(a.switch_interval)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    if configs[0] != "untraced":
        configs.insert(0, "untraced")
    print(table(measure(a, configs), a.reps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
