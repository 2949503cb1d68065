"""CLI commands of the edit-and-recompile workflow: watch, resolve-conflict."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Optional

import typer

from ..config import trace_dir_of
from ..errors import EXIT_CONFLICT, EXIT_OK, TltraceError
from ..proc.group import Terminated, on_signals
from .shared import (
    SCRIPT_CONTEXT,
    args_argument,
    codegen_output_option,
    json_option,
    kernel_option,
    no_such_option,
    script_argument,
    trace_dir_option,
)
from .shared import fail as _fail  # one `fail`, one --trace-dir for every command
from .shared import warn as _warn

WATCH_EPILOG = """\
Examples:

\b
  tltrace watch my_kernel.py                    rerun on every save of the script or a working file
  tltrace watch gemm.py --m 1024                arguments after SCRIPT go to the script
  tltrace watch --codegen-output k.cpp gemm.py  working files at k.cpp / k_host.cpp
  tltrace watch --ptxas gemm.py                 registers and spills of each build too (CUDA)
  tltrace watch --json gemm.py                  one JSON object per build on stdout, for editors

Runs SCRIPT once under 'tltrace run --mode both --quiet' (watch is always quiet: no
-q to give), then again in a fresh process each time SCRIPT or one of its working
files (codegen_device.cpp, codegen_host.cpp, codegen_<kernel>_device.cpp, ...) gets
new content; a save made while a run is going leads to the next run, and each rerun
says what was saved. Each run ends with one line: its exit status and what it
decided per working file, e.g. (add: PATCHED); under it, per compile, the facts
(docs/facts.md) that changed against the previous build of that compile, e.g.
'add: registers 168 → 176, spill_bytes 0 → 64', or 'add: no fact changed'.
--json prints one JSON object per build on stdout instead (the run's own output
and the watch's lines go to stderr): {version, run, saved, exit_code, ok, tags,
errors, compiles: [{kernel, run_id, signature, status, reconcile, compared_with,
changed: [{name, a, b}] or null, facts}]} (docs/edit-recompile.md). A failing run
does not end the watch. Ctrl+C ends it (exit 0); SIGTERM and SIGHUP end it (exit
143, 129). Each run goes in a process group of its own: the watch ending takes it
down with every process it started.
"""

RESOLVE_EPILOG = """\
Examples:

\b
  tltrace resolve-conflict my_kernel.py         merge saved edits into the new codegen
  tltrace resolve-conflict --dry-run            show the merge; change nothing
  tltrace resolve-conflict gemm.py --role host --theirs
  tltrace resolve-conflict ./tmp/lower_trace_dir/gemm --kernel matmul --ours
  tltrace resolve-conflict gemm                 a script name, as 'tltrace show gemm'

After a CONFLICT the edits are in W.bak, the baseline they were made on in
W.original.bak. This merges them (three-way) onto the new codegen W.latest; the
working file W then holds the result and its baseline advances, so the next run
PATCHes it in. Overlapping hunks get <<<<<<< ======= >>>>>>> markers and exit 4.
SCRIPT_OR_DIR takes what 'tltrace show' takes: a script path or name, a script,
run or trace directory. A file still holding markers is never compiled; running
resolve-conflict again finds it (--ours / --theirs then take a side of each hunk).

\b
  tltrace resolve-conflict k.py --onto codegen_device.cpp
  tltrace resolve-conflict k.py --onto 2048 --from 1024

--onto carries an edit made for one variant of a kernel (another size, dtype or
block) over to another variant's working file: a three-way merge of the edit onto
that variant's codegen. The variant's own file must hold no edit; the source keeps
its edit.
"""


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("watch", epilog=WATCH_EPILOG, context_settings=SCRIPT_CONTEXT)(watch_cmd)
    app.command("resolve-conflict", epilog=RESOLVE_EPILOG)(resolve_cmd)


_WIDTH: list = []  # the terminal's console, made once (None: stdout is not a terminal)


def _echo_folded(line: str) -> None:
    """Write one line of a watched run: on a terminal a line wider than it folds as the stream's lines do
    (the run's own output reaches the watch through a pipe, so it could not fold there)."""
    if not _WIDTH:
        from .shared import console

        con = console()
        _WIDTH.append(con if con.is_terminal else None)
    con = _WIDTH[0]
    if con is None or len(line) <= con.width // 2 or (line.isascii() and len(line) <= con.width):
        typer.echo(line)
        return
    from rich.text import Text

    from ..render.terminal import write_texts

    write_texts(con, [Text(line)])


def watch_cmd(
    ctx: typer.Context,
    script: Optional[str] = script_argument("The kernel script to watch."),
    args: Optional[list[str]] = args_argument(),
    mode: str = typer.Option(
        "both",
        "--mode",
        metavar="html|both|terminal",
        help="Trace mode of each run (working files need html or both).",
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    codegen_output: Optional[Path] = codegen_output_option(),
    debounce: int = typer.Option(
        300, "--debounce", metavar="MS", min=0, help="Wait until files are still for MS milliseconds."
    ),
    ptxas: bool = typer.Option(
        False,
        "--ptxas",
        help="Each run with 'tltrace run --ptxas': machine facts (registers, spills) of each CUDA build, "
        "compared build to build.",
    ),
    as_json: bool = json_option(
        "One JSON object per build on stdout (exit status, decisions, facts and what changed); "
        "the runs' output to stderr."
    ),
    max_runs: Optional[int] = typer.Option(None, "--max-runs", hidden=True, min=1),
) -> None:
    """Rerun SCRIPT under tltrace each time it or one of its working files is saved."""
    from ..config import parse_mode
    from ..reconcile.watch import WatchSpec, watch_runs
    from .shared import script_args

    rest = script_args(ctx, script, args)
    p = ctx.params
    if script is None:
        raise _fail("missing SCRIPT; try 'tltrace watch --help'")
    if script in ("-q", "--quiet") and not Path(script).exists():
        raise _fail(
            f"{script}: watch is already quiet (each run is 'tltrace run --quiet': its summary, "
            f"no pass stream); drop {script}"
        )
    if script.startswith("-") and script != "-" and not Path(script).exists():
        raise _fail(no_such_option(script))
    try:
        m = parse_mode(p["mode"], source="--mode")
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    if m is None:
        raise _fail("--mode off makes no sense for 'tltrace watch'; use both, html or terminal")
    path = Path(script)
    if not path.is_file():
        raise _fail(f"no such script: {script}")
    if p["codegen_output"] is not None:
        from ..reconcile.files import check_codegen_output

        try:
            check_codegen_output(p["codegen_output"])
        except TltraceError as exc:
            raise _fail(str(exc), exc.exit_code) from None
    if m == "terminal" and p["codegen_output"] is None:
        _warn(
            "--mode terminal writes no working files; only saves of the "
            "script trigger a rerun (use --mode both, or --codegen-output PATH)"
        )
    options = ("--quiet", "--ptxas") if p["ptxas"] else ("--quiet",)
    spec = WatchSpec(path, tuple(rest), m, p["trace_dir"], p["codegen_output"], run_options=options)
    # SIGTERM and SIGHUP end the watch, as Ctrl+C does, and the run going on with everything it
    # started (its own process group: proc/group); the exit status says which (143, 129).
    events = watch_runs(spec, debounce_ms=p["debounce"], max_runs=p["max_runs"])
    show = _json_event if p["as_json"] else _show_event
    try:
        with on_signals(), contextlib.closing(events):
            for ev in events:
                show(spec, ev)
    except KeyboardInterrupt:
        typer.echo("tltrace watch: stopped", err=p["as_json"])
    except Terminated as exc:
        typer.echo(f"tltrace watch: stopped ({exc})", err=p["as_json"])
        raise typer.Exit(exc.exit_code) from None
    raise typer.Exit(EXIT_OK)


def _show_event(spec, ev, err: bool = False) -> None:  # noqa: ANN001
    """Print one event of the watch (to stderr when `err`: under --json, stdout is the JSON's)."""
    from ..reconcile.watch import OutputLine, RunDone, RunStarting, Watching

    if isinstance(ev, RunStarting):
        why = ("saved: " + ", ".join(c.name for c in ev.changed)) if ev.changed else "first run"
        typer.secho(f"── tltrace watch: run {ev.number} ({why}) ──", bold=True, err=err)
    elif isinstance(ev, OutputLine):
        if err:
            typer.echo(ev.text, err=True)
        else:
            _echo_folded(ev.text)
    elif isinstance(ev, RunDone):
        status = "ok" if ev.exit_code == 0 else f"exit {ev.exit_code}"
        tags = ", ".join(ev.tags)
        typer.secho(
            f"── run {ev.number}: {status}" + (f" ({tags})" if tags else "") + " ──",
            bold=True,
            fg="green" if ev.exit_code == 0 else "red",
            err=err,
        )
        for line in _fact_lines(ev.compiles):  # what this build changed, next to what it decided
            typer.secho(line, dim=line.endswith(": no fact changed"), err=err)
        for line in ev.errors:  # a failed build's errors under the summary, not lines above it
            typer.secho(line, fg="red", err=err)
    elif isinstance(ev, Watching):
        typer.echo(
            f"watching {spec.script} and its working files in {spec.layout().directory} (Ctrl+C to stop)",
            err=err,
        )


def _fact_lines(compiles) -> list[str]:  # noqa: ANN001
    """Return a line per compile compared with a previous build: `add: registers 168 → 176` (the kernel's
    name, or its signature where the build compiled that kernel more than once)."""
    from ..render.visible import visible

    kernels = [c.kernel for c in compiles]
    out = []
    for c in compiles:
        line = c.line()
        if line is None:
            continue
        name = c.signature if kernels.count(c.kernel) > 1 and c.signature else c.kernel
        out.append(f"{visible(name, one_line=True)}: {line}")
    return out


def _json_event(spec, ev) -> None:  # noqa: ANN001
    """--json: one JSON object per build on stdout (flushed at once: an editor reads it live); the rest to stderr."""
    import sys

    from ..reconcile.watch import RunDone
    from ..render.safejson import dumps

    if not isinstance(ev, RunDone):
        _show_event(spec, ev, err=True)
        return
    _show_event(spec, ev, err=True)  # the human line too, beside the run's output on stderr
    obj = {
        "version": 1,
        "run": ev.number,
        "saved": [str(p) for p in ev.saved],
        "exit_code": ev.exit_code,
        "ok": ev.exit_code == 0,
        "tags": list(ev.tags),
        "errors": list(ev.errors),
        "compiles": [c.to_json() for c in ev.compiles],
    }
    sys.stdout.write(dumps(obj) + "\n")
    sys.stdout.flush()


def _layout(script_or_dir: Optional[str], trace_dir: Optional[Path], codegen_output: Optional[Path]):
    """Return the working-file layout SCRIPT_OR_DIR names, accepting what `tltrace show` accepts."""
    from ..history.resolve import script_dir
    from ..reconcile.workflow import layout_at

    if codegen_output is not None:
        return layout_at(Path(), codegen_output.absolute())
    td = trace_dir_of(trace_dir).absolute()
    try:
        return layout_at(script_dir(script_or_dir, td))
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None


def resolve_cmd(
    script_or_dir: Optional[str] = typer.Argument(
        None,
        metavar="[SCRIPT_OR_DIR]",
        show_default=False,
        help="The script, or its trace dir [default: the only script under the trace dir].",
    ),
    role: Optional[str] = typer.Option(None, "--role", metavar="device|host", help="Resolve this role only."),
    kernel: Optional[str] = kernel_option("Resolve this kernel only."),
    ours: bool = typer.Option(False, "--ours", help="Keep your saved edits wholesale."),
    theirs: bool = typer.Option(
        False, "--theirs", help="Take the new codegen wholesale (edits stay in backups)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the result; change no file."),
    trace_dir: Optional[Path] = trace_dir_option(),
    codegen_output: Optional[Path] = codegen_output_option("The --codegen-output PATH the runs used."),
    onto: Optional[str] = typer.Option(
        None,
        "--onto",
        metavar="VARIANT",
        help="Carry an edit over onto this variant's working file (its file name, or its size).",
    ),
    source: Optional[str] = typer.Option(
        None,
        "--from",
        metavar="VARIANT",
        help="With --onto: the variant whose edit to carry [default: the kernel's one edited variant].",
    ),
) -> None:
    """Rebase the edits a CONFLICT saved onto the new codegen (three-way merge)."""
    from ..reconcile.resolve import find_pending, resolve

    if role is not None and role not in ("device", "host"):
        raise typer.BadParameter("use device or host", param_hint="--role")
    if ours and theirs:
        raise _fail("--ours and --theirs exclude each other")
    strategy = "ours" if ours else "theirs" if theirs else "merge"
    layout = _layout(script_or_dir, trace_dir, codegen_output)
    if onto is not None:
        _carry_over(layout, onto, source, role or "device", strategy, dry_run)
    if source is not None:
        raise _fail("--from goes with --onto VARIANT")
    todo = find_pending(layout, role=role, kernel=kernel)
    if not todo:
        what = " ".join(
            x for x in (f"kernel {kernel}" if kernel else "", f"role {role}" if role else "") if x
        )
        raise _fail(
            f"no unresolved CONFLICT{' for ' + what if what else ''} in {layout.directory} "
            "(a CONFLICT leaves W.bak and W.original.bak)"
        )
    worst = EXIT_OK
    for wf in todo:
        try:
            r = resolve(wf, strategy=strategy, dry_run=dry_run)
        except TltraceError as exc:
            raise _fail(str(exc), exc.exit_code) from None
        name = wf.path.name
        if r.markers_at is not None:
            worst = EXIT_CONFLICT
            typer.echo(
                f"{name}:{r.markers_at} still has conflict markers from the merge: edit them away, "
                "or rerun with --ours or --theirs (a file with markers is never compiled)",
                err=True,
            )
            continue
        if dry_run:
            typer.echo(f"── {name} ({strategy}, dry run) ──", err=True)
            typer.echo(r.text, nl=False)
        if r.conflicts:
            worst = EXIT_CONFLICT
            typer.echo(
                f"{name}: {r.conflicts} conflicting hunk(s) marked with <<<<<<< ======= >>>>>>>"
                + ("" if dry_run else "; edit the file, then rerun the script"),
                err=True,
            )
        elif not dry_run:
            typer.echo(f"{name}: resolved ({strategy}); the next run PATCHes it in")
        if not dry_run and r.archived:  # where the CONFLICT's backups went (numbered, never deleted)
            typer.echo(f"{name}: the CONFLICT's backups are now {' and '.join(p.name for p in r.archived)}")
        if r.saved_copy is not None:
            typer.echo(f"{name}: edits made since the CONFLICT were saved to {r.saved_copy.name}", err=True)
    raise typer.Exit(worst)


def _carry_over(layout, onto: str, source: Optional[str], role: str, strategy: str, dry_run: bool) -> None:
    """`--onto VARIANT`: merge one variant's edit onto another's codegen; exits."""
    from ..reconcile.resolve import carry_over, edited_sources, find_variant

    try:
        dst = find_variant(layout, onto, role=role)
        if source is not None:
            src = find_variant(layout, source, role=role)
        else:
            found = edited_sources(layout, dst)
            if len(found) != 1:
                names = ", ".join(wf.path.name for wf in found)
                raise _fail(
                    f"no other variant of {dst.kernel} holds an edit"
                    if not found
                    else f"several variants of {dst.kernel} hold edits ({names}); name one with --from"
                )
            src = found[0]
        r = carry_over(src, dst, strategy=strategy, dry_run=dry_run)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    name = dst.path.name
    if dry_run:
        typer.echo(f"── {name} ({strategy}, dry run) ──", err=True)
        typer.echo(r.text, nl=False)
    if r.conflicts:
        typer.echo(
            f"{name}: {r.conflicts} conflicting hunk(s) marked with <<<<<<< ======= >>>>>>>"
            + ("" if dry_run else "; edit the file, then rerun the script"),
            err=True,
        )
        raise typer.Exit(EXIT_CONFLICT)
    if not dry_run:
        typer.echo(
            f"{name}: the edit of {src.path.name} carried over ({strategy}); the next run PATCHes it "
            f"into {dst.kernel} {dst.label or ''}".rstrip()
        )
    raise typer.Exit(EXIT_OK)
