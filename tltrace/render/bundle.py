"""The pages' scripts and styles: each script's declared dependencies in order, comments and layout left out.

Every script in render/assets declares, in its leading comment, the scripts it needs loaded
before it, one JSDoc tag a line::

    /* tltrace compile report: one pass's view ...
     * @requires core.js report-state.js report-view.js
     */

A page names the scripts it starts (`script_order(["report.js"])`); the builder adds what they
require, depth first in the order declared, each before the first script that needs it, and
stops with `AssetError` on a script that is missing or on a cycle (naming the chain).

The page carries the assets without their comments and indentation (`minify_js`,
`minify_css`): the tokens and the line breaks between them stay as written, so automatic
semicolon insertion reads the script as before; only spaces that no token needs go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources

REQUIRES = re.compile(r"^\s*(?:/\*+|\*)?\s*@requires\s+(.+?)\s*(?:\*/)?\s*$", re.M)
_LEADING_COMMENT = re.compile(r"\s*/\*.*?\*/", re.S)


class AssetError(RuntimeError):
    """A page's scripts cannot be put in order: a missing script or a dependency cycle (a bug in tltrace)."""


def asset_text(name: str) -> str:
    """Return one file of render/assets."""
    return resources.files("tltrace.render").joinpath("assets", name).read_text(encoding="utf-8")


def _exists(name: str) -> bool:
    return resources.files("tltrace.render").joinpath("assets", name).is_file()


def requires_of(text: str) -> list[str]:
    """Return the scripts a script's leading comment requires (`@requires a.js b.js`), in order."""
    m = _LEADING_COMMENT.match(text)
    if not m:
        return []
    out: list[str] = []
    for line in REQUIRES.findall(m.group(0)):
        out.extend(n for n in re.split(r"[\s,]+", line) if n)
    return out


def script_order(entries: Iterable[str], read=asset_text, exists=_exists) -> list[str]:
    """Return `entries` and every script they require, each after what it requires.

    Depth first, in the order of `entries` and of each script's `@requires`; raises AssetError on a
    script that does not exist or on a cycle. `read`/`exists` let tests give their own scripts.
    """
    order: list[str] = []
    done: set[str] = set()
    path: list[str] = []  # the chain being visited, to name a cycle

    def visit(name: str, by: str | None) -> None:
        if name in done:
            return
        if name in path:
            cycle = " -> ".join([*path[path.index(name) :], name])
            raise AssetError(f"render/assets: the scripts require each other in a cycle: {cycle}")
        if not exists(name):
            who = f"{by} requires {name}" if by else f"the page starts {name}"
            raise AssetError(f"render/assets: {who}, which does not exist")
        path.append(name)
        for dep in requires_of(read(name)):
            visit(dep, name)
        path.pop()
        done.add(name)
        order.append(name)

    for entry in entries:
        visit(entry, None)
    return order


# -- minifying -------------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z0-9_$\\\u0080-\uffff]")
_JS_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n\f\v\u00a0\ufeff\u2028\u2029]+)
      | (?P<line>//[^\n\r\u2028\u2029]*)
      | (?P<block>/\*.*?\*/)
      | (?P<str>"(?:[^"\\\n]|\\.|\\\n)*"|'(?:[^'\\\n]|\\.|\\\n)*')
      | (?P<num>0[xXbBoO][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?n?)
      | (?P<word>[A-Za-z_$\\\u0080-\uffff][A-Za-z0-9_$\\\u0080-\uffff]*)
      | (?P<punct>.)""",
    re.S | re.X,
)
_REGEX_BODY = re.compile(r"/(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
# After these words an expression starts, so a `/` opens a regular expression.
_BEFORE_EXPR = {
    "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
    "case", "do", "else", "yield", "await",
}  # fmt: skip
# Neighbours that would read as another token written together: `a + +b`, `a - -b`, `x / /re/`,
# `a < !--b` and `a-- > b` (HTML comment openers and closers in a script).
_JOINS = {("+", "+"), ("-", "-"), ("/", "/"), ("/", "*"), ("<", "!"), ("-", ">")}


def _js_tokens(src: str) -> list[tuple[str, str, bool, bool]]:
    """Return (kind, text, space_before, newline_before) for each token of a script, comments dropped."""
    out: list[tuple[str, str, bool, bool]] = []
    pos, space, newline = 0, False, False
    while pos < len(src):
        m = _JS_TOKEN.match(src, pos)
        assert m is not None  # `punct` matches any one character
        kind, text = m.lastgroup or "punct", m.group(0)
        if kind == "punct" and text == "`":
            raise AssetError("render/assets: template literals are not minified; use a string")
        if kind == "punct" and text == "/":
            prev = out[-1] if out else None
            if prev is None or (prev[0] == "punct" and prev[1] not in ")]}") or prev[1] in _BEFORE_EXPR:
                rx = _REGEX_BODY.match(src, pos)
                if rx is None:
                    raise AssetError(
                        f"render/assets: cannot read the regular expression at {src[pos : pos + 40]!r}"
                    )
                kind, text = "regex", rx.group(0)
        if kind == "block" and src.startswith("/*", pos) and not text.endswith("*/"):
            raise AssetError("render/assets: an unclosed comment")
        pos += len(text)
        if kind in ("ws", "line", "block"):
            space = True
            newline = newline or bool(re.search(r"[\n\r\u2028\u2029]", text))
            continue
        out.append((kind, text, space, newline))
        space = newline = False
    return out


def minify_js(src: str) -> str:
    """Return a script without comments and indentation; same tokens, same line breaks between them."""
    parts: list[str] = []
    prev: tuple[str, str, bool, bool] | None = None
    for tok in _js_tokens(src):
        kind, text, space, newline = tok
        if prev is not None:
            if newline:
                parts.append("\n")
            elif space and _needs_space(prev, tok):
                parts.append(" ")
        parts.append(text)
        prev = tok
    return "".join(parts) + "\n"


def _needs_space(prev: tuple[str, str, bool, bool], tok: tuple[str, str, bool, bool]) -> bool:
    a, b = prev[1][-1], tok[1][0]
    if _WORD.match(a) and _WORD.match(b):
        return True  # two words, or a word and a number
    if prev[0] == "num" and b == ".":
        return True  # `1 .toFixed`
    return (a, b) in _JOINS


_CSS_TOKEN = re.compile(
    r"""(?P<c>/\*.*?\*/)|(?P<s>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<w>\s+)|(?P<o>[^"'/\s]+|/)""", re.S
)


def minify_css(src: str) -> str:
    """Return a style sheet without comments, runs of blanks, or blanks beside `{ } ; ,` and after `:` `>`."""
    parts: list[str] = []
    for m in _CSS_TOKEN.finditer(src):
        if m.lastgroup == "c":
            parts.append(" ")
        elif m.lastgroup == "w":
            parts.append(" ")
        else:
            parts.append(m.group(0))
    out, strings = "".join(parts), []
    # Strings keep their blanks: set them aside, squeeze the rest, put them back.
    held = re.sub(
        r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'",
        lambda s: strings.append(s.group(0)) or f"\0{len(strings) - 1}\0",
        out,
    )
    held = re.sub(r" +", " ", held)
    held = re.sub(r" ?([{};,]) ?", r"\1", held)
    held = re.sub(r"([:>]) ", r"\1", held)
    held = re.sub(r" >", ">", held)
    held = held.replace(";}", "}").strip()
    return re.sub(r"\0(\d+)\0", lambda s: strings[int(s.group(1))], held) + "\n"
