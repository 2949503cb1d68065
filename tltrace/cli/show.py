"""`tltrace show`: the command, its options and examples; the one view its flags pick (declared in
cli/views.py, checked before a record is read), opened on the selected records and printed by the
module that owns it (listing.py, passes.py, sourcemap.py, facts.py, layouts.py, profile.py) or
here (the rebuilt report)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import typer

from ..config import trace_dir_of as _trace_dir
from ..errors import TltraceError
from ..history.counts import known_names as count_names
from . import views
from .passes import show_pass as show_pass  # `bisect` prints a pass as show does
from .records import KERNEL_OPT, TRACE_DIR_OPT, _check_args, _print_json
from .shared import (
    context_option,
    count_option,
    ignore_whitespace_option,
    json_option,
    pass_option,
    selection_argument,
)
from .shared import fail as _fail

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
  tltrace show gemm.py -1 --line 22            what came of line 22: passes, CUDA, PTX, SASS (mix, spills)
  tltrace show gemm.py -1 --line gemm.py:22 --json   the same as JSON
  tltrace show gemm.py -1 --sass-line 140       the kernel.cu and Python lines of SASS line 140
  tltrace show gemm.py -1 --cuda-line 73        the Python line of kernel.cu:73 (--ptx-line for the PTX)
  tltrace show gemm.py --html                   (re)write the compile's report, or the invocation's index
  tltrace show gemm.py -1 --json                the newest invocation as JSON
  tltrace show gemm.py -1 --facts               TMA, WGMMA, cp.async, shared memory, stages of each compile
  tltrace show gemm.py --facts --json           the same as JSON (docs/facts.md names every fact)
  tltrace show gemm.py -1 --layouts             each fragment's and shared buffer's layout (docs/layouts.md)
  tltrace show gemm.py -1 --layouts --at C_l 0,2   the thread (threadIdx.x) and register holding C_l[0,2]
  tltrace show gemm.py -1 --layouts --thread 128   the elements and registers threadIdx.x 128 holds
  tltrace show gemm.py -1 --remarks             what the passes wrote to stderr (run --remarks)
  tltrace show gemm.py --pass LowerTileOp --remarks   a pass's diff, its remark under it
  tltrace show oob.py -1 --sanitizer            compute-sanitizer's errors at their Python lines (run --sanitize)
  tltrace show gemm.py -1 --count T.sync_threads   the barriers after every pass; where they changed
  tltrace show gemm.py -1 --count 'tl::tma_load' --json   a regex's count per pass as JSON
  tltrace show gemm.py -1 --launches            each kernel launch (run --launches): line, grid, arguments
  tltrace show gemm.py -1 --launches --compare 1 3   what differs between launches 1 and 3
  tltrace show fa.py -1 --hot --top 5           the 5 hottest Python lines (after 'tltrace run --ncu')
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
matching several compiles, --pass or --hot on an invocation of several, a --count PATTERN that
is not a regular expression, two views at once
or a flag the view does not take); 3 for missing or
damaged records (a manifest of an unknown schema; --hot on a compile no
'run --ncu' profiled).

""" + views.epilog()

_LAUNCHES_HELP = (
    "Each kernel launch of a run with 'tltrace run --launches': its compile, calling line, grid, block, "
    "shared memory, each argument's dtype, shape, strides and device; docs/launches.md."
)
_COMPARE_HELP = "With --launches: what differs between launches I and J (numbers of the list)."


def show_cmd(
    ctx: typer.Context,
    args: Optional[list[str]] = selection_argument(
        "A script, script/trace/run directory; then a RUN; then a signature prefix narrowing to one compile."
    ),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    pass_: Optional[str] = pass_option(
        "Print this pass's diff (NAME, phase/NAME, NAME#k for the k-th, or an index)."
    ),
    html: bool = typer.Option(
        False,
        "--html",
        help="(Re)write the compile's HTML report, or the invocation's "
        "index when it has several compiles, and print its path.",
    ),
    as_json: bool = json_option(),
    context: int = context_option(),
    ignore_whitespace: bool = ignore_whitespace_option(
        "Hide changes that only re-indent lines (with --pass)."
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
    line: Optional[str] = typer.Option(
        None,
        "--line",
        metavar="N|FILE:N",
        help="What came of this Python line: the IR of each pass that changed it, the generated source's "
        "lines, the PTX and SASS lines (run --ptx --sass) with the SASS instruction mix and spills.",
    ),
    cuda_line: Optional[int] = typer.Option(
        None,
        "--cuda-line",
        metavar="N",
        min=1,
        help="The Python line behind line N of the generated device source (kernel.cu; C on a CPU compile).",
    ),
    ptx_line: Optional[int] = typer.Option(
        None, "--ptx-line", metavar="N", min=1, help="The kernel.cu and Python lines behind PTX line N."
    ),
    sass_line: Optional[int] = typer.Option(
        None, "--sass-line", metavar="N", min=1, help="The kernel.cu and Python lines behind SASS line N."
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
    sanitizer: bool = typer.Option(
        False,
        "--sanitizer",
        help="compute-sanitizer's errors (an invocation run with 'tltrace run --sanitize'), each group of "
        "identical errors at its Python line with its count, threads and blocks.",
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
    count: Optional[str] = count_option(
        "A regex's count after every pass, and the passes that changed it (#71 ThreadSync 0 → 3); "
        "or a known operation, spelled as each stage spells it: " + ", ".join(count_names()) + "."
    ),
    hot: bool = typer.Option(
        False,
        "--hot",
        help="The Python lines that cost the most (a compile profiled by 'tltrace run --ncu'): share of "
        "warp-stall samples, top stall reasons, instructions executed, the CUDA and SASS behind each "
        "(--top N rows).",
    ),
    launches: bool = typer.Option(False, "--launches", help=_LAUNCHES_HELP),
    compare: Optional[tuple[int, int]] = typer.Option(None, "--compare", metavar="I J", help=_COMPARE_HELP),
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
    if fmt not in (None, "table", "json", "markdown"):
        raise _fail(f"--format {fmt!r} is not one of table, json, markdown")
    at_spec = list(at) if at and all(x is not None for x in at) else None
    try:  # the one view the flags pick (cli/views.py), or one line naming those that conflict
        view = views.choose(views.given(ctx))
        if at_spec is not None:
            from . import layouts as cli_layouts

            cli_layouts.parse_at(at_spec)  # bad input says so before any record is read
        if count is not None:
            from ..history.counts import pattern

            pattern(count)  # a bad regex: one line, exit 2, before any record is read
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    td = _trace_dir(trace_dir)
    target: str | None = items[0] if items else None
    run_spec: str | None = items[1] if len(items) > 1 else None
    signature_prefix: str | None = items[2] if len(items) > 2 else None
    target, run_spec = runs.split_target(target, run_spec)  # 'show -2', 'show gemm.py:-2'
    o = SimpleNamespace(
        as_json=as_json or fmt == "json",
        pass_=pass_,
        context=context,
        ignore_whitespace=ignore_whitespace,
        remarks=remarks,
        at=at_spec,
        thread=thread,
        top=top,
        line=line,
        count=count,
        compare=tuple(compare) if compare and all(x is not None for x in compare) else None,
        back={"cuda line": cuda_line, "ptx line": ptx_line, "sass line": sass_line},
    )
    try:
        if view.name in ("profile", "markdown"):  # where the time went, the CI summary: cli/profile.py
            _show_profile(
                target, run_spec, td, kernel, signature_prefix, baseline, o, view.name == "markdown"
            )
            return
        if view.name == "listing" and run_spec is None:
            loc = runs.locate(target, td)
            if loc.run_dir is None:
                from .listing import show_list

                show_list(loc, kernel, o.as_json)
                return
        sel = runs.open_selection(target, run_spec, td, kernel, signature_prefix)
        _SHOW[view.name](sel, o)
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None


def _show_profile(target, run_spec, td, kernel, signature, baseline, o, markdown: bool) -> None:
    """`--profile` (the slowest passes) and `--format markdown` (the CI summary with them)."""
    from . import profile as cli_profile

    chosen = cli_profile.select(target, run_spec, td, kernel, signature=signature)
    if not markdown:
        cli_profile.print_profile(chosen, o.top, o.as_json)
        return
    changed = None
    if baseline is not None:
        changed = cli_profile.fact_changes(target, run_spec, baseline, td, kernel, signature)
    sys.stdout.write(cli_profile.markdown(chosen, o.top, changed))


def _show_selection(sel, o) -> None:
    """The listing's view of a selection: one compile's passes, or one invocation's compiles."""
    from .listing import show_invocation
    from .passes import show_run

    if sel.single is not None:
        show_run(sel.single, o.as_json)
    else:
        show_invocation(sel, o.as_json)


def _show_pass(sel, o) -> None:
    show_pass(sel.one("--pass"), o.pass_, o.context, o.as_json, o.ignore_whitespace, o.remarks)


def _show_source_map(sel, o) -> None:
    from . import sourcemap as cli_sourcemap

    cli_sourcemap.show(sel.one("--source-map"), o.pass_, o.as_json)


def _show_line(sel, o) -> None:
    from . import byline

    byline.show(sel.one("--line"), o.line, o.as_json)


def _show_back(view: str) -> Callable[[Any, Any], None]:
    def show_back(sel, o) -> None:
        from . import byline

        kind = view.split(" ")[0]
        byline.back(sel.one(f"--{kind}-line"), kind, o.back[view], o.as_json)

    return show_back


def _show_remarks(sel, o) -> None:
    from .passes import show_remarks

    show_remarks(sel.one("--remarks"), o.as_json)


def _show_sanitizer(sel, o) -> None:
    from . import sanitizer as cli_sanitizer

    cli_sanitizer.show(sel, o.as_json)


def _show_facts(sel, o) -> None:
    from . import facts as cli_facts

    cli_facts.show(sel, o.as_json)


def _show_layouts(sel, o) -> None:
    from . import layouts as cli_layouts

    cli_layouts.show(sel, o.as_json, o.at, o.thread)


def _show_count(sel, o) -> None:
    from . import counts as cli_counts

    cli_counts.show(sel.one("--count"), o.count, o.as_json)


def _show_launches(sel, o) -> None:
    from . import launches as cli_launches

    cli_launches.show(sel, o.as_json, o.compare)


def _show_hot(sel, o) -> None:
    from . import hot as cli_hot

    cli_hot.show(sel, o.as_json, o.top)


def _show_html(sel, o) -> None:
    from ..history.report_reads import compile_report, index_report
    from ..render.html import write_index, write_report

    if not sel.runs:
        sel.one("--html")  # an invocation that traced no compile: one line, exit 2
    try:
        if sel.single is not None:
            run = sel.single
            run.require()
            path = write_report(compile_report(run.path), out=None)
        else:
            path = write_index(index_report(sel.invocation.script_dir, [r.path for r in sel.invocation.runs]))
    except TltraceError:
        raise
    except OSError as exc:
        raise TltraceError(f"cannot write the report ({exc.strerror or exc})") from None
    if o.as_json:
        out: dict[str, Any] = {"report": str(path), "invocation": sel.invocation.id}
        if sel.single is not None:
            out["run_id"] = sel.single.run_id
        _print_json(out)
    else:
        typer.echo(str(path))


# What each view of cli/views.py prints, by its name (profile and markdown: _show_profile).
_SHOW: dict[str, Callable[[Any, Any], None]] = {
    "listing": _show_selection,
    "pass": _show_pass,
    "source map": _show_source_map,
    "remarks": _show_remarks,
    "line": _show_line,
    "cuda line": _show_back("cuda line"),
    "ptx line": _show_back("ptx line"),
    "sass line": _show_back("sass line"),
    "report": _show_html,
    "facts": _show_facts,
    "sanitizer": _show_sanitizer,
    "layouts": _show_layouts,
    "count": _show_count,
    "launches": _show_launches,
    "hot": _show_hot,
}
