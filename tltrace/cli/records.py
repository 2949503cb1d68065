"""CLI commands that read the .run_records tree: show, diff-runs, clean.

Each command parses, makes one call into the core (history: runs, compare,
retention), prints a Rich table or JSON, and exits. Errors are one line on
stderr: `tltrace: error: ...`.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .._shell import command
from ..config import trace_dir_of as _trace_dir
from ..errors import EXIT_OK, EXIT_RECORDS, EXIT_SCRIPT_FAILED, EXIT_USAGE, TltraceError
from .shared import console as _console
from .shared import fail as _fail
from .shared import trace_dir_option
from .shared import warn as _warn

SHOW_EPILOG = """\
Examples:

\b
  tltrace show                                  invocations of every script in the trace dir
  tltrace show gemm.py                          invocations of one script, each with its compiles
  tltrace show gemm.py -1                       the newest invocation: its compiles, or the passes of its only one
  tltrace show gemm.py -1 'gemm 1024'           the compile whose signature starts 'gemm 1024'
  tltrace show gemm.py -2 --kernel matmul --pass LayoutInference   a pass's diff, one invocation back
  tltrace show gemm.py --pass LowerTileOp -w    a pass's diff without lines that were only re-indented
  tltrace show gemm.py --pass 16 --json         a pass as JSON, with "rows": the line alignment
  tltrace show gemm.py -1 --source-map          the generated source, the Python line of each line in a gutter
  tltrace show gemm.py --pass LowerTileOp --source-map   that pass's IR with its Python lines
  tltrace show gemm.py --source-map --json      source, codegen lines with "src", per-pass coverage
  tltrace show ./tmp/lower_trace_dir/gemm/.run_records/run_2026...   a run directory (one compile)
  tltrace show gemm.py --html                   (re)write the compile's report, or the invocation's index
  tltrace show gemm.py -1 --json                the newest invocation as JSON
  tltrace show gemm.py --profile                slowest passes of the newest invocation, by name
  tltrace show gemm.py -1 'gemm 1024' --profile --top 5 --json   one compile's 5 slowest, as JSON
  tltrace show --format markdown >> "$GITHUB_STEP_SUMMARY"   compiles + top passes for CI

An invocation is one 'tltrace run' (or watch rerun, or enable()..disable() span);
each kernel it compiled is a compile (a run directory) with a signature: kernel,
launch shape, input-IR hash. RUN: 'latest' or -N (-1 the newest invocation, -2
the one before), a run id or a unique prefix of one (that compile), an invocation
id, or a signature prefix (in the newest invocation that has one). SIGNATURE, or
--kernel NAME, narrows an invocation to one compile; with --kernel, -N counts only
invocations that compiled NAME. Runs of schema-1 manifests are invocations of their
own. A damaged run shows as 'damaged' in the list and gives a one-line error when
opened. Exit status: 0; 2 for bad usage (-3 of 2 invocations, a signature prefix
matching several compiles, --pass on an invocation of several); 3 for missing or
damaged records (a manifest of an unknown schema).
"""

DIFF_EPILOG = """\
Examples:

\b
  tltrace diff-runs -2 -1                       the newest invocation against the one before
  tltrace diff-runs gemm.py:-2 gemm.py:latest   two invocations of one script
  tltrace diff-runs elementwise_add softmax     newest invocations of two scripts
  tltrace diff-runs RUN_DIR_A RUN_DIR_B --pass LowerTileOp
  tltrace diff-runs -2 -1 --kernel vmul --html diff.html --json
  tltrace diff-runs gemm.py:-2 gemm.py:-1 --html -     the HTML page on stdout
  tltrace diff-runs 'gemm:gemm 1024' 'gemm:gemm 2048'   two compiles by signature prefix

Two invocations are compared compile by compile: compiles with identical input IR
pair first, then by kernel name and launch shape (then a kernel's only compile on
each side); each pair is 'same' or 'different' (with its first divergent pass),
unpaired compiles are 'only-a' / 'only-b'. --json: {"compiles": [{"status": same|
different|only_a|only_b, "a_run_id", "b_run_id", "a_signature", "b_signature",
...}]}. When A and B are one compile each (a script that compiles one kernel,
--kernel, a run dir), passes are compared as follows: aligned by phase, name and
occurrence (the 2nd Simplify with the 2nd Simplify), not by index, and compared
by the hashes of their input and output. The report names the first pass whose
output differs, the first whose input matched but output differs (the pass that
introduced the difference), and the first whose input differs, and shows the first
difference as a diff of the two outputs; --pass and --html need one compile each.
--html PATH replaces only a page tltrace wrote (--force: any file or link there);
a pipe or device is written through; '-' is stdout.
A and B: a run directory, a script (its newest invocation), SCRIPT:RUN, or a RUN
of the script given by --script (or of the only script in the trace dir).
Exit status, as diff's: 0 all the same, 1 any differ, 2 trouble.
"""

CLEAN_EPILOG = """\
Examples:

\b
  tltrace clean --keep 5                        keep the newest 5 invocations of every script
  tltrace clean gemm.py --older-than 7d         remove gemm's invocations older than a week
  tltrace clean --older-than 12h --dry-run      say what would go; remove nothing
  tltrace clean ./ci_traces --all               remove every run under ./ci_traces

An invocation is one `tltrace run` (or one enable()..disable() span) with all
its compiles. Only run directories under .run_records go, then the stored texts
no remaining run uses; nothing is removed through a symbolic link. Working files
(codegen_*.cpp), their .original/.latest files and backups are never touched, nor
an invocation that is still running, in this process or another: its writers
hold a lock that dies with them, so a run killed anywhere (another container,
another host name) can go. Runs of older tltrace versions killed on another host
cannot be asked; --force removes those. What could not be removed is named on
stderr, and the exit status is then 3.
DURATION: 30s, 10m, 12h, 7d, 2w, 1d12h (a bare number means days).
"""


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    # ignore_unknown_options: lets '-2' (a RUN) through as an argument.
    ctx = {"ignore_unknown_options": True}
    from .shared import PathArgsCommand  # `show -dash.py`: a script, not -d -a -s -h

    app.command("show", cls=PathArgsCommand, epilog=SHOW_EPILOG, context_settings=ctx)(show_cmd)
    app.command("diff-runs", cls=PathArgsCommand, epilog=DIFF_EPILOG, context_settings=ctx)(diff_runs_cmd)
    app.command("clean", epilog=CLEAN_EPILOG)(clean_cmd)


def _check_args(args: list[str]) -> None:
    for a in args:
        if a.startswith("--") or (a.startswith("-") and not a[1:].isdigit() and len(a) > 1):
            raise _fail(f"no such option: {a}")


def _print_json(data: Any) -> None:
    from ..render.safejson import dumps

    sys.stdout.write(dumps(data, indent=2, default=str) + "\n")


def _when(ts: object) -> str:
    from ..history.runs import format_time

    return format_time(ts)


def _command_line(command: list[str] | None) -> str:
    """Return a recorded command line as one shell-quoted string (copy-pastable)."""
    return shlex.join([str(c) for c in command or []])


def _t(value: object, style: str = "") -> Any:
    """Return data as a Rich Text: never parsed as markup (names may hold '[/x]')."""
    from rich.text import Text

    return Text("" if value is None else str(value), style=style)


def _ms(seconds: object) -> str:
    """Return a pass duration in ms for the table; '?' for a hand-edited NaN, Infinity or 1e300."""
    from ..history.profile import _finite

    if not _finite(seconds) or seconds < 0:  # type: ignore[operator]
        return "?"
    return f"{float(seconds) * 1000:.2f}"  # type: ignore[arg-type]


def _size(n: int) -> str:
    from ..render.terminal import human_size  # the one byte formatter; imported late, like the views

    return human_size(n)


# -- show ------------------------------------------------------------------------
TRACE_DIR_OPT = trace_dir_option()

KERNEL_OPT = typer.Option(
    None, "--kernel", metavar="NAME", help="Only compiles of kernel NAME (a script may compile several)."
)

_STATUS_STYLE = {
    "complete": "green",
    "error": "red",
    "damaged": "bold red",
    "interrupted": "yellow",
    "running": "cyan",
}


def show_cmd(
    args: Optional[list[str]] = typer.Argument(
        None,
        metavar="[SCRIPT_OR_DIR] [RUN] [SIGNATURE]",
        help="A script, script/trace/run directory; then a RUN; then a "
        "signature prefix narrowing to one compile.",
        show_default=False,
    ),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    pass_: Optional[str] = typer.Option(
        None,
        "--pass",
        metavar="NAME|INDEX",
        help="Print this pass's diff (NAME, phase/NAME, NAME#k for the k-th, or an index).",
    ),
    html: bool = typer.Option(
        False,
        "--html",
        help="(Re)write the compile's HTML report, or the invocation's "
        "index when it has several compiles, and print its path.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    context: int = typer.Option(3, "--context", metavar="N", min=0, help="Context lines in diffs."),
    ignore_whitespace: bool = typer.Option(
        False, "--ignore-whitespace", "-w", help="Hide changes that only re-indent lines (with --pass)."
    ),
    kernel: Optional[str] = KERNEL_OPT,
    profile: bool = typer.Option(
        False, "--profile", help="Where the compile time went: slowest passes by name."
    ),
    top: Optional[int] = typer.Option(
        None, "--top", metavar="N", min=1, help="Rows of --profile / markdown."
    ),
    fmt: Optional[str] = typer.Option(
        None,
        "--format",
        metavar="table|json|markdown",
        help="Output format; markdown: compiles (failures first) and top passes.",
    ),
    source_map: bool = typer.Option(
        False,
        "--source-map",
        help="The generated source (with --pass: that pass's IR) with the Python line of each line.",
    ),
) -> None:
    """List invocations and their compiles, or one compile's passes, or one pass's diff."""
    from ..history import runs as R

    items = list(args or [])
    _check_args(items)
    if len(items) > 3:
        raise _fail(
            f"too many arguments: {' '.join(items[3:])}; give at most SCRIPT_OR_DIR, RUN and SIGNATURE"
        )
    td = _trace_dir(trace_dir)
    target: str | None = items[0] if items else None
    run_spec: str | None = items[1] if len(items) > 1 else None
    signature_prefix: str | None = items[2] if len(items) > 2 else None
    target, run_spec = R.split_target(target, run_spec)  # 'show -2', 'show gemm.py:-2'
    if fmt not in (None, "table", "json", "markdown"):
        raise _fail(f"--format {fmt!r} is not one of table, json, markdown")
    if fmt == "markdown" and as_json:
        raise _fail("--json and --format markdown exclude each other")
    as_json = as_json or fmt == "json"
    if profile or fmt == "markdown":  # profile and CI summary: cli/profile.py
        from . import profile as cli_profile

        try:
            chosen = cli_profile.select(target, run_spec, td, kernel, signature=signature_prefix)
        except TltraceError as exc:
            raise _fail(str(exc), exc.exit_code) from None
        if fmt == "markdown":
            sys.stdout.write(cli_profile.markdown(chosen, top))
        else:
            cli_profile.print_profile(chosen, top, as_json)
        return
    try:
        if run_spec is None and pass_ is None and not html and not source_map:
            loc = R.locate(target, td)
            if loc.run_dir is None:
                _show_list(loc, kernel, as_json)
                return
        sel = R.open_selection(target, run_spec, td, kernel, signature_prefix)
        if source_map:
            from . import sourcemap as cli_sourcemap

            cli_sourcemap.show(sel.one("--source-map"), pass_, as_json)
        elif html:
            _show_html(sel, as_json)
        elif pass_ is not None:
            _show_pass(sel.one("--pass"), pass_, context, as_json, ignore_whitespace)
        elif sel.single is not None:
            _show_run(sel.single, as_json)
        else:
            _show_invocation(sel, as_json)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None


def _run_row(run, position: int | None = None) -> dict[str, Any]:
    from ..history.runs import label, safe_time

    m = run.manifest
    c = m.counts if m else {}
    first_failed = next((r for r in m.records if r.status == "failed"), None) if m else None
    row = {
        "script": run.script_dir.name,
        "run_id": run.run_id,
        "path": str(run.path),
        "invocation": m.invocation if m else None,
        "signature": m.signature if m else None,
        "label": label(m, run.run_id),
        "started": safe_time(m.started) if m else None,
        "kernel": m.kernel if m else None,
        "target": m.target if m else None,
        "backend": m.backend if m else None,
        "status": run.status,
        "passes": len(m.records) if m else None,
        "changed": c.get("changed") if m else None,
        "failed": c.get("failed") if m else None,
        "failed_at": first_failed.name if first_failed else None,
        "codegen": c.get("codegen") if m else None,
        "size": run.size,
        "problem": run.problem,
    }
    if position is not None:
        row = {"position": position, **row}
    return row


def _invocation_json(inv, runs=None) -> dict[str, Any]:
    return {
        "position": inv.position,
        "script": inv.script_dir.name,
        "invocation": inv.id,
        "legacy": inv.legacy,
        "started": inv.started,
        "status": inv.status,
        "counts": inv.counts,
        "compiles": [_run_row(r) for r in (runs if runs is not None else inv.runs)],
    }


def _show_list(loc, kernel: str | None, as_json: bool) -> None:
    """The listing: every invocation of the located scripts, each with its compiles."""
    from ..history import runs as R

    for link in R.skipped_links(loc):  # the one symlink rule: not followed, and said
        _warn(f"skipped {link}: a symbolic link; tltrace does not follow links")
    invs = []
    for sd in loc.script_dirs:
        for inv in R.group_invocations([R.load_run(p, size=True) for p in R.run_dirs(sd)]):
            runs = [
                r
                for r in inv.runs
                if kernel is None or (r.manifest is not None and r.manifest.kernel == kernel)
            ]
            if runs:
                invs.append((inv, runs))
    if kernel is not None:  # positions count only the invocations that compiled `kernel`
        by_script: dict[str, list] = {}
        for inv, runs in invs:
            by_script.setdefault(inv.script_dir.name, []).append((inv, runs))
        invs = []
        for group in by_script.values():
            n = len(group)
            invs.extend(
                (R.RecordedInvocation(inv.id, inv.runs, i - n), runs) for i, (inv, runs) in enumerate(group)
            )
    if not invs and not as_json:  # e.g. after 'tltrace clean --all': say so, not a bare header
        where = loc.root or loc.script_dirs[0]
        if kernel is not None:
            raise R.UsageError(
                f"no run of kernel {kernel!r} under {where}; {command('tltrace', 'show', where)} lists every run"
            )
        raise R.RecordsError(f"no runs left under {where}; run 'tltrace run SCRIPT' first")
    if as_json:
        flat = []
        for inv, runs in invs:
            for r in runs:
                row = _run_row(r, inv.position)
                flat.append(row)
        _print_json({"invocations": [_invocation_json(inv, runs) for inv, runs in invs], "runs": flat})
        return
    several = len(loc.script_dirs) > 1
    table = _compiles_table(several)
    for inv, runs in invs:
        if len(runs) == 1 and len(inv.runs) == 1:
            _add_compile_row(table, _run_row(runs[0]), str(inv.position), several)
            continue
        failed = sum(1 for r in runs if r.status not in ("complete", "running"))
        head = f"invocation {inv.id}: {len(runs)} compiles" + (
            f" of {len(inv.runs)}" if len(runs) != len(inv.runs) else ""
        )
        head += f", {failed} not complete" if failed else ""
        cells = [
            _t(inv.position),
            *([_t(inv.script_dir.name)] if several else []),
            _t(head, "bold"),
            _t(_when(inv.started)),
        ]
        table.add_row(*cells, *[_t("")] * (len(table.columns) - len(cells)))
        for r in runs:
            _add_compile_row(table, _run_row(r), "", several, indent=True)
    _console().print(table)
    for _inv, runs in invs:
        for r in runs:
            if r.problem:
                _warn(r.problem)


def _compiles_table(several: bool):
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (
        ("#", "right"),
        *((("script", "left"),) if several else ()),
        ("run", "left"),
        ("time", "left"),
        ("signature", "left"),
        ("target", "left"),
        ("backend", "left"),
        ("status", "left"),
        ("passes", "right"),
        ("changed", "right"),
        ("failed", "right"),
        ("size", "right"),
    ):
        # A long signature or script name is cut (…) rather than squeezing the run id and counts away.
        wide = {"max_width": 48, "overflow": "ellipsis"} if col in ("script", "signature") else {}
        table.add_column(col, justify=just, no_wrap=True, **wide)  # type: ignore[arg-type]
    return table


def _add_compile_row(
    table, row: dict[str, Any], position: str, several: bool, *, indent: bool = False
) -> None:
    status = row["status"]
    failed = str(row["failed"]) if row["failed"] is not None else "-"
    if row.get("failed_at"):
        failed += f" ({row['failed_at']})"
    cells = [
        _t(position),
        *([_t(row["script"])] if several else []),
        _t(("  " if indent else "") + row["run_id"]),
        _t(_when(row["started"])),
        _t(row["label"] if row["label"] != row["run_id"] else "?"),
        _t(row["target"] or "?"),
        _t(row["backend"] or "?"),
        _t(status, _STATUS_STYLE.get(status, "")),
        *(_t(row[k]) if row[k] is not None else _t("-") for k in ("passes", "changed")),
        _t(failed),
        _t(_size(row["size"]) if row["size"] else "-"),
    ]
    table.add_row(*cells)


def _show_invocation(sel, as_json: bool) -> None:
    """One invocation with several compiles: list them (failed first), with how to open one."""
    inv = sel.invocation
    runs = sorted(sel.runs, key=lambda r: (r.status in ("complete", "running"), r.run_id))
    if as_json:
        _print_json({"invocation": _invocation_json(inv, runs)})
        return
    from rich.text import Text

    con = _console()
    head = Text()
    head.append(f"{inv.script_dir.name}  ", style="bold")
    head.append(f"invocation {sel.spec}  {inv.id}")
    head.append(f"\n{len(sel.runs)} compiles  {_when(inv.started)}  {inv.status}", style="dim")
    con.print(head, soft_wrap=True)
    table = _compiles_table(False)
    for r in runs:
        _add_compile_row(table, _run_row(r), "", False)
    con.print(table)
    con.print(
        _t(
            f"open one: {command('tltrace', 'show', inv.script_dir.name, sel.spec)} SIGNATURE (a prefix), "
            "or --kernel NAME",
            "dim",
        ),
        soft_wrap=True,
    )


def _show_run(run, as_json: bool) -> None:
    from ..history import runs as R

    m = run.manifest
    missing = R.missing_files(run)
    if as_json:
        data = m.to_json()
        data["path"] = str(run.path)
        data["status"] = run.status
        data["missing_files"] = missing
        data["command_line"] = _command_line(m.command)
        _print_json(data)
        return
    from rich.table import Table
    from rich.text import Text

    from ..render.terminal import STATUS_STYLE, TAG_STYLE

    con = _console()
    head = Text()
    head.append(f"{m.script}  ", style="bold")
    head.append(run.run_id)
    head.append(
        f"\n{R.label(m, '?')}  {m.target or '?'}/{m.backend or '?'}  {_when(m.started)}  {run.status}",
        style="dim",
    )
    if m.signature and m.kernel and not m.signature.startswith(m.kernel):
        head.append(f"  (kernel {m.kernel})", style="dim")
    if m.invocation:
        head.append(f"\ninvocation {m.invocation}", style="dim")
    if m.error:
        head.append(f"\nerror: {m.error.splitlines()[0] if m.error.strip() else m.error}", style="red")
    if m.command:
        head.append("\n$ " + _command_line(m.command), style="dim")
    con.print(head, soft_wrap=True)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (
        ("#", "right"),
        ("phase", "left"),
        ("pass", "left"),
        ("status", "left"),
        ("+", "right"),
        ("-", "right"),
        ("ms", "right"),
        ("", "left"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for rec in m.records:
        label, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        extra = rec.reconcile or (rec.error.splitlines()[0][:80] if rec.error and rec.error.strip() else "")
        table.add_row(
            _t(rec.index),
            _t(rec.phase),
            _t("  " * rec.depth + rec.name),
            Text(label, style=style),
            _t(rec.added if rec.added else ""),
            _t(rec.removed if rec.removed else ""),
            _t(_ms(rec.duration_s)),
            Text(extra, style=TAG_STYLE.get(rec.reconcile or "", "red" if rec.error else "")),
        )
    con.print(table)
    c = m.counts
    con.print(
        _t(
            f"{len(m.records)} passes, {c.get('changed', 0)} changed, {c.get('failed', 0)} failed, "
            f"{c.get('codegen', 0)} codegen",
            "dim",
        )
    )
    if missing:
        _warn(
            f"{missing} record file(s) are missing under {run.path}; diffs fall back to the stored copies "
            "in .objects where they still exist"
        )


def _show_pass(run, spec: str, context: int, as_json: bool, ignore_whitespace: bool = False) -> None:
    from ..diff import diff
    from ..history import runs as R

    rec = R.find_record(run.require(), spec)
    before = R.read_text(run, rec, "before")
    after = R.read_text(run, rec, "after") if rec.after_file or rec.after_hash else None
    d = diff(before, after) if after is not None else None
    if as_json:
        out = {
            "run_id": run.run_id,
            "signature": run.manifest.signature,
            "path": str(run.path),
            "record": rec.to_json(),
            "diff": [
                line
                for _, line in d.unified(
                    context=context, a_name=f"{rec.name} before", b_name=f"{rec.name} after", tilde=False
                )
            ]
            if d is not None and d.changed
            else [],
            "rows": d.rows_json() if d is not None else None,
            "note": d.note if d is not None else None,
        }
        if after is None:
            out["before"] = before
        _print_json(out)
        return
    from rich.text import Text

    from ..render.terminal import diff_view, pass_line

    con = _console()
    con.print(pass_line(R.label(run.manifest, "?"), rec, d.note if d is not None else None), soft_wrap=True)
    if rec.error:
        con.print(Text(f"    error: {rec.error}", style="red"), soft_wrap=True)
        from ..session.sourcemap import error_location

        at = error_location(rec.error)
        if at is not None:
            con.print(Text(f"    at {at[0]}:{at[1]} (the kernel's Python line)", style="red"), soft_wrap=True)
    # The texts may be huge: their lines are streamed, never laid out by Rich as one Text.
    from ..render.terminal import LINE_STYLE
    from ..render.visible import write_lines

    if d is None:
        con.print(Text("    (the pass failed: no output was recorded; the IR it was given:)", style="dim"))
        write_lines(con, (("", line) for line in before.splitlines()), {}, indent="")
        return
    lines = d.unified(context=context, a_name="before", b_name="after", ignore_whitespace=ignore_whitespace)
    if lines:
        write_lines(con, lines, LINE_STYLE)
    else:
        con.print(diff_view(d, context, ignore_whitespace=ignore_whitespace), soft_wrap=True)


def _show_html(sel, as_json: bool) -> None:
    from ..render.html import write_index, write_report

    try:
        if sel.single is not None:
            run = sel.single
            run.require()
            path = write_report(run.path, out=None)
        else:
            path = write_index(sel.invocation.script_dir, [r.path for r in sel.invocation.runs])
    except TltraceError:
        raise
    except OSError as exc:
        raise TltraceError(f"cannot write the report ({exc.strerror or exc})") from None
    if as_json:
        out: dict[str, Any] = {"report": str(path), "invocation": sel.invocation.id}
        if sel.single is not None:
            out["run_id"] = sel.single.run_id
        _print_json(out)
    else:
        typer.echo(str(path))


# -- diff-runs ---------------------------------------------------------------------
def diff_runs_cmd(
    a: str = typer.Argument(..., metavar="A", help="First run: a run dir, a script, SCRIPT:RUN, or a RUN."),
    b: str = typer.Argument(..., metavar="B", help="Second run, the same forms."),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    script: Optional[str] = typer.Option(
        None, "--script", metavar="SCRIPT_OR_DIR", help="Where a bare RUN (-2, latest, an id) is looked up."
    ),
    pass_: Optional[str] = typer.Option(
        None,
        "--pass",
        metavar="NAME|INDEX",
        help="Print the cross-run diff of this pass's output (a pass of A).",
    ),
    show_all: bool = typer.Option(False, "--all", help="List every pass, not only the differing ones."),
    html: Optional[Path] = typer.Option(
        None, "--html", metavar="PATH", help="Write an HTML report of the differing passes to PATH."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    context: int = typer.Option(3, "--context", metavar="N", min=0, help="Context lines in diffs."),
    kernel: Optional[str] = KERNEL_OPT,
    force: bool = typer.Option(
        False, "--force", help="Let --html replace a file that tltrace did not write (or a link)."
    ),
) -> None:
    """Compare two invocations compile by compile (or two compiles pass by pass)."""
    from .. import output_path
    from ..history import runs as R
    from ..history.compare import diff_invocations, diff_runs

    _check_args([a, b])
    td = _trace_dir(trace_dir)
    html_stdout = html is not None and str(html) == output_path.STDOUT
    if html_stdout and as_json:
        raise _fail("--html - and --json both want stdout; give --html a file")
    try:
        if html is not None:
            output_path.check(html, output_path.DIFF_HTML, force=force)
        sa = R.parse_ref(a, td, script, kernel)
        sb = R.parse_ref(b, td, script, kernel)
        for r in (*sa.runs, *sb.runs):
            r.require()
        if sa.single is None or sb.single is None:
            if pass_ is not None or html is not None:
                what = "--pass" if pass_ is not None else "--html"
                (sa if sa.single is None else sb).one(what)
            inv = diff_invocations([r.require() for r in sa.runs], [r.require() for r in sb.runs])
        else:
            inv = None
            ra, rb = sa.single, sb.single
            d = diff_runs(ra.require(), rb.require())
            focus = _focus_pair(d, pass_)
            focus_diff = _pair_diff(ra, rb, focus, context) if focus is not None else None
            report = None
            if html is not None:
                report = _write_diff_html(d, ra, rb, html, context, force)
    except TltraceError as exc:
        raise _fail(str(exc), EXIT_USAGE) from None  # diff's convention: 2 is trouble
    if inv is not None:
        _print_invocation_diff(inv, sa, sb, as_json)
        raise typer.Exit(EXIT_OK if inv.same else EXIT_SCRIPT_FAILED)
    code = EXIT_OK if d.same else EXIT_SCRIPT_FAILED
    if html_stdout:
        raise typer.Exit(code)  # the page went to stdout; nothing else goes there
    if as_json:
        from ..history.compare import CompilePair

        data = d.to_json()
        data["a"]["path"], data["b"]["path"] = str(ra.path), str(rb.path)
        data["compiles"] = [CompilePair(d.a, d.b, "run", d).to_json()]
        if focus is not None:
            data["focus"] = {**focus.to_json(), "diff": focus_diff}
        if report is not None:
            data["report"] = str(report)
        _print_json(data)
    else:
        _print_diff(d, ra, rb, focus, focus_diff, show_all, context)
        if report is not None:
            typer.echo(f"report: {report}")
    raise typer.Exit(code)


def _selection_json(sel) -> dict[str, Any]:
    inv = sel.invocation
    return {
        "script": inv.script_dir.name,
        "invocation": inv.id,
        "spec": sel.spec,
        "compiles": len(sel.runs),
        "started": inv.started,
    }


def _print_invocation_diff(inv, sa, sb, as_json: bool) -> None:
    """Print the compile-by-compile comparison of two invocations."""
    from ..history import runs as R
    from ..history.compare import COMPILE_DIFFERENT, COMPILE_ONLY_A, COMPILE_ONLY_B, COMPILE_SAME

    paths = {r.run_id: str(r.path) for r in (*sa.runs, *sb.runs)}
    if as_json:
        data = {"a": _selection_json(sa), "b": _selection_json(sb), **inv.to_json()}
        for c in data["compiles"]:
            c["a_path"] = paths.get(c["a_run_id"]) if c["a_run_id"] else None
            c["b_path"] = paths.get(c["b_run_id"]) if c["b_run_id"] else None
        _print_json(data)
        return
    from rich.table import Table
    from rich.text import Text

    con = _console()
    for side, sel in (("A", sa), ("B", sb)):
        t = Text()
        t.append(f"{side}: ", style="bold")
        t.append(f"{sel.invocation.script_dir.name}  invocation {sel.spec}  {sel.invocation.id}")
        t.append(f"  {len(sel.runs)} compile(s), {_when(sel.invocation.started)}", style="dim")
        con.print(t, soft_wrap=True)
    styles = {
        COMPILE_SAME: "dim",
        COMPILE_DIFFERENT: "bold yellow",
        COMPILE_ONLY_A: "red",
        COMPILE_ONLY_B: "red",
    }
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("status", "A", "B", "first difference"):
        table.add_column(col, no_wrap=True)
    order = {COMPILE_DIFFERENT: 0, COMPILE_ONLY_A: 1, COMPILE_ONLY_B: 2, COMPILE_SAME: 3}
    for c in sorted(inv.compiles, key=lambda c: order[c.status]):
        first = c.diff.first_difference if c.diff is not None else None
        where = ""
        if first is not None:
            where = f"{first.label} ({first.status})"
        table.add_row(
            Text(c.status.replace("_", "-"), style=styles[c.status]),
            _t(R.label(c.a, c.a.run_id) if c.a else "-"),
            _t(R.label(c.b, c.b.run_id) if c.b else "-"),
            _t(where),
        )
    con.print(table)
    counts = ", ".join(f"{n} {s.replace('_', '-')}" for s, n in inv.counts.items() if n)
    if inv.same:
        con.print(Text(f"same: {len(inv.compiles)} compile(s), every pass identical", style="bold green"))
    else:
        con.print(Text(f"different: {counts}", style="bold red"))
        con.print(
            _t(
                "one pair pass by pass: tltrace diff-runs A B --kernel NAME, or SCRIPT:RUN_ID for each side",
                "dim",
            ),
            soft_wrap=True,
        )


def _focus_pair(d, spec: str | None):
    """Return the pair to show as a diff: the --pass one, else the first whose output differs."""
    from ..history import runs as R
    from ..history.compare import ONLY_A, ONLY_B

    if spec is None:
        return d.first_output_change
    rec = R.find_record(d.a, spec)
    pair = next(p for p in d.pairs if p.a is not None and p.a.index == rec.index)
    if pair.status == ONLY_A:
        raise TltraceError(
            f"pass {pair.label} ran only in A ({d.a.run_id}); there is nothing to compare it with"
        )
    assert pair.status != ONLY_B
    return pair


def _pair_diff(ra, rb, pair, context: int, *, tilde: bool = False) -> list:
    """Return the unified diff of a pair's outputs: patch lines, or (kind, line) pairs with tilde=True."""
    from ..diff import diff
    from ..history import runs as R

    ta = R.read_text(ra, pair.a, "after") if pair.a.after_hash else R.read_text(ra, pair.a, "before")
    tb = R.read_text(rb, pair.b, "after") if pair.b.after_hash else R.read_text(rb, pair.b, "before")
    lines = diff(ta, tb).unified(
        context=context, a_name=f"A {pair.label} output", b_name=f"B {pair.label} output", tilde=tilde
    )
    return [list(x) for x in lines] if tilde else [line for _, line in lines]


def _describe(p) -> str:
    return f"{p.label}  (A #{p.a.index if p.a else '-'}, B #{p.b.index if p.b else '-'})"


def _print_diff(d, ra, rb, focus, focus_diff, show_all: bool, context: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..history.compare import INPUT_DIFFERS, OUTPUT_DIFFERS, SAME
    from ..history.runs import label

    con = _console()
    for side, run in (("A", ra), ("B", rb)):
        m = run.manifest
        t = Text()
        t.append(f"{side}: ", style="bold")
        t.append(f"{m.script}  {run.run_id}")
        t.append(
            f"  {label(m, '?')}, {m.target or '?'}/{m.backend or '?'}, {len(m.records)} passes, {run.status}",
            style="dim",
        )
        con.print(t, soft_wrap=True)
    if d.a.kernel != d.b.kernel and d.a.script == d.b.script:
        con.print(
            Text(
                f"note: A and B compiled different kernels ({d.a.kernel}, {d.b.kernel}); "
                "--kernel NAME compares the runs of one kernel",
                style="yellow",
            ),
            soft_wrap=True,
        )
    styles = {SAME: "dim", OUTPUT_DIFFERS: "bold yellow", INPUT_DIFFERS: "red"}
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (
        ("A", "right"),
        ("B", "right"),
        ("phase", "left"),
        ("pass", "left"),
        ("status", "left"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    hidden = 0

    def flush_hidden() -> None:
        nonlocal hidden
        if hidden:
            table.add_row(
                _t(""), _t(""), _t(""), Text(f"... {hidden} pass(es) the same", style="dim"), _t("")
            )
            hidden = 0

    for p in d.pairs:
        if p.status == SAME and not show_all:
            hidden += 1
            continue
        flush_hidden()
        rec = p.a or p.b
        name = p.key[1] + (f"#{p.key[2]}" if p.key[2] > 1 else "")
        table.add_row(
            _t(p.a.index if p.a else "-"),
            _t(p.b.index if p.b else "-"),
            _t(p.key[0]),
            _t("  " * rec.depth + name),
            Text(p.status, style=styles.get(p.status, "italic dim")),
        )
    flush_hidden()
    if not d.same or show_all:
        con.print(table)
    if d.same:
        con.print(Text(f"same: {len(d.pairs)} passes, inputs and outputs identical", style="bold green"))
        return
    counts = ", ".join(f"{n} {s}" for s, n in d.counts.items() if n)
    con.print(Text(f"different: {counts}", style="bold red"))
    lines = []
    if d.first_output_change is not None:
        lines.append(("first pass whose output differs", d.first_output_change))
    lines.append(("first pass whose input matched but output differs", d.first_output_divergence))
    lines.append(("first pass whose input differs", d.first_input_divergence))
    for what, p in lines:
        t = Text(f"{what}: ", style="bold")
        t.append(_describe(p) if p is not None else "none", style="" if p is not None else "dim")
        con.print(t, soft_wrap=True)
    if (
        d.first_input_divergence is not None
        and d.first_input_divergence is d.first_difference
        and d.first_input_divergence.a is not None
        and d.first_input_divergence.a.index == min(r.index for r in d.a.records)
    ):
        con.print(Text("  the runs started from different IR (the kernel itself differs)", style="dim"))
    if d.codegen:
        con.print(Text("codegen: " + ", ".join(f"{role} {s}" for role, s in d.codegen.items())))
    if focus is not None and focus_diff is not None:
        con.print(Text(f"\n{focus.label}: output of A vs output of B", style="bold"))
        if focus_diff:
            from ..render.terminal import lines_text

            con.print(lines_text(_pair_diff(ra, rb, focus, context, tilde=True)), soft_wrap=True)
        else:
            con.print(Text("    (outputs are identical)", style="dim"))


def _write_diff_html(d, ra, rb, out: Path, context: int, force: bool = False) -> Path | None:
    from ..history.compare import SAME
    from ..render import diffruns

    data = d.to_json()
    diffs = []
    first = d.first_output_change
    for p in d.pairs:
        if p.status == SAME or p.a is None or p.b is None:
            continue
        if p.a.after_hash == p.b.after_hash and p.a.status == p.b.status:
            note = "outputs are identical (the inputs differ)"
        else:
            note = ""
        diffs.append(
            {
                "label": p.label,
                "status": p.status,
                "a_index": p.a.index,
                "b_index": p.b.index,
                "note": note,
                "open": p is first,
                "diff": _pair_diff(ra, rb, p, context, tilde=True),
            }
        )
    data["diffs"] = diffs
    from .. import output_path

    page = diffruns.render(data).encode("utf-8", "surrogatepass")
    return output_path.write(out, output_path.DIFF_HTML, page, force=force).path


# -- clean -------------------------------------------------------------------------
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
    force: bool = typer.Option(
        False,
        "--force",
        help="Also remove stale runs whose liveness cannot be asked: runs written before "
        "tltrace's liveness lock by a process on another host (another container).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove old invocations (never working files, never a running one), then stored texts no run uses.

    Exit status 3 when something could not be removed (it is named on stderr).
    """
    from ..history import runs as R
    from ..history.retention import clean, parse_duration

    td = _trace_dir(trace_dir)
    try:
        seconds = parse_duration(older_than) if older_than is not None else None
        loc = R.locate(target, td)
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
    for p in result.removed:
        typer.echo(f"{verb} {p}")
    for p in result.skipped_active:
        _warn(f"kept {p}: its invocation may still be running (an old run of another host: --force)")
    for line in result.failed:
        _warn(f"could not remove {line}")
    summary = (
        f"{verb} {len(result.removed)} run(s) of {result.invocations_removed} invocation(s), "
        f"kept {result.kept}"
    )
    if not dry_run:
        summary += f"; freed {_size(result.bytes_freed)}"
    typer.echo(summary)
    if result.failed:
        raise typer.Exit(EXIT_RECORDS)
