"""`tltrace diff-runs`: two invocations compile by compile, or two compiles pass by pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..config import trace_dir_of as _trace_dir
from ..errors import EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_USAGE, TltraceError
from .records import KERNEL_OPT, TRACE_DIR_OPT, _check_args, _print_json, _t, _when
from .shared import console as _console
from .shared import fail as _fail

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
    from ..history import runs
    from ..history.compare import diff_invocations, diff_runs

    _check_args([a, b])
    td = _trace_dir(trace_dir)
    html_stdout = html is not None and str(html) == output_path.STDOUT
    if html_stdout and as_json:
        raise _fail("--html - and --json both want stdout; give --html a file")
    try:
        if html is not None:
            output_path.check(html, output_path.DIFF_HTML, force=force)
        sa = runs.parse_ref(a, td, script, kernel)
        sb = runs.parse_ref(b, td, script, kernel)
        for sel in (sa, sb):
            if not sel.runs:  # an invocation that traced no compile: nothing to compare
                raise runs.UsageError(runs.no_compile_line(sel.invocation, sel.spec))
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
        data["facts"] = _fact_changes(ra, rb)
        data["compiles"][0]["facts"] = data["facts"]
        data["layouts"] = _layout_changes(ra, rb)
        if focus is not None:
            data["focus"] = {**focus.to_json(), "diff": focus_diff}
        if report is not None:
            data["report"] = str(report)
        _print_json(data)
    else:
        _print_diff(d, ra, rb, focus, focus_diff, show_all, context)
        _print_fact_changes(_fact_changes(ra, rb))
        _print_layout_changes(_layout_changes(ra, rb))
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
    from ..history import runs
    from ..history.compare import COMPILE_DIFFERENT, COMPILE_ONLY_A, COMPILE_ONLY_B, COMPILE_SAME

    paths = {r.run_id: str(r.path) for r in (*sa.runs, *sb.runs)}
    by_id = {r.run_id: r for r in (*sa.runs, *sb.runs)}
    facts = {
        (c.a.run_id, c.b.run_id): _fact_changes(by_id[c.a.run_id], by_id[c.b.run_id])
        for c in inv.compiles
        if c.a is not None and c.b is not None and c.a.run_id in by_id and c.b.run_id in by_id
    }
    if as_json:
        data = {"a": _selection_json(sa), "b": _selection_json(sb), **inv.to_json()}
        for c in data["compiles"]:
            c["a_path"] = paths.get(c["a_run_id"]) if c["a_run_id"] else None
            c["b_path"] = paths.get(c["b_run_id"]) if c["b_run_id"] else None
            c["facts"] = facts.get((c["a_run_id"], c["b_run_id"]), [])
            ra, rb = by_id.get(c["a_run_id"]), by_id.get(c["b_run_id"])
            c["layouts"] = _layout_changes(ra, rb) if ra is not None and rb is not None else []
        _print_json(data)
        return
    from rich.text import Text

    con = _console()
    for side, sel in (("A", sa), ("B", sb)):
        t = Text()
        t.append(f"{side}: ", style="bold")
        t.append(f"{sel.invocation.script_dir.name}  invocation {sel.spec}  {sel.invocation.id}")
        t.append(f"  {len(sel.runs)} compile(s), {_when(sel.invocation.started)}", style="dim")
        con.print(t, soft_wrap=not con.is_terminal)
    styles = {
        COMPILE_SAME: "dim",
        COMPILE_DIFFERENT: "bold yellow",
        COMPILE_ONLY_A: "red",
        COMPILE_ONLY_B: "red",
    }
    from ..render.table import Column, cut_end, distinct_cut, fit

    order = {COMPILE_DIFFERENT: 0, COMPILE_ONLY_A: 1, COMPILE_ONLY_B: 2, COMPILE_SAME: 3}
    rows = []
    for c in sorted(inv.compiles, key=lambda c: order[c.status]):
        first = c.diff.first_difference if c.diff is not None else None
        where = ""
        if first is not None:
            where = f"{first.label} ({first.status})"
        rows.append(
            [
                (c.status.replace("_", "-"), styles[c.status]),
                (runs.label(c.a, c.a.run_id) if c.a else "-", ""),
                (runs.label(c.b, c.b.run_id) if c.b else "-", ""),
                (where, ""),
            ]
        )
    labels = [r[1][0] for r in rows] + [r[2][0] for r in rows]
    columns = [
        Column("status"),
        Column("A", cut=distinct_cut(labels), min_width=12),
        Column("B", cut=distinct_cut(labels), min_width=12),
        Column("first difference", cut=cut_end, min_width=16),
    ]
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    from ..facts import describe

    for c in inv.compiles:
        changed = facts.get((c.a.run_id, c.b.run_id)) if c.a is not None and c.b is not None else None
        if changed:
            t = Text(f"facts of {runs.label(c.a, c.a.run_id)}: ", style="bold")
            t.append(describe(changed))
            con.print(t, soft_wrap=True)
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


def _fact_changes(ra, rb) -> list[dict[str, Any]]:
    """Return the facts that differ between two compiles ([{name, a, b}]; docs/facts.md)."""
    from ..facts import changes, facts_of

    return changes(facts_of(ra), facts_of(rb))


def _layout_changes(ra, rb) -> list[dict[str, Any]]:
    """Return the buffers whose layout differs between two compiles ([{buffer, func, change}]; docs/layouts.md)."""
    from ..layouts import model

    ma, mb = getattr(ra, "manifest", None), getattr(rb, "manifest", None)
    changed = model.changed(getattr(ma, "layouts", None), getattr(mb, "layouts", None))
    return [{k: c[k] for k in ("buffer", "func", "change")} for c in changed]


def _print_layout_changes(changed: list[dict[str, Any]]) -> None:
    from rich.text import Text

    if changed:
        t = Text("layouts changed: ", style="bold")
        t.append(
            ", ".join(
                c["buffer"] + ("" if c["change"] == "changed" else f" ({c['change']})") for c in changed
            )
        )
        _console().print(t, soft_wrap=True)


def _print_fact_changes(changed: list[dict[str, Any]]) -> None:
    from rich.text import Text

    from ..facts import describe

    if changed:
        t = Text("facts: ", style="bold")
        t.append(describe(changed))
        _console().print(t, soft_wrap=True)


def _focus_pair(d, spec: str | None):
    """Return the pair to show as a diff: the --pass one, else the first whose output differs."""
    from ..history import runs
    from ..history.compare import ONLY_A, ONLY_B

    if spec is None:
        return d.first_output_change
    rec = runs.find_record(d.a, spec)
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
    from ..history import runs

    ta = runs.read_text(ra, pair.a, "after") if pair.a.after_hash else runs.read_text(ra, pair.a, "before")
    tb = runs.read_text(rb, pair.b, "after") if pair.b.after_hash else runs.read_text(rb, pair.b, "before")
    lines = diff(ta, tb).unified(
        context=context, a_name=f"A {pair.label} output", b_name=f"B {pair.label} output", tilde=tilde
    )
    return [list(x) for x in lines] if tilde else [line for _, line in lines]


def _describe(p) -> str:
    return f"{p.label}  (A #{p.a.index if p.a else '-'}, B #{p.b.index if p.b else '-'})"


def _print_diff(d, ra, rb, focus, focus_diff, show_all: bool, context: int) -> None:
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
        con.print(t, soft_wrap=not con.is_terminal)
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
    from ..render.table import Column, cut_middle, fit

    columns = [
        Column("A", "right"),
        Column("B", "right"),
        Column("phase", drop=1),
        Column("pass", cut=cut_middle, min_width=14),
        Column("status"),
    ]
    rows: list[list[tuple[str, str]]] = []
    hidden = 0

    def flush_hidden() -> None:
        nonlocal hidden
        if hidden:
            rows.append([("", ""), ("", ""), ("", ""), (f"... {hidden} pass(es) the same", "dim"), ("", "")])
            hidden = 0

    for p in d.pairs:
        if p.status == SAME and not show_all:
            hidden += 1
            continue
        flush_hidden()
        rec = p.a or p.b
        name = p.key[1] + (f"#{p.key[2]}" if p.key[2] > 1 else "")
        rows.append(
            [
                (str(p.a.index) if p.a else "-", ""),
                (str(p.b.index) if p.b else "-", ""),
                (p.key[0], ""),
                ("  " * rec.depth + name, ""),
                (p.status, styles.get(p.status, "italic dim")),
            ]
        )
    flush_hidden()
    if not d.same or show_all:
        for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
            con.print(line, soft_wrap=True)
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
        con.print(t, soft_wrap=not con.is_terminal)
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
    from ..history.compare import INPUT_DIFFERS, SAME
    from ..render import diffruns

    data = d.to_json()
    diffs = []
    first = d.first_output_change
    # Compiles of different inputs: every pass's input differs; only the passes that did different
    # work (changed in one, not the other) and the first differences get a diff, not all 62.
    from_start = d.first_input_divergence is not None and d.first_input_divergence is d.pairs[0]
    keep = {id(x) for x in (d.first_output_change, d.first_output_divergence, d.first_input_divergence) if x}
    for p in d.pairs:
        if p.status == SAME or p.a is None or p.b is None:
            continue
        if from_start and p.status == INPUT_DIFFERS and p.a.status == p.b.status and id(p) not in keep:
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
    from ..layouts import model

    data["layouts"] = model.changed(
        ra.manifest.layouts, rb.manifest.layouts
    )  # both sides' entries: both grids
    from .. import output_path

    page = diffruns.render(data).encode("utf-8", "surrogatepass")
    return output_path.write(out, output_path.DIFF_HTML, page, force=force).path
