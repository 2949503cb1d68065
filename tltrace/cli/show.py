"""`tltrace show`: the listing of invocations, one invocation's compiles, one compile's passes,
one pass's diff, a rebuilt report, or (cli/profile.py) where the compile time went."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from .._shell import command
from ..config import trace_dir_of as _trace_dir
from ..errors import TltraceError
from .records import (
    _STATUS_STYLE,
    KERNEL_OPT,
    TRACE_DIR_OPT,
    _check_args,
    _command_line,
    _ms,
    _print_json,
    _size,
    _t,
    _when,
)
from .shared import console as _console
from .shared import fail as _fail
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
  tltrace show gemm.py -1 --facts               TMA, WGMMA, cp.async, shared memory, stages of each compile
  tltrace show gemm.py --facts --json           the same as JSON (docs/facts.md names every fact)
  tltrace show gemm.py -1 --layouts             each fragment's and shared buffer's layout (docs/layouts.md)
  tltrace show gemm.py -1 --layouts --at C_l 0,2   the thread (threadIdx.x) and register holding C_l[0,2]
  tltrace show gemm.py -1 --layouts --thread 128   the elements and registers threadIdx.x 128 holds
  tltrace show gemm.py -1 --remarks             what the passes wrote to stderr (run --remarks)
  tltrace show gemm.py --pass LowerTileOp --remarks   a pass's diff, its remark under it
  tltrace show gemm.py --profile                slowest passes of the newest invocation, by name
  tltrace show gemm.py -1 'gemm 1024' --profile --top 5 --json   one compile's 5 slowest, as JSON
  tltrace show --format markdown >> "$GITHUB_STEP_SUMMARY"   compiles + top passes for CI
  tltrace show gemm.py --format markdown --baseline gemm.py:-2   ... + the facts that changed since -2

An invocation is one 'tltrace run' (or watch rerun, or enable()..disable() span);
each kernel it compiled is a compile (a run directory) with a signature: kernel,
launch shape, input-IR hash. RUN: 'latest' or -N (-1 the newest invocation, -2
the one before), a run id or a unique prefix of one (that compile), an invocation
id, or a signature prefix (in the newest invocation that has one). SIGNATURE, or
--kernel NAME, narrows an invocation to one compile; with --kernel, -N counts only
invocations that compiled NAME. An invocation's compiles made from several lines
of the script are listed under their call sites, as a tree. Runs of schema-1 manifests are invocations of their
own. A damaged run shows as 'damaged' in the list and gives a one-line error when
opened. Exit status: 0; 2 for bad usage (-3 of 2 invocations, a signature prefix
matching several compiles, --pass on an invocation of several); 3 for missing or
damaged records (a manifest of an unknown schema).
"""


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
        help="The generated source (with --pass: that pass's IR) with the Python line of each line "
        "(N~: inferred from an enclosing statement).",
    ),
    baseline: Optional[str] = typer.Option(
        None,
        "--baseline",
        metavar="REF",
        help="With --format markdown: add the facts that changed against REF (a run, SCRIPT:RUN, -N).",
    ),
    remarks: bool = typer.Option(
        False,
        "--remarks",
        help="What the passes wrote to stderr (a compile run with 'tltrace run --remarks'): every pass's, "
        "or with --pass P that pass's, under its diff.",
    ),
    facts: bool = typer.Option(
        False,
        "--facts",
        help="What the compiler made of each kernel: TMA, WGMMA, cp.async, barriers, shared memory, "
        "launch bounds, stages (and registers/spills after run --ptxas); docs/facts.md.",
    ),
    layouts: bool = typer.Option(
        False,
        "--layouts",
        help="Each fragment's and shared buffer's layout: thread and index expressions, replication, "
        "thread range, the pass that fixed it; docs/layouts.md.",
    ),
    at: Optional[tuple[str, str]] = typer.Option(
        None,
        "--at",
        metavar="BUF I,J",
        help="With --layouts: the thread (threadIdx.x) and register (fragment) or offset and bank (shared) "
        "of one element.",
    ),
    thread: Optional[int] = typer.Option(
        None,
        "--thread",
        metavar="T",
        min=0,
        help="With --layouts: the elements (and registers) of each fragment that threadIdx.x T holds.",
    ),
) -> None:
    """List invocations and their compiles, or one compile's passes, or one pass's diff."""
    from ..history import runs

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
    target, run_spec = runs.split_target(target, run_spec)  # 'show -2', 'show gemm.py:-2'
    if fmt not in (None, "table", "json", "markdown"):
        raise _fail(f"--format {fmt!r} is not one of table, json, markdown")
    if fmt == "markdown" and as_json:
        raise _fail("--json and --format markdown exclude each other")
    as_json = as_json or fmt == "json"
    if baseline is not None and fmt != "markdown":
        raise _fail("--baseline goes with --format markdown (diff-runs compares two runs otherwise)")
    if profile or fmt == "markdown":  # profile and CI summary: cli/profile.py
        from . import profile as cli_profile

        try:
            chosen = cli_profile.select(target, run_spec, td, kernel, signature=signature_prefix)
            changed = None
            if baseline is not None:
                changed = cli_profile.fact_changes(target, run_spec, baseline, td, kernel, signature_prefix)
        except TltraceError as exc:
            raise _fail(str(exc), exc.exit_code) from None
        if fmt == "markdown":
            sys.stdout.write(cli_profile.markdown(chosen, top, changed))
        else:
            cli_profile.print_profile(chosen, top, as_json)
        return
    try:
        at_spec = list(at) if at and all(x is not None for x in at) else None
        if at_spec is not None and not layouts:
            raise _fail("--at goes with --layouts: tltrace show SCRIPT [RUN] --layouts --at BUF I,J")
        if thread is not None and not layouts:
            raise _fail("--thread goes with --layouts: tltrace show SCRIPT [RUN] --layouts --thread T")
        if thread is not None and at_spec is not None:
            raise _fail("--at and --thread exclude each other: ask for one element or one thread")
        if layouts and (pass_ is not None or html or source_map or facts):
            raise _fail(
                "--layouts is a compile's (or an invocation's): leave out --pass, --html, --source-map and --facts"
            )
        if layouts and at_spec is not None:
            from . import layouts as cli_layouts

            cli_layouts.parse_at(at_spec)  # bad input says so before any record is read
        if (
            run_spec is None
            and pass_ is None
            and not html
            and not source_map
            and not facts
            and not layouts
            and not remarks
        ):
            loc = runs.locate(target, td)
            if loc.run_dir is None:
                _show_list(loc, kernel, as_json)
                return
        sel = runs.open_selection(target, run_spec, td, kernel, signature_prefix)
        if layouts:
            from . import layouts as cli_layouts

            cli_layouts.show(sel, as_json, at_spec, thread)
        elif facts:
            from . import facts as cli_facts

            if pass_ is not None or html or source_map:
                raise _fail(
                    "--facts is a compile's (or an invocation's): leave out --pass, --html and --source-map"
                )
            cli_facts.show(sel, as_json)
        elif remarks and (html or source_map):
            raise _fail("--remarks goes with a compile or --pass: leave out --html and --source-map")
        elif remarks and pass_ is None:
            _show_remarks(sel.one("--remarks"), as_json)
        elif source_map:
            from . import sourcemap as cli_sourcemap

            cli_sourcemap.show(sel.one("--source-map"), pass_, as_json)
        elif html:
            _show_html(sel, as_json)
        elif pass_ is not None:
            _show_pass(sel.one("--pass"), pass_, context, as_json, ignore_whitespace, remarks)
        elif sel.single is not None:
            _show_run(sel.single, as_json)
        else:
            _show_invocation(sel, as_json)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None


def _run_row(run, position: int | None = None) -> dict[str, Any]:
    """Return one compile as `show --json` lists it: its summary's JSON (every field of the model),
    then where the run is on disk (history/loading.Run.to_json); `position`: its invocation's."""
    from ..history.summary import CompileSummary

    row = CompileSummary.of(run.manifest, run.run_id, status=run.status).to_json()
    row.update(run.to_json())
    return row if position is None else {"position": position, **row}


def _invocation_json(inv, runs=None) -> dict[str, Any]:
    """Return an invocation as `show --json` gives it: the model's JSON and the compiles listed."""
    return {**inv.to_json(), "compiles": [_run_row(r) for r in (runs if runs is not None else inv.runs)]}


def _show_list(loc, kernel: str | None, as_json: bool) -> None:
    """The listing: every invocation of the located scripts, each with its compiles."""
    from ..history import runs

    for link in runs.skipped_links(loc):  # the one symlink rule: not followed, and said
        _warn(f"skipped {link}: a symbolic link; tltrace does not follow links")
    invs = []
    for sd in loc.script_dirs:
        loaded = [runs.load_run(p, size=True) for p in runs.run_dirs(sd)]
        for inv in runs.group_invocations(loaded, runs.empty_invocations(sd), sd):
            compiles = [
                r
                for r in inv.runs
                if kernel is None or (r.manifest is not None and r.manifest.kernel == kernel)
            ]
            if compiles or (kernel is None and inv.empty is not None):
                invs.append((inv, compiles))
    if kernel is not None:  # positions count only the invocations that compiled `kernel`
        by_script: dict[str, list] = {}
        for inv, compiles in invs:
            by_script.setdefault(inv.script_dir.name, []).append((inv, compiles))
        invs = []
        for group in by_script.values():
            n = len(group)
            invs.extend(
                (runs.RecordedInvocation(inv.id, inv.runs, i - n), compiles)
                for i, (inv, compiles) in enumerate(group)
            )
    if not invs and not as_json:  # e.g. after 'tltrace clean --all': say so, not a bare header
        where = loc.root or loc.script_dirs[0]
        if kernel is not None:
            raise runs.UsageError(
                f"no run of kernel {kernel!r} under {where}; {command('tltrace', 'show', where)} lists every run"
            )
        raise runs.RecordsError(f"no runs left under {where}; run 'tltrace run SCRIPT' first")
    if as_json:
        flat = []
        for inv, compiles in invs:
            for r in compiles:
                row = _run_row(r, inv.position)
                flat.append(row)
        _print_json(
            {"invocations": [_invocation_json(inv, compiles) for inv, compiles in invs], "runs": flat}
        )
        return
    several = len(loc.script_dirs) > 1
    table = _CompileTable(several)
    for inv, compiles in invs:
        if len(compiles) == 1 and len(inv.runs) == 1:
            table.add(_run_row(compiles[0]), str(inv.position))
            continue
        if not inv.runs:
            why = inv.empty.reason if inv.empty is not None else "no compile recorded"
            table.heading(
                str(inv.position),
                inv.script_dir.name if several else None,
                f"invocation {inv.id}: no TileLang compile traced ({why})",
                _when(inv.started),
            )
            continue
        failed = sum(1 for r in compiles if r.status not in ("complete", "running"))
        head = f"invocation {inv.id}: {len(compiles)} compiles" + (
            f" of {len(inv.runs)}" if len(compiles) != len(inv.runs) else ""
        )
        head += f", {failed} not complete" if failed else ""
        table.heading(str(inv.position), inv.script_dir.name if several else None, head, _when(inv.started))
        _add_by_site(table, _ordered(compiles), indent=True)
    table.print(_console())
    for _inv, compiles in invs:
        for r in compiles:
            if r.problem:
                _warn(r.problem)


def _add_by_site(table: _CompileTable, runs: list, *, indent: bool = False) -> None:
    """Add the compiles to the table, under their call sites as a tree when they came from more than one."""
    from ..history import callsites

    stacks = [r.manifest.stack if r.manifest is not None else None for r in runs]
    if callsites.sites(stacks) < 2:
        for r in runs:
            table.add(_run_row(r), "", indent=indent)
        return
    root = callsites.build(stacks)
    for r in (runs[i] for i in root.items):  # compiles with no recorded call site
        table.add(_run_row(r), "", indent=indent)
    for depth, node in callsites.walk(root):
        table.site(("  " if indent else "") + "  " * depth + node.label())
        for i in node.items:
            table.add(_run_row(runs[i]), "", indent=indent, depth=depth + 1)


def _ordered(runs: list) -> list:
    """Return the compiles of one invocation in the one compile order (history/summary.py)."""
    from ..history.summary import CompileSummary, order

    summaries = [
        CompileSummary.of(r.manifest, r.run_id, status=r.status, position=i) for i, r in enumerate(runs)
    ]
    return [runs[s.position] for s in order(summaries)]


_EDIT_STYLE = {"PATCHED": "bold magenta", "CONFLICT": "bold red", "UNRESOLVED": "bold red"}


class _CompileTable:
    """The compiles table of `show`: fits the terminal (render/table.py), keeps # and status."""

    def __init__(self, several: bool) -> None:
        self.several = several
        self.items: list[tuple[str, Any]] = []  # ("row", cells) or ("head", (position, script, text, when))

    def heading(self, position: str, script: str | None, text: str, when: str) -> None:
        self.items.append(("head", (position, script, text, when)))

    def site(self, text: str) -> None:
        """A call site above the compiles made there (`show` groups by call site)."""
        self.items.append(("site", text))

    def add(self, row: dict[str, Any], position: str, *, indent: bool = False, depth: int = 0) -> None:
        status = row["status"]
        failed = str(row["failed"]) if row["failed"] is not None else "-"
        if row.get("failed_at"):
            failed += f" ({row['failed_at']})"
        cells = [
            (position, ""),
            *([(row["script"], "")] if self.several else []),
            (("  " if indent else "") + "  " * depth + row["run_id"], ""),
            (_when(row["started"]), ""),
            (row["label"] if row["label"] != row["run_id"] else "?", ""),
            (row["target"] or "?", ""),
            (row["backend"] or "?", ""),
            (status, _STATUS_STYLE.get(status, "")),
            # A compile still running: its counts so far, marked as such (never a bare 0).
            *(
                (
                    "-" if row[k] is None else (f"{row[k]}\u2026" if status == "running" else str(row[k])),
                    "",
                )
                for k in ("passes", "changed")
            ),
            (failed, ""),
            (row.get("edit") or "", _EDIT_STYLE.get(row.get("edit") or "", "")),
            (_size(row["size"]) if row["size"] else "-", ""),
        ]
        self.items.append(("row", cells))

    def print(self, con: Any) -> None:
        from rich.text import Text

        from ..render.table import Column, cut_end, cut_middle, distinct_cut, fit

        rows = [cells for kind, cells in self.items if kind == "row"]
        sig_at = 4 if self.several else 3
        columns = [
            Column("#", "right"),
            *([Column("script", cut=cut_middle, min_width=10)] if self.several else []),
            Column("run", drop=6),  # the id goes before the time: '#' names the invocation
            Column("time", drop=5, cut_first=True),
            Column("signature", cut=distinct_cut([r[sig_at][0] for r in rows]), min_width=14),
            Column("target", drop=8),
            Column("backend", drop=9),
            Column("status"),
            Column("passes", "right", drop=3),
            Column("changed", "right", drop=2),
            Column("failed", "right", cut=cut_end, min_width=6),
            Column("edit", drop=0 if any(r[-2][0] for r in rows) else 10),  # PATCHED, CONFLICT: your edit
            Column("size", "right", drop=7),
        ]
        width = con.width if con.is_terminal else None
        lines = fit(columns, rows, width, rule=False)
        out = lines[:1]
        body = iter(lines[1:])
        pos_width = max(
            [1] + [len(r[0][0]) for r in rows] + [len(c[0]) for k, c in self.items if k == "head"]
        )
        for kind, item in self.items:
            if kind == "row":
                out.append(next(body))
                continue
            if kind == "site":
                t = Text(" " * (pos_width + 2) + item, style="cyan")
                if width is not None and len(t) > width:
                    t = Text(cut_end(t.plain, width), style="cyan")
                out.append(t)
                continue
            position, script, text, when = item
            t = Text(position.rjust(pos_width) + "  ")
            if script:
                t.append(script + "  ")
            t.append(text, style="bold")
            t.append("  " + when, style="dim")
            if width is not None and len(t) > width:
                t = Text(cut_end(t.plain, width), style="bold")
            out.append(t)
        for t in out:
            con.print(t, soft_wrap=not con.is_terminal)


def _show_invocation(sel, as_json: bool) -> None:
    """One invocation with several compiles: list them (failed first), with how to open one."""
    from ..history.resolve import script_words

    inv = sel.invocation
    runs = _ordered([r.measured() for r in sel.runs])  # sizes, as the listing gives them
    if as_json:
        _print_json({"invocation": _invocation_json(inv, runs)})
        return
    from rich.text import Text

    con = _console()
    if not inv.runs:
        _show_empty(con, sel)
        return
    head = Text()
    head.append(f"{inv.script_dir.name}  ", style="bold")
    head.append(f"invocation {sel.spec}  {inv.id}")
    head.append(f"\n{len(sel.runs)} compiles  {_when(inv.started)}  {inv.status}", style="dim")
    con.print(head, soft_wrap=not con.is_terminal)
    table = _CompileTable(False)
    _add_by_site(table, runs)
    table.print(con)
    con.print(
        _t(
            f"open one: {command('tltrace', 'show', *script_words(inv.script_dir), sel.spec)} SIGNATURE "
            "(a prefix)"
            # --kernel NAME opens one compile only where the compiles are of several kernels
            + (", or --kernel NAME" if len({r.manifest.kernel for r in sel.runs if r.manifest}) > 1 else ""),
            "dim",
        ),
        soft_wrap=not con.is_terminal,  # a terminal folds it (the command names --trace-dir), a pipe gets it whole
    )


def _show_empty(con: Any, sel) -> None:
    """An invocation that traced no compile: when, the command, and why nothing was traced."""
    from rich.text import Text

    inv, e = sel.invocation, sel.invocation.empty
    head = Text()
    head.append(f"{inv.script_dir.name}  ", style="bold")
    head.append(f"invocation {sel.spec}  {inv.id}")
    head.append(f"\n0 compiles  {_when(inv.started)}  {inv.status}", style="dim")
    if e is not None and e.command:
        head.append("\n$ " + _command_line(e.command), style="dim")
    head.append("\nno TileLang compile was traced", style="bold yellow")
    if e is not None:
        head.append(f": {e.reason}")
    con.print(head, soft_wrap=not con.is_terminal)


def _show_run(run, as_json: bool) -> None:
    from ..format import build as fbuild
    from ..history import runs

    m = run.manifest
    missing = runs.missing_files(run)
    if as_json:
        data = m.to_json()
        data["path"] = str(run.path)
        data["status"] = run.status
        data["missing_files"] = missing
        data["command_line"] = _command_line(m.command)
        _print_json(data)
        return
    from functools import partial

    from rich.text import Text

    from ..render.terminal import STATUS_STYLE, TAG_STYLE
    from ..render.visible import visible

    con = _console()
    head = Text()
    one = partial(visible, one_line=True)  # names from the records: each on its line
    head.append(f"{one(m.script)}  ", style="bold")
    head.append(one(run.run_id))
    head.append(
        f"\n{one(runs.label(m, '?'))}  {one(m.target or '?')}/{one(m.backend or '?')}  {_when(m.started)}  {run.status}",
        style="dim",
    )
    if m.signature and m.kernel and not m.signature.startswith(m.kernel):
        head.append(f"  (kernel {one(m.kernel)})", style="dim")
    if m.invocation:
        head.append(f"\ninvocation {m.invocation}", style="dim")
    from ..history.callsites import frames_of, label

    frames = frames_of(m.stack)
    if frames:
        head.append("\ncalled from " + " \u203a ".join(label(f) for f in frames[-3:]), style="dim")
        head.append(f"  ({frames[-1][0]})" if not frames[-1][0].startswith("(") else "", style="dim")
    build = fbuild.of(m)
    if fbuild.failed(build) and not any(r.status == "failed" for r in m.records):
        head.append(f"\n{fbuild.headline(build)}:", style="bold red")  # errors at the working file's lines
        for err in fbuild.error_lines(build):
            head.append(f"\n  {err}", style="red")
    elif m.error:
        head.append(f"\nerror: {m.error.splitlines()[0] if m.error.strip() else m.error}", style="red")
    for e in fbuild.edits(build):
        head.append(
            f"\nedited: {e.get('working_file') or '?'} (+{e.get('added', 0)} -{e.get('removed', 0)} "
            f"against the generated {e.get('generated_file')})"
            + ("; kept for the diff view, not compiled" if e.get("compiled") is False else ""),
            style="yellow",
        )
    if m.command:
        head.append("\n$ " + _command_line(m.command), style="dim")
    if m.skipped:  # a step of `tltrace bisect`
        names = ", ".join(f"#{s.get('position')} {s.get('name')}" for s in m.skipped if isinstance(s, dict))
        head.append(f"\nbisect step: skipped {len(m.skipped)} top-level pass(es): {names}", style="yellow")
    con.print(head, soft_wrap=not con.is_terminal)
    from ..render.table import Column, cut_end, cut_middle, fit

    columns = [
        Column("#", "right"),
        Column("phase", drop=2),
        Column("pass", cut=cut_middle, min_width=14),
        Column("status"),
        Column("+", "right"),
        Column("-", "right"),
        Column("ms", "right", drop=1),
        Column("", cut=cut_end, min_width=10),
    ]
    rows = []
    for rec in m.records:
        label, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        extra = rec.reconcile or (rec.error.splitlines()[0][:80] if rec.error and rec.error.strip() else "")
        rows.append(
            [
                (str(rec.index), ""),
                (rec.phase, ""),
                ("  " * rec.depth + rec.name, ""),
                (label, style),
                (str(rec.added) if rec.added else "", ""),
                (str(rec.removed) if rec.removed else "", ""),
                (_ms(rec.duration_s), ""),
                (extra, TAG_STYLE.get(rec.reconcile or "", "red" if rec.error else "")),
            ]
        )
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    c = m.counts
    con.print(
        _t(
            f"{len(m.records)} passes, {c.get('changed', 0)} changed, {c.get('failed', 0)} failed, "
            f"{c.get('codegen', 0)} codegen"
            + (" so far (still running)" if run.status == "running" else "")
            + (f", {fbuild.headline(build)}" if fbuild.failed(build) else ""),
            "dim",
        )
    )
    if missing:
        _warn(
            f"{missing} record file(s) are missing under {run.path}; diffs fall back to the stored copies "
            "in .objects where they still exist"
        )


def show_pass(run, spec: str, context: int, as_json: bool, ignore_whitespace: bool = False) -> None:
    """Print one pass of `run` as `show --pass` does: its line and its diff (`bisect` reuses it)."""
    _show_pass(run, spec, context, as_json, ignore_whitespace)


def _remark_of(run, index: int) -> dict[str, Any] | None:
    """The remark the pass of record `index` left (manifest `remarks`), or None."""
    rem = run.manifest.remarks
    for p in rem.get("passes") or () if isinstance(rem, dict) else ():
        if isinstance(p, dict) and p.get("index") == index and isinstance(p.get("text"), str):
            return p
    return None


def _no_remarks(run) -> str:
    return (
        f"{run.run_id} was not run with --remarks; "
        f"rerun it with 'tltrace run --remarks' (or --remarks=vectorize) to keep what its passes print"
    )


def _print_remark(con: Any, p: dict[str, Any]) -> None:
    from rich.text import Text

    kinds = ", ".join(p.get("kinds") or ())
    head = Text(f"#{p.get('index')} {p.get('name')}", style="bold")
    head.append(f"  {p.get('lines', 0)} line(s) on stderr" + (f"  [{kinds}]" if kinds else ""), style="dim")
    con.print(head, soft_wrap=True)
    for line in p["text"].rstrip("\n").splitlines():
        con.print(Text("  " + line), soft_wrap=True)  # data: never markup
    if p.get("truncated"):
        con.print(Text(f"  ... {p.get('bytes')} bytes in all (the first 64 KiB are kept)", style="dim"))


def _show_remarks(run, as_json: bool) -> None:
    """Every pass's remarks of one compile (`show RUN --remarks`)."""
    rem = run.require().remarks
    if as_json:
        _print_json(
            {"run_id": run.run_id, "signature": run.manifest.signature, "path": str(run.path), "remarks": rem}
        )
        return
    if not isinstance(rem, dict):
        raise TltraceError(_no_remarks(run))
    con = _console()
    passes = [p for p in rem.get("passes") or () if isinstance(p, dict) and isinstance(p.get("text"), str)]
    planners = ", ".join(rem.get("planners") or ()) or "none"
    con.print(
        _t(
            f"{run.run_id}: {len(passes)} pass(es) wrote to stderr (planners: {planners}; "
            "top-level passes serialised)",
            "dim",
        )
    )
    for p in passes:
        _print_remark(con, p)


def _show_pass(
    run, spec: str, context: int, as_json: bool, ignore_whitespace: bool = False, remarks: bool = False
) -> None:
    from ..diff import diff
    from ..format.records import STAGE_ROLES
    from ..history import runs
    from ..passref import ref_of, resolve

    rec = runs.find_record(run.require(), spec, run.path)
    found = resolve(run.manifest.records, spec)
    others = (
        [ref_of(run.manifest.records, i) for i in found.matches if i != found.pos] if found.others else []
    )
    before = runs.read_text(run, rec, "before")
    after = runs.read_text(run, rec, "after") if rec.after_file or rec.after_hash else None
    if rec.role in STAGE_ROLES and after is not None:
        _show_stage(run, rec, after, as_json, others)
        return
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
        if others:
            out["others"] = others
        if remarks:
            out["remarks"] = _remark_of(run, rec.index)
        _print_json(out)
        return
    from rich.text import Text

    from ..render.terminal import diff_view, pass_line

    con = _console()
    if others:  # `--pass Simplify` of five: the first, and say where the others are
        _warn(
            f"{rec.name} ran {len(others) + 1} times; this is the first (#{rec.index}); the others: "
            + ", ".join(others[:6])
            + (", ..." if len(others) > 6 else "")
        )
    counts = None
    if d is not None and ignore_whitespace:  # the header counts what the diff below shows
        counts = (
            sum(1 for r in d.rows if r.b is not None and r.kind not in ("same", "reindent")),
            sum(1 for r in d.rows if r.a is not None and r.kind not in ("same", "reindent")),
        )
    con.print(
        pass_line(runs.label(run.manifest, "?"), rec, d.note if d is not None else None, counts),
        soft_wrap=True,
    )
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
    else:
        lines = d.unified(
            context=context, a_name="before", b_name="after", ignore_whitespace=ignore_whitespace
        )
        if lines:
            write_lines(con, lines, LINE_STYLE)
        else:
            con.print(diff_view(d, context, ignore_whitespace=ignore_whitespace), soft_wrap=True)
    if remarks:
        if not isinstance(run.manifest.remarks, dict):
            _warn(_no_remarks(run))
            return
        p = _remark_of(run, rec.index)
        if p is None:
            con.print(Text(f"    (#{rec.index} {rec.name} wrote nothing to stderr)", style="dim"))
        else:
            _print_remark(con, p)


def _show_stage(run, rec, text: str, as_json: bool, others: list[str]) -> None:
    """Print a PTX or SASS stage (run --ptx, --sass): its text, not a diff against another language's."""
    from ..history import runs

    if as_json:
        out = {
            "run_id": run.run_id,
            "signature": run.manifest.signature,
            "path": str(run.path),
            "record": rec.to_json(),
            "diff": [],  # no diff: the stage's input is another language
            "rows": None,
            "note": None,
            "text": text,
        }
        if others:
            out["others"] = others
        _print_json(out)
        return
    from ..render.terminal import pass_line
    from ..render.visible import write_lines

    con = _console()
    con.print(pass_line(runs.label(run.manifest, "?"), rec, None, None), soft_wrap=True)
    write_lines(con, (("", line) for line in text.splitlines()), {}, indent="")


def _show_html(sel, as_json: bool) -> None:
    from ..render.html import write_index, write_report

    if not sel.runs:
        sel.one("--html")  # an invocation that traced no compile: one line, exit 2
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
