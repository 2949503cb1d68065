"""A layout conflict's message read: its buffers, and the two layouts it prints, as layout entries.

TileLang's conflicts carry what its other layout failures do not: `Layout infer conflict between
C_l and D_l in T.Parallel loop:` (or `Get different layout for C_l`), then one line per layout,
`loop Fragment((64, 64) -> (32,), replicate: 1, thread: 128, forward_thread: ..., forward_index:
(...), thread_range: I.Range(0, 128))`. Each is parsed into capture.py's keys, so that model.py
evaluates it as it evaluates a recorded layout (`show --layouts` draws the two side by side).
Pure: text in, data out.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_CONFLICT = re.compile(r"Layout infer conflict between (\S+) and (\S+?)(?: in ([^:\n]+))?:")
_DIFFERENT = re.compile(r"Get different layout for (\S+)")
_DUMP = re.compile(r"^\s*([\w ]*?)\s*(Fragment|Layout)\((.*)\)\s*$")


def parse_conflict(message: str) -> dict[str, Any] | None:
    """Return a conflict's buffers and its two layouts as layout entries ({buffers, where, layouts: [{label,
    entry, text}]}), or None when the message is not a conflict."""
    m = _CONFLICT.search(message)
    d = _DIFFERENT.search(message) if m is None else None
    if m is None and d is None:
        return None
    buffers = [m.group(1), m.group(2)] if m else [d.group(1).rstrip(":,") if d else ""]
    layouts = []
    for ln in message.splitlines():
        dm = _DUMP.match(ln)
        if dm:
            entry = parse_dump(dm.group(2), dm.group(3))
            layouts.append({"label": dm.group(1).strip() or dm.group(2), "entry": entry, "text": ln.strip()})
    return {"buffers": buffers, "where": (m.group(3) if m else None), "layouts": layouts[:2]}


def _split_top(text: str) -> list[str]:
    """Split at commas outside brackets."""
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _shape(text: str) -> list[int] | None:
    try:
        v = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return None
    v = v if isinstance(v, tuple) else (v,)
    return [int(x) for x in v] if all(isinstance(x, int) for x in v) else None


def parse_dump(kind: str, body: str) -> dict[str, Any] | None:
    """Return a printed `Fragment((64, 64) -> (32,), replicate: 1, thread: 128, forward_thread: ...,
    forward_index: (...), thread_range: I.Range(0, 128))` as a layout entry (capture.py's keys); None
    when it does not read."""
    parts = _split_top(body)
    if not parts or "->" not in parts[0]:
        return None
    ins, outs = parts[0].split("->", 1)
    entry: dict[str, Any] = {
        "buffer": None,
        "kind": "fragment" if kind == "Fragment" else "layout",
        "input_shape": _shape(ins),
        "output_shape": _shape(outs),
    }
    fields = {}
    for p in parts[1:]:
        k, sep, v = p.partition(":")
        if sep:
            fields[k.strip()] = v.strip()
    index = fields.get("forward_index", "")
    if index.startswith("(") and index.endswith(")"):
        index = index[1:-1]
    entry["index"] = [x for x in _split_top(index) if x]
    if entry["kind"] == "fragment":
        entry["thread"] = fields.get("forward_thread")
        try:
            entry["replicate"] = int(fields.get("replicate", "1"))
        except ValueError:
            entry["replicate"] = None
        rng = re.match(r"I\.Range\((\d+),\s*(\d+)\)", fields.get("thread_range", ""))
        entry["thread_range"] = [int(rng.group(1)), int(rng.group(2))] if rng else None
    names = sorted(set(re.findall(r"\b_[a-z]\w*\b", " ".join([*entry["index"], entry.get("thread") or ""]))))
    rank = len(entry["input_shape"] or [])
    entry["vars"] = [v for v in names if v != "rep"][:rank] if len(names) >= rank else names
    if entry["input_shape"] is None or entry["output_shape"] is None:
        return None
    return entry
