"""`run --sanitize`'s lines at the end of the run, and `show RUN --sanitizer`: compute-sanitizer's errors
at the user's Python lines, one line per group of identical errors (the records: format/sanitizer.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import EXIT_INTERRUPTED, RecordsError
from ..format import sanitizer as records
from ..proc.shell import command as shell_command
from ..render.visible import visible
from .records import _print_json
from .shared import fail, without_option

SHORT = 40  # a Python line longer than this shows as its target: `B[i] = ...`
WIDTH = 72


def _code(text: str | None) -> str:
    t = (text or "").strip()
    if len(t) > SHORT and " = " in t:
        t = t.split(" = ", 1)[0] + " = ..."
    return t if len(t) <= WIDTH else t[: WIDTH - 1] + "…"


def sanitized(command: Any, value: str | None, script_dir: Path) -> int | None:
    """`run --sanitize[=TOOL]`: this command again underneath compute-sanitizer; return its exit status,
    or None when there is no compute-sanitizer (said in one line: the run goes on without it)."""
    from ..proc.group import Terminated
    from ..runtime import sanitize

    tool = value or sanitize.DEFAULT_TOOL
    if tool not in sanitize.TOOLS:
        raise fail(f"--sanitize={tool}: not a compute-sanitizer tool; use one of {', '.join(sanitize.TOOLS)}")
    exe = sanitize.find()
    if exe is None:
        typer.echo(
            "tltrace: --sanitize: compute-sanitizer not found (PATH, beside nvcc, /usr/local/cuda/bin); "
            "the script runs without it",
            err=True,
        )
        return None
    args = sys.argv[1:2] + without_option(command, sys.argv[2:], "--sanitize")
    try:
        out = sanitize.run(exe, tool, args, script_dir)
    except KeyboardInterrupt:  # forwarded to the child's group, which recorded itself interrupted
        return EXIT_INTERRUPTED
    except Terminated as exc:
        return exc.exit_code
    say_outcome(out)
    return out.code


def line_of(e: dict[str, Any]) -> str:
    """One error group as a line: 'memcheck: 24 invalid __global__ writes of 4 bytes in main_kernel at
    oob.py:15 `B[bx * 128 + i] = ...`, threads (104..127,0,0) block (7,0,0)'."""
    if e.get("kernel"):
        head = f"{e.get('tool')}: {e.get('count')} {e.get('what')} in {e['kernel']}"
    else:  # an error of no kernel (a CUDA API call's): its own words
        times = f" ({e.get('count')} times)" if e.get("count", 1) != 1 else ""
        head = f"{e.get('tool')}: {e.get('what')}{times}"
    py = e.get("python")
    if isinstance(py, dict):
        head += f" at {os.path.basename(str(py.get('file')))}:{py.get('line')} `{_code(py.get('text'))}`"
    elif e.get("cuda_line") is not None:
        head += f" at kernel.cu:{e['cuda_line']}"
    launch = e.get("launch")
    if e.get("threads"):
        head += f", threads {e['threads']} block{'s' if e.get('n_blocks', 1) != 1 else ''} {e.get('blocks')}"
    elif isinstance(launch, dict):
        head += f" (at {os.path.basename(str(launch.get('file')))}:{launch.get('line')})"
    sass = e.get("sass")
    if isinstance(sass, dict) and not sass.get("agrees"):
        at = f"kernel.cu:{sass.get('line')}" if sass.get("line") is not None else "no line"
        head += f"; the SASS map puts pc {e.get('pc')} at {at}, compute-sanitizer at kernel.cu:{e.get('cuda_line')}"
    if e.get("note"):
        head += f" ({e['note']})"
    return visible(head, one_line=True)


def say_outcome(out: Any) -> None:
    """The lines `run --sanitize` ends with, on stderr (the script owns stdout)."""
    if out.report.problem:
        typer.echo(f"{out.tool}: {out.report.problem}", err=True)
    named = out.named
    if not named and not out.report.problem:
        typer.echo(f"{out.tool}: no errors", err=True)
    for n in named:
        typer.echo(line_of(n.to_json(out.tool)), err=True)
    if out.kept:
        again = shell_command(
            "tltrace", "show", out.kept[-1].parent.parent.parent, out.invocation or "-1", "--sanitizer"
        )
        typer.echo(f"{out.tool}: kept with the records: {again}", err=True)
    elif out.xml is not None:
        typer.echo(f"{out.tool}: no compile was traced; compute-sanitizer's report: {out.xml}", err=True)


def show(sel: Any, as_json: bool) -> None:
    """Print the sanitizer errors kept in the selected compiles (`show RUN --sanitizer`)."""
    docs = []
    for run in sel.runs:
        try:
            doc = records.read(run.path)
        except ValueError as exc:
            raise RecordsError(f"{run.run_id}: {exc}") from None
        if doc is not None:
            docs.append((run, doc))
    errors = [e for _, doc in docs for e in doc["errors"]]
    if as_json:
        _print_json(
            {
                "invocation": sel.invocation.id,
                "sanitized": bool(docs),
                "tool": docs[0][1]["tool"] if docs else None,
                "problems": [doc["problem"] for _, doc in docs if doc.get("problem")],
                "errors": errors,
            }
        )
        return
    if not docs:
        typer.echo(
            f"invocation {sel.invocation.id} was not run under 'tltrace run --sanitize': no errors kept"
        )
        return
    for _, doc in docs:
        if doc.get("problem"):
            typer.echo(f"{doc['tool']}: {doc['problem']}")
    if not errors:
        typer.echo(f"{docs[0][1]['tool']}: no errors")
    for e in errors:
        typer.echo(line_of(e))
