"""Unified diffs built from the alignment rows: one (kind, text) per printed line.

The kinds ("file", "hunk", "same", "del", "add", "reindent", "note") are what every renderer
colours by (the terminal stream, `show`, `diff-runs` and its HTML page), so the colouring
rule lives in one place per medium and never re-parses "+"/"-" prefixes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .align import ADD, CHANGE, DELETE, REINDENT, SAME, Row

FILE, HUNK, NOTE = "file", "hunk", "note"
NO_NEWLINE = "\\ No newline at end of file"


def _range(start: int, length: int) -> str:
    # unified diff convention (as GNU diff and difflib write it)
    if length == 1:
        return str(start + 1)
    if length == 0:
        return f"{start},0"
    return f"{start + 1},{length}"


def unified_rows(
    a: Sequence[str],
    b: Sequence[str],
    rows: Sequence[Row],
    *,
    context: int = 3,
    a_name: str = "before",
    b_name: str = "after",
    tilde: bool = True,
    ignore_whitespace: bool = False,
    a_newline: bool = True,
    b_newline: bool = True,
) -> list[tuple[str, str]]:
    """Return the unified diff of an alignment as (kind, line) pairs, file header first.

    tilde=True writes a re-indented line once, as "~" and its new text (a view);
    tilde=False writes it as "-" old and "+" new (a patch `patch` accepts).
    ignore_whitespace=True treats re-indented lines as unchanged context.
    a_newline / b_newline: whether each text ends with a newline; when only one does, the
    last line is shown changed with "\\ No newline at end of file" after the side lacking it.
    Returns [] when nothing is to be shown.
    """
    context = max(0, context)
    quiet = (SAME, REINDENT) if ignore_whitespace else (SAME,)
    eof = a_newline != b_newline and bool(rows)
    n = len(rows)
    loud = [r.kind not in quiet for r in rows]
    if eof:
        loud[-1] = True
    shown = [False] * n
    for i in range(n):
        if loud[i]:
            for k in range(max(0, i - context), min(n, i + context + 1)):
                shown[k] = True
    if not any(loud):
        return []
    out: list[tuple[str, str]] = [(FILE, f"--- {a_name}"), (FILE, f"+++ {b_name}")]
    # lines of each side before row i
    a_pos = b_pos = 0
    i = 0
    while i < n:
        if not shown[i]:
            r = rows[i]
            a_pos += r.a is not None
            b_pos += r.b is not None
            i += 1
            continue
        j = i
        while j < n and shown[j]:
            j += 1
        na = sum(1 for r in rows[i:j] if r.a is not None)
        nb = sum(1 for r in rows[i:j] if r.b is not None)
        out.append((HUNK, f"@@ -{_range(a_pos, na)} +{_range(b_pos, nb)} @@"))
        k = i
        while k < j:
            r = rows[k]
            if not loud[k]:
                out.append((SAME, " " + (b[r.b] if r.b is not None else a[r.a or 0])))
                k += 1
                continue
            if tilde and r.kind == REINDENT and not (eof and k == n - 1):
                out.append((REINDENT, "~" + b[r.b or 0]))
                k += 1
                continue
            # a block of changed rows: removed lines in order, then added lines in order
            e = k
            while e < j and loud[e] and not (tilde and rows[e].kind == REINDENT and not (eof and e == n - 1)):
                e += 1
            for q in range(k, e):
                ra = rows[q].a
                if ra is not None:
                    out.append((DELETE, "-" + a[ra]))
                    if eof and q == n - 1 and not a_newline:
                        out.append((NOTE, NO_NEWLINE))
            for q in range(k, e):
                rb = rows[q].b
                if rb is not None:
                    out.append((ADD, "+" + b[rb]))
                    if eof and q == n - 1 and not b_newline:
                        out.append((NOTE, NO_NEWLINE))
            k = e
        a_pos += na
        b_pos += nb
        i = j
    return out


__all__ = [
    "FILE",
    "HUNK",
    "NOTE",
    "NO_NEWLINE",
    "unified_rows",
    "ADD",
    "CHANGE",
    "DELETE",
    "REINDENT",
    "SAME",
]
