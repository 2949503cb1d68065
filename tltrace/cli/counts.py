"""`--count PATTERN`: a pattern's count after every pass of one compile (`show`), or of two compiles
side by side (`diff-runs`); the counting is history/counts.py's."""

from __future__ import annotations

from typing import Any

from .records import _print_json, _t
from .shared import console as _console
from .shared import warn as _warn

_LANG = {"tir": "TIR", "source": "source", "ptx": "PTX", "sass": "SASS"}


def _n(v: int | None) -> str:
    return "-" if v is None else str(v)


def _change(before: int | None, after: int | None, langs: tuple[str, str]) -> str:
    """`0 → 3`, with the languages when the pass turns one into another (codegen: `TIR 4 → source 4`)."""
    if langs[0] != langs[1]:
        return f"{_LANG[langs[0]]} {_n(before)} \u2192 {_LANG[langs[1]]} {_n(after)}"
    return f"{_n(before)} \u2192 {_n(after)}"


def change_line(row: Any) -> str:
    """One change as every line names a pass: `#71 ThreadSync 0 → 3` (the # `--pass` takes)."""
    return f"#{row.index} {row.name} {_change(row.before, row.after, row.languages)}"


def _describe(pat: Any) -> str:
    if pat.known is None:
        return f"regex {pat.regex['tir'].pattern!r}"
    spelt = ", ".join(f"{_LANG[k]} {p.pattern}" for k, p in pat.regex.items() if p is not None)
    return f"{pat.known} ({spelt})"


def show(run: Any, spec: str, as_json: bool) -> None:
    """Print `spec`'s count after every pass of `run`, and the passes where it changed."""
    from ..history import counts as core
    from ..history import runs

    pat = core.pattern(spec)
    c = core.count_run(run, pat)
    if as_json:
        _print_json(
            {
                "run_id": run.run_id,
                "signature": run.manifest.signature,
                "path": str(run.path),
                **c.to_json(),
            }
        )
        return
    from ..render.table import Column, cut_middle, fit
    from ..render.visible import visible

    con = _console()
    head = _t(f"{visible(runs.label(run.manifest, '?'), one_line=True)}  {run.run_id}", "bold")
    con.print(head, soft_wrap=True)
    con.print(_t(f"count of {_describe(pat)}", "dim"), soft_wrap=True)
    columns = [
        Column("#", "right"),
        Column("phase", drop=2),
        Column("pass", cut=cut_middle, min_width=14),
        Column("count", "right"),
        Column("changed", drop=1),
    ]
    rows = []
    if c.rows:
        first = c.rows[0]
        rows.append([("", ""), ("", ""), ("(input)", "dim"), (_n(first.before), ""), ("", "")])
    for r in c.rows:
        rows.append(
            [
                (str(r.index), ""),
                (r.phase, ""),
                ("  " * r.depth + r.name, "bold" if r.changed else ""),
                (_n(r.after), "bold" if r.changed else ""),
                (_change(r.before, r.after, r.languages) if r.changed else "", "yellow"),
            ]
        )
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    ch = c.changes
    if ch:
        con.print(_t(f"changed in {len(ch)} pass(es):", "bold"))
        for r in ch:
            con.print(_t("  " + visible(change_line(r), one_line=True)), soft_wrap=True)
    else:
        con.print(_t("no pass changed the count", "dim"))
    if not c.matched:
        _warn(f"--count {spec!r} matches nothing in any recorded text of {run.run_id}")


def diff(d: Any, ra: Any, rb: Any, spec: str, as_json: bool) -> bool:
    """Print `spec`'s counts of two compiles pass by pass (pairs of `d`, a RunDiff), where they differ;
    return True when they differ anywhere."""
    from ..history import counts as core

    pat = core.pattern(spec)
    ca, cb = core.count_run(ra, pat), core.count_run(rb, pat)
    rows = core.side_by_side(d, ca, cb)
    differ = [r for r in rows if r["differs"]]
    if as_json:
        _print_json(
            {
                "a": {"run_id": ra.run_id, "path": str(ra.path)},
                "b": {"run_id": rb.run_id, "path": str(rb.path)},
                "pattern": pat.to_json(),
                "passes": rows,
                "differ": differ,
                "a_changes": [r.to_json() for r in ca.changes],
                "b_changes": [r.to_json() for r in cb.changes],
            }
        )
        return bool(differ)
    from ..render.table import Column, cut_middle, fit
    from ..render.visible import visible

    con = _console()
    con.print(_t(f"count of {_describe(pat)}: A {ra.run_id}, B {rb.run_id}", "dim"), soft_wrap=True)
    if not differ:
        con.print(_t(f"the same in all {len(rows)} passes", "green"))
        return False
    columns = [
        Column("pass", cut=cut_middle, min_width=14),
        Column("A #", "right"),
        Column("A", "right"),
        Column("B #", "right"),
        Column("B", "right"),
        Column("", drop=1),
    ]
    table = []
    last: tuple[Any, Any] | None = None
    hidden = 0
    for r in differ:
        pair = (r["a"], r["b"])
        moved = r["a_changed"] or r["b_changed"]
        if (r["a_index"] is None or r["b_index"] is None) and not moved:
            continue  # a pass of one side only that left the count alone
        if pair == last and not moved:
            hidden += 1  # the same two counts as the row above, neither pass changing them
            continue
        if hidden:
            table.append([(f"  ... {hidden} more with the same counts", "dim"), *[("", "")] * 5])
            hidden = 0
        last = pair
        where = "changed in A" if r["a_changed"] and not r["b_changed"] else ""
        where = "changed in B" if r["b_changed"] and not r["a_changed"] else where
        where = "changed in both" if r["a_changed"] and r["b_changed"] else where
        table.append(
            [
                (visible(f"{r['phase']}/{r['name']}", one_line=True), "bold" if moved else ""),
                ("" if r["a_index"] is None else f"#{r['a_index']}", "dim"),
                (_n(r["a"]), ""),
                ("" if r["b_index"] is None else f"#{r['b_index']}", "dim"),
                (_n(r["b"]), ""),
                (where, "yellow"),
            ]
        )
    if hidden:
        table.append([(f"  ... {hidden} more with the same counts", "dim"), *[("", "")] * 5])
    for line in fit(columns, table, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    for side, c in (("A", ca), ("B", cb)):
        ch = "; ".join(change_line(r) for r in c.changes) or "none"
        con.print(_t(visible(f"{side} changed it in: {ch}", one_line=True), "dim"), soft_wrap=True)
    return True
