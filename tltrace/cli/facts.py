"""`tltrace show ... --facts`: what the compiler made of each kernel (docs/facts.md), one compile or many."""

from __future__ import annotations

from typing import Any

from ..format.records import CUT_SHORT
from .records import _print_json
from .shared import console

# The columns of the table of several compiles (an autotune's configs side by side); --json has every fact.
TABLE_FACTS = (
    "tma_load",
    "wgmma",
    "mma",
    "cp_async",
    "mbarrier",
    "syncthreads",
    "threads",
    "smem_dynamic",
    "num_stages",
    "warp_specialized",
    "registers",
    "spill_bytes",
)


def show(sel: Any, as_json: bool) -> None:
    """Print the facts of the selected compile(s): a list of one compile's, or a table of several."""
    from ..facts import facts_json
    from ..history.summary import CompileSummary, order

    runs = [r for r in sel.runs if r.manifest is not None]
    summaries = [
        CompileSummary.of(r.manifest, r.run_id, status=r.status, position=i) for i, r in enumerate(runs)
    ]
    runs = [runs[s.position] for s in order(summaries)]
    # Each compile says how it ended: the facts of one a kill -9 cut are those of the records left.
    data = [_with_status(facts_json(r), r.status) for r in runs]
    if as_json:
        _print_json({"compiles": data})
        return
    if len(data) == 1:
        _print_one(data[0])
    else:
        _print_table(data)


def _with_status(one: dict[str, Any], status: str) -> dict[str, Any]:
    """Return `one` (facts_json's) with the compile's status beside its kernel (docs/show.schema.json)."""
    out: dict[str, Any] = {}
    for k, v in one.items():
        out[k] = v
        if k == "kernel":
            out["status"] = status
    out.setdefault("status", status)
    return out


def _cut_line(data: list[dict[str, Any]]) -> str | None:
    """Return the line that says which compiles did not end complete, or None when all did."""
    cut = [d["status"] for d in data if d["status"] in CUT_SHORT]
    if not cut:
        return None
    kinds = ", ".join(sorted(set(cut)))
    return f"{len(cut)} compile(s) cut short ({kinds}): facts of the records left, '-' where they stop"


VALUE_WIDTH = 60  # a longer value (a crafted or runaway text fact) is cut in the tables; --json has it whole


def _value(v: Any) -> str:
    if v is None:
        return "-"
    text = str(v).lower() if isinstance(v, bool) else str(v)
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"


def _cut_note(values: Any) -> str | None:
    """Return the line that says values were cut and how to see them whole, or None when none was."""
    long = [v for v in values if isinstance(v, str) and len(v) > VALUE_WIDTH]
    if not long:
        return None
    return f"values over {VALUE_WIDTH} characters are cut (…); --json prints them whole"


def _print_one(one: dict[str, Any]) -> None:
    from rich.text import Text

    from ..render.table import Column, cut_end, fit

    con = console()
    from ..render.visible import visible

    head = Text(visible(one["signature"] or one["run_id"], one_line=True), style="bold")
    head.append(f"  {visible(one['run_id'], one_line=True)}", style="dim")
    con.print(head, soft_wrap=True)
    cut = _cut_line([one])
    if cut:
        con.print(Text(cut, style="yellow"), soft_wrap=True)
    rows = []
    for f in one["facts"]:
        if f["value"] is None and f["source"] == "ptxas":
            continue  # machine facts: only with run --ptxas (said below)
        unit = f["unit"] if f["unit"] not in ("", "count") else ""
        where = f["text"] or "-"
        if f["source"] == "ptxas" and f["text"]:
            where = f"ptxas -v report ({f['text']} facts.machine)"
        rows.append([(f["name"], ""), (_value(f["value"]), "bold"), (unit, "dim"), (where, "dim")])
    columns = [Column("fact"), Column("value", "right"), Column("unit"), Column("read from", cut=cut_end)]
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    note = _cut_note(f["value"] for f in one["facts"])
    if note:
        con.print(Text(note, style="dim"), soft_wrap=True)
    machine = one.get("machine") or {}
    if machine.get("unavailable") or machine.get("error"):
        con.print(
            Text(f"machine facts: {machine.get('unavailable') or machine.get('error')}", style="yellow")
        )
    elif not machine:
        con.print(Text("machine facts (registers, spills): tltrace run --ptxas", style="dim"), soft_wrap=True)


def _print_table(data: list[dict[str, Any]]) -> None:
    from ..render.table import Column, cut_end, fit

    con = console()
    shown = [n for n in TABLE_FACTS if any(d["values"].get(n) is not None for d in data)]
    cut = _cut_line(data)
    status = [Column("status")] if cut else []  # only where a compile did not end complete
    columns = [
        Column("compile", cut=cut_end, min_width=16),
        *status,
        *(Column(n, "right", drop=i + 1) for i, n in enumerate(shown)),
    ]
    rows = [
        [
            (d["signature"] or d["run_id"], ""),
            *([(d["status"], "")] if cut else []),
            *((_value(d["values"].get(n)), "") for n in shown),
        ]
        for d in data
    ]
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    note = _cut_note(d["values"].get(n) for d in data for n in shown)
    if note:
        con.print(note, style="dim", soft_wrap=True)
    if cut:
        con.print(cut, style="yellow", soft_wrap=True)
