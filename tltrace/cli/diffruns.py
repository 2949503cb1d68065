"""`tltrace diff-runs`: two invocations compile by compile, or two compiles pass by pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..config import trace_dir_of as _trace_dir
from ..errors import EXIT_OK, EXIT_SCRIPT_FAILED, EXIT_USAGE, TltraceError
from .records import KERNEL_OPT, TRACE_DIR_OPT, _check_args, _print_json, _t, _when
from .shared import console as _console
from .shared import context_option, count_option, force_option, json_option, pass_option, verbose_option
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
  tltrace diff-runs gemm.py:-2 gemm.py:-1 -v    every differing pass, whole diffs
  tltrace diff-runs gemm.py:-2 gemm.py:-1 --count T.sync_threads   barriers per pass, where A and B differ

Two invocations are compared compile by compile: compiles with identical input IR
pair first, then by kernel name and launch shape (then a kernel's only compile on
each side); each pair is 'same' or 'different' (with its first divergent pass),
unpaired compiles are 'only-a' / 'only-b'. --json: {"compiles": [{"status": same|
different|only_a|only_b, "a_run_id", "b_run_id", "a_signature", "b_signature",
...}]}. When A and B are one compile each (a script that compiles one kernel,
--kernel, a run dir), passes are compared as follows: aligned by phase, name and
occurrence (the 2nd Simplify with the 2nd Simplify), not by index, and compared
by the hashes of their input and output. Two compiles that differ lead with the
effect, in under 40 lines: the signatures, the facts that changed, the passes whose
work changed in kind (one side only, changed vs left alone, failed), the first pass
whose output differs with its diff, and the codegen diff, each cut to fit; -v lists
every differing pass with whole diffs. --pass, --html and --count need one compile
each. --count PATTERN (a regex or a known operation, as 'show --count') prints,
per aligned pass, the count after it in A and in B where the two differ, and the
passes that changed it on each side (--json: every pass); exit 0 when the counts
agree after every pass, 1 when they differ.
A side run with 'tltrace run --launches' adds a line of its launches per kernel
(A → B; --json "launches": {"a", "b"}); they do not change the exit status.
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
    pass_: Optional[str] = pass_option("Print the cross-run diff of this pass's output (a pass of A)."),
    show_all: bool = typer.Option(False, "--all", help="List every pass, not only the differing ones."),
    verbose: bool = verbose_option(
        "Every differing pass and whole diffs (default: the effect in about 40 lines)."
    ),
    html: Optional[Path] = typer.Option(
        None, "--html", metavar="PATH", help="Write an HTML report of the differing passes to PATH."
    ),
    as_json: bool = json_option(),
    context: int = context_option(),
    kernel: Optional[str] = KERNEL_OPT,
    force: bool = force_option("Let --html replace a file that tltrace did not write (or a link)."),
    count: Optional[str] = count_option(
        "A regex's (or a known operation's, as 'show --count') count after each pass of A and B, "
        "side by side where they differ, instead of the pass diff."
    ),
) -> None:
    """Compare two invocations compile by compile (or two compiles pass by pass)."""
    from ..fs import output_path
    from ..history import runs
    from ..history.compare import diff_invocations, diff_runs

    _check_args([a, b])
    td = _trace_dir(trace_dir)
    html_stdout = html is not None and str(html) == output_path.STDOUT
    if html_stdout and as_json:
        raise _fail("--html - and --json both want stdout; give --html a file")
    if count is not None:
        given = [
            f for f, v in (("--pass", pass_), ("--html", html), ("--all", show_all), ("-v", verbose)) if v
        ]
        if given:
            raise _fail(f"--count and {given[0]} are two outputs of diff-runs: ask for one at a time")
    try:
        if count is not None:
            from ..history.counts import pattern

            pattern(count)  # a bad regex: one line, exit 2, before any record is read
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
            if pass_ is not None or html is not None or count is not None:
                what = "--pass" if pass_ is not None else ("--html" if html is not None else "--count")
                (sa if sa.single is None else sb).one(what)
            inv = diff_invocations([r.require() for r in sa.runs], [r.require() for r in sb.runs])
        else:
            inv = None
            ra, rb = sa.single, sb.single
            d = diff_runs(ra.require(), rb.require())
            if count is not None:
                from . import counts as cli_counts

                raise typer.Exit(
                    EXIT_SCRIPT_FAILED if cli_counts.diff(d, ra, rb, count, as_json) else EXIT_OK
                )
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
        data["compiles"][0]["a_status"], data["compiles"][0]["b_status"] = ra.status, rb.status
        data["layouts"] = _layout_changes(ra, rb)
        if focus is not None:
            data["focus"] = {**focus.to_json(), "diff": focus_diff}
        if report is not None:
            data["report"] = str(report)
        _add_launches(data, sa, sb)
        _print_json(data)
    else:
        _print_diff(d, ra, rb, focus, focus_diff, show_all, context, verbose or pass_ is not None)
        _print_layout_changes(_layout_changes(ra, rb))
        _print_launches(sa, sb)
        cut = _cut_compiles(sa, sb)
        if cut:
            typer.echo(cut)
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


def _cut_compiles(sa, sb) -> str | None:
    """Return the line naming the compiles of either side that a dead process cut short, or None."""
    from ..format.records import CUT_SHORT
    from ..history import runs

    cut = [
        f"{side} {_one(runs.label(r.manifest, r.run_id))} ({r.status})"
        for side, sel in (("A", sa), ("B", sb))
        for r in sel.runs
        if r.status in CUT_SHORT and r.manifest is not None
    ]
    if not cut:
        return None
    return (
        f"cut short, their records stop where the process died (passes past that are 'only in' the "
        f"other side): {'; '.join(cut)}"
    )


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
            c["a_status"] = ra.status if ra is not None else None  # as `show` lists it
            c["b_status"] = rb.status if rb is not None else None
        _add_launches(data, sa, sb)
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
    cut = _cut_compiles(sa, sb)
    if cut:
        con.print(Text(cut, style="yellow"), soft_wrap=True)
    from ..facts import describe

    for c in inv.compiles:
        changed = facts.get((c.a.run_id, c.b.run_id)) if c.a is not None and c.b is not None else None
        if changed:
            t = Text(f"facts of {_one(runs.label(c.a, c.a.run_id))}: ", style="bold")
            t.append(describe(changed))
            con.print(t, soft_wrap=True)
    counts = ", ".join(f"{n} {s.replace('_', '-')}" for s, n in inv.counts.items() if n)
    if inv.same:
        con.print(Text(f"same: {len(inv.compiles)} compile(s), every pass identical", style="bold green"))
    else:
        con.print(Text(f"different: {counts}", style="bold red"))
        kernels = {m.kernel for c in inv.compiles for m in (c.a, c.b) if m is not None}
        how = (  # --kernel NAME picks no pair where every compile is of one kernel
            "tltrace diff-runs A B --kernel NAME, or SCRIPT:RUN_ID for each side"
            if len(kernels) > 1
            else "tltrace diff-runs SCRIPT:RUN_ID SCRIPT:RUN_ID (one compile for each side)"
        )
        con.print(
            _t(f"one pair pass by pass: {how}", "dim"),
            soft_wrap=True,
        )
    _print_launches(sa, sb)


def _launch_counts(sel) -> dict[str, int] | None:
    """{kernel: launches} of a side run with --launches (its selected compiles'), else None."""
    from ..history.launches import counts_by_kernel, read_launches

    narrowed = len(sel.runs) != len(sel.invocation.runs)
    try:
        return counts_by_kernel(
            read_launches(
                sel.invocation.script_dir, sel.invocation.id, sel.runs, narrowed, sel.invocation.runs
            )
        )
    except TltraceError:
        return None


def _add_launches(data: dict[str, Any], sa, sb) -> None:
    """--json: "launches": {"a": {kernel: count} | null, "b": ...} when a side was run with --launches."""
    a, b = _launch_counts(sa), _launch_counts(sb)
    if a is not None or b is not None:
        data["launches"] = {"a": a, "b": b}


def _print_launches(sa, sb) -> None:
    """One line of launch counts per kernel, A → B, when a side was run with --launches."""
    a, b = _launch_counts(sa), _launch_counts(sb)
    if a is None and b is None:
        return
    names = list(dict.fromkeys([*(a or {}), *(b or {})]))

    def side(counts: dict[str, int] | None, name: str) -> str:
        return "-" if counts is None else str(counts.get(name, 0))

    text = ", ".join(f"{n} {side(a, n)} → {side(b, n)}" for n in names) or "none"
    _console().print(_t(f"launches (run --launches; '-': not recorded): {text}", "dim"), soft_wrap=True)


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


LEAD_LINES = 38  # the default view's budget: the effect of a change, not every pass


def _print_diff(d, ra, rb, focus, focus_diff, show_all: bool, context: int, verbose: bool = False) -> None:
    """Print one compile against another: the effect first (signature, facts, the passes whose
    work changed in kind, codegen), in LEAD_LINES lines; `verbose` or `show_all`: every pass, whole diffs."""
    from rich.text import Text

    from ..history.compare import INPUT_DIFFERS, SAME
    from ..history.runs import label

    con = _console()
    out: list[Text] = []
    for side, run in (("A", ra), ("B", rb)):
        m = run.manifest
        t = Text()
        t.append(f"{side}: ", style="bold")
        t.append(f"{_one(m.script)}  {_one(run.run_id)}")
        t.append(
            f"  {_one(label(m, '?'))}, {_one(m.target or '?')}/{_one(m.backend or '?')}, {len(m.records)} passes,"
            f" {run.status}",
            style="dim",
        )
        out.append(t)
    if d.a.kernel != d.b.kernel and d.a.script == d.b.script:
        out.append(
            Text(
                f"note: A and B compiled different kernels ({_one(d.a.kernel)}, {_one(d.b.kernel)}); "
                "--kernel NAME compares the runs of one kernel",
                style="yellow",
            )
        )
    if d.same:
        if show_all or verbose:
            out.extend(_pass_rows(d.pairs, show_all=True))
        out.append(Text(f"same: {len(d.pairs)} passes, inputs and outputs identical", style="bold green"))
        _emit(con, out)
        return
    sig = _signature_line(d.a, d.b)
    if sig is not None:
        out.append(sig)
    from ..facts import changes, describe, facts_of

    fa, fb = facts_of(ra), facts_of(rb)
    changed = changes(fa, fb)
    known = sum(1 for k, v in fa.items() if v is not None and fb.get(k) is not None)
    t = Text("facts: ", style="bold")
    if changed:
        t.append(describe(changed))
    else:
        t.append(f"the same ({known} known on both sides)" if known else "none known on both sides", "dim")
    out.append(t)
    counts = ", ".join(f"{n} {s}" for s, n in d.counts.items() if n)
    out.append(Text(f"different: {counts}", style="bold red"))
    from_start = (
        d.first_input_divergence is not None
        and d.first_input_divergence is d.first_difference
        and d.first_input_divergence.a is not None
        and d.first_input_divergence.a.index == min(r.index for r in d.a.records)
    )
    if from_start:
        out.append(Text("  the runs started from different IR (the kernel itself differs)", style="dim"))
    if verbose or show_all:
        out.extend(_pass_rows(d.pairs, show_all=show_all))
    else:
        kind = d.changed_in_kind
        t = Text(f"passes whose work changed in kind: {len(kind)} of {len(d.pairs)}", style="bold")
        others = d.counts[INPUT_DIFFERS] - sum(1 for p in kind if p.status == INPUT_DIFFERS)
        if others:
            t.append(
                f" ({others} more saw a different input and did the same kind of work; -v lists them)", "dim"
            )
        out.append(t)
        rows = _pass_rows(kind, show_all=True, kinds=True) if kind else []
        cap = 10
        if len(rows) > cap + 1:  # the header line, then the rows
            out.extend(rows[: cap + 1])
            out.append(Text(f"   ... {len(rows) - cap - 1} more (-v lists every pass)", style="dim"))
        else:
            out.extend(rows)
    lead = not (verbose or show_all)
    firsts = []
    if d.first_output_change is not None:
        firsts.append(("first pass whose output differs", d.first_output_change))
    if not lead or d.first_output_divergence is not None:
        firsts.append(("first pass whose input matched but output differs", d.first_output_divergence))
    if not lead or d.first_input_divergence is not d.first_output_change:
        firsts.append(("first pass whose input differs", d.first_input_divergence))
    for what, p in firsts:
        t = Text(f"{what}: ", style="bold")
        t.append(_describe(p) if p is not None else "none", style="" if p is not None else "dim")
        out.append(t)
    if lead:
        context = min(context, 1)
    diffs: list[tuple[Text, list[tuple[str, str]], str]] = []  # (title, tilde lines, the command for all)
    if focus is not None and focus_diff is not None:
        diffs.append(
            (
                Text(f"{focus.label}: output of A vs output of B", style="bold"),
                _pair_diff(ra, rb, focus, context, tilde=True) if focus_diff else [],
                f"--pass {focus.key[1]}" + (f"#{focus.key[2]}" if focus.key[2] > 1 else ""),
            )
        )
    for role, status in d.codegen.items():
        line = Text(f"codegen {role}: {status}", style="bold" if status != SAME else "dim")
        pair = _codegen_pair(d, role)
        if status != "differs" or pair is None or pair is focus:
            out.append(line)
            continue
        lines = _pair_diff(ra, rb, pair, context, tilde=True)
        plus = sum(1 for k, _ in lines if k == "add")
        minus = sum(1 for k, _ in lines if k == "del")
        line.append(f" (+{plus}/-{minus} lines)", style="dim")
        diffs.append((line, lines, f"--pass {pair.key[1]}"))
    if not diffs:
        _emit(con, out)
        return
    from ..render.terminal import lines_text

    left = None if verbose or show_all else max(LEAD_LINES - len(out) - 2 * len(diffs), 6 * len(diffs))
    for n, (title, lines, flag) in enumerate(diffs):
        out.append(title)
        if not lines:
            out.append(Text("    (outputs are identical)", style="dim"))
            continue
        share = None if left is None else max(4, left // (len(diffs) - n))
        if left is not None:
            lines = [x for x in lines if x[0] != "file"]  # the title names both sides
        shown = lines if share is None or len(lines) <= share else lines[: share - 1]
        out.append(lines_text([tuple(x) for x in shown]))  # type: ignore[misc]
        if len(shown) < len(lines):
            out.append(
                Text(
                    f"    ... {len(lines) - len(shown)} more lines: tltrace diff-runs A B {flag} (or -v)",
                    "dim",
                )
            )
        if left is not None:
            left -= len(shown)
    _emit(con, out)


def _emit(con, lines) -> None:
    for t in lines:
        con.print(t, soft_wrap=True)


def _one(text: object) -> str:
    """A name from the records (kernel, signature, script, run id) as one visible line (render/visible.py)."""
    from ..render.visible import visible

    return visible(str(text), one_line=True)


def _signature_line(a, b):
    """Return `signature: ...` naming the words that differ (None when both compiles have none)."""
    from rich.text import Text

    sa, sb = a.signature or a.kernel, b.signature or b.kernel
    sa, sb = (_one(x) if x else x for x in (sa, sb))
    if not sa and not sb:
        return None
    t = Text("signature: ", style="bold")
    if sa == sb:
        t.append(f"{sa} (the same)", style="dim")
        return t
    wa, wb = (sa or "-").split(" "), (sb or "-").split(" ")
    for i, w in enumerate(wa):
        t.append(("" if i == 0 else " ") + w, style="red" if i >= len(wb) or wb[i] != w else "")
    t.append("  \u2192  ", style="bold")
    for i, w in enumerate(wb):
        t.append(("" if i == 0 else " ") + w, style="green" if i >= len(wa) or wa[i] != w else "")
    return t


def _codegen_pair(d, role: str):
    """Return the pair of the codegen record of `role` (as RunDiff.codegen names it), else None."""
    for p in d.pairs:
        rec = p.a or p.b
        if rec is None or (rec.status != "codegen" and rec.phase != "codegen") or p.a is None or p.b is None:
            continue
        r = rec.role or (rec.name.removeprefix("codegen_") if rec.name.startswith("codegen_") else "codegen")
        if p.key[2] > 1:
            r = f"{r}#{p.key[2]}"
        if r == role:
            return p
    return None


def _pass_rows(pairs, *, show_all: bool, kinds: bool = False) -> list:
    """Return the pass table's lines: every pair, or the differing ones with runs of same folded."""
    from ..history.compare import INPUT_DIFFERS, OUTPUT_DIFFERS, SAME
    from ..render.table import Column, cut_middle, fit

    con = _console()
    styles = {SAME: "dim", OUTPUT_DIFFERS: "bold yellow", INPUT_DIFFERS: "red"}
    columns = [
        Column("A", "right"),
        Column("B", "right"),
        Column("phase", drop=1),
        Column("pass", cut=cut_middle, min_width=14),
        Column("status"),
    ]
    if kinds:
        columns.append(Column("work A / B", drop=2))
    rows: list[list[tuple[str, str]]] = []
    hidden = 0

    def flush_hidden() -> None:
        nonlocal hidden
        if hidden:
            rows.append(
                [("", ""), ("", ""), ("", ""), (f"... {hidden} pass(es) the same", "dim"), ("", "")]
                + ([("", "")] if kinds else [])
            )
            hidden = 0

    for p in pairs:
        if p.status == SAME and not show_all:
            hidden += 1
            continue
        flush_hidden()
        rec = p.a or p.b
        name = p.key[1] + (f"#{p.key[2]}" if p.key[2] > 1 else "")
        row = [
            (str(p.a.index) if p.a else "-", ""),
            (str(p.b.index) if p.b else "-", ""),
            (p.key[0], ""),
            ("  " * rec.depth + name, ""),
            (p.status, styles.get(p.status, "italic dim")),
        ]
        if kinds:
            row.append((f"{p.a.status if p.a else '-'} / {p.b.status if p.b else '-'}", ""))
        rows.append(row)
    flush_hidden()
    return list(fit(columns, rows, con.width if con.is_terminal else None, rule=False))


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
        codegen = p.a.status == "codegen" or p.a.phase == "codegen"
        if (
            from_start
            and p.status == INPUT_DIFFERS
            and p.a.status == p.b.status
            and id(p) not in keep
            and not (codegen and p.a.after_hash != p.b.after_hash)  # the codegen diff is always shown
        ):
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
                "open": p is first or (codegen and p.a.after_hash != p.b.after_hash),
                "codegen": codegen,
                "diff": _pair_diff(ra, rb, p, context, tilde=True),
            }
        )
    data["diffs"] = diffs
    data["facts"] = _fact_changes(ra, rb)
    from ..layouts import model

    data["layouts"] = model.changed(
        ra.manifest.layouts, rb.manifest.layouts
    )  # both sides' entries: both grids
    from ..fs import output_path

    page = diffruns.render(data).encode("utf-8", "surrogatepass")
    return output_path.write(out, output_path.DIFF_HTML, page, force=force).path
