"""`tltrace show`'s listing: every invocation of the scripts in a trace dir with its compiles, and
one invocation's compiles (under their call sites when they came from several lines), as tables
that fit the terminal or as JSON."""

from __future__ import annotations

from typing import Any

from ..proc.shell import command
from .records import _STATUS_STYLE, _command_line, _print_json, _size, _t, _when
from .shared import console as _console
from .shared import warn as _warn


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


def show_list(loc, kernel: str | None, as_json: bool) -> None:
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
                if kernel is None or (r.manifest is not None and r.manifest.kernel_name == kernel)
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
    table = CompileTable(several)
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


def _add_by_site(table: CompileTable, runs: list, *, indent: bool = False) -> None:
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


class CompileTable:
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


def show_invocation(sel, as_json: bool) -> None:
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
    table = CompileTable(False)
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
