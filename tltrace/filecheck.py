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
`[[NAME]]` (use) parts; any run of spaces or tabs in the literal text matches any run in the
input, and leading and trailing spaces are ignored, as FileCheck does without
--strict-whitespace. No match crosses a line end; an empty text fails (FileCheck without
--allow-empty). tests/test_filecheck_semantics.py holds the matcher to LLVM's FileCheck on a
table of cases. Why not PyPI's `filecheck`: docs/facts.md ("Checks"). Pure: no I/O.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import UsageError

KINDS = ("CHECK", "NEXT", "SAME", "NOT", "COUNT", "DAG", "EMPTY", "LABEL")

# `CHECK:`, `CHECK-NEXT:`, `CHECK-COUNT-3:` anywhere in a line (a check file's comment marker before it is fine)
_DIRECTIVE = re.compile(r"(?<![A-Za-z0-9_-])CHECK(?:-(NEXT|SAME|NOT|DAG|EMPTY|LABEL|COUNT-(\d+)))?:(.*)$")
_ALMOST = re.compile(r"(?<![A-Za-z0-9_-])CHECK-([A-Za-z0-9-]*)\s*:")
_VAR = re.compile(r"\[\[([A-Za-z_$][A-Za-z0-9_]*)(:|\]\])")


@dataclass(frozen=True)
class _Part:
    """A `{{regex}}` or `[[NAME]]` / `[[NAME:regex]]` of a pattern: where it is, and what it holds."""

    start: int
    end: int
    regex: str | None = None
    name: str | None = None
    definition: str | None = None


def _parts(pattern: str) -> list[_Part]:
    """Return the regex and variable parts of a pattern, as LLVM's FileCheck finds them.

    `{{` runs to the first `}}`; `[[NAME:` runs to the first `]]` outside brackets, so
    `[[N:[0-9]]]` defines N as `[0-9]` (LLVM's FindRegexVarEnd). A `[[` that starts no
    variable name is literal text. CheckSyntaxError for a part with no end.
    """
    out: list[_Part] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("{{", i):
            end = pattern.find("}}", i + 2)
            if end < 0:
                raise CheckSyntaxError(f"{_cut(pattern)}: a {{{{regex}}}} with no closing }}}}")
            out.append(_Part(i, end + 2, regex=pattern[i + 2 : end]))
            i = end + 2
            continue
        m = _VAR.match(pattern, i)
        if m is None:
            i += 1
            continue
        if m.group(2) == "]]":
            out.append(_Part(i, m.end(), name=m.group(1)))
            i = m.end()
            continue
        j, depth = m.end(), 0
        while j < n and not (depth == 0 and pattern.startswith("]]", j)):
            c = pattern[j]
            if c == "\\":
                j += 2
                continue
            depth += 1 if c == "[" else -1 if c == "]" else 0
            if depth < 0:
                raise CheckSyntaxError(f"{_cut(pattern)}: a ']' with no '[' in [[{m.group(1)}:...]]")
            j += 1
        if j >= n:
            raise CheckSyntaxError(f"{_cut(pattern)}: [[{m.group(1)}:... with no closing ]]")
        out.append(_Part(i, j + 2, name=m.group(1), definition=pattern[m.end() : j]))
        i = j + 2
    return out


_MAX_COUNT = 100_000


class CheckSyntaxError(UsageError):
    """A directive that does not parse (an unknown suffix, a bad regex, an undefined variable)."""


@dataclass(frozen=True)
class Directive:
    """One check line: its kind (CHECK, NEXT, SAME, NOT, COUNT, DAG, EMPTY, LABEL), its pattern, where it was."""

    kind: str
    pattern: str
    text: str  # the directive as written, for messages
    number: int  # 1-based among the directives given
    count: int = 1  # CHECK-COUNT-n


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


def parse(checks: str | Iterable[str]) -> list[Directive]:
    """Return the directives in `checks` (a text or lines); lines without one are comments.

    Raises CheckSyntaxError (exit 2) for a `CHECK-SOMETHING:` this matcher does not know,
    a CHECK-COUNT of 0, or no directive at all.
    """
    lines = checks.split("\n") if isinstance(checks, str) else [ln for c in checks for ln in c.split("\n")]
    out: list[Directive] = []
    for line in lines:
        m = _DIRECTIVE.search(line)
        if m is None:
            bad = _ALMOST.search(line)
            if bad is not None:
                raise CheckSyntaxError(
                    f"unknown directive CHECK-{bad.group(1)[:40]} in {_cut(line.strip())}; known: CHECK, CHECK-NEXT, "
                    "CHECK-SAME, CHECK-NOT, CHECK-COUNT-n, CHECK-DAG, CHECK-EMPTY, CHECK-LABEL"
                )
            continue
        suffix, count, pattern = m.group(1), m.group(2), m.group(3).strip()
        kind = "COUNT" if count is not None else (suffix or "CHECK")
        n = int(count) if count is not None else 1
        if kind == "COUNT" and not 1 <= n <= _MAX_COUNT:
            raise CheckSyntaxError(
                f"CHECK-COUNT-{count} in {_cut(line.strip())}: the count must be 1..{_MAX_COUNT}"
            )
        if kind != "EMPTY" and not pattern:
            raise CheckSyntaxError(
                f"{_cut(line.strip())} has an empty pattern (CHECK-EMPTY checks an empty line)"
            )
        if kind == "EMPTY" and pattern:
            raise CheckSyntaxError(f"{_cut(line.strip())}: CHECK-EMPTY takes no pattern")
        d = Directive(kind, pattern, line.strip(), len(out) + 1, n)
        _compile(d, {}, check_only=True)
        out.append(d)
    if not out:
        raise CheckSyntaxError("no CHECK directive given (e.g. 'CHECK: tl::wgmma_ss', 'CHECK-NOT: cp_async')")
    if out[0].kind in ("NEXT", "SAME", "EMPTY"):
        raise CheckSyntaxError(
            f"{_cut(out[0].text)} cannot be the first directive: it needs a previous match"
        )
    return out


def _compile(d: Directive, variables: dict[str, str], *, check_only: bool = False) -> re.Pattern[str]:
    """Return the directive's pattern as a regex (variables substituted); CheckSyntaxError when it is bad."""
    parts: list[str] = []
    at = 0
    defined: set[str] = set()
    for m in _parts(d.pattern):
        parts.append(_literal(d.pattern[at : m.start]))
        regex, name, definition = m.regex, str(m.name), m.definition
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif definition is not None:
            group = _group(name)
            if group in defined:
                raise CheckSyntaxError(f"{_cut(d.text)} defines [[{name}]] twice")
            defined.add(group)
            parts.append(f"(?P<{group}>{definition})")
        elif _group(name) in defined:
            parts.append(f"(?P={_group(name)})")
        elif name in variables:
            parts.append(re.escape(variables[name]))
        elif check_only:
            parts.append("(?:)")  # defined by an earlier directive, known only while matching
        else:
            raise CheckSyntaxError(f"{_cut(d.text)} uses [[{name}]], which no earlier directive defined")
        at = m.end
    parts.append(_literal(d.pattern[at:]))
    try:
        return re.compile("".join(parts))
    except re.error as exc:
        raise CheckSyntaxError(f"{_cut(d.text)}: bad regex ({exc})") from None


def _group(name: str) -> str:
    return "g_" + name[1:] if name.startswith("$") else "v_" + name


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", text))


class _Text:
    """The input and its line starts: positions to (line, column), the line of a position."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n")
        self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def where(self, pos: int) -> tuple[int, int]:
        import bisect

        i = bisect.bisect_right(self.starts, pos) - 1
        return i + 1, pos - self.starts[i] + 1

    def search(self, rx: re.Pattern[str], start: int, end: int | None = None) -> re.Match[str] | None:
        """Return the first match of rx at or after `start` (before `end`) that stays on one line."""
        stop = len(self.text) if end is None else end
        pos = start
        while pos <= stop:
            m = rx.search(self.text, pos, stop)
            if m is None:
                return None
            if "\n" not in m.group(0):
                return m
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
        rx = _compile(ds[i], {})
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
                rx = _compile(g, variables)
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
        rx = _compile(d, variables)
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
                    return Result(False, Failure(d, why, line, col, col + len(m.group(0))))
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
) -> re.Match[str] | None:
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
        m = t.search(_compile(d, variables), start, end)
        if m is not None:
            line, col = t.where(m.start())
            return Result(
                False,
                Failure(d, "CHECK-NOT: excluded string found", line, col, col + max(1, len(m.group(0)))),
            )
    return None


def _capture(m: re.Match[str], variables: dict[str, str]) -> None:
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
    for p in _parts(d.pattern):
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


def has_regex(directives: Sequence[Directive]) -> bool:
    """Return True when a directive holds a regex (`{{...}}`, `[[NAME:...]]`): matching it may take any time.

    Literal patterns (variables used included) match in time linear in the text; a regex
    can backtrack without end (`{{(.*)*(.*)*QQQ}}`), which `tltrace check` bounds
    (checking.py runs such a match in a child process under a deadline).
    """
    for d in directives:
        if any(p.regex is not None or p.definition is not None for p in _parts(d.pattern)):
            return True
    return False


def _cut(text: str, limit: int = 120) -> str:
    """Return `text` as a message quotes it: repr, cut to `limit` characters with its length said."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"


def check(text: str, checks: str | Iterable[str]) -> Result:
    """Return the result of matching `checks` (a text or lines of directives) against `text`."""
    return match(text, parse(checks))
