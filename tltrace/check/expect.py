"""The `--expect` grammar: a compile's facts compared with values or with each other, parsed by hand (never `eval`).

    EXPR    := TERM ('and' TERM)*
    TERM    := OPERAND OP OPERAND          (at least one side a fact)
    OP      := == | != | < | <= | > | >=
    OPERAND := a fact NAME | an integer (-3, 49152, 0x10) | true | false | none
             | 'text' | "text" | a bare word (a text, when it names no fact)

`wgmma >= 1`, `spill_bytes == 0`, `max_nreg <= registers`, `232448 >= smem_dynamic`,
`smem_dynamic <= 49152 and warp_specialized == true`. Numbers compare with numbers (a bool
counts as 0 or 1); `== true` / `== false` ask whether a value is non-zero / zero; a text
compares with == and != only. A fact that is None (not known for this compile) makes its
term fail and says so, whatever the operator; only `NAME == none` / `NAME != none` ask
about that. A bare word is a fact when it names one (`bind`), else a text on the other side
of == or != from a fact (`arch == sm_90a`), else an unknown fact (with a did-you-mean).
Integers of more than MAX_INT_DIGITS digits, texts over MAX_TEXT characters and expressions
over MAX_EXPR are refused; a value shown in a message is cut to SHOWN characters. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import UsageError
from ..format.passref import did_you_mean

OPS = ("==", "!=", "<=", ">=", "<", ">")
MAX_EXPR = 10_000  # characters of one --expect
MAX_TEXT = 4_096  # characters of one text value
MAX_INT_DIGITS = 40  # digits of one integer (a 64-bit count has at most 20)
SHOWN = 60  # characters of a value or expression quoted in a message

_TOKEN = re.compile(
    r"""\s*(?:(?P<op>==|!=|<=|>=|<|>)|(?P<str>'[^']*'|"[^"]*")|(?P<word>[A-Za-z0-9_.+:-]+)|(?P<bad>\S))"""
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_INT = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|\d+)$")
_EXAMPLE = "write NAME OP VALUE, e.g. 'wgmma >= 1' or 'max_nreg <= registers'"


class ExpressionError(UsageError):
    """An --expect that does not parse, or names a fact that does not exist (exit 2)."""


def shown(value: Any, limit: int = SHOWN) -> str:
    """Return a value as a message quotes it: repr of a text, cut to `limit` characters with its length said."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return repr(value[:limit]) + f"... ({len(value):,} characters)"
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Operand:
    """One side of a term: a fact (`fact`), a literal value (`value`), or a bare word not yet bound (`word`)."""

    kind: str  # "fact", "value" or "word"
    value: int | bool | str | None

    def __str__(self) -> str:
        if self.kind != "value":
            return str(self.value)
        return shown(self.value)


@dataclass(frozen=True)
class Term:
    """One comparison: LEFT OP RIGHT."""

    left: Operand
    op: str
    right: Operand

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"

    @property
    def facts(self) -> tuple[str, ...]:
        return tuple(str(o.value) for o in (self.left, self.right) if o.kind == "fact")


@dataclass(frozen=True)
class Expectation:
    """A parsed --expect: its terms (all must hold) and the text as given."""

    text: str
    terms: tuple[Term, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Return the fact names it reads (after `bind`; before, every bare word that could be one)."""
        out: list[str] = []
        for t in self.terms:
            for o in (t.left, t.right):
                if o.kind == "fact" or (o.kind == "word" and _NAME.match(str(o.value))):
                    out.append(str(o.value))
        return tuple(dict.fromkeys(out))

    def bind(self, names: Collection[str]) -> Expectation:
        """Return it with each bare word made a fact (it names one) or a text (beside == or != and a fact).

        Raises ExpressionError for a word that is neither (an unknown fact: the closest names
        said), and for a term that compares no fact at all.
        """
        terms = []
        for t in self.terms:
            left, right = _bind(t.left, names), _bind(t.right, names)
            for side, other in ((left, right), (right, left)):
                if side.kind != "word":
                    continue
                if other.kind == "fact" and t.op in ("==", "!=") and not _looks_like(str(side.value), names):
                    continue
                word = str(side.value)
                if not _NAME.match(word) and other.kind == "fact":
                    continue  # `grid == 2x2x1`: no fact could be meant
                hint = did_you_mean(names, word)
                known = "" if hint else f"; 'tltrace show SCRIPT --facts' lists them: {', '.join(names)}"
                raise ExpressionError(
                    f"unknown fact {shown(word)} in --expect {shown(self.text)}{hint}{known}"
                )
            left, right = _text(left), _text(right)
            if left.kind != "fact" and right.kind != "fact":
                raise ExpressionError(
                    f"--expect {shown(self.text)}: {t} compares no fact; {_EXAMPLE} (docs/facts.md lists them)"
                )
            terms.append(Term(left, t.op, right))
        return replace(self, terms=tuple(terms))

    def evaluate(self, facts: Mapping[str, Any]) -> tuple[bool, str]:
        """Return (holds, why): why names each failing term's actual values.

        Raises ExpressionError for a name `facts` does not have, or values of the wrong
        kind (`wgmma >= 'x'`, `arch < 3`).
        """
        bound = self.bind(tuple(facts))
        failed = []
        for t in bound.terms:
            ok, why = _holds(t, facts)
            if not ok:
                failed.append(why)
        if failed:
            return False, "; ".join(failed)
        return True, ", ".join(f"{n} = {shown(facts[n])}" for n in bound.names)


def _bind(o: Operand, names: Collection[str]) -> Operand:
    if o.kind == "word" and str(o.value) in names:
        return Operand("fact", o.value)
    return o


def _text(o: Operand) -> Operand:
    return Operand("value", o.value) if o.kind == "word" else o


def _looks_like(word: str, names: Collection[str]) -> bool:
    """Return True when a bare text word is close to a fact name (`registrs`): taken as a typo, not a text."""
    return bool(did_you_mean(names, word))


def _value_of(o: Operand, facts: Mapping[str, Any]) -> Any:
    return facts[str(o.value)] if o.kind == "fact" else o.value


def _holds(t: Term, facts: Mapping[str, Any]) -> tuple[bool, str]:
    left, right = _value_of(t.left, facts), _value_of(t.right, facts)
    said = "; ".join(f"{n} is {shown(facts[n])}" for n in dict.fromkeys(t.facts))
    none_literal = [o for o in (t.left, t.right) if o.kind == "value" and o.value is None]
    if none_literal:
        if t.op not in ("==", "!="):
            raise ExpressionError(f"{t}: none compares with == and != only")
        other = left if t.right in none_literal else right
        is_none = other is None
        ok = is_none if t.op == "==" else not is_none
        if is_none:
            return ok, f"{said} (not known for this compile)"
        return ok, f"{said}, not none"
    unknown = [n for n in dict.fromkeys(t.facts) if facts[n] is None]
    if unknown:
        return False, "; ".join(f"{n} is not known for this compile (none)" for n in unknown)
    flags = [o for o in (t.left, t.right) if o.kind == "value" and isinstance(o.value, bool)]
    if flags:
        if t.op not in ("==", "!="):
            raise ExpressionError(f"{t}: true and false compare with == and != only")
        other = right if t.left in flags else left
        if isinstance(other, str):
            fact = t.left if t.left.kind == "fact" else t.right
            raise ExpressionError(f"{t}: {fact} is a text ({shown(other)}), not a flag")
        truth = bool(left) == bool(right)
        return (truth if t.op == "==" else not truth), said
    if isinstance(left, str) != isinstance(right, str):
        text_side, num_side = (t.left, t.right) if isinstance(left, str) else (t.right, t.left)
        if num_side.kind == "value":
            raise ExpressionError(
                f"{t}: {text_side} is a text ({shown(_value_of(text_side, facts))}); compare it with a quoted text"
            )
        if text_side.kind == "value":
            raise ExpressionError(
                f"{t}: {num_side} is {shown(_value_of(num_side, facts))}, a number or flag; compare it with one"
            )
        raise ExpressionError(f"{t}: {t.left} and {t.right} are not both numbers or both texts ({said})")
    if isinstance(left, str):
        if t.op not in ("==", "!="):
            raise ExpressionError(f"{t}: a text compares with == and != only")
        return (left == right) == (t.op == "=="), said
    a, b = int(left), int(right)
    ok = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[t.op]
    return ok, said


def parse(text: str, names: Collection[str] | None = None) -> Expectation:
    """Return the expectation `text` states (bound to `names`, the known facts, when given).

    ExpressionError (one line) when it does not parse, is too long, or (with `names`) names
    an unknown fact.
    """
    if len(text) > MAX_EXPR:
        raise ExpressionError(f"--expect {shown(text)} is over {MAX_EXPR:,} characters")
    tokens: list[tuple[str, str]] = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue
        if kind == "bad":
            raise ExpressionError(f"--expect {shown(text)}: unexpected {m.group(kind)!r}; {_EXAMPLE}")
        tokens.append((kind, m.group(kind)))
    if not tokens:
        raise ExpressionError(f"--expect is empty; {_EXAMPLE}")
    terms: list[Term] = []
    i = 0
    while True:
        if len(tokens) - i < 3:
            raise ExpressionError(f"--expect {shown(text)} is incomplete; {_EXAMPLE}")
        (lk, lraw), (ok, op), (rk, rraw) = tokens[i : i + 3]
        if lk == "op":
            raise ExpressionError(f"--expect {shown(text)}: expected a fact or a value before {lraw!r}")
        if ok != "op":
            raise ExpressionError(
                f"--expect {shown(text)}: expected one of {' '.join(OPS)} after {shown(lraw)}, not {shown(op)}"
            )
        if rk == "op":
            raise ExpressionError(f"--expect {shown(text)}: expected a value after {op!r}, not {rraw!r}")
        terms.append(Term(_operand(lk, lraw, text), op, _operand(rk, rraw, text)))
        i += 3
        if i == len(tokens):
            break
        if tokens[i] != ("word", "and"):
            raise ExpressionError(
                f"--expect {shown(text)}: expected 'and' or the end after {shown(rraw)}, not {shown(tokens[i][1])}"
            )
        i += 1
    e = Expectation(text.strip(), tuple(terms))
    return e if names is None else e.bind(names)


def _operand(kind: str, raw: str, text: str) -> Operand:
    if kind == "str":
        if len(raw) - 2 > MAX_TEXT:
            raise ExpressionError(
                f"--expect {shown(text)}: a text of {len(raw) - 2:,} characters; at most {MAX_TEXT:,}"
            )
        return Operand("value", raw[1:-1])
    low = raw.lower()
    if low in ("true", "false"):
        return Operand("value", low == "true")
    if low in ("none", "null"):
        return Operand("value", None)
    if _INT.match(raw):
        digits = len(raw.lstrip("+-"))
        if digits > MAX_INT_DIGITS:
            raise ExpressionError(
                f"--expect {shown(text)}: an integer of {digits:,} digits; at most {MAX_INT_DIGITS} "
                "(no fact is larger)"
            )
        return Operand("value", int(raw, 0) if not re.match(r"[-+]?0\d", raw) else int(raw, 10))
    if len(raw) > MAX_TEXT:
        raise ExpressionError(
            f"--expect {shown(text)}: a word of {len(raw):,} characters; at most {MAX_TEXT:,}"
        )
    return Operand("word", raw)
