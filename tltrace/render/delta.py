"""A report's IR texts as changes to an earlier text of the same report (pure, no I/O).

The run's `texts.pack` holds every distinct text once, whole (format/pack.py). A report must open alone, so it holds the texts too; but a pass
changes few lines, so the report stores a text whole only when no earlier text of the
report is its base (the compile's input, codegen's source), and otherwise as a delta
against the pass's input, which the report already holds:

    {"t": "text", "h": HASH, "b": BASE_HASH, "d": OPS, "e": 1}

OPS rebuild the lines of the text (`split_lines`: split at "\\n", a final newline is not
an extra line) in order: a string is one or more lines given literally (joined by "\\n"),
`[i, n]` is lines i .. i+n-1 of the base. `e` is 1 when the text ends with a newline.
The matching lines come from the capture's +/- count (diff.line_changes), so writing a
delta costs no diff of its own. assets/core.js `applyDelta` is the reader's twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..diff.align import split_lines

Ops = list[Any]


def encode(base: str, text: str, same: Sequence[tuple[int, int]]) -> Ops:
    """Return the ops that rebuild `text` from `base`, given the identical lines `same` ((i, j), in order)."""
    b = split_lines(text)
    ops: Ops = []
    literal: list[str] = []
    j = 0
    run_i = run_n = 0

    def flush_copy() -> None:
        nonlocal run_n
        if run_n:
            ops.append([run_i, run_n])
            run_n = 0

    for i, jj in same:
        if jj > j:
            flush_copy()
            literal.extend(b[j:jj])
        if literal:
            ops.append("\n".join(literal))
            literal = []
        if run_n and run_i + run_n == i:
            run_n += 1
        else:
            flush_copy()
            run_i, run_n = i, 1
        j = jj + 1
    flush_copy()
    if j < len(b):
        ops.append("\n".join(b[j:]))
    return ops


def decode(base: str, ops: Ops, newline_at_end: bool) -> str | None:
    """Return the text `ops` rebuild from `base`, or None when they are malformed."""
    a = split_lines(base)
    lines: list[str] = []
    for op in ops:
        if isinstance(op, str):
            lines.extend(op.split("\n"))
        elif (
            isinstance(op, list)
            and len(op) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in op)
            and op[0] >= 0
            and op[1] > 0
            and op[0] + op[1] <= len(a)
        ):
            lines.extend(a[op[0] : op[0] + op[1]])
        else:
            return None
    if not lines:
        return "\n" if newline_at_end else ""
    return "\n".join(lines) + ("\n" if newline_at_end else "")


def text_fields(
    base_hash: str, base: str, text: str, same: Sequence[tuple[int, int]] | None
) -> dict[str, Any]:
    """Return the chunk fields for `text`: a delta against `base` when it decodes exactly and is smaller, else whole."""
    if same is None or not text:
        return {"s": text}
    ops = encode(base, text, same)
    end = text.endswith("\n")
    literal = sum(len(op) + 4 for op in ops if isinstance(op, str)) + 12 * (len(ops) + 1)
    if literal >= len(text) or decode(base, ops, end) != text:
        return {"s": text}  # hardly anything in common (codegen's C against TIR): whole is smaller
    return {"b": base_hash, "d": ops, "e": 1 if end else 0}
