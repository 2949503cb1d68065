"""The layout expressions evaluated: `+ - * // %` on integers and index variables, nothing else.

TileLang prints a layout's forward thread and index as such expressions (`_i % 64 // 16 * 32
+ _j % 8 // 2`), floor division and floor modulo as in Python. `parse` makes a small tree,
`evaluate` runs it on ints or on numpy arrays alike (broadcast: a whole grid in one call),
so the same code answers one element and a 256x256 buffer. render/assets/layouts-expr.js is
its twin in the report, tested against it on a corpus (tests/test_layouts_expr.py).
"""

from __future__ import annotations

import re
from typing import Any

Node = tuple  # ("n", int) | ("v", name) | (op, Node, Node)

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(//|[-+*%()]))")


class ExprError(ValueError):
    """An expression outside the grammar (a call, a cast, a comparison): not evaluated."""


def tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ExprError(f"cannot read {text[pos : pos + 20]!r} in {text!r}")
        out.append(m.group(m.lastindex or 0))
        pos = m.end()
    return out


def parse(text: str) -> Node:
    """Return the tree of `text`; ExprError when it is not `+ - * // %` on integers and names."""
    toks = tokens(text)
    node, pos = _sum(toks, 0, text)
    if pos != len(toks):
        raise ExprError(f"unexpected {toks[pos]!r} in {text!r}")
    return node


def _sum(toks: list[str], pos: int, text: str) -> tuple[Node, int]:
    node, pos = _product(toks, pos, text)
    while pos < len(toks) and toks[pos] in ("+", "-"):
        op = toks[pos]
        rhs, pos = _product(toks, pos + 1, text)
        node = (op, node, rhs)
    return node, pos


def _product(toks: list[str], pos: int, text: str) -> tuple[Node, int]:
    node, pos = _atom(toks, pos, text)
    while pos < len(toks) and toks[pos] in ("*", "//", "%"):
        op = toks[pos]
        rhs, pos = _atom(toks, pos + 1, text)
        node = (op, node, rhs)
    return node, pos


def _atom(toks: list[str], pos: int, text: str) -> tuple[Node, int]:
    if pos >= len(toks):
        raise ExprError(f"unexpected end of {text!r}")
    t = toks[pos]
    if t == "(":
        node, pos = _sum(toks, pos + 1, text)
        if pos >= len(toks) or toks[pos] != ")":
            raise ExprError(f"unclosed '(' in {text!r}")
        return node, pos + 1
    if t.isdigit():
        return ("n", int(t)), pos + 1
    if t[0].isalpha() or t[0] == "_":
        if pos + 1 < len(toks) and toks[pos + 1] == "(":
            raise ExprError(f"a call ({t}) in {text!r}")
        return ("v", t), pos + 1
    raise ExprError(f"unexpected {t!r} in {text!r}")


def evaluate(node: Node, env: dict[str, Any]) -> Any:
    """Return the value of `node` with the variables of `env` (ints, or numpy arrays that broadcast)."""
    kind = node[0]
    if kind == "n":
        return node[1]
    if kind == "v":
        try:
            return env[node[1]]
        except KeyError:
            raise ExprError(f"unknown variable {node[1]!r}") from None
    a, b = evaluate(node[1], env), evaluate(node[2], env)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "//":
        return a // b
    return a % b


def value(text: str, env: dict[str, Any]) -> Any:
    return evaluate(parse(text), env)


def numpy() -> Any:
    """Return numpy, or None where it is not installed (then evaluate element by element)."""
    try:
        import numpy as np
    except ImportError:
        return None
    return np
