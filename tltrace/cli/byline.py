"""`tltrace show ... --line N` (what came of a Python line) and `--cuda-line/--ptx-line/--sass-line N`
(which Python line a generated line came from): history/byline.py's data, printed."""

from __future__ import annotations

import os
import sys
from typing import Any

from ..render.safejson import dumps
from .shared import console

SHOWN = 8  # lines of each text printed (--json has them all)
SHOWN_STAGE = 24


def show(run: Any, spec: str, as_json: bool) -> None:
    """Print what came of Python line `spec` ("N" or "FILE:N") in one compile."""
    from ..history import byline

    data = byline.forward(run, spec)
    if as_json:
        sys.stdout.write(dumps(data, indent=2, default=str) + "\n")
        return
    from rich.text import Text

    con = console()
    name = os.path.basename(data["file"])
    head = Text(f"{name}:{data['line']}", style="bold")
    if data["text"] is not None:
        head.append("  " + data["text"].strip())
    con.print(head, soft_wrap=True, markup=False, highlight=False)
    if not data["code"]:
        near = ", ".join(str(n) for n in data["nearest"]) or "none"
        _say(
            f"no code from line {data['line']}: no statement of any recorded text maps to it; nearest lines with code: {near}"
        )
        return
    passes = data["passes"]
    _say(
        f"{data['carried_by']} passes carry it; {len(passes)} changed its IR"
        + (":" if passes else " (it never changed)"),
        bold=True,
    )
    for p in passes:
        _say(
            f"  {p['name']} (#{p['index']}, {p['phase']}): {_n(len(p['before']), 'line')} before, {len(p['after'])} after"
        )
        for h in p["after"][:SHOWN]:
            _line(h, "    ", h["line"])
        if len(p["after"]) > SHOWN:
            _say(f"    … {len(p['after']) - SHOWN} more (--json, or show --pass {p['index']} --source-map)")
    for role, g in data["generated"].items():
        what = f"generated {role} source"
        if role == "device":
            what += " (kernel.cu)" if str(data["target"] or "").startswith("cuda") else " (C)"
        _say(f"{what}: {_n(len(g['lines']), 'line')}", bold=True)
        for h in g["lines"][:SHOWN]:
            _line(h, "  ", h["line"], via=True)
        if len(g["lines"]) > SHOWN:
            _say(f"  … {len(g['lines']) - SHOWN} more (--json)")
    absent = data["absent"]
    if len(absent) == 2 and absent["ptx"] == absent["sass"]:
        _say(f"PTX, SASS: {absent['ptx']}", bold=True)
    for role in ("ptx", "sass"):
        st = data[role]
        if st is None:
            if len(absent) < 2 or absent["ptx"] != absent["sass"]:
                _say(f"{role.upper()}: {absent[role]}", bold=True)
            continue
        lines = st["lines"]
        head_s = f"{role.upper()}: {_n(len(lines), 'line')}"
        if role == "sass":
            mix = st["mix"]
            parts = [f"{k} {mix[k]}" for k in ("LDG", "STG", "LDS", "STS", "MMA", "BAR") if mix[k]]
            spills = (
                f"spills {st['spills']} (LDL {mix['LDL']}, STL {mix['STL']})" if st["spills"] else "no spills"
            )
            head_s = f"SASS: {mix['insns']} instructions: {', '.join(parts) or 'no LDG/STG/LDS/STS/MMA/BAR'}; {spills}"
        cus = sorted({h["cu"] for h in lines if h.get("cu") is not None})
        if cus:
            head_s += f" (from kernel.cu {_ranges(cus)})"
        _say(head_s, bold=True)
        shown = [h for h in lines if role == "ptx" or h.get("insn")][:SHOWN_STAGE]
        for h in shown:
            _line(h, "  ", h["line"], cu=h.get("cu"), spill=bool(h.get("spill")))
        rest = sum(1 for h in lines if role == "ptx" or h.get("insn")) - len(shown)
        if rest > 0:
            _say(f"  … {rest} more (--json)")
    facts = data["facts"]
    if facts:
        _say("facts: " + ", ".join(f"{k} {v}" for k, v in facts.items()), bold=True)
    lost = data["lost_in"]
    _say(
        "lost in: " + ", ".join(f"{x['name']} (#{x['index']})" for x in lost)
        if lost
        else "no pass loses this line"
    )


def back(run: Any, kind: str, n: int, as_json: bool) -> None:
    """Print the Python line behind line `n` of the CUDA source, the PTX or the SASS."""
    from ..history import byline

    data = byline.back(run, kind, n)
    if as_json:
        sys.stdout.write(dumps(data, indent=2, default=str) + "\n")
        return
    what = {"cuda": "kernel.cu" if data["cuda_target"] else "device source", "ptx": "PTX", "sass": "SASS"}[
        kind
    ]
    _say(f"{what}:{n}  {data['text'].strip()}")
    if data.get("class"):
        _say(
            f"  instruction class {data['class']}" + (" (a spill)" if data["class"] in ("LDL", "STL") else "")
        )
    if data["cu"] is not None:
        cu = data["cu"]
        _say(f"  from kernel.cu:{cu['line']}  {(cu['text'] or '').strip()}")
    elif kind != "cuda":
        _say("  no kernel.cu line (not an instruction, or no line info)")
    src = data["src"]
    if src is None:
        why = "no source map for this text" if not data["mapped"] else "no Python line behind it"
        _say(f"  {why}")
        return
    label = f"{os.path.basename(src['file'])}:{src['line']}" + ("~ (inferred)" if src.get("inferred") else "")
    if src.get("via"):
        label += f" via {os.path.basename(src['via']['file'])}:{src['via']['line']}"
    _say(f"  from {label}  {(data['python'] or '').strip()}", bold=True)


def _n(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _ranges(ns: list[int]) -> str:
    """'65-68, 70, 72-73' for [65, 66, 67, 68, 70, 72, 73]."""
    out: list[str] = []
    start = prev = ns[0]
    for n in ns[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def _say(text: str, bold: bool = False) -> None:
    console().print(text, style="bold" if bold else None, soft_wrap=True, markup=False, highlight=False)


def _line(
    h: dict[str, Any], indent: str, n: int, via: bool = False, cu: Any = None, spill: bool = False
) -> None:
    from rich.text import Text

    t = Text(indent + str(n).rjust(5), style="cyan")
    if cu is not None:
        t.append(f" cu:{cu}".ljust(8), style="dim")
    t.append(" \u2502 ", style="dim")
    t.append(h["text"].rstrip(), style="red" if spill else None)
    if spill:
        t.append("   \u2190 spill", style="bold red")
    src = h.get("src") or {}
    if via and isinstance(src.get("via"), dict):
        t.append(f"   via {os.path.basename(str(src['via']['file']))}:{src['via']['line']}", style="dim")
    console().print(t, soft_wrap=True, markup=False, highlight=False)
