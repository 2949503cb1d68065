"""LLVM FileCheck directives matched against a recorded text: `tltrace check --match`, `Compile.check`.

    CHECK: tl::wgmma_ss            somewhere after the previous match
    CHECK-NEXT: ...                on the line right after the previous match
    CHECK-SAME: ...                on the same line as the previous match
    CHECK-NOT: cp_async            nowhere between the previous match and the next one
    CHECK-COUNT-3: mbarrier        three times, one after the other (three CHECKs)
    CHECK-DAG: ...                 a run of DAGs matches in any order, none overlapping
    CHECK-EMPTY:                   the next line is empty
    CHECK-LABEL: ...               labels match first, in order, and cut the input into blocks

A pattern is literal text with `{{regex}}` (Python `re`) and `[[NAME:regex]]` (define) /
`[[NAME]]` (use) parts. As FileCheck without --strict-whitespace, each run of spaces and
tabs in the text and in the pattern is one space (`_Text` keeps the text's own columns for
reports), leading and trailing spaces ignored. No match crosses a line end; ^ and $ match
at line ends, ^ also where the search starts; an empty text fails (FileCheck without
--allow-empty). tests/test_filecheck_semantics.py holds the matcher to LLVM's FileCheck on a
table of cases. Why not PyPI's `filecheck`: docs/facts.md ("Checks"). Pure: no I/O.

`patterns` parses the directives and turns patterns into regexes; this module matches them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .patterns import KINDS, CheckSyntaxError, Directive, compile_directive, has_regex, parse, pattern_parts

__all__ = [
    "KINDS",
    "CheckSyntaxError",
    "Directive",
    "Failure",
    "Result",
    "check",
    "has_regex",
    "match",
    "parse",
]


@dataclass(frozen=True)
class Failure:
    """Why a check failed, and where in the text (1-based line and column; `end_col` past the match)."""

    directive: Directive
    message: str
    line: int
    col: int = 1
    end_col: int | None = None  # a match that should not be there: its extent, for the carets
    near: int | None = None  # a line that looks like what was meant (a pattern not found)


@dataclass(frozen=True)
class Result:
    """What matching gave: `ok`, else the first failure."""

    ok: bool
    failure: Failure | None = None

    def explain(self, text: str, name: str = "input", context: int = 2) -> list[str]:
        """Return the failure as FileCheck prints it: the directive, the message, the lines around the point."""
        f = self.failure
        if f is None:
            return []
        lines = text.split("\n")
        out = [f"{f.directive.text}", f"{name}:{f.line}:{f.col}: {f.message}"]
        out += _excerpt(lines, f.line, f.col, f.end_col, context)
        if f.near is not None and f.near != f.line:
            out.append(f"{name}:{f.near}: possible intended match here")
            out += _excerpt(lines, f.near, None, None, 0)
        return out


LINE_WIDTH = 400  # characters of a text's line shown around a failure; a longer one is cut around the point


def _excerpt(lines: list[str], line: int, col: int | None, end_col: int | None, context: int) -> list[str]:
    lo, hi = max(1, line - context), min(len(lines), line + context)
    width = len(str(hi))
    out = []
    for n in range(lo, hi + 1):
        mark = ">" if n == line else " "
        at = (col or 1) - 1 if n == line else 0
        shown, shift = _window(lines[n - 1], at)
        out.append(f"{mark} {str(n).rjust(width)} | {shown}")
        if n == line and col is not None:
            carets = "^" * max(1, min((end_col or col + 1) - col, LINE_WIDTH))
            out.append(f"  {' ' * width} | {' ' * (col - 1 - shift)}{carets}")
    return out


def _window(text: str, at: int) -> tuple[str, int]:
    """Return (the part of a line shown, how many characters fewer precede `at`): the whole line when short,
    else LINE_WIDTH characters from a little before `at`, with '…' where it was cut and the length said."""
    if len(text) <= LINE_WIDTH:
        return text, 0
    start = max(0, min(at - 40, len(text) - LINE_WIDTH))
    body = text[start : start + LINE_WIDTH]
    head = "…" if start else ""
    tail = f"… ({len(text):,} characters)" if start + LINE_WIDTH < len(text) else ""
    return head + body + tail, start - len(head)


@dataclass(frozen=True)
class _Hit:
    """A match in the text: where it starts and ends, what it matched, its named groups."""

    begin: int
    stop: int
    matched: str
    groups: dict[str, str | None]

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.stop

    def group(self, _: int = 0) -> str:
        return self.matched

    def groupdict(self) -> dict[str, str | None]:
        return self.groups


def _hit(m: re.Match[str], shift: int = 0) -> _Hit:
    return _Hit(m.start() + shift, m.end() + shift, m.group(0), m.groupdict())


class _Text:
    """The input as FileCheck matches it (each run of spaces and tabs one space, without
    --strict-whitespace), its line starts, and positions back to the input's lines and columns."""

    def __init__(self, text: str) -> None:
        self.raw = text.replace("\r\n", "\n")
        self.text = re.sub(r"[ \t]+", " ", self.raw)
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        self._raw_lines: list[str] | None = None

    def where(self, pos: int) -> tuple[int, int]:
        """Return the 1-based line and column in the input (not the canonical text) of a position."""
        import bisect

        i = bisect.bisect_right(self.starts, pos) - 1
        if self._raw_lines is None:
            self._raw_lines = self.raw.split("\n")
        raw = self._raw_lines[i] if i < len(self._raw_lines) else ""
        want, c, j = pos - self.starts[i], 0, 0
        while c < want and j < len(raw):
            if raw[j] in " \t":
                while j < len(raw) and raw[j] in " \t":
                    j += 1
            else:
                j += 1
            c += 1
        return i + 1, j + 1

    def search(self, rx: re.Pattern[str], start: int, end: int | None = None) -> _Hit | None:
        """Return the first match of rx at or after `start` (before `end`) that stays on one line.

        `^` matches where the search starts too, as in LLVM's FileCheck (it matches the
        rest of the input from there): the rest of that line is searched on its own first.
        """
        stop = len(self.text) if end is None else end
        pos = start
        if "^" in rx.pattern and 0 < pos < stop and self.text[pos - 1] != "\n":
            eol = self.text.find("\n", pos, stop)
            eol = stop if eol < 0 else eol
            m = rx.search(self.text[pos:eol])
            if m is not None:
                return _hit(m, pos)
            pos = eol
        while pos <= stop:
            m = rx.search(self.text, pos, stop)
            if m is None:
                return None
            if "\n" not in m.group(0):
                return _hit(m)
            pos = m.start() + 1
        return None


def match(text: str, directives: Sequence[Directive]) -> Result:
    """Return whether `text` satisfies the directives, in FileCheck's order; the first failure when not.

    An empty text fails, as FileCheck fails on empty input (without --allow-empty): a
    CHECK-NOT over nothing proves nothing.
    """
    if not text and directives:
        return Result(False, Failure(directives[0], "the text is empty (FileCheck fails on empty input)", 1))
    t = _Text(text)
    variables: dict[str, str] = {}
    ds = list(directives)
    labels = [i for i, d in enumerate(ds) if d.kind == "LABEL"]
    # LLVM matches the labels first, in order: each cuts the input, and the directives up to a
    # label (itself included) match between the previous label's match and the end of its own.
    cuts: list[int] = []
    pos = 0
    for i in labels:
        rx = compile_directive(ds[i], {})
        m = t.search(rx, pos)
        if m is None:
            return _not_found(t, ds[i], pos, rx)
        cuts.append(m.end())
        pos = m.end()
    bounds = [0, *cuts, len(t.text)]
    firsts = [0, *(i + 1 for i in labels)]
    lasts = [*(i + 1 for i in labels), len(ds)]
    for k, (a, b) in enumerate(zip(firsts, lasts)):
        if a < b:
            r = _match_range(t, ds[a:b], bounds[k], bounds[k + 1], variables, after_label=k > 0)
            if not r.ok:
                return r
    return Result(True)


def _match_range(
    t: _Text, ds: list[Directive], start: int, stop: int, variables: dict[str, str], after_label: bool
) -> Result:
    """Match directives (none of them a label but the last) within t.text[start:stop]."""
    pos = start  # where the previous match ended
    prev_end: int | None = start if after_label else None
    nots: list[Directive] = []  # CHECK-NOTs waiting for the next positive match
    not_from = start
    i = 0
    while i < len(ds):
        d = ds[i]
        if d.kind == "NOT":
            if not nots:
                not_from = pos
            nots.append(d)
            i += 1
            continue
        if d.kind == "DAG":
            group = []
            while i < len(ds) and ds[i].kind == "DAG":
                group.append(ds[i])
                i += 1
            taken: list[tuple[int, int]] = []
            for g in group:
                rx = compile_directive(g, variables)
                m = _dag_match(t, rx, pos, taken, stop)
                if m is None:
                    return _not_found(t, g, pos, rx)
                taken.append((m.start(), m.end()))
                _capture(m, variables)
            first = min(s for s, _ in taken)
            bad = _check_nots(t, nots, not_from, first, variables)
            if bad is not None:
                return bad
            nots = []
            pos = max(e for _, e in taken)
            prev_end = pos
            continue
        if d.kind == "EMPTY":
            line, _ = t.where(pos)
            if (
                line >= len(t.starts)
                or t.starts[line] > stop
                or t.text[t.starts[line] : t.starts[line] + 1] not in ("\n", "")
            ):
                nxt = min(line + 1, len(t.starts))
                return Result(
                    False, Failure(d, "CHECK-EMPTY: the line after the previous match is not empty", nxt)
                )
            end = t.starts[line]
            bad = _check_nots(t, nots, not_from, end, variables)
            if bad is not None:
                return bad
            nots = []
            pos = prev_end = end
            i += 1
            continue
        rx = compile_directive(d, variables)
        for k in range(d.count):
            m = t.search(rx, pos, stop)
            if m is None:
                what = f" (match {k + 1} of {d.count})" if d.count > 1 else ""
                return _not_found(t, d, pos, rx, what)
            if d.kind in ("NEXT", "SAME") and prev_end is not None:
                between = t.text.count("\n", prev_end, m.start())
                want = 1 if d.kind == "NEXT" else 0
                if between != want:
                    line, col = t.where(m.start())
                    where = "on the line after" if d.kind == "NEXT" else "on the same line as"
                    why = f"CHECK-{d.kind}: the match is not {where} the previous match"
                    if d.kind == "NEXT" and between == 0:
                        why = "CHECK-NEXT: the match is on the same line as the previous match"
                    return Result(False, Failure(d, why, line, col, t.where(m.end())[1]))
            bad = _check_nots(t, nots, not_from, m.start(), variables)
            if bad is not None:
                return bad
            nots = []
            _capture(m, variables)
            pos = prev_end = m.end()
        i += 1
    bad = _check_nots(t, nots, not_from, stop, variables)
    return bad if bad is not None else Result(True)


def _dag_match(
    t: _Text, rx: re.Pattern[str], pos: int, taken: list[tuple[int, int]], stop: int
) -> _Hit | None:
    start = pos
    while True:
        m = t.search(rx, start, stop)
        if m is None:
            return None
        if not any(m.start() < e and s < max(m.end(), m.start() + 1) for s, e in taken):
            return m
        start = m.start() + 1


def _check_nots(
    t: _Text, nots: list[Directive], start: int, end: int, variables: dict[str, str]
) -> Result | None:
    for d in nots:
        m = t.search(compile_directive(d, variables), start, end)
        if m is not None:
            line, col = t.where(m.start())
            return Result(
                False,
                Failure(d, "CHECK-NOT: excluded string found", line, col, max(col + 1, t.where(m.end())[1])),
            )
    return None


def _capture(m: _Hit, variables: dict[str, str]) -> None:
    for group, value in m.groupdict().items():
        if value is not None and group[:2] in ("v_", "g_"):
            variables[("$" if group[0] == "g" else "") + group[2:]] = value


def _not_found(t: _Text, d: Directive, pos: int, rx: re.Pattern[str], what: str = "") -> Result:
    line, col = t.where(pos)
    if pos > 0 and pos < len(t.text) and t.text[pos] == "\n":
        line, col = line + 1, 1  # scanning starts on the next line
    name = "CHECK" if d.kind in ("CHECK", "COUNT") else f"CHECK-{d.kind}"
    return Result(
        False,
        Failure(
            d,
            f"{name}: expected string not found{what} (scanning from here)",
            line,
            col,
            near=_near(t, d, pos),
        ),
    )


def _near(t: _Text, d: Directive, pos: int, limit: int = 4000) -> int | None:
    """Return the line after `pos` most like the pattern's literal text (FileCheck's 'possible intended match')."""
    literal, at = "", 0
    for p in pattern_parts(d.pattern):
        literal, at = literal + d.pattern[at : p.start] + " ", p.end
    literal = (literal + d.pattern[at:]).strip()
    if len(literal) < 3:
        return None
    first, _ = t.where(pos)
    lines = t.text[pos:].split("\n")[:limit]
    best, best_ratio = None, 0.5
    sm = difflib.SequenceMatcher(autojunk=False)
    sm.set_seq2(literal)
    for n, line in enumerate(lines):
        s = line.strip()
        if not s:
            continue
        sm.set_seq1(s)
        if sm.real_quick_ratio() <= best_ratio or sm.quick_ratio() <= best_ratio:
            continue
        r = sm.ratio()
        if r > best_ratio:
            best, best_ratio = first + n, r
    return best


def check(text: str, checks: str | Iterable[str]) -> Result:
    """Return the result of matching `checks` (a text or lines of directives) against `text`."""
    return match(text, parse(checks))
