"""Hot lines: `tltrace run --ncu` (the script run again underneath Nsight Compute) and `show --hot`.

`run --ncu[=SECTIONS]` runs the same `tltrace run` (with --sass: the map it needs) under
`ncu --section SECTIONS --import-source yes -k <TileLang's kernels> --launch-count N`
(runtime/outer.py, runtime/ncu.py), reads the report back, keeps each compile's launches
beside it (`ncu.json`, the report as `ncu.ncu-rep`: runtime/profiled.py) and prints the
hot lines (history/hot.py) on stderr. No ncu, no permission for the counters, a report that
cannot be read: one line each, and the exit status stays the script's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import TltraceError
from ..runtime import ncu as ncu_tool
from ..runtime import outer, profiled

DEFAULT_TOP = 10
COLUMNS = (
    ("share", "right"),
    ("line", "left"),
    ("stalls", "left"),
    ("inst", "right"),
    ("cuda / sass", "left"),
)


def _say(line: str) -> None:
    typer.echo(f"tltrace: {line}", err=True)


def tool_for(p: dict[str, Any]) -> ncu_tool.Ncu | None:
    """Return ncu for `run --ncu` in the command the user typed; None without --ncu, in the inner run, or
    when there is no ncu (said in one line; --ncu is then dropped from `p`: the run goes on untouched)."""
    if not p.get("ncu") or outer.is_inner("ncu"):
        return None
    from ..tracing import watchdog

    if watchdog.is_supervised():  # --timeout's supervised child of the inner run: already under ncu
        return None
    try:
        return ncu_tool.locate()
    except ncu_tool.Unavailable as exc:
        _say(f"--ncu: {exc}; the script runs without it")
        p["ncu"] = False
        return None


def run_under_ncu(tool: ncu_tool.Ncu, p: dict[str, Any], script_dir: Path, kernels: str | None) -> int:
    """Run this command again under ncu; keep and print what it measured. Return the script's exit status."""
    script_dir.mkdir(parents=True, exist_ok=True)
    stem = script_dir / f".ncu-{os.getpid()}"
    report, log, dump = (stem.with_suffix(s) for s in (".ncu-rep", ".log", ".json"))
    sections = p.get("ncu_value") or ncu_tool.DEFAULT_SECTIONS
    prefix = ncu_tool.prefix(
        tool, report, log, sections, p.get("ncu_launches", ncu_tool.DEFAULT_LAUNCHES), kernels
    )
    from ..errors import EXIT_INTERRUPTED
    from ..proc.group import Terminated

    try:
        try:
            done = outer.run_under(prefix, outer.again(), script_dir, env=outer.inner_env("ncu"))
        except KeyboardInterrupt:  # forwarded to the group, whose run recorded itself interrupted
            return EXIT_INTERRUPTED
        except Terminated as exc:
            return exc.exit_code
        try:
            _keep(tool, done, report, log, dump)
        except (TltraceError, OSError, ValueError, KeyError, TypeError) as exc:  # never the script's status
            _say(f"--ncu: the profile could not be kept ({exc}); the report stays at {report}")
    finally:
        for f in (log, dump):
            f.unlink(missing_ok=True)
    return done.code


def _keep(tool: ncu_tool.Ncu, done: outer.Outcome, report: Path, log: Path, dump: Path) -> None:
    try:
        log_text = log.read_text(errors="replace")
    except OSError:
        log_text = ""
    why = ncu_tool.problem(log_text, report)
    if why is not None:
        _say(why)
        report.unlink(missing_ok=True)
        return
    try:
        data = ncu_tool.read(tool, report, dump)
    except (RuntimeError, OSError, ValueError) as exc:
        _say(f"--ncu: {exc}; the report stays at {report}")
        return
    try:
        compiles = [profiled.load_compile(d) for d in done.runs]
    except TltraceError as exc:
        _say(f"--ncu: {exc}; the report stays at {report}")
        return
    attached, unmatched = profiled.attach(data, compiles)
    if unmatched:
        _say(f"--ncu: no traced compile defines {', '.join(unmatched)} (not measured on a Python line)")
    if not attached:
        _say(f"--ncu: no profiled kernel came from a traced compile; the report stays at {report}")
        return
    by_run: dict[Path, dict[str, list[dict[str, Any]]]] = {}
    notes: dict[Path, list[str]] = {}
    for a in attached:
        by_run.setdefault(a.compile.run_dir, {})[a.kernel] = list(a.actions)
        if a.note:
            notes.setdefault(a.compile.run_dir, []).append(a.note)
    for run_dir, kernel_actions in by_run.items():
        profiled.store(run_dir, kernel_actions, str(data.get("source")), notes.get(run_dir, []))
    first = next(iter(by_run))
    os.replace(report, first / profiled.REPORT)
    for run_dir in by_run:
        _shade_report(run_dir)
        print_hot(profiled.hot_lines(run_dir), False, DEFAULT_TOP, err=True, where=run_dir)


def _shade_report(run_dir: Path) -> None:
    """Rebuild a profiled compile's HTML report, where it has one, so that its Source pane shades the
    hot lines; a failure is one line, the run goes on."""
    from ..history.report_reads import compile_report
    from ..render.html import REPORT_NAME, write_report

    if not (run_dir / REPORT_NAME).is_file():
        return
    try:
        write_report(compile_report(run_dir))
    except (TltraceError, OSError) as exc:
        _say(f"--ncu: the report of {run_dir.name} was not rebuilt with its hot lines ({exc})")


def print_hot(
    results: list[dict[str, Any]],
    as_json: bool,
    top: int | None,
    err: bool = False,
    where: Path | None = None,
) -> None:
    """Print each profiled kernel's ranked hot lines (or JSON: {run_id, kernels}; docs/show.schema.json "hot")."""
    n = DEFAULT_TOP if top is None else top
    if as_json:
        from .records import _print_json

        kernels = [{**r, "lines": r["lines"][:n], "other": r["other"][:n]} for r in results]
        _print_json({"run_id": where.name if where is not None else None, "kernels": kernels})
        return
    from rich.table import Table
    from rich.text import Text

    from .shared import console

    con = console()
    if err:
        con.file = sys.stderr
    for r in results:
        head = Text(f"hot lines of {r['kernel']}", style="bold")
        launches = r.get("launches", 1)
        head.append(
            f"  {r['samples']} warp-state samples, {r['inst']} instructions executed"
            f" ({launches} launch{'es' if launches != 1 else ''})",
            style="dim",
        )
        if r["mode"] != "sass":
            agree = r["agree"]
            head.append(
                f"\nthe binary measured is not the one tltrace disassembled ({agree['same']} of "
                f"{agree['checked']} instructions agree): lines are ncu's own, header lines kept apart",
                style="yellow",
            )
        for note in r.get("notes", []):
            head.append(f"\n{note}", style="dim")
        if where is not None:
            head.append(f"\nkept in {where}", style="dim")
        con.print(head, soft_wrap=True)
        table = Table(box=None, pad_edge=False, header_style="bold")
        for col, just in COLUMNS:
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        for row in _ranked(r, n):
            table.add_row(*_cells(row))
        con.print(table)


def _ranked(r: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The top `n` rows, Python lines and the rest (header lines, lines with no Python line) by samples."""
    rows = sorted(r["lines"] + r["other"], key=lambda x: (-x["samples"], -x["inst"]))
    return rows[:n]


def _cells(row: dict[str, Any]) -> tuple[Any, ...]:
    from rich.text import Text

    if "file" in row:
        where = Text(f"{os.path.basename(row['file'])}:{row['line']}")
        if row.get("text"):
            where.append(f"  {row['text']}", style="dim")
        if row.get("recovered"):
            where.append(
                f"\n{row['recovered']} samples by its T.copy (span dropped by TileLang)", style="dim"
            )
    else:
        where = Text(row["where"], style="italic")
    stalls = ", ".join(f"{k} {v}" for k, v in row["stalls"])
    behind = Text(", ".join(f"cu:{c['line']}" for c in row["cuda"][:4]))
    for s in row["sass"][:2]:
        behind.append(f"\n{s['offset']} {s['text']}", style="dim")
    return (f"{100 * row['share']:.1f}%", where, Text(stalls), str(row["inst"]), behind)


def show(sel: Any, as_json: bool, top: int | None) -> None:
    """`show --hot`: the hot lines of one compile profiled by `run --ncu`."""
    run = sel.one("--hot")
    run.require()
    print_hot(profiled.hot_lines(run.path), as_json, top, where=None if not as_json else run.path)
