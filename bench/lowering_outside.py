"""Issue 51's check as its author runs it: the CPU tltrace adds per sm_90a lowering, measured from outside.

    PYTHONPATH=<tree> python bench/lowering_outside.py [--reps 5] [--lowerings 8] [--configs untraced,records,html] [--bytecode]

Separate processes, alternating, rep by rep (the order rotated each rep): the untraced script
(`python lower.py`) and the traced one (`tltrace run --quiet lower.py`; `html`: `tltrace run --quiet --mode html`).
The script lowers the upstream autotuner's GEMM (bench/capture_cost.py's kernel) for sm_90a
N times, N distinct problem sizes (no cache can answer; TILELANG_DISABLE_CACHE=1), then
exits. Its CPU is read from /proc, per thread: each thread's utime+stime in
/proc/self/task/<tid>/stat, the process's (dead threads included) in /proc/self/stat, by an
atexit handler the script registers. That handler runs at interpreter exit, after `tltrace
run` has ended its run (the worker drained, the records and the report written: runner.py's
end sequence runs before the script's process exits), so the records are complete when it
reads: the handler also counts the runs whose log a final manifest has replaced (and, html,
the report), and a process where any is missing is an error, never a measurement. The parent
also keeps the process's whole CPU to its end (`os.wait4`'s rusage).

Each configuration also runs a start-up process: the same imports and kernels made, none
lowered. Per lowering = (the N-lowering process - its rep's start-up process) / N, so the
imports, tltrace's set-up and the kernels' construction are out of it (reported on their
own). `--bytecode`: the children read compiled bytecode, as an installed tltrace does (without it,
a PYTHONDONTWRITEBYTECODE=1 environment compiles each tltrace module a process imports from source,
a cost the untraced side, whose packages are compiled at install, does not pay). Added CPU per
lowering: traced process minus untraced, per lowering, over the untraced compiling (main) thread's
per lowering; the target is <= 0.20x (records). Medians over reps.
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
sys.path.insert(0, str(HERE))
from bench_common import md_head  # noqa: E402

HEADING = "## CPU added per sm_90a lowering, measured from outside (issue 51's check)"
TARGET = 0.20
COMMANDS = {
    "untraced": [],
    "records": ["-m", "tltrace", "run", "--quiet"],
    "html": ["-m", "tltrace", "run", "--quiet", "--mode", "html"],
    # An experiment: records, the script waiting for them after each lowering (tltrace.flush()), so
    # the worker never runs beside the next lowering, as bench/lowering_cpu.py's drain has it.
    "records-flush": ["-m", "tltrace", "run", "--quiet"],
}

# The script each process runs: argv N (lowerings), the JSON file its CPU is written to, the trace dir.
SCRIPT = """
import atexit
import glob
import json
import os
import sys
import time

sys.path.insert(0, {bench!r})


def _ticks(stat_line):
    rest = stat_line[stat_line.rindex(")") + 2 :].split()  # after "pid (comm) ": field 3 on
    return [int(x) for x in rest[11:15]]  # utime, stime, cutime, cstime (fields 14-17)


def _cpu_at_exit():
    # Runs at interpreter exit: under `tltrace run`, after its run ended (records complete).
    hz = os.sysconf("SC_CLK_TCK")
    threads = {{}}
    for tid in os.listdir("/proc/self/task"):
        try:
            line = open(f"/proc/self/task/{{tid}}/stat").read()
        except OSError:  # the thread ended meanwhile: its CPU is in the process's
            continue
        u, s, _, _ = _ticks(line)
        threads[tid] = {{"name": line[line.index("(") + 1 : line.rindex(")")], "cpu": (u + s) / hz}}
    u, s, cu, cs = _ticks(open("/proc/self/stat").read())
    out = {{"main": threads.get(str(os.getpid()), {{}}).get("cpu", 0.0), "process": (u + s) / hz,
           "children": (cu + cs) / hz, "threads": threads, "laps": LAPS, "end": time.thread_time() - END}}
    if TRACE:  # what tltrace had written by now: each run final (its log replaced by the manifest)?
        runs = glob.glob(os.path.join(TRACE, "*", ".run_records", "run_*"))
        out["runs"] = len(runs)
        out["final"] = sum(not os.path.exists(os.path.join(r, "records.jsonl")) for r in runs)
        out["reports"] = len(glob.glob(os.path.join(TRACE, "*", "report.html")))
    with open(OUT, "w") as f:
        json.dump(out, f)


OUT, TRACE = sys.argv[2], sys.argv[3]  # (at exit, sys.argv is tltrace run's own again)


import tilelang  # noqa: E402
from capture_cost import sm90a_gemm, sm90a_target  # noqa: E402

n = int(sys.argv[1])
target = sm90a_target()
kernels = [sm90a_gemm(M=1024 + 128 * i, N=1024 + 64 * i) for i in range(max(n, {made}))]
LAPS = []  # the compiling thread's CPU of each lowering (time.thread_time, ns resolution)
for func in kernels[:n]:
    t0 = time.thread_time()
    with target:
        tilelang.lower(func, target=target)
    LAPS.append(time.thread_time() - t0)
    if os.environ.get("BENCH_FLUSH"):
        import tltrace

        tltrace.flush()
END = time.thread_time()  # the script's end: what the main thread does after it is tltrace run's end
atexit.register(_cpu_at_exit)  # last registered: runs first at exit, after tltrace run's end
"""


def one(cfg: str, n: int, work: Path, made: int, tag: str) -> dict:
    """Run one process of configuration `cfg` lowering `n` kernels; return its CPU (seconds)."""
    script = work / "lower.py"
    if not script.exists():
        script.write_text(SCRIPT.format(bench=str(HERE), made=made))
    out = work / f"{tag}.json"
    trace = str(work / "trace" / tag) if COMMANDS[cfg] else ""
    env = {
        **os.environ,
        "TILELANG_DISABLE_CACHE": "1",
        **({"BENCH_FLUSH": "1"} if cfg.endswith("-flush") else {}),
    }
    env.pop("TL_LOWER_TRACE", None)
    where = ["--trace-dir", trace] if trace else []
    cmd = [sys.executable, *COMMANDS[cfg], *where, str(script), str(n), str(out), trace]
    p = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)  # (not p.wait(): its rusage is the process's CPU to its end)
    p.returncode = code = os.waitstatus_to_exitcode(status)
    if code or not out.exists():
        raise SystemExit(f"lowering_outside.py: error: {' '.join(cmd)} failed ({code}): {err[-500:]}")
    res = json.loads(out.read_text())
    if trace and (
        res["final"] != res["runs"] or res["runs"] != n or (cfg == "html" and n and not res["reports"])
    ):
        raise SystemExit(  # the CPU was read before tltrace had finished: it would be undercounted
            f"lowering_outside.py: error: at the exit of {tag}, {res['final']} of {res['runs']} runs were final "
            f"({n} lowered), {res['reports']} report(s)"
        )
    res["others"] = res["process"] - res["main"]
    res["rusage"] = usage.ru_utime + usage.ru_stime
    return res


def with_bytecode(work: Path, configs: list[str], made: int) -> None:
    """Make this bench's children read compiled bytecode, as a pip-installed tltrace (or a checkout Python may
    write `__pycache__` in) has it: PYTHONDONTWRITEBYTECODE unset, the bytecode kept under `work` (the
    checkout untouched), written by one untimed process per configuration that lowers one kernel."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    for cfg in configs:
        one(cfg, 1, work, made, f"{cfg}-bytecode")


def measure(
    reps: int, n: int, configs: list[str], work: Path, warm: int = 0
) -> dict[str, list[tuple[dict, dict]]]:
    """Per configuration, per rep: (start-up process lowering `warm` kernels, N-lowering process), run
    alternately, the configurations' order rotated rep by rep (none always runs first)."""
    out: dict[str, list[tuple[dict, dict]]] = {c: [] for c in configs}
    for rep in range(reps):
        for cfg in configs[rep % len(configs) :] + configs[: rep % len(configs)]:  # each first in turn
            start = one(cfg, warm, work, n, f"{cfg}-{rep}-{warm}")
            full = one(cfg, n, work, n, f"{cfg}-{rep}-{n}")
            out[cfg].append((start, full))
        print(f"rep {rep + 1}/{reps}", file=sys.stderr)
    return out


def _per_lowering(pair: tuple[dict, dict], key: str, n: int) -> float:
    """The CPU (`key`) of one lowering: the difference of the rep's two processes over the lowerings
    between them (`n`: N less --warm)."""
    return (pair[1][key] - pair[0][key]) / n


def _med(xs: list[float]) -> str:
    """Milliseconds: the median (min-max) of `xs` seconds, whole (never -0)."""
    med, lo, hi = (round(x * 1e3) for x in (statistics.median(xs), min(xs), max(xs)))
    return f"{med} ({lo}..{hi})"


def table(
    res: dict[str, list[tuple[dict, dict]]], reps: int, lowerings: int, warm: int = 0, bytecode: bool = False
) -> str:
    base, n = res["untraced"], lowerings - warm
    untraced_main = [_per_lowering(p, "main", n) for p in base]
    lines = [
        HEADING,
        "",
        f"`python bench/lowering_outside.py --reps {reps} --lowerings {lowerings}"
        f"{f' --warm {warm}' if warm else ''}{' --bytecode' if bytecode else ''}`: separate processes, alternating; CPU read from /proc per "
        "thread at the script's exit (after `tltrace run`'s end). Milliseconds per lowering: (N-lowering "
        f"process - start-up process{f' lowering {warm}' if warm else ''}) / {n}, median (min..max) over reps; "
        "added: traced minus untraced of the same rep.",
        "",
        *md_head(
            "configuration",
            "compiling thread",
            "other threads",
            "process",
            "process (rusage, to exit)",
            "added CPU",
            "added / untraced compiling thread",
        ),
    ]
    verdict = None
    for cfg, pairs in res.items():
        per = {k: [_per_lowering(p, k, n) for p in pairs] for k in ("main", "others", "process", "rusage")}
        added = [t - u for t, u in zip(per["process"], (_per_lowering(p, "process", n) for p in base))]
        ratio = [a / m for a, m in zip(added, untraced_main)]
        r = statistics.median(ratio)
        if cfg == "records":
            verdict = r
        lines.append(
            f"| {cfg} | {_med(per['main'])} | {_med(per['others'])} | {_med(per['process'])} | "
            f"{_med(per['rusage'])} | {'-' if cfg == 'untraced' else _med(added)} | "
            f"{'-' if cfg == 'untraced' else f'{r:.3f}x ({min(ratio):.3f}..{max(ratio):.3f})'} |"
        )
    made = f"{warm} lowered" if warm else "none lowered"
    lines += ["", f"Start-up (imports, tltrace's set-up, the kernels made; {made}), ms per process:", ""]
    lines += md_head("configuration", "compiling thread", "other threads", "process", "added vs untraced")
    for cfg, pairs in res.items():
        s = {k: [p[0][k] for p in pairs] for k in ("main", "others", "process")}
        added = [a - b[0]["process"] for a, b in zip(s["process"], base)]
        lines.append(
            f"| {cfg} | {_med(s['main'])} | {_med(s['others'])} | {_med(s['process'])} | "
            f"{'-' if cfg == 'untraced' else _med(added)} |"
        )
    lines += ["", "The compiling thread timed inside the N-lowering process (`time.thread_time`), ms:", ""]
    lines += md_head("configuration", "first lowering", "later lowerings (median)", "after the script's end")
    for cfg, pairs in res.items():
        first = [p[1]["laps"][0] for p in pairs]
        later = [statistics.median(p[1]["laps"][1:]) for p in pairs if len(p[1]["laps"]) > 1]
        end = [p[1]["end"] for p in pairs]
        lines.append(f"| {cfg} | {_med(first)} | {_med(later) if later else '-'} | {_med(end)} |")
    if verdict is not None:
        lines += [
            "",
            *md_head("target", "limit", "measured", "verdict"),
            f"| sm_90a lowering, `tltrace run --quiet`: added CPU / untraced compiling thread | <= {TARGET:.2f}x "
            f"| {verdict:.3f}x | {'ok' if verdict <= TARGET else 'OVER'} |",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lowerings", type=int, default=8, help="lowerings per process (distinct kernels)")
    ap.add_argument(
        "--warm",
        type=int,
        default=0,
        help="lowerings of the start-up process (its first ones' cost out of the per-lowering figure)",
    )
    ap.add_argument("--configs", default="untraced,records,html")
    ap.add_argument(
        "--bytecode",
        action="store_true",
        help="the children read compiled bytecode, as an installed tltrace has it (PYTHONDONTWRITEBYTECODE "
        "unset, a cache under the bench's folder filled by one untimed process per configuration first)",
    )
    a = ap.parse_args(argv)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    if unknown := [c for c in configs if c not in COMMANDS]:
        ap.error(f"unknown configuration {unknown[0]!r} (choose from {', '.join(COMMANDS)})")
    if a.reps < 1 or not 0 <= a.warm < a.lowerings:
        ap.error("--reps must be at least 1, and --warm at least 0 and less than --lowerings")
    configs = ["untraced", *[c for c in configs if c != "untraced"]]
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-outside-") as td:
        if a.bytecode:
            with_bytecode(Path(td), configs, a.lowerings)
        res = measure(a.reps, a.lowerings, configs, Path(td), a.warm)
    print(table(res, a.reps, a.lowerings, a.warm, a.bytecode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
