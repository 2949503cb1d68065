"""`tltrace clean`: remove old invocations (never working files, never a running one)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..config import trace_dir_of as _trace_dir
from ..errors import EXIT_RECORDS, TltraceError
from ..proc.shell import command
from .records import TRACE_DIR_OPT, _print_json, _size
from .shared import fail as _fail
from .shared import force_option, json_option, verbose_option
from .shared import warn as _warn

CLEAN_EPILOG = """\
Examples:

\b
  tltrace clean --keep 5                        keep the newest 5 invocations of every script
  tltrace clean gemm.py --older-than 7d         remove gemm's invocations older than a week
  tltrace clean --older-than 12h --dry-run      say what would go; remove nothing
  tltrace clean ./ci_traces --all               remove every run under ./ci_traces
  tltrace clean --keep 5 -v                     also a line per run removed

An invocation is one `tltrace run` (or one enable()..disable() span) with all
its compiles. Only run directories under .run_records go, then the stored texts
no remaining run uses; nothing is removed through a symbolic link. Working files
(codegen_*.cpp), their .original/.latest files and backups are never touched, nor
an invocation that is still running, in this process or another: its writers
hold a lock that dies with them, so a run killed anywhere (another container,
another host name) can go. Runs of older tltrace versions killed on another host
cannot be asked; --force removes those. What could not be removed is named on
stderr, and the exit status is then 3. One line gives the total; -v (and
--dry-run) also names each run.
DURATION: 30s, 10m, 12h, 7d, 2w, 1d12h (a bare number means days).
"""


def clean_cmd(
    target: Optional[str] = typer.Argument(
        None,
        metavar="[SCRIPT_OR_DIR]",
        help="A script or its trace directory [default: every script].",
        show_default=False,
    ),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    keep: Optional[int] = typer.Option(
        None,
        "--keep",
        metavar="N",
        help="Keep the newest N invocations (each with all its compiles) per script (0 keeps all, as on run).",
    ),
    older_than: Optional[str] = typer.Option(
        None,
        "--older-than",
        metavar="DURATION",
        help="Remove invocations started over DURATION ago (30m, 12h, 7d, 2w).",
    ),
    remove_all: bool = typer.Option(False, "--all", help="Remove every run."),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Say what would be removed; remove nothing."),
    force: bool = force_option(
        "Also remove stale runs whose liveness cannot be asked: runs written before "
        "tltrace's liveness lock by a process on another host (another container)."
    ),
    as_json: bool = json_option("Print JSON."),
    verbose: bool = verbose_option("Also a line per run removed or kept (--dry-run lists them anyway)."),
) -> None:
    """Remove old invocations (never working files, never a running one), then stored texts no run uses.

    Exit status 3 when something could not be removed (it is named on stderr).
    """
    from ..history import runs
    from ..history.retention import clean, parse_duration

    td = _trace_dir(trace_dir)
    try:
        seconds = parse_duration(older_than) if older_than is not None else None
        loc = runs.locate(target, td)
        if loc.run_dir is not None:
            raise TltraceError(
                f"{target} is one run; clean works on scripts (to remove just this run: {command('rm', '-r', loc.run_dir)})"
            )
        result = clean(
            loc.script_dirs,
            keep=keep,
            older_than=seconds,
            remove_all=remove_all,
            dry_run=dry_run,
            force=force,
        )
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    if as_json:
        _print_json(result.to_json())
        if result.failed:
            raise typer.Exit(EXIT_RECORDS)
        return
    verb = "would remove" if dry_run else "removed"
    if verbose or dry_run:
        for p in result.removed:
            typer.echo(f"{verb} {p}" + (f" (cut short: {result.cut[p]})" if p in result.cut else ""))
        for p in result.skipped_active:
            _warn(f"kept {p}: its invocation may still be running (an old run of another host: --force)")
    elif result.skipped_active:
        n = len(result.skipped_active)
        _warn(
            f"kept {n} run(s) whose invocation may still be running, e.g. {result.skipped_active[0]} "
            "(an old run of another host: --force; -v names each)"
        )
    for line in result.failed:
        _warn(f"could not remove {line}")
    # Compiles a dead process cut short (a kill -9) are said, as every reader says them.
    kinds = ", ".join(sorted(set(result.cut.values())))
    cut = f" ({len(result.cut)} cut short: {kinds})" if result.cut else ""
    summary = (
        f"{verb} {len(result.removed)} run(s){cut} of {result.invocations_removed} invocation(s), "
        f"kept {result.kept}"
    )
    if not dry_run:
        summary += f"; freed {_size(result.bytes_freed)}"
    typer.echo(summary)
    if result.failed:
        raise typer.Exit(EXIT_RECORDS)
