"""The layout expressions evaluated: `+ - * // %` on integers and index variables, nothing else.

TileLang prints a layout's forward thread and index as such expressions (`_i % 64 // 16 * 32
+ _j % 8 // 2`), floor division and floor modulo as in Python. `parse` makes a small tree,
`evaluate` runs it on ints or on numpy arrays alike (broadcast: a whole grid in one call),
so the same code answers one element and a 256x256 buffer. render/assets/layouts-expr.js is
its twin in the report, tested against it on a corpus (tests/test_layouts_expr.py).

The text comes from a manifest, which anyone can write: parsing and evaluating are bounded.
An expression longer than MAX_TEXT characters, nested deeper than MAX_DEPTH (parentheses or
operators), a literal or any value beyond MAX_INT (2**53 - 1: what the report's JavaScript
counts exactly), or a division or modulo by zero is an ExprError, never a RecursionError,
ZeroDivisionError or a silent int64 overflow.
"""

from __future__ import annotations

import re
from typing import Any

Node = tuple  # ("n", int) | ("v", name) | (op, Node, Node)

# ASCII only, as the report's JavaScript twin reads \d and \w: no other script's digits as literals.
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(//|[-+*%()]))", re.ASCII)


MAX_TEXT = 10_000  # characters of one expression (TileLang's longest swizzle: ~120)
MAX_DEPTH = 64  # nesting of parentheses, and of the parsed tree (TileLang's: under 20)
MAX_INT = 2**53 - 1  # the largest literal, or value of any step


class ExprError(ValueError):
    """An expression outside the grammar (a call, a cast, a comparison) or beyond the limits: not evaluated."""


def tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExprError(f"cannot read {text[pos : pos + 20]!r} in {_short(text)}")
        out.append(m.group(m.lastindex or 0))
        pos = m.end()
    return out


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def parse(text: str) -> Node:
    """Return the tree of `text`; ExprError when it is not `+ - * // %` on integers and names,
    or is beyond the limits (MAX_TEXT, MAX_DEPTH, MAX_INT)."""
    if not isinstance(text, str):
        raise ExprError(f"not an expression: {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise ExprError(f"an expression of {len(text)} characters (at most {MAX_TEXT}): {_short(text)}")
    toks = tokens(text)
    node, pos = _sum(toks, 0, text, 0)
    if pos != len(toks):
        raise ExprError(f"unexpected {toks[pos]!r} in {_short(text)}")
    if depth(node) > MAX_DEPTH:
        raise ExprError(f"an expression nested deeper than {MAX_DEPTH}: {_short(text)}")
    return node


def depth(node: Node) -> int:
    """Return the depth of a tree (walked without recursion: any tree parse makes)."""
    most, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        most = max(most, d)
        if n[0] not in ("n", "v"):
            stack.append((n[1], d + 1))
            stack.append((n[2], d + 1))
    return most


def _sum(toks: list[str], pos: int, text: str, nest: int) -> tuple[Node, int]:
    node, pos = _product(toks, pos, text, nest)
    while pos < len(toks) and toks[pos] in ("+", "-"):
        op = toks[pos]
        rhs, pos = _product(toks, pos + 1, text, nest)
        node = (op, node, rhs)
    return node, pos


def _product(toks: list[str], pos: int, text: str, nest: int) -> tuple[Node, int]:
    node, pos = _atom(toks, pos, text, nest)
    while pos < len(toks) and toks[pos] in ("*", "//", "%"):
        op = toks[pos]
        rhs, pos = _atom(toks, pos + 1, text, nest)
        node = (op, node, rhs)
    return node, pos


def _atom(toks: list[str], pos: int, text: str, nest: int) -> tuple[Node, int]:
    if pos >= len(toks):
        raise ExprError(f"unexpected end of {_short(text)}")
    t = toks[pos]
    if t == "(":
        if nest >= MAX_DEPTH:
            raise ExprError(f"parentheses nested deeper than {MAX_DEPTH} in {_short(text)}")
        node, pos = _sum(toks, pos + 1, text, nest + 1)
        if pos >= len(toks) or toks[pos] != ")":
            raise ExprError(f"unclosed '(' in {_short(text)}")
        return node, pos + 1
    if t.isdigit():
        if len(t) > 16 or int(t) > MAX_INT:
            raise ExprError(f"the literal {t[:20]}{'...' if len(t) > 20 else ''} is beyond {MAX_INT}")
        return ("n", int(t)), pos + 1
    if t[0].isalpha() or t[0] == "_":
        if pos + 1 < len(toks) and toks[pos + 1] == "(":
            raise ExprError(f"a call ({t}) in {_short(text)}")
        return ("v", t), pos + 1
    raise ExprError(f"unexpected {t!r} in {_short(text)}")


def evaluate(node: Node, env: dict[str, Any]) -> Any:
    """Return the value of `node` with the variables of `env` (ints, or numpy arrays that broadcast)."""
    kind = node[0]
    if kind == "n":
        return node[1]
    if kind == "v":
        try:
            return env[node[1]]
        except KeyError:
            raise ExprError(f"unknown variable {_short(node[1])}") from None
    a, b = evaluate(node[1], env), evaluate(node[2], env)
    if kind == "*":
        if _most(a, 1.0) * _most(b, 1.0) > MAX_INT:  # in floats: no int64 wraps before the check
            _beyond(a * 1.0 * b)
        out = a * b
    elif kind in ("//", "%"):
        if _any_zero(b):
            raise ExprError(f"{'division' if kind == '//' else 'modulo'} by zero")
        out = a // b if kind == "//" else a % b
    else:
        out = a + b if kind == "+" else a - b
    if _most(out, 1) > MAX_INT:
        _beyond(out)
    return out


def _most(v: Any, unit: Any) -> Any:
    """The largest magnitude of an int or an array (`unit` 1.0: in floats)."""
    if isinstance(v, (int, float)):
        return abs(v) * unit
    return abs(v * unit).max() if v.size else 0


def _beyond(v: Any) -> None:
    """Raise ExprError if any value of `v` is beyond MAX_INT (a float product: as JavaScript rounds it)."""
    if _most(v, 1) > MAX_INT:
        raise ExprError(f"a value beyond {MAX_INT}")


def _any_zero(v: Any) -> bool:
    return bool(v == 0) if isinstance(v, int) else bool((v == 0).any())


def value(text: str, env: dict[str, Any]) -> Any:
    return evaluate(parse(text), env)


def numpy() -> Any:
    """Return numpy, or None where it is not installed (then evaluate element by element)."""
    try:
        import numpy as np
    except ImportError:
        return None
    return np
