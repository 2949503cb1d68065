"""The one diff engine: how two IR texts line up, and what changed between them.

Used by the terminal stream, `show --pass`, `diff-runs`, `lower_trace` and the capture's
+/- counts; assets/diff.js is its twin for the HTML reports (the browser aligns passes
when they are opened, so the report holds each IR text once, as its changes), and
tests/test_diff_engine.py proves the two produce identical rows on a corpus of real IR.

    d = diff(before, after)
    d.rows     # [Row(kind, a, b)]: same | reindent | change | add | del, 0-based lines
    d.note     # "no newline at end", "whitespace only", ... or None
    d.unified(context=3)  # [(kind, line)] for a unified view

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import zip_longest

from .align import ADD, CHANGE, DELETE, KINDS, REINDENT, SAME, Row, align, line_matches, split_lines
from .unified import FILE, HUNK, NO_NEWLINE, NOTE, unified_rows
from .words import tokens, word_diff

_BLANKS = re.compile(r"[ \t\r\f\v]+")


@dataclass(frozen=True)
class Diff:
    """The alignment of two texts, with the lines it refers to."""

    before: str
    after: str
    a: list[str] = field(repr=False)
    b: list[str] = field(repr=False)
    rows: list[Row] = field(repr=False)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def added(self) -> int:
        """Lines of `after` not matched identically (added, changed or re-indented)."""
        return sum(1 for r in self.rows if r.b is not None and r.kind != SAME)

    @property
    def removed(self) -> int:
        return sum(1 for r in self.rows if r.a is not None and r.kind != SAME)

    @property
    def note(self) -> str | None:
        """Return why a change has no visible line change, or what kind of change it is; None if plain."""
        return explain(self.before, self.after, self.a, self.b, self.rows)

    def rows_json(self) -> list[dict[str, object]]:
        return [r.to_json() for r in self.rows]

    def unified(
        self,
        *,
        context: int = 3,
        a_name: str = "before",
        b_name: str = "after",
        tilde: bool = True,
        ignore_whitespace: bool = False,
    ) -> list[tuple[str, str]]:
        return unified_rows(
            self.a,
            self.b,
            self.rows,
            context=context,
            a_name=a_name,
            b_name=b_name,
            tilde=tilde,
            ignore_whitespace=ignore_whitespace,
            a_newline=_ends_newline(self.before),
            b_newline=_ends_newline(self.after),
        )


def _ends_newline(text: str) -> bool:
    return not text or text.endswith("\n")


@lru_cache(maxsize=4)
def _split_and_match(before: str, after: str) -> tuple[list[str], list[str], list[tuple[int, int]]]:
    # A pass's texts are aligned twice in a row (the capture counts +/-, the terminal draws the
    # diff): the line matching, the costly part, is done once.
    a, b = split_lines(before), split_lines(after)
    return a, b, line_matches(a, b)


def diff(before: str, after: str) -> Diff:
    """Return the alignment of `before` and `after` (see tltrace.diff.align for the rules)."""
    if before == after:
        a = split_lines(before)
        return Diff(before, after, a, list(a), [Row(SAME, i, i) for i in range(len(a))])
    a, b, matched = _split_and_match(before, after)
    return Diff(before, after, list(a), list(b), align(a, b, matched=matched))


def explain(before: str, after: str, a: list[str], b: list[str], rows: list[Row]) -> str | None:
    """Return a note for changes that lines alone do not show: newline at end, whitespace only."""
    if before == after:
        return None
    if a == b:
        return "no newline at end" if _ends_newline(before) else "newline added at end"
    if all(r.kind in (SAME, REINDENT) for r in rows):
        return "whitespace only (re-indented)"

    def squeeze(lines: list[str]) -> Iterator[str]:
        return (s for s in (_BLANKS.sub(" ", x).strip(" ") for x in lines) if s)

    # Lazily, from the first line that differs: a huge IR with one real change is not
    # squeezed whole (show --pass on a 65 MB text), and the answer is the same.
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    missing = object()
    pairs = zip_longest(squeeze(a[start:]), squeeze(b[start:]), fillvalue=missing)
    if all(x == y for x, y in pairs):
        return "whitespace only"
    return None


def count_changes(before: str, after: str) -> tuple[int, int]:
    """Return (added, removed): lines of each text not matched identically by the alignment."""
    added, removed, _ = line_changes(before, after)
    return added, removed


def line_changes(before: str, after: str) -> tuple[int, int, list[tuple[int, int]]]:
    """Return (added, removed, same): the +/- counts and the lines of `after` that are lines of `before`.

    `same` lists the (i, j) pairs the alignment matches identically (`before` line i is
    `after` line j, 0-based, split_lines): what the report needs to store `after` as the
    changes to `before` (render/delta.py). The counts are the lines outside those pairs:
    the same numbers as counting the rows of `align` whose kind is not `same` (every line
    is in exactly one row), without making the rows.
    """
    if before == after:
        n = len(split_lines(before))
        return 0, 0, [(i, i) for i in range(n)]
    a, b, matched = _split_and_match(before, after)
    same = [(i, j) for i, j in matched if a[i] == b[j]]
    return len(b) - len(same), len(a) - len(same), same


def unified(before: str, after: str, *, context: int = 3, a: str = "before", b: str = "after") -> list[str]:
    """Return a unified diff (patch form, no trailing newlines) from `before` to `after`; [] if equal."""
    if before == after:
        return []
    return [line for _, line in diff(before, after).unified(context=context, a_name=a, b_name=b, tilde=False)]


__all__ = [
    "ADD",
    "CHANGE",
    "DELETE",
    "FILE",
    "HUNK",
    "KINDS",
    "NOTE",
    "NO_NEWLINE",
    "REINDENT",
    "SAME",
    "Diff",
    "Row",
    "align",
    "count_changes",
    "line_changes",
    "diff",
    "explain",
    "split_lines",
    "tokens",
    "unified",
    "unified_rows",
    "word_diff",
]
