"""Record the traces the read-side tests read: `python tests/data/make_traces.py` (a few minutes).

tests/data/traces/ is one trace dir, recorded once with real TileLang CPU compiles and
checked in, as tlparse tests its parser on recorded logs. `show`, `diff-runs`, `export`,
`--profile`, the summary model, the resolver, `tltrace.load` and the index pages are
tested on it without compiling anything (tests/_records.py `recorded_copy` copies it out).

What is in it (one `tltrace run -q --trace-dir traces ...` per line, in this order):

- elementwise_add, five invocations with working files (`--mode both`): default (the
  working file is NEW), `--block 64` (another signature), default again (the same
  signature twice, for diff-runs and the resolver); then, after gemm, its working file
  edited and run again (PATCHED), and `--block 64` under the edit (CONFLICT);
- gemm: one CPU gemm at a small size;
- two_kernels: two invocations of two compiles each (vadd, vmul);
- fails: one compile whose pass raises (tilelang.lower without a target context).

What is left out to keep it small (well under 1 MB): the per-pass files, which tltrace
writes as hard links into `.run_records/.objects` (recorded_copy links them again from
the manifest's hashes, so a copy looks as tltrace left it), reports, reproducer inputs,
source maps, liveness markers and lock files.

When to regenerate: when the on-disk format changes (a new manifest schema version, a
renamed field, a new file the reader needs). tests/test_recorded.py fails first then
(the recorded manifests must still load with the current reader and carry the
current schema version); run this script, look at `git diff --stat tests/data/traces`,
and commit the new recording with the change. Tests read pipeline facts (pass counts,
indexes, statuses) from the recorded manifests, so a recording made on another TileLang
release needs no test edits. Paths inside (the manifests' `cwd`, the scripts registry) are
the temporary directory it was recorded in; the tests never rely on them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = HERE / "traces"

FAILS = '''"""tilelang.lower without a target context: tl.LayoutInference raises inside the pass."""
import tilelang
import tilelang.language as T


@T.prim_func
def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=64) as bx:
        for i in T.Parallel(64):
            B[bx * 64 + i] = A[bx * 64 + i] * 2.0


tilelang.lower(scale, target="c")
'''

ADD = "))) + *(float4"  # the line of elementwise_add's C the edit changes
SUB = "))) - *(float4"

# (options of `run`, script, its arguments, expected exit status). elementwise_add runs with
# --mode both (working files); its working file is edited before the run marked EDIT.
BOTH = ("--mode", "both")
EDIT = 4
RUNS: list[tuple[tuple[str, ...], str, tuple[str, ...], int]] = [
    (BOTH, "elementwise_add.py", (), 0),  # NEW working file
    (BOTH, "elementwise_add.py", ("--block", "64"), 0),  # another signature
    (BOTH, "elementwise_add.py", (), 0),  # the first signature again
    ((), "gemm.py", ("--m", "64", "--n", "64", "--k", "32"), 0),
    (BOTH, "elementwise_add.py", (), 1),  # PATCHED: the edited C computes a - b (exit 1)
    (BOTH, "elementwise_add.py", ("--block", "64"), 0),  # CONFLICT: a new block under the edit
    ((), "two_kernels.py", (), 0),
    ((), "two_kernels.py", (), 0),
    ((), "fails.py", (), 1),
]

DROP_DIRS = ("repro", ".live")
DROP_FILES = ("sourcemap.jsonl", "report.html", "index.html")


def _tltrace(work: Path, opts: tuple[str, ...], script: str, args: tuple[str, ...]):
    env = dict(os.environ, TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_CPU="1", PYTHONPATH=str(REPO))
    env.pop("TL_LOWER_TRACE", None)
    env.pop("TL_LOWER_TRACE_DIR", None)
    cmd = [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "traces", *opts, script, *args]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)


def record(work: Path) -> Path:
    """Run RUNS in `work` (a copy of examples/ plus fails.py); return its trace dir."""
    for p in (REPO / "examples").iterdir():
        if p.suffix == ".py":
            shutil.copy(p, work / p.name)
    (work / "fails.py").write_text(FAILS)
    for n, (opts, script, args, want) in enumerate(RUNS):
        if n == EDIT:
            w = work / "traces" / "elementwise_add" / "codegen_device.cpp"
            text = w.read_text()
            assert ADD in text, f"{w} has no {ADD!r}: elementwise_add's C changed; pick another edit"
            w.write_text(text.replace(ADD, SUB))
        p = _tltrace(work, opts, script, args)
        if p.returncode != want:
            sys.exit(
                f"{script} {' '.join(args)}: exit {p.returncode}, expected {want}\n{p.stdout}\n{p.stderr}"
            )
        print(f"recorded {script} {' '.join(args)}".rstrip())
    return work / "traces"


def strip(traces: Path) -> None:
    """Remove what the read-side tests do not need (see the module docstring)."""
    for p in sorted(traces.rglob("*"), key=lambda p: -len(p.parts)):
        if p.is_symlink():
            p.unlink()
        elif p.is_dir() and p.name in DROP_DIRS:
            shutil.rmtree(p)
        elif p.is_file() and (p.name in DROP_FILES or p.name.endswith(".lock")):
            p.unlink()
    for run_dir in traces.glob("*/.run_records/run_*"):
        for sub in list(run_dir.iterdir()):
            if sub.is_dir():  # per-pass files: hard links into .objects, linked again on copy
                shutil.rmtree(sub)
    for script_dir in traces.iterdir():  # objects only the dropped files named (reproducer inputs)
        named: set[str] = set()
        for m in script_dir.glob(".run_records/run_*/manifest.json"):
            for rec in json.loads(m.read_text())["records"]:
                named.update(h for h in (rec.get("before_hash"), rec.get("after_hash")) if h)
        for obj in script_dir.glob(".run_records/.objects/*"):
            if obj.name not in named:
                obj.unlink()
    for p in traces.rglob("*"):
        if p.is_file():
            p.chmod(0o644)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tltrace-recorded-") as tmp:
        traces = record(Path(tmp))
        strip(traces)
        if OUT.exists():
            shutil.rmtree(OUT)
        shutil.copytree(traces, OUT)
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"wrote {OUT} ({size // 1024} KB)")


if __name__ == "__main__":
    main()
