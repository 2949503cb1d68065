"""CLI commands that read the .run_records tree: show, diff-runs, clean.

Each command parses, makes one call into the core (runs.py, rundiff.py,
retention.py), prints a Rich table or JSON, and exits. Errors are one line on
stderr: `tltrace: error: ...`.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .errors import EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_USAGE, TltraceError

SHOW_EPILOG = """\
Examples:

\b
  tltrace show                                  runs of every script in the trace dir
  tltrace show gemm.py                          runs of one script (newest last)
  tltrace show gemm.py latest                   the passes of its newest run
  tltrace show gemm.py -2 --pass LayoutInference   that pass's diff, one run back
  tltrace show gemm.py --pass LowerTileOp -w    ... without lines that were only re-indented
  tltrace show gemm.py --pass 16 --json         ... as JSON, with "rows": the line alignment
  tltrace show ./tmp/lower_trace_dir/gemm/.run_records/run_2026...   a run directory
  tltrace show gemm.py --html                   (re)write the newest run's HTML report
  tltrace show gemm.py -1 --json                the manifest as JSON

RUN is a run id, a unique prefix of one, 'latest', or -N (-1 the newest, -2 the one
before); each compiled kernel is a run, and --kernel NAME counts only NAME's runs. A damaged run shows as 'damaged' in the list and gives a one-line error
when opened. Exit status: 0; 2 for bad usage; 3 for missing or damaged records.
"""

DIFF_EPILOG = """\
Examples:

\b
  tltrace diff-runs -2 -1                       the newest run against the one before
  tltrace diff-runs gemm.py:-2 gemm.py:latest   two runs of one script
  tltrace diff-runs elementwise_add softmax     newest runs of two scripts
  tltrace diff-runs RUN_DIR_A RUN_DIR_B --pass LowerTileOp
  tltrace diff-runs -2 -1 --html diff.html --json
  tltrace diff-runs two_kernels:-2 two_kernels:-1 --kernel vmul

Passes are aligned by phase, name and occurrence (the 2nd Simplify with the 2nd
Simplify), not by index, and compared by the hashes of their input and output.
The report names the first pass whose output differs, the first whose input
matched but output differs (the pass that introduced the difference), and the first
whose input differs, and shows the first difference as a diff of the two outputs.
A and B: a run directory, a script (its newest run), SCRIPT:RUN, or a RUN of the
script given by --script (or of the only script in the trace dir). Each compiled
kernel is a run of its own: with --kernel, RUN counts only that kernel's runs.
Exit status, as diff's: 0 the runs are the same, 1 they differ, 2 trouble.
"""

CLEAN_EPILOG = """\
Examples:

\b
  tltrace clean --keep 5                        keep the newest 5 runs of every script
  tltrace clean gemm.py --older-than 7d         remove gemm's runs older than a week
  tltrace clean --older-than 12h --dry-run      say what would go; remove nothing
  tltrace clean ./ci_traces --all               remove every run under ./ci_traces

Only run directories under .run_records go, then the stored texts no remaining
run uses. Working files (codegen_*.cpp), their .original/.latest files and
backups are never touched, nor a run whose process is still writing it.
DURATION: 30s, 10m, 12h, 7d, 2w, 1d12h (a bare number means days).
"""


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    # ignore_unknown_options: lets '-2' (a RUN) through as an argument.
    ctx = {"ignore_unknown_options": True}
    app.command("show", epilog=SHOW_EPILOG, context_settings=ctx)(show_cmd)
    app.command("diff-runs", epilog=DIFF_EPILOG, context_settings=ctx)(diff_runs_cmd)
    app.command("clean", epilog=CLEAN_EPILOG)(clean_cmd)


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"tltrace: error: {message}", err=True)
    return typer.Exit(code)


def _warn(message: str) -> None:
    typer.echo(f"tltrace: warning: {message}", err=True)


def _trace_dir(value: Optional[Path]) -> Path:
    from .config import env_trace_dir

    return Path(value) if value is not None else Path(env_trace_dir())


def _check_args(args: list[str]) -> None:
    for a in args:
        if a.startswith("--") or (a.startswith("-") and not a[1:].isdigit() and len(a) > 1):
            raise _fail(f"no such option: {a}")


def _console():
    from rich.console import Console

    c = Console(highlight=False, soft_wrap=False)
    if not c.is_terminal:
        c = Console(highlight=False, soft_wrap=False, width=max(c.width, 240))
    return c


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def _when(ts: float | None) -> str:
    if not ts:
        return "?"
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


# -- show ------------------------------------------------------------------------
TRACE_DIR_OPT = typer.Option(None, "--trace-dir", metavar="DIR",
                             help="Trace directory [default: TL_LOWER_TRACE_DIR, else ./tmp/lower_trace_dir].")

KERNEL_OPT = typer.Option(None, "--kernel", metavar="NAME",
                          help="Only runs that compiled kernel NAME (a script may compile several).")


def show_cmd(
    args: Optional[list[str]] = typer.Argument(None, metavar="[SCRIPT_OR_DIR] [RUN]",
                                               help="A script, script/trace/run directory; then a RUN.",
                                               show_default=False),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    pass_: Optional[str] = typer.Option(None, "--pass", metavar="NAME|INDEX",
                                        help="Print this pass's diff (NAME, phase/NAME, NAME#k for the k-th, or an index)."),
    html: bool = typer.Option(False, "--html", help="(Re)write the run's HTML report and print its path."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    context: int = typer.Option(3, "--context", metavar="N", min=0, help="Context lines in diffs."),
    ignore_whitespace: bool = typer.Option(False, "--ignore-whitespace", "-w",
                                           help="Hide changes that only re-indent lines (with --pass)."),
    kernel: Optional[str] = KERNEL_OPT,
) -> None:
    """List runs, or show one run's passes, or one pass's diff."""
    from . import runs as R

    items = list(args or [])
    _check_args(items)
    if len(items) > 2:
        raise _fail(f"too many arguments: {' '.join(items[2:])}; give at most SCRIPT_OR_DIR and RUN")
    td = _trace_dir(trace_dir)
    target: str | None = items[0] if items else None
    run_spec: str | None = items[1] if len(items) > 1 else None
    if target is not None and run_spec is None and R.looks_like_run_spec(target) and not Path(target).exists():
        target, run_spec = None, target  # 'tltrace show -2': a RUN of the only script
    try:
        if run_spec is None and (pass_ is not None or html):
            run_spec = "latest"
        if run_spec is None:
            loc = R.locate(target, td)
            if loc.run_dir is None:
                found = R.list_runs(loc, kernel=kernel)
                if not found and not as_json:  # e.g. after 'tltrace clean --all': say so, not a bare header
                    where = loc.root or loc.script_dirs[0]
                    if kernel is not None:
                        raise R.UsageError(f"no run of kernel {kernel!r} under {where}; "
                                           f"'tltrace show {where}' lists every run")
                    raise R.RecordsError(f"no runs left under {where}; run 'tltrace run SCRIPT' first")
                _show_list(found, as_json, several=len(loc.script_dirs) > 1)
                return
            run = R.open_run(str(loc.run_dir), None, td)
        else:
            run = R.open_run(target, run_spec, td, kernel)
        if html:
            _show_html(run, as_json)
        elif pass_ is not None:
            _show_pass(run, pass_, context, as_json, ignore_whitespace)
        else:
            _show_run(run, as_json)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None


def _run_row(run, position: int) -> dict[str, Any]:
    m = run.manifest
    c = m.counts if m else {}
    return {
        "position": position, "script": run.script_dir.name, "run_id": run.run_id, "path": str(run.path),
        "started": m.started if m else None, "kernel": m.kernel if m else None,
        "target": m.target if m else None, "backend": m.backend if m else None,
        "status": run.status, "passes": len(m.records) if m else None,
        "changed": c.get("changed") if m else None, "failed": c.get("failed") if m else None,
        "codegen": c.get("codegen") if m else None, "size": run.size, "problem": run.problem,
    }


def _show_list(runs: list, as_json: bool, *, several: bool) -> None:
    by_script: dict[str, int] = {}
    for r in runs:
        by_script[r.script_dir.name] = by_script.get(r.script_dir.name, 0) + 1
    rows = []
    seen: dict[str, int] = {}
    for r in runs:
        name = r.script_dir.name
        seen[name] = seen.get(name, 0) + 1
        rows.append(_run_row(r, seen[name] - by_script[name] - 1))  # -1 newest, -2 ...
    if as_json:
        _print_json({"runs": rows})
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("#", "right"), *((("script", "left"),) if several else ()), ("run", "left"),
                      ("time", "left"), ("kernel", "left"), ("target", "left"), ("backend", "left"),
                      ("status", "left"), ("passes", "right"), ("changed", "right"), ("failed", "right"),
                      ("size", "right")):
        # A long kernel or script name is cut (…) rather than squeezing the run id and counts away.
        wide = {"max_width": 40, "overflow": "ellipsis"} if col in ("script", "kernel") else {}
        table.add_column(col, justify=just, no_wrap=True, **wide)  # type: ignore[arg-type]
    for row in rows:
        status = row["status"]
        style = {"complete": "green", "error": "red", "damaged": "bold red", "interrupted": "yellow",
                 "running": "cyan"}.get(status, "")
        cells = [str(row["position"]), *([row["script"]] if several else []), row["run_id"],
                 _when(row["started"]), row["kernel"] or "?", row["target"] or "?", row["backend"] or "?",
                 f"[{style}]{status}[/]" if style else status,
                 *(str(row[k]) if row[k] is not None else "-" for k in ("passes", "changed", "failed")),
                 _size(row["size"])]
        table.add_row(*cells)
    _console().print(table)
    for r in runs:
        if r.problem:
            _warn(r.problem)


def _missing_files(run) -> int:
    n = 0
    for rec in run.manifest.records:
        for rel in (rec.before_file, rec.after_file):
            if rel and not (run.path / rel).exists():
                n += 1
    return n


def _show_run(run, as_json: bool) -> None:
    m = run.manifest
    missing = _missing_files(run)
    if as_json:
        data = m.to_json()
        data["path"] = str(run.path)
        data["status"] = run.status
        data["missing_files"] = missing
        _print_json(data)
        return
    from rich.table import Table
    from rich.text import Text

    from .render.terminal import STATUS_STYLE, TAG_STYLE

    con = _console()
    head = Text()
    head.append(f"{m.script}  ", style="bold")
    head.append(run.run_id)
    head.append(f"\n{m.kernel or '?'}  {m.target or '?'}/{m.backend or '?'}  {_when(m.started)}  {run.status}",
                style="dim")
    if m.error:
        head.append(f"\nerror: {m.error.splitlines()[0]}", style="red")
    if m.command:
        head.append("\n$ " + " ".join(m.command), style="dim")
    con.print(head)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("#", "right"), ("phase", "left"), ("pass", "left"), ("status", "left"),
                      ("+", "right"), ("-", "right"), ("ms", "right"), ("", "left")):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for rec in m.records:
        label, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        extra = rec.reconcile or (rec.error.splitlines()[0][:80] if rec.error else "")
        table.add_row(str(rec.index), rec.phase, "  " * rec.depth + rec.name, Text(label, style=style),
                      str(rec.added) if rec.added else "", str(rec.removed) if rec.removed else "",
                      f"{rec.duration_s * 1000:.2f}",
                      Text(extra, style=TAG_STYLE.get(rec.reconcile or "", "red" if rec.error else "")))
    con.print(table)
    c = m.counts
    con.print(f"{len(m.records)} passes, {c.get('changed', 0)} changed, {c.get('failed', 0)} failed, "
              f"{c.get('codegen', 0)} codegen", style="dim")
    if missing:
        _warn(f"{missing} record file(s) are missing under {run.path}; diffs fall back to the stored copies "
              "in .objects where they still exist")


def _show_pass(run, spec: str, context: int, as_json: bool, ignore_whitespace: bool = False) -> None:
    from . import runs as R
    from .diff import diff

    rec = R.find_record(run.manifest, spec)
    before = R.read_text(run, rec, "before")
    after = R.read_text(run, rec, "after") if rec.after_file or rec.after_hash else None
    d = diff(before, after) if after is not None else None
    if as_json:
        out = {"run_id": run.run_id, "path": str(run.path), "record": rec.to_json(),
               "diff": [line for _, line in d.unified(context=context, a_name=f"{rec.name} before",
                                                      b_name=f"{rec.name} after", tilde=False)]
               if d is not None and d.changed else [],
               "rows": d.rows_json() if d is not None else None, "note": d.note if d is not None else None}
        if after is None:
            out["before"] = before
        _print_json(out)
        return
    from rich.text import Text

    from .render.terminal import diff_view, pass_line

    con = _console()
    con.print(pass_line(run.manifest.kernel, rec, d.note if d is not None else None), soft_wrap=True)
    if rec.error:
        con.print(Text(f"    error: {rec.error}", style="red"), soft_wrap=True)
    if d is None:
        con.print(Text("    (the pass failed: no output was recorded; the IR it was given:)", style="dim"))
        con.print(Text(before), soft_wrap=True, markup=False, highlight=False)
    else:
        con.print(diff_view(d, context, ignore_whitespace=ignore_whitespace), soft_wrap=True)


def _show_html(run, as_json: bool) -> None:
    try:
        from .render.html import write_report  # type: ignore[attr-defined]
    except ImportError:
        raise TltraceError("this tltrace cannot write HTML reports yet (render.html.write_report is missing)") \
            from None
    try:
        path = write_report(run.path, out=None)
    except TltraceError:
        raise
    except OSError as exc:
        raise TltraceError(f"cannot write the report for {run.path} ({exc.strerror or exc})") from None
    if as_json:
        _print_json({"run_id": run.run_id, "report": str(path)})
    else:
        typer.echo(str(path))


# -- diff-runs ---------------------------------------------------------------------
def diff_runs_cmd(
    a: str = typer.Argument(..., metavar="A", help="First run: a run dir, a script, SCRIPT:RUN, or a RUN."),
    b: str = typer.Argument(..., metavar="B", help="Second run, the same forms."),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    script: Optional[str] = typer.Option(None, "--script", metavar="SCRIPT_OR_DIR",
                                         help="Where a bare RUN (-2, latest, an id) is looked up."),
    pass_: Optional[str] = typer.Option(None, "--pass", metavar="NAME|INDEX",
                                        help="Print the cross-run diff of this pass's output (a pass of A)."),
    show_all: bool = typer.Option(False, "--all", help="List every pass, not only the differing ones."),
    html: Optional[Path] = typer.Option(None, "--html", metavar="PATH",
                                        help="Write an HTML report of the differing passes to PATH."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    context: int = typer.Option(3, "--context", metavar="N", min=0, help="Context lines in diffs."),
    kernel: Optional[str] = KERNEL_OPT,
) -> None:
    """Compare two runs pass by pass and name the first pass that diverges."""
    from . import runs as R
    from .rundiff import diff_runs

    _check_args([a, b])
    td = _trace_dir(trace_dir)
    try:
        ra = R.parse_run_ref(a, td, script, kernel)
        rb = R.parse_run_ref(b, td, script, kernel)
        d = diff_runs(ra.require(), rb.require())
        focus = _focus_pair(d, pass_)
        focus_diff = _pair_diff(ra, rb, focus, context) if focus is not None else None
        report = None
        if html is not None:
            report = _write_diff_html(d, ra, rb, html, context)
    except TltraceError as exc:
        raise _fail(str(exc), EXIT_USAGE) from None  # diff's convention: 2 is trouble
    code = EXIT_OK if d.same else EXIT_SCRIPT_FAILED
    if as_json:
        data = d.to_json()
        data["a"]["path"], data["b"]["path"] = str(ra.path), str(rb.path)
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


def _focus_pair(d, spec: str | None):
    """Return the pair to show as a diff: the --pass one, else the first whose output differs."""
    from . import runs as R
    from .rundiff import ONLY_A, ONLY_B

    if spec is None:
        return d.first_output_change
    rec = R.find_record(d.a, spec)
    pair = next(p for p in d.pairs if p.a is not None and p.a.index == rec.index)
    if pair.status == ONLY_A:
        raise TltraceError(f"pass {pair.label} ran only in A ({d.a.run_id}); there is nothing to compare it with")
    assert pair.status != ONLY_B
    return pair


def _pair_diff(ra, rb, pair, context: int, *, tilde: bool = False) -> list:
    """Return the unified diff of a pair's outputs: patch lines, or (kind, line) pairs with tilde=True."""
    from . import runs as R
    from .diff import diff

    ta = R.read_text(ra, pair.a, "after") if pair.a.after_hash else R.read_text(ra, pair.a, "before")
    tb = R.read_text(rb, pair.b, "after") if pair.b.after_hash else R.read_text(rb, pair.b, "before")
    lines = diff(ta, tb).unified(context=context, a_name=f"A {pair.label} output", b_name=f"B {pair.label} output",
                                 tilde=tilde)
    return [list(x) for x in lines] if tilde else [line for _, line in lines]


def _describe(p) -> str:
    return f"{p.label}  (A #{p.a.index if p.a else '-'}, B #{p.b.index if p.b else '-'})"


def _print_diff(d, ra, rb, focus, focus_diff, show_all: bool, context: int) -> None:
    from rich.table import Table
    from rich.text import Text

    from .rundiff import INPUT_DIFFERS, OUTPUT_DIFFERS, SAME

    con = _console()
    for side, run in (("A", ra), ("B", rb)):
        m = run.manifest
        t = Text()
        t.append(f"{side}: ", style="bold")
        t.append(f"{m.script}  {run.run_id}")
        t.append(f"  {m.kernel or '?'}, {m.target or '?'}/{m.backend or '?'}, {len(m.records)} passes, {run.status}",
                 style="dim")
        con.print(t, soft_wrap=True)
    if d.a.kernel != d.b.kernel and d.a.script == d.b.script:
        con.print(Text(f"note: A and B compiled different kernels ({d.a.kernel}, {d.b.kernel}); "
                       "--kernel NAME compares the runs of one kernel", style="yellow"), soft_wrap=True)
    styles = {SAME: "dim", OUTPUT_DIFFERS: "bold yellow", INPUT_DIFFERS: "red"}
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("A", "right"), ("B", "right"), ("phase", "left"), ("pass", "left"), ("status", "left")):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    hidden = 0

    def flush_hidden() -> None:
        nonlocal hidden
        if hidden:
            table.add_row("", "", "", Text(f"... {hidden} pass(es) the same", style="dim"), "")
            hidden = 0

    for p in d.pairs:
        if p.status == SAME and not show_all:
            hidden += 1
            continue
        flush_hidden()
        rec = p.a or p.b
        name = p.key[1] + (f"#{p.key[2]}" if p.key[2] > 1 else "")
        table.add_row(str(p.a.index) if p.a else "-", str(p.b.index) if p.b else "-", p.key[0],
                      "  " * rec.depth + name, Text(p.status, style=styles.get(p.status, "italic dim")))
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
    if d.first_input_divergence is not None and d.first_input_divergence is d.first_difference \
            and d.first_input_divergence.a is not None and d.first_input_divergence.a.index == min(
                r.index for r in d.a.records):
        con.print(Text("  the runs started from different IR (the kernel itself differs)", style="dim"))
    if d.codegen:
        con.print(Text("codegen: " + ", ".join(f"{role} {s}" for role, s in d.codegen.items())))
    if focus is not None and focus_diff is not None:
        con.print(Text(f"\n{focus.label}: output of A vs output of B", style="bold"))
        if focus_diff:
            from .render.terminal import lines_text

            con.print(lines_text(_pair_diff(ra, rb, focus, context, tilde=True)), soft_wrap=True)
        else:
            con.print(Text("    (outputs are identical)", style="dim"))


def _write_diff_html(d, ra, rb, out: Path, context: int) -> Path:
    from .render import diffruns
    from .rundiff import SAME

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
        diffs.append({"label": p.label, "status": p.status, "a_index": p.a.index, "b_index": p.b.index,
                      "note": note, "open": p is first, "diff": _pair_diff(ra, rb, p, context, tilde=True)})
    data["diffs"] = diffs
    try:
        return diffruns.write(data, out)
    except OSError as exc:
        raise TltraceError(f"cannot write {out} ({exc.strerror or exc})") from None


# -- clean -------------------------------------------------------------------------
def clean_cmd(
    target: Optional[str] = typer.Argument(None, metavar="[SCRIPT_OR_DIR]",
                                           help="A script or its trace directory [default: every script].",
                                           show_default=False),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    keep: Optional[int] = typer.Option(None, "--keep", metavar="N", help="Keep the newest N runs per script."),
    older_than: Optional[str] = typer.Option(None, "--older-than", metavar="DURATION",
                                             help="Remove runs older than DURATION (30m, 12h, 7d, 2w)."),
    remove_all: bool = typer.Option(False, "--all", help="Remove every run."),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Say what would be removed; remove nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Remove old runs (never working files), then stored texts no run uses any more."""
    from . import runs as R
    from .retention import clean, parse_duration

    td = _trace_dir(trace_dir)
    try:
        seconds = parse_duration(older_than) if older_than is not None else None
        loc = R.locate(target, td)
        if loc.run_dir is not None:
            raise TltraceError(f"{target} is one run; clean works on scripts (to remove just this run: "
                               f"rm -r {loc.run_dir})")
        result = clean(loc.script_dirs, keep=keep, older_than=seconds, remove_all=remove_all, dry_run=dry_run)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    if as_json:
        _print_json(result.to_json())
        return
    verb = "would remove" if dry_run else "removed"
    for p in result.removed:
        typer.echo(f"{verb} {p}")
    for p in result.skipped_active:
        _warn(f"kept {p}: its process is still writing it")
    summary = f"{verb} {len(result.removed)} run(s), kept {result.kept}"
    if not dry_run:
        summary += f"; freed {_size(result.bytes_freed)}"
    typer.echo(summary)

