"""`tltrace check`: assert facts of a recorded compile (--expect) and FileCheck directives on its texts (--match)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import typer

from ..config import trace_dir_of as _trace_dir
from ..errors import EXIT_NOTHING, EXIT_OK, EXIT_SCRIPT_FAILED, NothingSelected, TltraceError
from .records import KERNEL_OPT, TRACE_DIR_OPT, _check_args, _print_json
from .shared import PathArgsCommand, json_option
from .shared import console as _console
from .shared import fail as _fail

CHECK_EPILOG = """\
Examples:

\b
  tltrace check gemm.py --expect 'wgmma >= 1' --expect 'spill_bytes == 0'
  tltrace check gemm.py -1 --match codegen_device 'CHECK: tl::wgmma_ss' 'CHECK-NOT: cp_async'
  tltrace check gemm.py -2 'gemm 1024' --expect 'smem_dynamic <= 49152 and warp_specialized == true'
  tltrace check gemm.py --match LowerTileOp 'CHECK: T.ptx_wgmma' --match codegen_device 'CHECK-COUNT-2: tl::tma_load'
  tltrace check gemm.py --expect 'tma_load >= 1' --json
  tltrace check gemm.py --expect 'max_nreg <= registers' --expect 'smem_dynamic <= 232448'

--expect EXPR: A OP B (== != < <= > >=), each side a fact NAME or a value (an
integer, true, false, none or a 'text'), at least one a fact; several joined by
'and'. NAME is a fact (docs/facts.md, 'tltrace show SCRIPT --facts' lists them);
a fact that is none fails its term, except against none. --match STAGE
DIRECTIVE...: LLVM FileCheck directives (CHECK, CHECK-NEXT, CHECK-SAME,
CHECK-NOT, CHECK-COUNT-n, CHECK-DAG, CHECK-EMPTY, CHECK-LABEL; {{regex}},
[[VAR:regex]] and [[VAR]]) over the text STAGE produced: a pass's output IR
(NAME, phase/NAME, NAME#k, an index) or a codegen call's source
(codegen_device, codegen_host). The directives are the words after --match
that start with CHECK; a match with a regex is stopped after --match-timeout
seconds. SCRIPT [RUN] [SIGNATURE] as 'tltrace show' takes them; every compile
selected is checked. Exit status: 0 every check holds; 1 one fails (printed
with the lines around the failure); 2 bad usage (an expression or directive
that does not parse, an unknown fact, a regex past --match-timeout); 3 missing
or damaged records; 7 nothing to check (no compile selected: the script
compiled nothing, or --kernel or SIGNATURE matched none; or no compile has the
--match stage).
"""

_DIRECTIVE = re.compile(r"^\s*CHECK(?:-[A-Za-z0-9-]*)?\s*:")


class CheckCommand(PathArgsCommand):
    """Keeps the arguments as given: which directive words follow which --match is their order."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        ctx.meta["tltrace_check_argv"] = list(args)
        return super().parse_args(ctx, args)


def register(app: typer.Typer) -> None:
    """Add `tltrace check` to the app."""
    app.command(
        "check", cls=CheckCommand, epilog=CHECK_EPILOG, context_settings={"ignore_unknown_options": True}
    )(check_cmd)


def check_cmd(
    ctx: typer.Context,
    args: Optional[list[str]] = typer.Argument(
        None,
        metavar="[SCRIPT_OR_DIR] [RUN] [SIGNATURE] [DIRECTIVE...]",
        help="What to check, as 'tltrace show' takes it; then the directives of each --match.",
        show_default=False,
    ),
    expects: Optional[list[str]] = typer.Option(
        None, "--expect", metavar="EXPR", help="A fact comparison that must hold, e.g. 'wgmma >= 1'."
    ),
    matches: Optional[list[str]] = typer.Option(
        None,
        "--match",
        metavar="STAGE",
        help="Match the CHECK directives that follow against the text STAGE produced.",
    ),
    trace_dir: Optional[Path] = TRACE_DIR_OPT,
    kernel: Optional[str] = KERNEL_OPT,
    context: int = typer.Option(2, "--context", metavar="N", min=0, help="Lines shown around a failure."),
    match_timeout: float = typer.Option(
        10.0,
        "--match-timeout",
        metavar="SECONDS",
        min=0.1,
        help="Stop a --match whose regex runs longer (per compile; exit 2).",
    ),
    as_json: bool = json_option("Print the outcomes as JSON."),
) -> None:
    """Check a recorded compile: its facts (--expect) and its texts (--match, FileCheck)."""
    from ..check import checks
    from ..history import runs

    raw = ctx.meta.get("tltrace_check_argv", [])
    try:
        groups = _directive_groups(raw, list(matches or []))
        positional = [a for a in (args or []) if not _DIRECTIVE.match(a)]
        _check_args(positional)
        if len(positional) > 3:
            raise _fail(
                f"too many arguments: {' '.join(positional[3:])}; give at most SCRIPT_OR_DIR, RUN and "
                "SIGNATURE (directives start with CHECK)"
            )
        if not expects and not groups:
            raise _fail("nothing to check: give --expect EXPR or --match STAGE 'CHECK: ...'")
        parsed_expects = [checks.parse_expect(e) for e in expects or []]
        parsed_matches = [checks.parse_match(stage, ds) for stage, ds in groups]
        target = positional[0] if positional else None
        run_spec = positional[1] if len(positional) > 1 else None
        signature = positional[2] if len(positional) > 2 else None
        target, run_spec = runs.split_target(target, run_spec)
        try:
            sel = runs.open_selection(target, run_spec, _trace_dir(trace_dir), kernel, signature)
        except NothingSelected as exc:
            raise _fail(f"nothing to check: {exc}", EXIT_NOTHING) from None
        for run in sel.runs:
            run.require()
        results = checks.check_runs(
            sel.runs,
            parsed_expects,
            parsed_matches,
            context,
            nothing=runs.no_compile_line(sel.invocation, sel.spec),
            timeout=match_timeout,
        )
    except TltraceError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    failed = sum(1 for _, outs in results for o in outs if not o.ok)
    if as_json:
        _print_json(
            {
                "ok": failed == 0,
                "failed": failed,
                "compiles": [
                    {
                        "run_id": run.run_id,
                        "signature": run.manifest.signature if run.manifest else None,
                        "status": run.status,
                        "ok": all(o.ok for o in outs),
                        "checks": [o.to_json() for o in outs],
                    }
                    for run, outs in results
                ],
            }
        )
    else:
        _print(results)
    raise typer.Exit(EXIT_SCRIPT_FAILED if failed else EXIT_OK)


def _directive_groups(raw: list[str], stages: list[str]) -> list[tuple[str, list[str]]]:
    """Return (STAGE, its directive words) in order: a directive belongs to the --match before it."""
    groups: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(raw):
        tok = raw[i]
        if tok == "--":
            i += 1
            continue
        if tok == "--match" or tok.startswith("--match="):
            stage = tok.split("=", 1)[1] if "=" in tok else (raw[i + 1] if i + 1 < len(raw) else "")
            groups.append((stage, []))
            i += 1 if "=" in tok else 2
            continue
        if _DIRECTIVE.match(tok):
            if not groups:
                raise _fail(f"{tok!r} comes before any --match STAGE; write --match STAGE {tok!r}")
            groups[-1][1].append(tok)
        i += 1
    if [g[0] for g in groups] != stages:  # the raw walk and click disagree: trust click's stages
        groups = [(s, groups[k][1] if k < len(groups) else []) for k, s in enumerate(stages)]
    for stage, ds in groups:
        if _DIRECTIVE.match(stage):
            raise _fail(f"--match needs a STAGE before its directives, e.g. --match codegen_device {stage!r}")
        if not ds:
            raise _fail(f"--match {stage} has no directive after it; e.g. --match {stage} 'CHECK: ...'")
    return groups


def _print(results: list[tuple[Any, list[Any]]]) -> None:
    from rich.text import Text

    from ..format.records import CUT_SHORT
    from ..render.visible import visible

    con = _console()
    several = len(results) > 1
    for run, outs in results:
        if several:
            label = run.manifest.signature or run.run_id
            cut = f"  ({run.status}: cut short)" if run.status in CUT_SHORT else ""
            con.print(
                Text(visible(f"{label}  {run.run_id}{cut}", one_line=True), style="bold"), soft_wrap=True
            )
        for o in outs:
            t = Text("  " if several else "")
            t.append("ok    " if o.ok else "FAIL  ", style="green" if o.ok else "bold red")
            t.append(("--expect " if o.kind == "expect" else "--match ") + o.check)
            t.append(f"  ({o.message})" if o.ok else "", style="dim")
            con.print(t, soft_wrap=True)
            if not o.ok:
                pad = "      " + ("  " if several else "")
                lines = [o.message] if o.kind == "expect" else [*o.context[:1], o.message, *o.context[1:]]
                for line in lines:
                    con.print(Text(pad + line), soft_wrap=True)
    n = sum(len(outs) for _, outs in results)
    failed = sum(1 for _, outs in results for o in outs if not o.ok)
    compiles = f" on {len(results)} compiles" if several else ""
    summary = f"{failed} of {n} checks failed{compiles}" if failed else f"all {n} checks passed{compiles}"
    con.print(Text(summary, style="red" if failed else "green"), soft_wrap=True)
