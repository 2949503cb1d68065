"""Where an autotune invocation's wall time goes: a sampler inside the process, and its summary.

    BENCH_TIMELINE=FILE BENCH_TIMELINE_MODE=quiet tltrace run --quiet bench/upstream_autotune.py ...
    python bench/timeline.py FILE            # a markdown table, one row per run

`bench/upstream_autotune.py` starts the sampler when BENCH_TIMELINE is set (bench/autotune.py
sets it for every mode when asked to: `bench/gpu.py autotune --timeline FILE`). Every
SAMPLE_S it appends one JSON line: the time since the process started, the progress of the
autotuner's two tqdm bars (compiling, benchmarking), the CPU seconds of each group of
threads (the compiling pool, tltrace's workers, the main thread, the rest) read from
/proc/self/task, and how many jobs wait in tltrace's worker queues. It marks the start and
the end of the script's `main` and the interpreter's exit (an atexit hook registered
first, so it runs after tltrace's own drain and report).

The summary splits each run's wall into: start-up (process start to `main`), compiling
(until the compile bar is full), benchmarking (until the bench bar is full), the rest of
`main`, and the tail (end of `main` to exit: tltrace's drain and report). It reads only
what the sampler wrote; no timing assertion lives anywhere but here.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path

SAMPLE_S = 0.5
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _process_start() -> float:
    """Return the wall-clock time this process started (Linux), else now."""
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return int(line.split()[1]) + start_ticks / _TICK
    except (OSError, ValueError, IndexError):
        pass
    return time.time()


def _group(name: str) -> str:
    if name == "tltrace-capture":
        return "workers"
    if name.startswith("ThreadPoolExecutor"):
        return "compiling"
    if name == "MainThread":
        return "main"
    return "other"


_seen: dict[int, tuple[str, float]] = {}  # thread id -> (group, CPU seconds when last read)


def _thread_cpu() -> dict[str, float]:
    """CPU seconds (user + sys) of this process's threads so far, by group.

    A thread that has exited keeps what it had at its last sample (up to SAMPLE_S short).
    """
    names = {t.native_id: t.name for t in threading.enumerate()}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        tids = []
    for tid in tids:
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue
        f = stat.rsplit(")", 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / _TICK
        old = _seen.get(int(tid))
        g = _group(names.get(int(tid), "")) if old is None or old[0] == "other" else old[0]
        _seen[int(tid)] = (g, cpu)
    out: dict[str, float] = {}
    for g, cpu in _seen.values():
        out[g] = out.get(g, 0.0) + cpu
    times = os.times()
    out["process"] = times.user + times.system
    return out


def _bars() -> dict[str, list[int]]:
    try:
        from tqdm.std import tqdm
    except ImportError:
        return {}
    out: dict[str, list[int]] = {}
    for bar in list(getattr(tqdm, "_instances", ())):
        desc = str(getattr(bar, "desc", "") or "")
        key = "compile" if desc.startswith("Compiling") else "bench" if desc.startswith("Bench") else ""
        if key:
            out[key] = [int(bar.n), int(bar.total or 0)]
    return out


def _queued() -> int | None:
    mod = sys.modules.get("tltrace.session.worker")
    if mod is None:
        return None
    try:
        return sum(w.pending() for w in list(mod._workers))
    except Exception:
        return None


class Sampler:
    def __init__(self, path: str, mode: str) -> None:
        self._f = open(path, "a", buffering=1)  # noqa: SIM115  (closed at exit)
        self._lock = threading.Lock()
        self._t0 = _process_start()
        self._mode = mode
        self._run = f"{mode}-{os.getpid()}"
        self._done = {"compile": False, "bench": False}

    def write(self, kind: str, **extra: object) -> None:
        rec = {
            "run": self._run,
            "mode": self._mode,
            "kind": kind,
            "t": round(time.time() - self._t0, 3),
            "cpu": {k: round(v, 2) for k, v in _thread_cpu().items()},
            "bars": _bars(),
            "queued": _queued(),
            **extra,
        }
        with self._lock:
            if not self._f.closed:
                self._f.write(json.dumps(rec) + "\n")

    def loop(self) -> None:
        while True:
            time.sleep(SAMPLE_S)
            bars = _bars()
            for key, (n, total) in bars.items():
                if total and n >= total and not self._done[key]:
                    self._done[key] = True
                    self.write(f"{key}-done")
            self.write("sample")

    def at_exit(self) -> None:
        import resource

        self.write("exit", maxrss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        with self._lock:
            self._f.close()


def start() -> Sampler | None:
    """Start the sampler when BENCH_TIMELINE names a file; return it (None when off)."""
    path = os.environ.get("BENCH_TIMELINE")
    if not path:
        return None
    s = Sampler(path, os.environ.get("BENCH_TIMELINE_MODE", "run"))
    atexit.register(s.at_exit)  # registered before tltrace's run ends: runs after its drain
    s.write("main-start")
    threading.Thread(target=s.loop, name="bench-timeline", daemon=True).start()
    return s


# -- the summary ---------------------------------------------------------------------------


def _delta(a: dict, b: dict, key: str) -> float:
    return float(b.get(key, 0.0)) - float(a.get(key, 0.0))


def summarize(path: Path) -> str:
    runs: dict[str, list[dict]] = {}
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        runs.setdefault(rec["run"], []).append(rec)
    head = (
        "| run | wall | start-up | compiling | benchmarking | rest of main | tail (drain, report) "
        "| CPU: compiling threads | workers (compiling / bench / tail) | main | queued at compile end, max "
        "| peak RSS MB |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|\n"
    )
    rows = []
    for run, recs in runs.items():
        marks = {r["kind"]: r for r in recs if r["kind"] != "sample"}
        start, end = marks.get("main-start"), marks.get("exit") or recs[-1]
        main_end = marks.get("main-end", end)
        comp, bench = marks.get("compile-done", main_end), marks.get("bench-done", main_end)
        if start is None:
            continue
        wall = end["t"]
        q = [r["queued"] for r in recs if r.get("queued") is not None]
        cw = lambda a, b: _delta(a["cpu"], b["cpu"], "workers")  # noqa: E731
        rows.append(
            f"| {run} | {wall:.1f} | {start['t']:.1f} | {comp['t'] - start['t']:.1f} "
            f"| {bench['t'] - comp['t']:.1f} | {main_end['t'] - bench['t']:.1f} | {end['t'] - main_end['t']:.1f} "
            f"| {_delta(start['cpu'], end['cpu'], 'compiling'):.0f} "
            f"| {cw(start, comp):.0f} / {cw(comp, bench):.0f} / {cw(main_end, end):.0f} "
            f"| {_delta(start['cpu'], end['cpu'], 'main'):.0f} "
            f"| {comp.get('queued') if comp.get('queued') is not None else '-'}, {max(q) if q else '-'} "
            f"| {end.get('maxrss_mb', '-')} |"
        )
    return head + "\n".join(rows) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python bench/timeline.py FILE", file=sys.stderr)
        sys.exit(2)
    print(summarize(Path(sys.argv[1])), end="")
