"""TIR-aware tokens, line similarity and word highlights. Mirrors assets/diff.js."""

from __future__ import annotations

import re

from ._myers import ADD, DEL, intern, myers

# One token: an identifier, a number (with its fraction, exponent and suffix: 1.0f, 3e-05, 0x1F),
# a run of blanks, a two-character operator, or any other single character (brackets, commas...).
# Only ASCII classes, so Python and JavaScript cut the same tokens.
TOKEN = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*"
    r"|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?[A-Za-z0-9_]*"
    r"|[ \t]+"
    r"|==|!=|<=|>=|//|\*\*|<<|>>|->|&&|\|\||::"
    r"|.",
    re.S,
)
_WORD = re.compile(r"[A-Za-z0-9_]")
MAX_WORD_TOKENS = 2000  # past this many tokens in a pair, the whole line is marked changed
ALIKE = 500  # similarity (per mille, Dice coefficient of the words) at which two lines are a pair


def tokens(line: str) -> list[str]:
    """Return the tokens of one line; their concatenation is the line."""
    return TOKEN.findall(line)


def words(line: str) -> list[str]:
    """Return the identifiers and numbers of a line (what similarity counts)."""
    return [t for t in TOKEN.findall(line) if _WORD.match(t)]


def similarity(wa: dict[str, int], na: int, wb: dict[str, int], nb: int) -> int:
    """Return 0..1000: twice the words two lines share over the words they have (multisets)."""
    if na + nb == 0:
        return 0
    if 2000 * min(na, nb) // (na + nb) < ALIKE:  # cannot reach ALIKE even if all of the shorter matched
        return 0
    common = 0
    for w, c in wa.items():
        o = wb.get(w)
        if o:
            common += c if c < o else o
    return 2000 * common // (na + nb)


def bag(line: str) -> tuple[dict[str, int], int]:
    """Return a line's words counted, and how many there are."""
    out: dict[str, int] = {}
    ws = words(line)
    for w in ws:
        out[w] = out.get(w, 0) + 1
    return out, len(ws)


def word_diff(left: str, right: str) -> tuple[list[str], list[bool], list[str], list[bool]]:
    """Return (left tokens, left changed flags, right tokens, right changed flags) of a line pair."""
    lt, rt = tokens(left), tokens(right)
    if len(lt) + len(rt) > MAX_WORD_TOKENS:
        return lt, [True] * len(lt), rt, [True] * len(rt)
    lm, rm = [False] * len(lt), [False] * len(rt)
    table: dict[str, int] = {}
    for kind, i, j in myers(intern(lt, table), intern(rt, table)):
        if kind == DEL:
            lm[i] = True
        elif kind == ADD:
            rm[j] = True
    return lt, lm, rt, rm
