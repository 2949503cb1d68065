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
- fails: one compile whose pass raises (tilelang.lower without a target context);
- sm90a: tests/_kernels.py's MATMUL lowered for sm_90a on the CPU (CUDA codegen, no GPU) under
  `--line-directives --remarks`, so every recorder's field is in the recording (layouts, line
  directives, remarks, facts, call sites), then once more as a step of `tltrace bisect` would run
  it (TLTRACE_BISECT skipping a top-level pass that changes nothing: the manifest's `skipped`).

What is left out to keep it small (under 1 MB): the per-pass files, which tltrace
writes as hard links into `.run_records/.objects` (recorded_copy links them again from
the manifest's hashes, so a copy looks as tltrace left it), reports, reproducer inputs,
source maps, the call sites' source snapshots, liveness markers and lock files.

When to regenerate: when the on-disk format changes (a new manifest schema version, a
renamed or new field, a new file the reader needs). tests/test_recorded.py fails first then:
the recorded manifests must still load with the current reader, carry the current schema
version, and fill every field of RunManifest and PassRecord somewhere (a new field a recorder
writes means a new recording; a field no CPU recording can fill is listed, with why, in
test_recorded.py's UNFILLED). Run this script, look at `git diff --stat tests/data/traces`,
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
sys.path.insert(0, str(REPO))
from tests._kernels import LOWER_FAILS, SM90A, swap_op  # noqa: E402  (the edit is found in the generated C)

# (options of `run`, script, its arguments, expected exit status). elementwise_add runs with
# --mode both (working files); its working file is edited before the run marked EDIT.
BOTH = ("--mode", "both")
EDIT = 4
RUNS: list[tuple[tuple[str, ...], str, tuple[str, ...], int]] = [  # an env of its own: SKIPPING
    (BOTH, "elementwise_add.py", (), 0),  # NEW working file
    (BOTH, "elementwise_add.py", ("--block", "64"), 0),  # another signature
    (BOTH, "elementwise_add.py", (), 0),  # the first signature again
    ((), "gemm.py", ("--m", "64", "--n", "64", "--k", "32"), 0),
    (BOTH, "elementwise_add.py", (), 1),  # PATCHED: the edited C computes a - b (exit 1)
    (BOTH, "elementwise_add.py", ("--block", "64"), 0),  # CONFLICT: a new block under the edit
    ((), "two_kernels.py", (), 0),
    ((), "two_kernels.py", (), 0),
    ((), "fails.py", (), 1),
    (("--line-directives", "--remarks"), "sm90a.py", (), 0),
    ((), "sm90a.py", (), 0),  # SKIPPING: a bisect step's skip plan
]
SKIPPING = len(RUNS) - 1


DROP_DIRS = ("repro", ".live")
DROP_FILES = ("sourcemap.jsonl", "report.html", "index.html")
DROP_PREFIXES = ("repro_", "source_")  # a run's reproducer inputs, its call sites' source snapshots


def _tltrace(work: Path, opts: tuple[str, ...], script: str, args: tuple[str, ...], **extra: str):
    env = dict(
        os.environ, TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_CPU="1", PYTHONPATH=str(REPO), **extra
    )
    env.pop("TL_LOWER_TRACE", None)
    env.pop("TL_LOWER_TRACE_DIR", None)
    cmd = [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "traces", *opts, script, *args]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)


def record(work: Path) -> Path:
    """Run RUNS in `work` (a copy of examples/ plus fails.py); return its trace dir."""
    for p in (REPO / "examples").iterdir():
        if p.suffix == ".py":
            shutil.copy(p, work / p.name)
    (work / "fails.py").write_text(LOWER_FAILS)
    (work / "sm90a.py").write_text(SM90A)
    for n, (opts, script, args, want) in enumerate(RUNS):
        extra = {}
        if n == EDIT:
            w = work / "traces" / "elementwise_add" / "codegen_device.cpp"
            w.write_text(swap_op(w.read_text(), "-"))  # the sum becomes a difference
        if n == SKIPPING:
            extra["TLTRACE_BISECT"] = _skip_a_noop(work / "traces" / Path(script).stem)
        p = _tltrace(work, opts, script, args, **extra)
        if p.returncode != want:
            sys.exit(
                f"{script} {' '.join(args)}: exit {p.returncode}, expected {want}\n{p.stdout}\n{p.stderr}"
            )
        print(f"recorded {script} {' '.join(args)}".rstrip())
    return work / "traces"


def _skip_a_noop(script_dir: Path) -> str:
    """TLTRACE_BISECT's value skipping the first top-level pass that changed nothing in the last run."""
    from tltrace.bisect.skipping import SkipPlan
    from tltrace.bisect.steps import top_passes
    from tltrace.format.records import RunManifest

    last = sorted(script_dir.glob(".run_records/run_*"))[-1]
    m = RunManifest.from_json(json.loads((last / "manifest.json").read_text()))
    noop = next(t for t in top_passes(m) if t.status == "noop" and t.position > 0)
    return SkipPlan.of([noop.position]).to_env()


def strip(traces: Path) -> None:
    """Remove what the read-side tests do not need (see the module docstring)."""
    for p in sorted(traces.rglob("*"), key=lambda p: -len(p.parts)):
        if p.is_symlink():
            p.unlink()
        elif p.is_dir() and p.name in DROP_DIRS:
            shutil.rmtree(p)
        elif p.is_file() and (
            p.name in DROP_FILES or p.name.endswith(".lock") or p.name.startswith(DROP_PREFIXES)
        ):
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
