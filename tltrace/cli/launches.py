"""`tltrace show ... --launches` (run --launches): each launch of the selected compiles, or two compared."""

from __future__ import annotations

import os
from typing import Any

from .records import _print_json
from .shared import console


def show(sel: Any, as_json: bool, pair: tuple[int, int] | None) -> None:
    """Print the launches of the selection (one invocation, or the compiles it was narrowed to)."""
    from ..history.launches import compare, read_launches

    narrowed = len(sel.runs) != len(sel.invocation.runs)
    data = read_launches(
        sel.invocation.script_dir, sel.invocation.id, sel.runs, narrowed, sel.invocation.runs
    )
    if pair is not None:
        a, b = data.get(pair[0]), data.get(pair[1])
        diffs = compare(a, b)
        if as_json:
            _print_json(
                {
                    "invocation": data.invocation,
                    "a": a.to_json(),
                    "b": b.to_json(),
                    "differences": [{"what": w, "a": x, "b": y} for w, x, y in diffs],
                }
            )
            return
        _print_compare(a, b, diffs)
        return
    if as_json:
        _print_json(data.to_json())
        return
    _print_table(data, sel.invocation.script_dir)


def dims(d: Any) -> str:
    """A grid or block as `8x1`, '-' when unknown."""
    return "x".join(str(x) for x in d) if d else "-"


def arg_text(a: dict[str, Any]) -> str:
    """One argument in a cell: `float32[200] (1) cpu`, `int=3`, or its type."""
    name = f"{a.get('name') or a['param']}=" if a.get("name") or a.get("param") else ""
    if "shape" in a:
        shape = ",".join(str(x) for x in a.get("shape") or ())
        strides = ",".join(str(x) for x in a.get("strides") or ())
        return f"{name}{a.get('dtype')}[{shape}] ({strides}) {a.get('device')}"
    if "value" in a:
        return f"{name}{a.get('type')}={a['value']!r}"
    return f"{name}{a.get('type')}"


def _site(x: Any) -> str:
    return f"{os.path.basename(x.site[0])}:{x.site[1]}" if x.site else "-"


def _print_table(data: Any, script_dir: Any) -> None:
    from rich.text import Text

    from ..render.table import Column, cut_end, fit

    con = console()
    columns = [
        Column("#", "right"),
        Column("ms", "right", drop=3),
        Column("kernel", cut=cut_end),
        Column("grid", "right"),
        Column("block", "right", drop=2),
        Column("smem", "right", drop=1),
        Column("line"),
        Column("arguments: dtype[shape] (strides) device", cut=cut_end, min_width=12),
    ]
    rows = [
        [
            (str(x.number), ""),
            (f"{x.t_ms:.3f}", "dim"),
            (x.kernel if x.run_id is not None else f"{x.kernel} (untraced compile)", ""),
            (dims(x.grid), "bold"),
            (dims(x.block), ""),
            (str(x.shared_bytes) if x.shared_bytes is not None else "-", ""),
            (_site(x), "dim"),
            ("; ".join(arg_text(a) for a in x.args), ""),
        ]
        for x in data.launches
    ]
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    notes = [
        f"{len(data.launches)} launch{'es' if len(data.launches) != 1 else ''} of invocation {data.invocation}"
    ]
    if data.dropped:
        notes.append(f"{data.dropped} more counted past --launch-limit, not recorded")
    if data.cut or data.damaged:
        notes.append(
            f"the log was cut ({data.cut} bytes torn, {data.damaged} lines unreadable): a writer was killed"
        )
    elif not data.ended:
        notes.append("no writer ended its log: the script is still running, or was killed")
    saved = _saved(data, script_dir)
    if saved:
        notes.append(
            f"inputs saved (run --save-inputs) for launch {saved}: replay one with --launch I --build --run"
        )
    con.print(Text("; ".join(notes), style="dim"), soft_wrap=True)


def _saved(data: Any, script_dir: Any) -> str:
    """The numbers of the listed launches whose inputs run --save-inputs kept, as `1, 2`; '' when none."""
    from ..rerun.launch import saved_index

    index = saved_index(script_dir, data.invocation) or {}
    numbers = [
        str(x.number) for x in data.launches if "skipped" not in index.get((x.pid, x.t_ns), {"skipped": True})
    ]
    return ", ".join(numbers[:20]) + (f" (+{len(numbers) - 20})" if len(numbers) > 20 else "")


def _print_compare(a: Any, b: Any, diffs: list[tuple[str, Any, Any]]) -> None:
    from rich.text import Text

    from ..render.table import Column, cut_end, fit

    con = console()
    con.print(
        Text(
            f"launch {a.number} ({a.kernel}, {_site(a)}) against launch {b.number} ({b.kernel}, {_site(b)})"
        ),
        soft_wrap=True,
    )
    if not diffs:
        con.print(Text("no difference: same compile, grid, block and arguments", style="dim"), soft_wrap=True)
        return
    rows = [[(w, ""), (_value(x), ""), (_value(y), "")] for w, x, y in diffs]
    columns = [
        Column("what"),
        Column(f"launch {a.number}", cut=cut_end),
        Column(f"launch {b.number}", cut=cut_end),
    ]
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)


def _value(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return dims(v) if all(isinstance(d, (int, str)) for d in v) else str(v)
    return "-" if v is None else str(v)
