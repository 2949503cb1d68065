"""Scale: one invocation that compiles many configs of one kernel in a thread pool, traced or not.

Each configuration below runs the same script as a whole process (`import tilelang`
included), interleaved rep by rep, each into a fresh trace dir:

* untraced: `python SCRIPT ARGS`
* tltrace --quiet (records only): `tltrace run --quiet SCRIPT ARGS`
* tltrace html: `tltrace run --quiet --mode html SCRIPT ARGS`
* built-in terminal / built-in html: `TL_LOWER_TRACE=terminal|html python SCRIPT ARGS`

It reports the whole invocation's wall time (ratios against untraced), bytes on
disk per invocation (ratios against the built-in's), how many compiles the trace
kept (and, from the manifests, how many invocation ids and distinct signatures they
carry), and the time `<trace-dir>/<script>/report.html` takes to open in headless
Chromium (tltrace's invocation index where there is one, else the newest compile's
report; the built-in's is its last compile's).

CPU workload (default): `bench/autotune_cpu.py`, a GEMM in a 2+ thread pool.
The same harness runs TileLang's upstream autotuner on the GPU (`bench/gpu.py`).

    python bench/autotune.py [--configs 24] [--reps 3] [--modes untraced,quiet,html,builtin-terminal,builtin-html]
    python bench/autotune.py --open REPORT.html    # only the Chromium open time of a report
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench_common import CHROMIUM, CHROMIUM_ARGS, disk_bytes

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CPU_SCRIPT = HERE / "autotune_cpu.py"

MODES = {
    "untraced": "untraced",
    "quiet": "tltrace --quiet (records only)",
    "html": "tltrace html",
    "builtin-terminal": "built-in terminal",
    "builtin-html": "built-in html",
}
# Which built-in mode a tltrace mode's bytes are held against.
BYTES_REF = {"quiet": "builtin-terminal", "html": "builtin-html"}
# Targets from issue 9 (wall time on the H200, bytes everywhere).
TIME_TARGET = {"quiet": 1.05, "html": 1.10}
BYTES_TARGET = 0.25
INDEX_OPEN_TARGET_MS = 1000.0


# Experiments: MODE@VARIANT runs MODE with these settings in its environment (bench/timeline.py
# tells where each one's wall went). Not in the tables, which list the plain modes.
VARIANTS = {
    "switch": {"BENCH_SWITCH_INTERVAL": "0.0005"},  # the GIL's switch interval, 0.5 ms (default 5 ms)
    "q4k": {"TLTRACE_QUEUE": "4096"},
    "w2": {"TLTRACE_WORKERS": "2"},
    "wait": {"TLTRACE_WAIT": "1"},
    "nomap": {"TLTRACE_SOURCE_MAP": "0"},  # no source maps (no annotated print, no codegen map)
    # Texts printed (and mapped) as tracing does, and nothing after the print in the process:
    # the floor of a writer-process design (bench/gil_cost.py's records@print-only; a bench patch).
    "printonly": {"BENCH_PRINT_ONLY": "1"},
}


def base_mode(mode: str) -> str:
    """The plain mode of `mode` (`quiet@wait` -> `quiet`)."""
    return mode.split("@", 1)[0]


def mode_label(mode: str) -> str:
    base, _, variant = mode.partition("@")
    return MODES[base] + (f" @{variant}" if variant else "")


def command(mode: str, script: Path, args: list[str], trace_dir: Path) -> tuple[list[str], dict[str, str]]:
    """Return (argv, environment) that run `script` once in configuration `mode`."""
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    mode, _, variant = mode.partition("@")
    if variant:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        env.update(VARIANTS[variant])
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["TILELANG_AUTO_TUNING_DISABLE_CACHE"] = "1"
    py = sys.executable
    if mode == "untraced":
        return [py, str(script), *args], env
    if mode in ("quiet", "html"):
        extra = ["--mode", "html"] if mode == "html" else []
        return [
            py,
            "-m",
            "tltrace",
            "run",
            "--quiet",
            *extra,
            "--trace-dir",
            str(trace_dir),
            str(script),
            *args,
        ], env
    if mode in ("builtin-terminal", "builtin-html"):
        env.update(TL_LOWER_TRACE=mode.split("-", 1)[1], TL_LOWER_TRACE_DIR=str(trace_dir))
        return [py, str(script), *args], env
    raise ValueError(f"unknown mode {mode!r}; known: {', '.join(MODES)}")


@dataclass
class Invocation:
    """One run of the script in one configuration."""

    mode: str
    seconds: float
    returncode: int
    cpu_seconds: float = (
        0.0  # user + sys of the process and its children (steadier than wall on a shared machine)
    )
    compiles: int = 0  # run dirs kept under <trace-dir>/*/.run_records
    invocations: int = 0  # distinct manifest "invocation" values (tltrace; 0 when the field is absent)
    signatures: int = 0  # distinct manifest "signature" values
    failed: int = 0  # compiles whose manifest says "error"
    file_bytes: int = 0
    du_bytes: int = 0
    report: str | None = None  # <trace-dir>/<script>/report.html, resolved
    report_bytes: int = 0
    tail: str = ""  # the end of the output, when the script failed
    said: str = ""  # what the tuner said it chose: its lines naming a latency or a config
    part: str = ""  # which run of the benchmark it came from (GPU runs come in parts)
    rep: int = 0  # its rep number (1-based; 0 in results from before it was kept)
    # The compile calls' own wall, where the script says it (autotune_cpu.py, upstream_autotune.py).
    compile_seconds: float = 0.0


def _tuner_said(log: Path) -> str:
    """The output's lines about the chosen config and its latency (upstream example: a dict, `... latency: x`)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    keep = [ln.strip() for ln in lines if "latency" in ln.lower() or ln.strip().startswith("{")]
    return "\n".join(keep[-6:])


def _compile_calls(log: Path) -> float:
    """The compile calls' wall the script printed (`compile calls: X s`; autotune_cpu.py, upstream_autotune.py), or 0."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return 0.0
    for ln in reversed(lines):
        if "compile calls: " in ln:
            try:
                return float(ln.split("compile calls: ", 1)[1].split()[0])
            except (IndexError, ValueError):
                return 0.0
    return 0.0


def _manifests(trace_dir: Path) -> list[dict]:
    out = []
    for m in trace_dir.glob("*/.run_records/run_*/manifest.json"):
        try:
            out.append(json.loads(m.read_text()))
        except (OSError, ValueError):
            out.append({})
    return out


def invoke(
    mode: str,
    script: Path,
    args: list[str],
    trace_dir: Path,
    cwd: Path,
    timeout: float | None = None,
    timeline: Path | None = None,
) -> Invocation:
    """Run the script once in `mode` into the fresh `trace_dir`; time it and look at what it left.

    `timeline`: a file the script's sampler appends to (bench/timeline.py; upstream_autotune.py
    starts one when BENCH_TIMELINE is set).
    """
    argv, env = command(mode, script, args, trace_dir)
    mode_run, mode = mode, base_mode(mode)
    if timeline is not None:
        env.update(BENCH_TIMELINE=str(timeline), BENCH_TIMELINE_MODE=mode_run)
    # Output goes to a file, not a pipe: the built-in's terminal mode prints every diff of every compile.
    log = cwd / f"{mode}.log"
    with open(log, "wb") as sink:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        try:
            rc = subprocess.run(
                argv, env=env, cwd=cwd, stdout=sink, stderr=subprocess.STDOUT, timeout=timeout
            ).returncode
        except subprocess.TimeoutExpired:
            rc = 124
        seconds = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    inv = Invocation(mode=mode_run, seconds=seconds, returncode=rc, cpu_seconds=cpu)
    if rc != 0:
        with open(log, "rb") as f:
            f.seek(max(0, log.stat().st_size - 3000))
            inv.tail = f.read().decode(errors="replace")
    inv.said = _tuner_said(log)
    inv.compile_seconds = _compile_calls(log)
    log.unlink()
    if mode == "untraced":
        return inv
    runs = list(trace_dir.glob("*/.run_records/run_*"))
    inv.compiles = len(runs)
    if mode in ("quiet", "html"):
        ms = _manifests(trace_dir)
        inv.invocations = len({m.get("invocation") for m in ms if m.get("invocation")})
        inv.signatures = len({m.get("signature") for m in ms if m.get("signature")})
        inv.failed = sum(m.get("status") == "error" for m in ms)
    inv.file_bytes, inv.du_bytes = disk_bytes(trace_dir)
    reports = sorted(trace_dir.glob("*/report.html"))
    if reports:
        inv.report = str(reports[0].resolve())
        inv.report_bytes = reports[0].resolve().stat().st_size
    return inv


@dataclass
class Result:
    """Everything one benchmark run measured; JSON-able, so parts run apart can be joined."""

    label: str
    script: str
    args: list[str]
    reps: int
    invocations: list[Invocation] = field(default_factory=list)
    open_ms: dict[str, dict] = field(default_factory=dict)  # mode -> open_report() result
    machine: str = ""
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Result:
        invs = [Invocation(**i) for i in data.pop("invocations", [])]
        return cls(**data, invocations=invs)

    def merge(self, other: Result) -> None:
        """Add another part's measurements (same script and args) to this one."""
        self.invocations += other.invocations
        self.open_ms.update(other.open_ms)
        self.notes += other.notes
        self.reps = max(self.reps, other.reps)


def measure(
    script: Path = CPU_SCRIPT,
    args: list[str] | None = None,
    *,
    reps: int = 3,
    modes: list[str] | None = None,
    label: str = "CPU",
    browser: bool = True,
    work: Path | None = None,
    budget_s: float | None = None,
    keep_dirs: bool = False,
    part: str = "",
    log=None,
    timeline: Path | None = None,
    runs: tuple[int, int] | None = None,
) -> Result:
    """Run the script `reps` times in each mode, interleaved (the order rotates each rep).

    `runs` (first, last; 1-based, inclusive): only these runs of that schedule (`reps` times
    `len(modes)` runs in all), so that parts run in separate calls (`gpu.sh`'s RUNS) make one
    interleaved measurement, which `gpu.py summarize --pool` joins.

    Bytes and the report's open time come from each mode's last rep. With `budget_s`,
    a rep that would not fit in what is left is skipped and said in the notes.
    With `keep_dirs`, every mode's last trace dir stays under `work`.
    """
    args = list(args or [])
    modes = list(modes or MODES)
    for m in modes:
        if base_mode(m) not in MODES:
            raise ValueError(f"unknown mode {m!r}; known: {', '.join(MODES)}")
    res = Result(label=label, script=script.name, args=args, reps=reps)
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="tltrace-bench-autotune-")) if own else work
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    last: dict[str, Invocation] = {}
    try:
        schedule = [
            (rep, mode)
            for rep in range(reps)
            for mode in modes[rep % len(modes) :] + modes[: rep % len(modes)]
        ]
        if runs is not None:
            schedule = schedule[runs[0] - 1 : runs[1]]
        for rep, mode in schedule:
            if budget_s is not None:
                left = budget_s - (time.perf_counter() - start)
                guess = max((i.seconds for i in res.invocations), default=0.0) * 1.3
                if left < guess or left < 1:
                    res.notes.append(
                        f"{mode_label(mode)}: rep {rep + 1} skipped, {left:.0f} s left of the "
                        f"{budget_s:.0f} s budget"
                    )
                    continue
            d = work / mode
            if d.exists():
                shutil.rmtree(d)
            cwd = work / "cwd"
            cwd.mkdir(exist_ok=True)
            left = None if budget_s is None else budget_s - (time.perf_counter() - start)
            inv = invoke(mode, script, args, d, cwd, timeout=left, timeline=timeline)
            inv.part = part
            inv.rep = rep + 1
            res.invocations.append(inv)
            last[mode] = inv
            if log:
                log(
                    f"{mode_label(mode)}: {inv.seconds:.1f} s rc={inv.returncode} compiles={inv.compiles} "
                    f"bytes={inv.file_bytes:,}"
                )
        if browser:
            for mode, inv in last.items():
                if inv.report:
                    res.open_ms[mode] = open_report(Path(inv.report))
    finally:
        if own and not keep_dirs:
            shutil.rmtree(work, ignore_errors=True)
    return res


def open_report(path: Path, reps: int = 3) -> dict:
    """Open a report in headless Chromium `reps` times; return its median open time and any page errors.

    Open time is the page's own `data-ready-ms` where it sets one (tltrace's reports:
    the first view drawn), else the load event's end, both from navigation start.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "no playwright"}
    if not os.path.exists(CHROMIUM):
        return {"skipped": f"no {CHROMIUM}"}
    text = path.read_text(errors="replace")
    has_ready = "data-ready" in text
    times: list[float] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(reps):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(path.resolve().as_uri(), wait_until="load", timeout=60_000)
                if has_ready:
                    page.wait_for_selector("html[data-ready='1']", state="attached", timeout=60_000)
                    times.append(float(page.get_attribute("html", "data-ready-ms") or "nan"))
                else:
                    times.append(
                        float(
                            page.evaluate(
                                "() => { const n = performance.getEntriesByType('navigation')[0];"
                                " return n ? n.loadEventEnd : performance.now(); }"
                            )
                        )
                    )
                page.close()
        finally:
            browser.close()
    return {
        "ms": statistics.median(times),
        "bytes": path.stat().st_size,
        "ready_flag": has_ready,
        "errors": errors[:5],
        "path": str(path),
    }


def _ok(res: Result, mode: str, part: str | None = None) -> list[Invocation]:
    """Successful invocations of `mode` (of one part, when `part` is given)."""
    return [
        i
        for i in res.invocations
        if i.mode == mode and i.returncode == 0 and (part is None or i.part == part)
    ]


def _baseline(res: Result, part: str) -> list[float]:
    """Untraced wall times to hold a part's times against: that part's own, else every part's."""
    return [i.seconds for i in (_ok(res, "untraced", part) or _ok(res, "untraced"))]


def _rows(res: Result) -> list[tuple[str, str]]:
    """(mode, part) pairs that ran, in MODES order, then part order."""
    parts = list(dict.fromkeys(i.part for i in res.invocations))
    return [(m, p) for m in MODES for p in parts if any(i.mode == m and i.part == p for i in res.invocations)]


def _label(mode: str, part: str, res: Result) -> str:
    multi = len({i.part for i in res.invocations}) > 1
    return MODES[mode] + (f" [part {part}]" if multi and part else "")


def budgets(res: Result, *, time_is_target: bool) -> list[tuple[str, str, str, str]]:
    """Return (target, limit, measured, verdict) rows for issue 9's scale targets.

    `time_is_target`: the wall-time targets are for the H200; on the CPU they are shown
    for information, with the verdict in brackets.
    """
    rows = []
    n = max((i.compiles for i in res.invocations), default=0)
    for mode, part in _rows(res):
        limit = TIME_TARGET.get(mode)
        good, base = _ok(res, mode, part), _baseline(res, part)
        if limit is None or not good or not base:
            continue
        r = statistics.median(i.seconds for i in good) / statistics.median(base)
        cpu_base = [i.cpu_seconds for i in (_ok(res, "untraced", part) or _ok(res, "untraced"))]
        if time_is_target or not statistics.median(cpu_base):
            rows.append(
                (
                    f"{res.label}: {n}-compile invocation, {_label(mode, part, res)}, wall time vs untraced",
                    f"<= {limit:.2f}x",
                    f"{r:.3f}x",
                    "ok" if r <= limit else "OVER",
                )
            )
            continue
        # On a shared CPU machine wall time measures the neighbours: hold CPU time to the H200's limit instead.
        c = statistics.median(i.cpu_seconds for i in good) / statistics.median(cpu_base)
        verdict = "ok" if c <= limit else "OVER"
        rows.append(
            (
                f"{res.label}: {n}-compile invocation, {_label(mode, part, res)}, CPU time vs untraced",
                f"<= {limit:.2f}x",
                f"{c:.3f}x (wall {r:.3f}x)",
                f"({verdict}; H200 wall-time target)",
            )
        )
    for mode, ref in BYTES_REF.items():
        a, b = _ok(res, mode), _ok(res, ref)
        if a and b and b[-1].du_bytes:
            r = a[-1].du_bytes / b[-1].du_bytes
            rows.append(
                (
                    f"{res.label}: bytes on disk per invocation, {MODES[mode]} vs {MODES[ref]} (du)",
                    f"<= {BYTES_TARGET:.2f}x",
                    f"{r:.3f}x",
                    "ok" if r <= BYTES_TARGET else "OVER",
                )
            )
    o = res.open_ms.get("html")
    if o and "ms" in o:
        good_open = o["ms"] < INDEX_OPEN_TARGET_MS and not o["errors"]
        rows.append(
            (
                f"{res.label}: `<script>/report.html` opens in headless Chromium ({n} compiles)",
                f"< {INDEX_OPEN_TARGET_MS:.0f} ms",
                f"{o['ms']:.0f} ms",
                "ok" if good_open else ("PAGE ERRORS" if o["errors"] else "OVER"),
            )
        )
    for mode in ("quiet", "html"):
        for inv in _ok(res, mode)[-1:]:
            if n and inv.compiles < n:
                rows.append(
                    (
                        f"{res.label}: {MODES[mode]} keeps every compile (default --keep)",
                        f"{n}",
                        f"{inv.compiles}",
                        "LOST",
                    )
                )
            if inv.compiles and inv.invocations != 1:
                rows.append(
                    (
                        f"{res.label}: {MODES[mode]}: one invocation id for all compiles",
                        "1",
                        f"{inv.invocations}",
                        "NO",
                    )
                )
            if inv.compiles and inv.signatures != inv.compiles:
                rows.append(
                    (
                        f"{res.label}: {MODES[mode]}: a distinct signature per compile",
                        f"{inv.compiles}",
                        f"{inv.signatures}",
                        "NO",
                    )
                )
    return rows


def table(res: Result) -> str:
    """Return the markdown section for one benchmark result (parts joined: time against each part's untraced)."""
    args = " ".join(res.args)
    calls = any(i.compile_seconds for i in res.invocations)
    lines = [
        f"## Scale: autotune-shaped invocation ({res.label})",
        "",
        f"`{res.script}{' ' + args if args else ''}`: one process per invocation (`import tilelang` "
        f"included), {res.reps} rep(s) per configuration, interleaved, each into a fresh trace dir. Time: "
        "the whole invocation's wall time, median (and best) against untraced: the process ends only once "
        "its records are complete (tltrace's workers are waited for at exit), so this is the wall to "
        "complete records"
        + (
            "; `compile calls s`: the script's own timing of its compile calls (autotune_cpu.py: the "
            "thread pool's wall; upstream_autotune.py: the example's main, its compiles and benchmarks), "
            "which stops before the workers finish"
            if calls
            else ""
        )
        + "; CPU: user + sys seconds of "
        "the process (every thread, tltrace's workers included) and its children (the compiler too), median, "
        "steadier than wall time where other work shares the cores. Bytes: the trace dir after one "
        "invocation (`file` adds up sizes, `du` is blocks allocated; hard links once), against the built-in "
        "mode of the same kind. Kept: compile run dirs on disk; ids and signatures: distinct `invocation` and "
        "`signature` values in tltrace's manifests. Open: `<trace-dir>/<script>/report.html` in headless "
        "Chromium (tltrace: the invocation index, or the newest compile's report before there is one; "
        "built-in: its last compile's report), median of 3.",
        "",
        "| configuration | median s | vs untraced | best-of vs untraced "
        + ("| compile calls s | vs untraced " if calls else "")
        + "| CPU s | CPU vs untraced | kept | ids "
        "| signatures | file bytes | du bytes | du vs built-in | report | open ms |",
        "|---|---:|---:|---:|"
        + ("---:|---:|" if calls else "")
        + "---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, part in _rows(res):
        name = _label(mode, part, res)
        good = _ok(res, mode, part)
        if not good:
            rc = [i.returncode for i in res.invocations if i.mode == mode and i.part == part]
            lines.append(f"| {name} | failed (rc {rc[-1]}) |" + " |" * (15 if calls else 13))
            continue
        secs = [i.seconds for i in good]
        base = _baseline(res, part)
        med = statistics.median(secs)
        ratio = f"{med / statistics.median(base):.3f}x" if base else "-"
        best = f"{min(secs) / min(base):.3f}x" if base else "-"
        last = good[-1]
        cpu = statistics.median(i.cpu_seconds for i in good)
        cpu_base = [i.cpu_seconds for i in (_ok(res, "untraced", part) or _ok(res, "untraced"))]
        cpu_ratio = (
            f"{cpu / statistics.median(cpu_base):.3f}x" if cpu_base and statistics.median(cpu_base) else "-"
        )
        cells = [name, f"{med:.1f}", ratio, best]
        if calls:
            c = statistics.median(i.compile_seconds for i in good)
            c_base = [i.compile_seconds for i in (_ok(res, "untraced", part) or _ok(res, "untraced"))]
            c0 = statistics.median(c_base) if c_base else 0.0
            cells += [f"{c:.1f}", f"{c / c0:.3f}x" if c0 else "-"]
        cells += [f"{cpu:.1f}", cpu_ratio]
        if mode == "untraced":
            cells += ["-"] * 8
        else:
            ref = BYTES_REF.get(mode)
            refinv = _ok(res, ref) if ref else []
            vs = f"{last.du_bytes / refinv[-1].du_bytes:.2f}x" if refinv and refinv[-1].du_bytes else "-"
            ours = mode in ("quiet", "html")
            o = res.open_ms.get(mode, {})
            opened = (
                (f"{o['ms']:.0f}" + (" (errors)" if o.get("errors") else ""))
                if "ms" in o
                else o.get("skipped", "-")
            )
            cells += [
                str(last.compiles),
                str(last.invocations) if ours else "-",
                str(last.signatures) if ours else "-",
                f"{last.file_bytes:,}",
                f"{last.du_bytes:,}",
                vs,
                f"{last.report_bytes / 1e3:,.0f} KB" if last.report else "-",
                opened,
            ]
        lines.append("| " + " | ".join(cells) + " |")
    failed = [i for i in res.invocations if i.returncode != 0]
    for i in failed[:3]:
        lines += [
            "",
            f"{mode_label(i.mode)} exited {i.returncode}; its output ended:",
            "",
            "```",
            i.tail.strip()[-1500:],
            "```",
        ]
    if res.notes:
        lines += [""] + [f"- {n}" for n in res.notes]
    return "\n".join(lines) + "\n"


def budget_table(rows: list[tuple[str, str, str, str]]) -> str:
    if not rows:
        return ""
    lines = ["| target | limit | measured | verdict |", "|---|---:|---:|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines) + "\n"


def render(res: Result) -> str:
    """The CPU section: the table and its targets."""
    rows = budgets(res, time_is_target=False)
    return table(res) + ("\n" + budget_table(rows) if rows else "")


def section(configs: int = 24, reps: int = 3, log=None, save: Path | None = None) -> tuple[str, list]:
    """Measure the CPU workload (saving the raw result to `save`); return (markdown section, budget rows)."""
    res = measure(
        CPU_SCRIPT, ["--configs", str(configs)], reps=reps, label=f"CPU, {configs} configs", log=log
    )
    if save:
        save.write_text(json.dumps(res.to_json(), indent=1) + "\n")
    return render(res), budgets(res, time_is_target=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=24, help="configs of the CPU workload")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the raw result here")
    ap.add_argument("--open", type=Path, metavar="REPORT", help="only time opening this report in Chromium")
    a = ap.parse_args(argv)
    if a.open:
        print(json.dumps(open_report(a.open), indent=1))
        return 0
    res = measure(
        CPU_SCRIPT,
        ["--configs", str(a.configs)],
        reps=a.reps,
        modes=a.modes.split(","),
        label=f"CPU, {a.configs} configs",
        browser=not a.no_browser,
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    if a.json:
        a.json.write_text(json.dumps(res.to_json(), indent=1))
    print(table(res))
    print(budget_table(budgets(res, time_is_target=False)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
