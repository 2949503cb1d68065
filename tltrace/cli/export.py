"""`tltrace export` and `tltrace run --chrome-trace`: compiles as a Chrome trace (Trace Event Format),
or their texts as the per-pass `.tir` files of the seed's layout (`--tir DIR`).

Parses, makes one call into the core (history/runs.py to find the compiles,
render/chrome_trace.py to build the trace, history/tir_files.py to write the texts),
writes the file(s), prints where.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from ..config import trace_dir_of
from ..errors import TltraceError, UsageError
from .shared import (
    PathArgsCommand,
    cut_short,
    fail,
    force_option,
    kernel_option,
    no_such_option,
    trace_dir_option,
)

EXPORT_EPILOG = """\
Examples:

\b
  tltrace export gemm.py --chrome-trace gemm.json          the newest invocation of gemm.py
  tltrace export gemm.py -2 --chrome-trace t.json          the invocation before the newest
  tltrace export autotune.py --all --chrome-trace all.json every run of the script kept on disk
  tltrace export ./ci_traces/test_add --chrome-trace -     to stdout
  tltrace run --chrome-trace gemm.json gemm.py             trace and export in one go
  tltrace export gemm.py --chrome-trace old.json --force   replace a file tltrace did not write
  tltrace export gemm.py --tir gemm_tir                    the per-pass .tir files of each compile

The file opens in https://ui.perfetto.dev and chrome://tracing: one process per
invocation, one track per compiling thread, each compile a slice holding its
passes (nested passes inside their parent) and, after codegen, the backend build.
Each pass's args carry its index, phase, status and +/- line counts.
--tir DIR writes each compile's texts as files: DIR/<run id>/<phase>/NN_<Pass>_before.tir,
_after.tir (codegen's after: .cpp), the names the records keep. A run keeps its texts in one
file, <run dir>/texts.pack (docs/storage.md); these files are made only on demand. DIR must be
new or empty (--force: write into it). A compile that a dead process cut short (interrupted,
exited: a kill -9) gets the files of the records it left; the summary line counts them.
RUN is read as every command reads it (docs/runs.md, "Naming scripts, runs and
compiles"): -1 (the newest invocation), -2, ..., an invocation id (that invocation),
or a run id (that one compile); --kernel NAME keeps only NAME's compiles. Without
RUN: the newest invocation of each script found.
PATH is written only when new, a trace tltrace wrote, a pipe or a device; any other
file, a link or a directory is refused unless --force (which replaces a file or link).
Exit status: 0; 2 for bad usage; 3 for missing or damaged records.
"""


def register(app: typer.Typer) -> None:
    """Add `export` to the app."""
    app.command(
        "export", cls=PathArgsCommand, epilog=EXPORT_EPILOG, context_settings={"ignore_unknown_options": True}
    )(export_cmd)


def export_cmd(
    args: Optional[list[str]] = typer.Argument(
        None,
        metavar="[SCRIPT_OR_DIR] [RUN]",
        help="A script, script/trace/run directory; then a RUN.",
        show_default=False,
    ),
    chrome_trace: Optional[Path] = typer.Option(
        None,
        "--chrome-trace",
        metavar="PATH",
        help="Write a Chrome trace (Trace Event Format) to PATH ('-': stdout).",
    ),
    force: bool = force_option("Replace a file at PATH that tltrace did not write (or a link there)."),
    tir: Optional[Path] = typer.Option(
        None, "--tir", metavar="DIR", help="Write each compile's per-pass texts as .tir files under DIR."
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    every_run: bool = typer.Option(False, "--all", help="Every run of the script, not one invocation."),
    kernel: Optional[str] = kernel_option(),
) -> None:
    """Export an invocation's compiles as a Chrome trace for Perfetto or chrome://tracing, or as .tir files."""
    items = list(args or [])
    for a in items:
        if a.startswith("--") or (a.startswith("-") and len(a) > 1 and not a[1:].isdigit()):
            raise fail(no_such_option(a), 2)
    if chrome_trace is None and tir is None:
        raise fail("say what to export: --chrome-trace PATH or --tir DIR; try 'tltrace export --help'", 2)
    if len(items) > 2:
        raise fail(f"too many arguments: {' '.join(items[2:])}; give at most SCRIPT_OR_DIR and RUN", 2)
    td = trace_dir_of(trace_dir)
    path = None
    try:
        found = select_runs(
            items[0] if items else None,
            items[1] if len(items) > 1 else None,
            td,
            every_run=every_run,
            kernel=kernel,
        )
        manifests = [r.require() for r in found]
        if tir is not None:
            from ..history import tir_files

            out = tir_files.check_out(tir, force=force)
            written = tir_files.Written()
            for r in found:
                tir_files.write_run(r, out, written)
            for m in written.missing[:5]:
                typer.echo(
                    f"tltrace: warning: no copy of {m} is left (run records damaged); not written", err=True
                )
            typer.echo(
                f"tir files: {out} ({written.files} file(s) of {written.runs} compile(s)"
                f"{cut_short(found, 'their files stop where the records do')})",
                err=True,
            )
        if chrome_trace is not None:
            from ..render.chrome_trace import chrome_trace as build

            path = write_json(build(manifests), chrome_trace, force=force)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    if path is not None:
        typer.echo(
            f"chrome trace: {path} ({len(manifests)} compile(s)"
            f"{cut_short(found, 'their spans stop where the records do')}); open it in https://ui.perfetto.dev",
            err=True,
        )


def select_runs(
    target: str | None,
    run: str | None,
    trace_dir: Path,
    *,
    every_run: bool = False,
    kernel: str | None = None,
) -> list:
    """Return the runs to export: what the REF names (history.resolve.selected_runs), or every run."""
    from ..history import runs
    from ..history.resolve import selected_runs

    target, run = runs.split_target(target, run)  # 'export -2', 'export gemm.py:-2'
    if every_run:
        if run is not None:
            raise UsageError("--all exports every run; drop the RUN argument")
        loc = runs.locate(target, trace_dir)
        found = [r for r in runs.list_runs(loc, size=False, kernel=kernel) if r.manifest is not None]
        if not found:
            raise runs.RecordsError(f"no readable runs under {loc.root or loc.script_dirs[0]}")
        return found
    return list(selected_runs(target, run, trace_dir, kernel=kernel))


def write_json(data: Any, out: Path, *, force: bool = False) -> Path | None:
    """Write `data` as JSON to `out` under the output-path rule ('-': stdout, returns None); return the path."""
    from ..fs import output_path

    text = json.dumps(data, separators=(",", ":"))
    target = output_path.write(out, output_path.CHROME_TRACE, (text + "\n").encode("utf-8"), force=force)
    return target.path


def write_run_trace(collector, out: Path, *, force: bool = False) -> str:
    """Write the Chrome trace of the compiles a RunCollector saw; return one line saying where (or why not)."""
    from ..render.chrome_trace import chrome_trace as build

    manifests = collector.manifests(counts=True)
    try:
        path = write_json(build(manifests), out, force=force)
    except TltraceError as exc:
        return f"tltrace: warning: {exc}"
    return f"chrome trace: {path if path is not None else 'stdout'} ({len(manifests)} compile(s))"
