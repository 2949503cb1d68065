"""The `--expect` grammar: a compile's facts compared with values, parsed by hand (never `eval`).

    EXPR  := TERM ('and' TERM)*
    TERM  := NAME OP VALUE
    OP    := == | != | < | <= | > | >=
    VALUE := an integer (-3, 49152, 0x10) | true | false | none | 'text' | "text" | a bare word

`wgmma >= 1`, `spill_bytes == 0`, `smem_dynamic <= 49152 and warp_specialized == true`. An
integer compares with an integer fact (a bool fact counts as 0 or 1); `== true` / `== false`
ask whether the fact is non-zero / zero; a text compares with == and != only. A fact that is
None (not known for this compile) makes the term fail and says so. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import UsageError

OPS = ("==", "!=", "<=", ">=", "<", ">")
_TOKEN = re.compile(
    r"""\s*(?:(?P<op>==|!=|<=|>=|<|>)|(?P<str>'[^']*'|"[^"]*")|(?P<word>[A-Za-z0-9_.+:-]+)|(?P<bad>\S))"""
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)$")


class ExpressionError(UsageError):
    """An --expect that does not parse, or names a fact that does not exist (exit 2)."""


@dataclass(frozen=True)
class Term:
    """One comparison: NAME OP VALUE."""

    name: str
    op: str
    value: int | bool | str | None

    def __str__(self) -> str:
        v = self.value
        shown = (
            "none"
            if v is None
            else str(v).lower()
            if isinstance(v, bool)
            else repr(v)
            if isinstance(v, str)
            else str(v)
        )
        return f"{self.name} {self.op} {shown}"


@dataclass(frozen=True)
class Expectation:
    """A parsed --expect: its terms (all must hold) and the text as given."""

    text: str
    terms: tuple[Term, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms)

    def evaluate(self, facts: Mapping[str, Any]) -> tuple[bool, str]:
        """Return (holds, why): why names each failing term's actual value.

        Raises ExpressionError for a name `facts` does not have, or a value of the wrong
        kind (`wgmma >= 'x'`, `target < 3`).
        """
        unknown = [t.name for t in self.terms if t.name not in facts]
        if unknown:
            raise ExpressionError(
                f"unknown fact {unknown[0]!r} in --expect {self.text!r}; known: {', '.join(sorted(facts))}"
            )
        failed = []
        for t in self.terms:
            ok, why = _holds(t, facts[t.name])
            if not ok:
                failed.append(why)
        if failed:
            return False, "; ".join(failed)
        shown = ", ".join(f"{n} = {_show(facts[n])}" for n in dict.fromkeys(self.names))
        return True, shown


def _show(v: Any) -> str:
    return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def _holds(t: Term, actual: Any) -> tuple[bool, str]:
    if actual is None:
        if t.value is None:
            return (t.op == "=="), f"{t.name} is none (not known for this compile)"
        return False, f"{t.name} is not known for this compile (none)"
    v = t.value
    if v is None:
        return (t.op == "!="), f"{t.name} is {_show(actual)}, not none"
    if isinstance(v, bool):
        if t.op not in ("==", "!="):
            raise ExpressionError(f"{t}: true and false compare with == and != only")
        if isinstance(actual, str):
            raise ExpressionError(f"{t}: {t.name} is a text ({actual!r}), not a flag")
        truth = bool(actual) == v
        return (truth if t.op == "==" else not truth), f"{t.name} is {_show(actual)}"
    if isinstance(v, int):
        if isinstance(actual, str):
            raise ExpressionError(f"{t}: {t.name} is a text ({actual!r}); compare it with a quoted text")
        a = int(actual)
        ok = {"==": a == v, "!=": a != v, "<": a < v, "<=": a <= v, ">": a > v, ">=": a >= v}[t.op]
        return ok, f"{t.name} is {_show(actual)}"
    if t.op not in ("==", "!="):
        raise ExpressionError(f"{t}: a text compares with == and != only")
    if not isinstance(actual, str):
        raise ExpressionError(f"{t}: {t.name} is {_show(actual)}, a number or flag; compare it with one")
    return (actual == v) == (t.op == "=="), f"{t.name} is {actual!r}"


def parse(text: str) -> Expectation:
    """Return the expectation `text` states; ExpressionError (one line) when it does not parse."""
    tokens: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue
        if kind == "bad":
            raise ExpressionError(
                f"--expect {text!r}: unexpected {m.group(kind)!r}; write NAME OP VALUE, e.g. 'wgmma >= 1'"
            )
        tokens.append((kind, m.group(kind)))
    if not tokens:
        raise ExpressionError("--expect is empty; write NAME OP VALUE, e.g. 'wgmma >= 1'")
    terms: list[Term] = []
    i = 0
    while True:
        if len(tokens) - i < 3:
            raise ExpressionError(f"--expect {text!r} is incomplete; write NAME OP VALUE, e.g. 'wgmma >= 1'")
        (nk, name), (ok, op), (vk, raw) = tokens[i : i + 3]
        if nk != "word" or not _NAME.match(name):
            raise ExpressionError(f"--expect {text!r}: {name!r} is not a fact name")
        if ok != "op":
            raise ExpressionError(
                f"--expect {text!r}: expected one of {' '.join(OPS)} after {name!r}, not {op!r}"
            )
        if vk == "op":
            raise ExpressionError(f"--expect {text!r}: expected a value after {op!r}, not {raw!r}")
        terms.append(Term(name, op, _value(vk, raw)))
        i += 3
        if i == len(tokens):
            break
        if tokens[i] != ("word", "and"):
            raise ExpressionError(
                f"--expect {text!r}: expected 'and' or the end after {raw!r}, not {tokens[i][1]!r}"
            )
        i += 1
    return Expectation(text.strip(), tuple(terms))


def _value(kind: str, raw: str) -> int | bool | str | None:
    if kind == "str":
        return raw[1:-1]
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if _INT.match(raw):
        return int(raw, 0) if not re.match(r"[-+]?0\d", raw) else int(raw, 10)
    return raw
