"""What `run --launches` costs a launch: a launch-heavy loop untraced, traced, traced with --launches.

One child process per measurement compiles examples/elementwise_add.py's kernel once (the CPU:
target "c", cython; a CUDA machine: cuda, tvm_ffi, unless TLTRACE_EXAMPLES_CPU=1), launches it
`--warm` times, then times `--launches` launches (process CPU and wall, per launch) and, as a
control, as many calls of a plain Python function (what Python 3.11's profile hook costs code
that is not a launch; 3.12's sys.monitoring costs it nothing). Three modes: untraced (`python
SCRIPT`), traced (`tltrace run -q`), traced with `--launches`; `--reps` children of each, in
turn, and the medians. Prints a Markdown table (docs/benchmarks.md, "Launch cost").

Then the observer alone on each Python at hand (this one, and a 3.12+ one: PYTHON312, else
pyenv's): a pure-Python stand-in for `JITKernel.__call__` watched, so that the sys.monitoring
path is measured where TileLang is not installed for that Python.

Run: `python bench/launch_cost.py [--launches 10000] [--reps 5] [--observer-only]`.
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

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
sys.path.insert(0, {examples!r})
import tilelang, torch
from _common import compile_kwargs, device
from elementwise_add import make_add

n, warm, count = 256, {warm}, {count}
kernel = tilelang.compile(make_add(n, 64), **compile_kwargs())
x, y, z = (torch.randn(n, device=device()) for _ in range(3))
sync = torch.cuda.synchronize if device() == "cuda" else (lambda: None)


def plain(a, b, c):
    return a


def timed(f):
    sync()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(count):
        f(x, y, z)
    sync()
    return (time.process_time() - c0) / count * 1e6, (time.perf_counter() - w0) / count * 1e6


for _ in range(warm):
    kernel(x, y, z)
cpu, wall = timed(kernel)
pcpu, pwall = timed(plain)
print("RESULT " + json.dumps({{"cpu_us": cpu, "wall_us": wall, "plain_cpu_us": pcpu, "plain_wall_us": pwall,
                               "device": device(), "python": sys.version.split()[0]}}))
"""

# The observer alone (launches/observer.py) on each Python at hand: a stand-in for JITKernel.__call__
# (a Python method calling a C function), and a plain Python function as the control, without and
# with the observer watching the stand-in; on_call appends the frame's locals (the recorder reads them).
OBSERVER = """
import json, sys, time
from tltrace.launches.observer import Observer

class Kernel:
    def __call__(self, *args, **kwds):
        return len(args)

def plain(a, b, c):
    return a

k, count, seen = Kernel(), {count}, []

def timed(f):
    c0 = time.process_time()
    for _ in range(count):
        f(1, 2, 3)
    return (time.process_time() - c0) / count * 1e6

out = {{"python": sys.version.split()[0], "call": timed(k), "plain": timed(plain)}}
obs = Observer(Kernel.__call__.__code__, lambda frame: seen.append(frame.f_locals["args"]))
why = obs.start()
out.update(how=obs.how, watched_call=timed(k), watched_plain=timed(plain))
obs.stop()
print("RESULT " + json.dumps(out))
"""

MODES = {
    "untraced": [],
    "traced": ["-m", "tltrace", "run", "-q"],
    "traced --launches": ["-m", "tltrace", "run", "-q", "--launches", "--launch-limit", "1000000"],
}


def once(mode: str, script: Path, trace_dir: Path) -> dict:
    extra = ["--trace-dir", str(trace_dir)] if mode != "untraced" else []
    cmd = [sys.executable, *MODES[mode][:4], *extra, *MODES[mode][4:], str(script)]
    if mode == "untraced":
        cmd = [sys.executable, str(script)]
    env = {
        **os.environ,
        "TILELANG_DISABLE_CACHE": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    }
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        raise SystemExit(f"{mode}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return json.loads(line[len("RESULT ") :])


def pythons() -> list[str]:
    """This interpreter and any Python 3.12+ found (PYTHON312, else pyenv's): the two observer paths."""
    import glob

    found = [sys.executable, os.environ.get("PYTHON312", "")]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")))[:1]
    return [p for p in dict.fromkeys(found) if p and os.path.exists(p)]


def observer_table(count: int, reps: int) -> None:
    print("\nThe observer alone: microseconds per call, medians of", reps, "processes\n")
    print("| Python | how | watched call | watched, observed | plain call | plain, observed |")
    print("|---|---|---|---|---|---|")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for exe in pythons():
        rs = []
        for _ in range(reps):
            p = subprocess.run(
                [exe, "-c", OBSERVER.format(count=count)],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise SystemExit(f"{exe}: {p.stderr[-2000:]}")
            rs.append(json.loads(line[len("RESULT ") :]))

        def med(k: str, rs: list[dict] = rs) -> float:
            return statistics.median(r[k] for r in rs)

        print(
            f"| {rs[0]['python']} | {rs[0]['how']} | {med('call'):.3f} | {med('watched_call'):.3f} | "
            f"{med('plain'):.3f} | {med('watched_plain'):.3f} |"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--observer-only", action="store_true", help="only the observer's table")
    a = ap.parse_args(argv)
    if a.observer_only:
        observer_table(a.launches * 10, a.reps)
        return
    results: dict[str, list[dict]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "launch_loop.py"
        script.write_text(CHILD.format(examples=str(REPO / "examples"), warm=a.warm, count=a.launches))
        for rep in range(a.reps):
            for mode in MODES:  # interleaved: a busy spell of the machine hits every mode alike
                results[mode].append(once(mode, script, Path(d) / f"td{rep}"))
    first = results["untraced"][0]
    print(
        f"{a.launches} launches of elementwise_add (n=256) on {first['device']}, Python {first['python']}; "
        f"medians of {a.reps} processes per mode, microseconds per call\n"
    )
    print("| mode | launch CPU | launch wall | plain Python call CPU | plain call wall |")
    print("|---|---|---|---|---|")
    base = {k: statistics.median(r[k] for r in results["untraced"]) for k in first if k.endswith("_us")}
    for mode, rs in results.items():
        cells = []
        for k in ("cpu_us", "wall_us", "plain_cpu_us", "plain_wall_us"):
            med = statistics.median(r[k] for r in rs)
            cells.append(f"{med:.2f}" + ("" if mode == "untraced" else f" ({med / base[k]:.2f}x)"))
        print(f"| {mode} | " + " | ".join(cells) + " |")
    observer_table(a.launches * 10, a.reps)


if __name__ == "__main__":
    main()
