"""Issue 51, round 5: what the working files cost a compiling thread (html/both mode, --codegen-output).

    python bench/workfiles_cost.py [--n 96] [--threads 16] [--busy 2] [--strace] [--json FILE]

N kernel variants shaped like an autotune (one kernel `main`, N launch shapes, a device
source of 10-30 KB and a host source each) go through the entry point the codegen path
calls (`reconcile.workflow.reconcile_codegen`, one call per codegen role, one Ledger per
invocation) from T threads, optionally beside BUSY threads running pure Python (the GIL
contention of a GPU host's compiling threads). Two invocations in a fresh trace dir: INIT
(every file new) and UNCHANGED (the same code again). Per codegen call: wall, the calling
thread's CPU, the time the registry lock was held, and (`--strace`) the system calls,
counted from outside by `strace -f -c` over a run of the phases minus a run without them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PHASES = ("INIT", "UNCHANGED")


def _device_source(i: int) -> str:
    """A generated-looking CUDA source of 10-30 KB, distinct per variant."""
    bm, bn = 64 * (1 + i % 4), 64 * (1 + (i // 4) % 4)
    lines = [
        '#include <tl_templates/cuda/gemm.h>\n#include <tl_templates/cuda/copy.h>\n\nextern "C" __global__ void',
        f"__launch_bounds__({128 * (1 + i % 2)}, 1) main_kernel(half_t* __restrict__ A, half_t* __restrict__ B, "
        "half_t* __restrict__ C) {",
        f"  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];  // variant {i}",
        f"  float C_local[{bm * bn // 128}];",
    ]
    body = 200 + (i * 37) % 400
    for k in range(body):
        lines.append(
            f"  tl::ptx_ldmatrix_x4((&(((half_t*)buf_dyn_shmem)[(((((int)threadIdx.x) & 15) * {bm}) + {k % bn})])), "
            f"(&(C_local[{k % 64}])));"
        )
    lines.append("}\n")
    return "\n".join(lines)


def _host_source(i: int) -> str:
    return "\n".join(
        [
            "#include <tvm/runtime/c_runtime_api.h>",
            f"int32_t main(void* args, int32_t* arg_type_ids, int32_t num_args) {{  // variant {i}",
            *(f"  if (num_args != 3) {{ return -{k}; }}" for k in range(60 + i % 30)),
            "  return 0;\n}\n",
        ]
    )


def _variants(n: int) -> list[Any]:
    from tltrace.reconcile.variant import Variant

    out = []
    for i in range(n):
        bm, bn, bk = 64 * (1 + i % 4), 64 * (1 + (i // 4) % 4), 32 * (1 + (i // 16) % 6)
        key = hashlib.sha1(f"main {bm} {bn} {bk} {i}".encode()).hexdigest()[:12]
        parts = (
            ("shape", "1024x1024"),
            ("dtype", "f16"),
            ("grid", f"{1024 // bm}x{1024 // bn}"),
            ("threads", f"{128 + bk}"),
        )
        out.append(Variant(key, f"{bm}x{bn}x{bk}", parts))
    return out


def _busy(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for k in range(2000):
            x = (x * 31 + k) % 1000003


def _run_phase(
    trace_dir: Path, variants: list[Any], sources: list[tuple[str, str]], threads: int, held: list[float]
) -> dict[str, float]:
    from tltrace.config import Settings
    from tltrace.reconcile.workflow import Ledger, reconcile_codegen

    settings = Settings(
        mode="both", trace_dir=trace_dir, script_name="autotune", script_key="path:/bench/autotune.py"
    )
    ledger = Ledger()
    walls: list[float] = []
    cpus: list[float] = []
    tags: dict[str, int] = {}
    guard = threading.Lock()

    def one(i: int) -> None:
        for role, text in zip(("device", "host"), sources[i]):
            t0, c0 = time.perf_counter(), time.thread_time()
            out = reconcile_codegen(
                settings,
                kernel="main",
                role=role,
                generated=text,
                compiles_source=True,
                backend="nvrtc",
                variant=variants[i],
                ledger=ledger,
            )
            w, c = time.perf_counter() - t0, time.thread_time() - c0
            if out.compile_text != text or out.warnings:
                raise SystemExit(f"variant {i} {role}: unexpected outcome {out.tag} {out.warnings}")
            with guard:
                walls.append(w)
                cpus.append(c)
                tags[str(out.tag)] = tags.get(str(out.tag), 0) + 1

    held.clear()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(len(variants))))
    wall = time.perf_counter() - t0
    calls = len(walls)
    walls.sort()
    return {
        "calls": calls,
        "phase_wall_s": wall,
        "wall_ms_mean": 1e3 * sum(walls) / calls,
        "wall_ms_median": 1e3 * walls[calls // 2],
        "cpu_ms_mean": 1e3 * sum(cpus) / calls,
        "lock_held_ms_per_call": 1e3 * sum(held) / calls,
        "lock_held_s_total": sum(held),
        "tags": tags,  # type: ignore[dict-item]
    }


def _measure_lock(held: list[float]) -> None:
    """Time the registry lock from acquired to released (wraps the name `registry.locked`)."""
    from tltrace.reconcile import registry

    inner = registry.locked

    @contextlib.contextmanager
    def timed(path: Any, *a: Any, **k: Any) -> Any:
        with inner(path, *a, **k):
            t0 = time.perf_counter()
            try:
                yield
            finally:
                held.append(time.perf_counter() - t0)

    registry.locked = timed  # type: ignore[assignment]


def run(args: argparse.Namespace, phases: tuple[str, ...]) -> dict[str, Any]:
    from tltrace.reconcile import files

    files.FSYNC = not args.no_fsync
    variants = _variants(args.n)
    sources = [(_device_source(i), _host_source(i)) for i in range(args.n)]
    held: list[float] = []
    _measure_lock(held)
    stop = threading.Event()
    hogs = [threading.Thread(target=_busy, args=(stop,), daemon=True) for _ in range(args.busy)]
    for h in hogs:
        h.start()
    out: dict[str, Any] = {}
    try:
        td = tempfile.mkdtemp(prefix="wfcost-", dir=args.dir)
        for phase in phases:
            out[phase] = _run_phase(Path(td), variants, sources, args.threads, held)
        out["files"] = len(os.listdir(Path(td) / "autotune")) if phases else 0
    finally:
        stop.set()
    if args.child is None:  # a child's directory is removed by its parent: outside the count
        shutil.rmtree(td, ignore_errors=True)
    return out


def _strace_calls(args: argparse.Namespace, phases: str) -> dict[str, int]:
    """Run the phases in a child under `strace -f -c`; return its calls per system call."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as fh:
        cmd = [
            sys.executable,
            __file__,
            "--child",
            phases,
            "--n",
            str(args.n),
            "--threads",
            str(args.threads),
        ]
        if args.no_fsync:
            cmd.append("--no-fsync")
        with tempfile.TemporaryDirectory(prefix="wfcost-", dir=args.dir) as td:
            cmd += ["--dir", td]
            subprocess.run(["strace", "-f", "-c", "-o", fh.name, *cmd], check=True, stdout=subprocess.DEVNULL)
        text = Path(fh.name).read_text()
    calls: dict[str, int] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0][0].isdigit() and cols[-1] != "total":
            calls[cols[-1]] = int(cols[3])
    return calls


def _per_call(counts: list[dict[str, int]], k: int, calls: int) -> dict[str, float]:
    """System calls per codegen call of phase k: the run up to it minus the run before it."""
    a, b = counts[k], counts[k + 1]
    diff = {name: (b.get(name, 0) - a.get(name, 0)) / calls for name in set(a) | set(b)}
    futex = diff.pop("futex", 0.0)  # the GIL and locks handed between threads: said apart
    top = sorted(diff.items(), key=lambda x: -x[1])[:8]
    return {"syscalls": sum(diff.values()), "futex": futex, **{f"  {n}": v for n, v in top}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=96, help="kernel variants (default 96)")
    ap.add_argument("--threads", type=int, default=16, help="compiling threads (default 16)")
    ap.add_argument("--busy", type=int, default=0, help="pure-Python threads beside them (the GPU host: 2)")
    ap.add_argument("--strace", action="store_true", help="also count system calls per codegen call")
    ap.add_argument("--no-fsync", action="store_true", help="skip the durable flushes (isolates the rest)")
    ap.add_argument("--dir", default=None, help="where the fresh trace dir goes (default: $TMPDIR)")
    ap.add_argument("--json", default=None, help="write the numbers here too")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    if args.child is not None:
        run(args, tuple(p for p in args.child.split(",") if p))
        return
    out = run(args, PHASES)
    if args.strace:
        counts = [_strace_calls(args, ",".join(PHASES[:k])) for k in range(len(PHASES) + 1)]
        for k, phase in enumerate(PHASES):
            out[phase]["syscalls_per_call"] = _per_call(counts, k, out[phase]["calls"])
    print(f"n={args.n} threads={args.threads} busy={args.busy} files in the directory: {out['files']}")
    for phase in PHASES:
        r = out[phase]
        sc = r.get("syscalls_per_call")
        sc = "; per call: " + " ".join(f"{k.strip()} {v:.1f}" for k, v in sc.items()) if sc else ""
        print(
            f"{phase:10s} per codegen call: wall {r['wall_ms_mean']:.2f} ms (median {r['wall_ms_median']:.2f}) "
            f"cpu {r['cpu_ms_mean']:.2f} ms, registry lock held {r['lock_held_ms_per_call']:.2f} ms{sc}; "
            f"phase wall {r['phase_wall_s']:.2f} s; tags {r['tags']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
