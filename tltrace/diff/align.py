"""Align two IR texts into rows: same, reindent, change, add, del. Pure; mirrors assets/diff.js.

The rules (tests/test_diff_engine.py states them as laws):

1. Lines are compared with their leading blanks (spaces, tabs) removed, over the whole text
   (Myers' diff, longest common subsequence). A matched pair is `same` when the lines are
   identical and `reindent` when they differ only in leading blanks. So a pass that wraps code
   in a new loop shows the new lines as added and the old ones as re-indented, aligned with
   their originals, never as a wall of changes paired by position.
2. Between two matched rows, removed and added lines are paired only when they are alike
   (their identifiers and numbers overlap by at least ALIKE, Dice coefficient), choosing the
   order-preserving pairing with the most similarity; such a pair is a `change` and is the
   only kind of row that gets word highlights. Other lines are pure `del` / `add`.
3. The rows cover both texts completely and in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._myers import EQ, intern, myers
from .words import ALIKE, bag, similarity

SAME, REINDENT, CHANGE, ADD, DELETE = "same", "reindent", "change", "add", "del"
KINDS = (SAME, REINDENT, CHANGE, ADD, DELETE)
PAIR_LIMIT = 40000  # removed x added lines in one gap past which pairing looks only a few lines ahead
WINDOW = 16  # how far ahead that look goes


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the alignment: `a` / `b` are 0-based line numbers in before / after, or None."""

    kind: str
    a: int | None
    b: int | None

    def to_json(self) -> dict[str, object]:
        """Return the row as `show --json` prints it: 1-based line numbers."""
        return {
            "kind": self.kind,
            "a": None if self.a is None else self.a + 1,
            "b": None if self.b is None else self.b + 1,
        }


def split_lines(text: str) -> list[str]:
    """Return the lines of `text`, split at "\\n" only; a final newline does not make an empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def strip_indent(line: str) -> str:
    return line.lstrip(" \t")


def align(
    a: Sequence[str], b: Sequence[str], *, pair: bool = True, matched: Sequence[tuple[int, int]] | None = None
) -> list[Row]:
    """Return the rows aligning lines `a` with lines `b` (rules in the module docstring).

    With pair=False, removed and added lines are left unpaired (del / add): enough to count.
    `matched`: the result of line_matches(a, b), when the caller has it already.
    """
    rows: list[Row] = []
    pi = pj = 0
    for i, j in line_matches(a, b) if matched is None else matched:
        if i > pi or j > pj:
            _gap(a, b, list(range(pi, i)), list(range(pj, j)), rows, pair)
        rows.append(Row(SAME if a[i] == b[j] else REINDENT, i, j))
        pi, pj = i + 1, j + 1
    if pi < len(a) or pj < len(b):
        _gap(a, b, list(range(pi, len(a))), list(range(pj, len(b))), rows, pair)
    return rows


def line_matches(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Return the (i, j) of lines matched apart from indentation (rule 1), in order."""
    table: dict[str, int] = {}
    return matches(intern([x.lstrip(" \t") for x in a], table), intern([x.lstrip(" \t") for x in b], table))


def matches(ka: Sequence[int], kb: Sequence[int]) -> list[tuple[int, int]]:
    """Return the matched (i, j) of a longest common subsequence of `ka` and `kb`, in order.

    Lines found on one side only can match nothing: they are set aside before Myers runs,
    which keeps a pass that rewrites most lines (or codegen's TIR against C) cheap.
    """
    in_a, in_b = set(ka), set(kb)
    ia = [i for i, k in enumerate(ka) if k in in_b]
    jb = [j for j, k in enumerate(kb) if k in in_a]
    return [(ia[i], jb[j]) for kind, i, j in myers([ka[i] for i in ia], [kb[j] for j in jb]) if kind == EQ]


def _gap(
    a: Sequence[str], b: Sequence[str], dels: list[int], adds: list[int], rows: list[Row], pair: bool
) -> None:
    """Append the rows of one gap between matched lines: alike lines paired, the rest del / add."""
    pairs = _pairs(a, b, dels, adds) if pair and dels and adds else []
    di = aj = 0
    for p, q in pairs:
        while di < p:
            rows.append(Row(DELETE, dels[di], None))
            di += 1
        while aj < q:
            rows.append(Row(ADD, None, adds[aj]))
            aj += 1
        rows.append(Row(CHANGE, dels[p], adds[q]))
        di, aj = p + 1, q + 1
    for p in range(di, len(dels)):
        rows.append(Row(DELETE, dels[p], None))
    for q in range(aj, len(adds)):
        rows.append(Row(ADD, None, adds[q]))


def _pairs(a: Sequence[str], b: Sequence[str], dels: list[int], adds: list[int]) -> list[tuple[int, int]]:
    """Return positions (into dels, adds) of the alike pairs, in order."""
    n, m = len(dels), len(adds)
    bags_a: list[tuple[dict[str, int], int] | None] = [None] * n
    bags_b: list[tuple[dict[str, int], int] | None] = [None] * m

    def score(p: int, q: int) -> int:
        # bags made on first use: a huge gap looks at few of its added lines
        x = bags_a[p]
        if x is None:
            x = bags_a[p] = bag(a[dels[p]])
        y = bags_b[q]
        if y is None:
            y = bags_b[q] = bag(b[adds[q]])
        return similarity(x[0], x[1], y[0], y[1])

    if n * m > PAIR_LIMIT:
        out: list[tuple[int, int]] = []
        q0 = 0
        for p in range(n):
            for q in range(q0, min(m, q0 + WINDOW)):
                if score(p, q) >= ALIKE:
                    out.append((p, q))
                    q0 = q + 1
                    break
        return out
    # Order-preserving pairing with the largest total similarity (a weighted LCS).
    w = m + 1
    dp = [0] * ((n + 1) * w)
    sc = [0] * (n * m)
    for p in range(1, n + 1):
        row, prev = p * w, (p - 1) * w
        for q in range(1, m + 1):
            best = dp[prev + q]
            if dp[row + q - 1] > best:
                best = dp[row + q - 1]
            s = score(p - 1, q - 1)
            sc[(p - 1) * m + q - 1] = s
            if s >= ALIKE and dp[prev + q - 1] + s > best:
                best = dp[prev + q - 1] + s
            dp[row + q] = best
    out = []
    p, q = n, m
    while p > 0 and q > 0:
        s = sc[(p - 1) * m + q - 1]
        if s >= ALIKE and dp[p * w + q] == dp[(p - 1) * w + q - 1] + s:
            out.append((p - 1, q - 1))
            p -= 1
            q -= 1
        elif dp[p * w + q] == dp[(p - 1) * w + q]:
            p -= 1
        else:
            q -= 1
    out.reverse()
    return out
