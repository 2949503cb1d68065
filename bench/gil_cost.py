"""Issue 34: how long tltrace holds the GIL per sm_90a lowering, against TileLang's own lowering.

    python bench/gil_cost.py [--lowerings 12] [--reps 3] [--configs untraced,records,html]

Why the GIL and not the CPU: TVM's FFI lets go of the GIL on every call (TVM_FFI_RELEASE_GIL_BY_DEFAULT),
so TileLang's C++ passes and TVM's printer run without it, and on the H200, where an
autotuner's 14 compiling threads and tltrace's workers share one process and 11 of 16 cores
sit idle, what stretches the compiling phase is the Python that runs under the GIL. The
H200's 96-config autotune added 7.9 s (`--quiet`) to a 32.0 s compiling phase
(docs/benchmarks.md), about 96 times tltrace's GIL time per lowering measured here.

Each (configuration, rep) is a child process that lowers the upstream autotuner's GEMM for
sm_90a once untraced (warm-up), turns the configuration on, lowers it `--lowerings` times and
waits for tltrace's worker, under `py-spy record --gil` (a sample only while a thread holds the
GIL). Counted: samples in the traced loop or on a `tltrace-capture` worker; tltrace's are those
with a tltrace frame on the stack. Reported per lowering, in ms of GIL held: all of it, TileLang's
(the rest) and tltrace's, medians over reps (interleaved). Needs `py-spy` (pip install py-spy).

`records@print-only` is an experiment, not a mode: the texts are printed and nothing after
the print runs in the process (see `_print_only`), the floor of a writer-process design.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADING = "## GIL held per sm_90a lowering"
RATE = 500  # samples a second
LOOP = "_traced_loop ("  # the child's loop frame, as py-spy names it
WORKER = "Worker._run ("
OURS = "/tltrace/"


def _print_only() -> None:
    """The `@print-only` experiment: each pass's two texts are printed (and source-mapped) as
    tracing does, and nothing after the print runs in this process (no hash, store, counts,
    logs, recorders' records or listeners): what a compile would still hold the GIL for if
    the per-record work went to a writer process. Not a mode of tltrace's; a bench patch."""
    from tltrace.session.capture import TraceSession

    def record_pass(self, p, after, duration, err, pending_error):  # type: ignore[no-untyped-def]
        self._resolve(p.before)
        if after is not None:
            self._resolve(after)

    TraceSession._record_pass = record_pass  # type: ignore[method-assign]


def _pipe_writer() -> None:
    """The `@pipe` experiment: `@print-only` plus what a writer process would cost the compile's
    process, the texts and their records handed over a pipe (each text once, as UTF-8, with a
    short header) to a child that reads them (and here drops them). Not a mode; a bench patch."""
    import struct
    import subprocess as sp

    from tltrace.session.capture import TraceSession

    reader = sp.Popen(
        [sys.executable, "-c", "import sys\nr = sys.stdin.buffer.read\nwhile r(1 << 20):\n    pass"],
        stdin=sp.PIPE,
    )
    assert reader.stdin is not None
    fd = reader.stdin.fileno()
    sent: list[object] = [None]  # the last text sent (a pass's input is most often the output before it)

    def send(text: str) -> int:
        if sent[0] is text:
            return 0
        sent[0] = text
        data = text.encode("utf-8", "surrogateescape")
        os.write(fd, struct.pack("<I", len(data)) + data)
        return 1

    def record_pass(self, p, after, duration, err, pending_error):  # type: ignore[no-untyped-def]
        before = self._resolve(p.before)
        a = self._resolve(after) if after is not None else None
        flags = send(before) | (send(a) << 1 if a is not None else 0)
        head = f"{p.index}\t{p.name}\t{p.phase}\t{p.depth}\t{duration:.6f}\t{flags}".encode()
        os.write(fd, struct.pack("<I", len(head)) + head)

    TraceSession._record_pass = record_pass  # type: ignore[method-assign]


def child(cfg: str, n: int) -> int:
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    os.environ.pop("TL_LOWER_TRACE", None)
    sys.path.insert(0, str(HERE))
    from capture_cost import configure, sm90a_lowerer

    cfg, _, variant = cfg.partition("@")
    if variant == "print-only":
        _print_only()
    elif variant == "pipe":
        _pipe_writer()
    elif variant:
        raise SystemExit(f"gil_cost: unknown variant @{variant} (known: @print-only, @pipe)")
    lower = sm90a_lowerer()
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-gil-") as td:
        enter, leave = configure(cfg, Path(td))
        with contextlib.redirect_stdout(io.StringIO()):
            enter()  # tltrace's imports, outside the counted loop
            c0, w0 = time.process_time(), time.perf_counter()
            _traced_loop(lower, n)
            leave()  # waits for the worker: its samples are counted
            c1, w1 = time.process_time(), time.perf_counter()
    print(f"cpu_ms={(c1 - c0) / n * 1e3:.1f} wall_ms={(w1 - w0) / n * 1e3:.1f}")
    return 0


def _traced_loop(lower, n: int) -> None:
    for _ in range(n):
        lower()


def count(raw: str) -> tuple[int, int]:
    """(GIL samples in the loop or on a worker, of them tltrace's) of py-spy's raw output."""
    total = ours = 0
    for line in raw.splitlines():
        stack, _, num = line.rpartition(" ")
        if not num.isdigit() or (LOOP not in stack and WORKER not in stack):
            continue
        total += int(num)
        if OURS in stack:
            ours += int(num)
    return total, ours


def run_one(spy: str, cfg: str, n: int, tmp: Path) -> dict[str, float]:
    out = tmp / "gil.txt"
    cmd = [spy, "record", "--gil", "-r", str(RATE), "-f", "raw", "--full-filenames", "-o", str(out)]
    cmd += ["--", sys.executable, str(Path(__file__).resolve()), "--child", cfg, "--lowerings", str(n)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0 or not out.exists():
        raise SystemExit(f"gil_cost: {cfg!r} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    total, ours = count(out.read_text())
    stats = dict(kv.split("=") for kv in p.stdout.split() if "=" in kv)
    ms = 1e3 / RATE / n
    return {
        "gil": total * ms,
        "tltrace": ours * ms,
        "tilelang": (total - ours) * ms,
        "cpu": float(stats.get("cpu_ms", "nan")),
    }


def measure(configs: list[str], reps: int, n: int) -> dict[str, dict[str, list[float]]]:
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("gil_cost: py-spy is not on PATH (pip install py-spy)")
    res: dict[str, dict[str, list[float]]] = {c: {} for c in configs}
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-gil-") as td:
        for rep in range(reps):
            for cfg in configs:
                for k, v in run_one(spy, cfg, n, Path(td)).items():
                    res[cfg].setdefault(k, []).append(v)
            print(f"rep {rep + 1}/{reps}", file=sys.stderr)
    return res


def table(res: dict[str, dict[str, list[float]]], reps: int, n: int) -> str:
    med = {c: {k: statistics.median(v) for k, v in d.items()} for c, d in res.items()}
    base = med.get("untraced", {}).get("tilelang")
    lines = [
        HEADING,
        "",
        f"`python bench/gil_cost.py --reps {reps} --lowerings {n}`: py-spy `--gil` at {RATE} Hz, one "
        "child process per configuration and rep, interleaved; medians. GIL held per lowering, in ms: "
        "samples in the traced loop and on tltrace's workers (the worker drained at the end).",
        "",
        "| configuration | GIL held (ms) | TileLang's (ms) | tltrace's (ms) | tltrace's / untraced lowering's "
        "| process CPU (ms) | H200 96-config projection (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for cfg, m in med.items():
        rel = f"{m['tltrace'] / base:.2f}x" if base else "-"
        lines.append(
            f"| {cfg} | {m['gil']:.1f} | {m['tilelang']:.1f} | {m['tltrace']:.1f} | {rel} | {m['cpu']:.0f} "
            f"| {96 * m['tltrace'] / 1e3:.1f} |"
        )
    lines += [
        "",
        "The projection is 96 compiles times tltrace's GIL time: what the H200's compiling phase gains "
        "where the GIL is what the compiling threads queue for (measured there: +7.9 s `--quiet`, "
        "+9.3 s html, on a 32.0 s phase).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lowerings", type=int, default=12)
    ap.add_argument("--configs", default="untraced,records,html")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.lowerings)
    configs = [c.strip() for c in a.configs.split(",") if c.strip()]
    print(table(measure(configs, a.reps, a.lowerings), a.reps, a.lowerings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
