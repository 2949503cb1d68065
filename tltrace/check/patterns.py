"""The directives of a check file: which ones a text holds, and each pattern as a Python regex.

A pattern is literal text with `{{regex}}` (Python `re`) and `[[NAME:regex]]` (define) /
`[[NAME]]` (use) parts, found as LLVM's FileCheck finds them (`pattern_parts`); any run of
spaces or tabs in the literal text matches any run in the input (FileCheck without
--strict-whitespace). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import UsageError

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


def pattern_parts(pattern: str) -> list[_Part]:
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
                raise CheckSyntaxError(f"{quoted(pattern)}: a {{{{regex}}}} with no closing }}}}")
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
                raise CheckSyntaxError(f"{quoted(pattern)}: a ']' with no '[' in [[{m.group(1)}:...]]")
            j += 1
        if j >= n:
            raise CheckSyntaxError(f"{quoted(pattern)}: [[{m.group(1)}:... with no closing ]]")
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
                    f"unknown directive CHECK-{bad.group(1)[:40]} in {quoted(line.strip())}; known: CHECK, CHECK-NEXT, "
                    "CHECK-SAME, CHECK-NOT, CHECK-COUNT-n, CHECK-DAG, CHECK-EMPTY, CHECK-LABEL"
                )
            continue
        # FileCheck without --strict-whitespace: a run of spaces and tabs is one space (in the
        # input too: filecheck/__init__.py's _Text), leading and trailing ones ignored.
        suffix, count, pattern = m.group(1), m.group(2), re.sub(r"[ \t]+", " ", m.group(3).strip())
        kind = "COUNT" if count is not None else (suffix or "CHECK")
        n = int(count) if count is not None else 1
        if kind == "COUNT" and not 1 <= n <= _MAX_COUNT:
            raise CheckSyntaxError(
                f"CHECK-COUNT-{count} in {quoted(line.strip())}: the count must be 1..{_MAX_COUNT}"
            )
        if kind != "EMPTY" and not pattern:
            raise CheckSyntaxError(
                f"{quoted(line.strip())} has an empty pattern (CHECK-EMPTY checks an empty line)"
            )
        if kind == "EMPTY" and pattern:
            raise CheckSyntaxError(f"{quoted(line.strip())}: CHECK-EMPTY takes no pattern")
        d = Directive(kind, pattern, line.strip(), len(out) + 1, n)
        compile_directive(d, {}, check_only=True)
        out.append(d)
    if not out:
        raise CheckSyntaxError("no CHECK directive given (e.g. 'CHECK: tl::wgmma_ss', 'CHECK-NOT: cp_async')")
    positive = False  # LLVM: CHECK-NEXT, -SAME and -EMPTY need a CHECK (not a DAG or NOT) before them
    for d in out:
        if d.kind in ("NEXT", "SAME", "EMPTY") and not positive:
            first = "the first directive" if d is out[0] else "after CHECK-DAG or CHECK-NOT alone"
            raise CheckSyntaxError(
                f"{quoted(d.text)} cannot be {first}: it needs a previous CHECK match (as in LLVM's FileCheck)"
            )
        positive = positive or d.kind not in ("DAG", "NOT")
    return out


def compile_directive(
    d: Directive, variables: dict[str, str], *, check_only: bool = False
) -> re.Pattern[str]:
    """Return the directive's pattern as a regex (variables substituted); CheckSyntaxError when it is bad."""
    parts: list[str] = []
    at = 0
    defined: set[str] = set()
    for m in pattern_parts(d.pattern):
        parts.append(_literal(d.pattern[at : m.start]))
        regex, name, definition = m.regex, str(m.name), m.definition
        if regex is not None:
            parts.append(f"(?:{regex})")
        elif definition is not None:
            group = _group(name)
            if group in defined:
                raise CheckSyntaxError(f"{quoted(d.text)} defines [[{name}]] twice")
            defined.add(group)
            parts.append(f"(?P<{group}>{definition})")
        elif _group(name) in defined:
            parts.append(f"(?P={_group(name)})")
        elif name in variables:
            parts.append(re.escape(variables[name]))
        elif check_only:
            parts.append("(?:)")  # defined by an earlier directive, known only while matching
        else:
            raise CheckSyntaxError(f"{quoted(d.text)} uses [[{name}]], which no earlier directive defined")
        at = m.end
    parts.append(_literal(d.pattern[at:]))
    try:
        return re.compile("".join(parts), re.MULTILINE)  # ^ and $ at line ends, as LLVM's REG_NEWLINE
    except re.error as exc:
        raise CheckSyntaxError(f"{quoted(d.text)}: bad regex ({exc})") from None
    except OverflowError as exc:  # a{4294967296}: Python's re says so in an OverflowError
        raise CheckSyntaxError(f"{quoted(d.text)}: bad regex ({exc})") from None
    except RecursionError:  # parentheses nested thousands deep: Python's re parser recurses
        raise CheckSyntaxError(f"{quoted(d.text)}: bad regex (nested too deep for Python's re)") from None


def _group(name: str) -> str:
    return "g_" + name[1:] if name.startswith("$") else "v_" + name


def _literal(text: str) -> str:
    return r"[ \t]+".join(re.escape(w) for w in re.split(r"[ \t]+", text))


def has_regex(directives: Sequence[Directive]) -> bool:
    """Return True when a directive holds a regex (`{{...}}`, `[[NAME:...]]`): matching it may take any time.

    Literal patterns (variables used included) match in time linear in the text; a regex
    can backtrack without end (`{{(.*)*(.*)*QQQ}}`), which `tltrace check` bounds
    (checking.py runs such a match in a child process under a deadline).
    """
    for d in directives:
        if any(p.regex is not None or p.definition is not None for p in pattern_parts(d.pattern)):
            return True
    return False


def quoted(text: str, limit: int = 120) -> str:
    """Return `text` as a message quotes it: repr, cut to `limit` characters with its length said."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text):,} characters)"
