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
`minify_css`): the tokens stay as written, and so does every line break between them that
automatic semicolon insertion could read (all but those after `;` `{` `,` and before `}`);
only blanks that no token needs go.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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


def script_order(
    entries: Iterable[str],
    read: Callable[[str], str] = asset_text,
    exists: Callable[[str], bool] = _exists,
) -> list[str]:
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
# A script read in pieces: blanks, comments, strings, slashes, and runs of anything else ("code",
# never split: only the blanks between pieces can go).
_JS_PIECE = re.compile(
    r"""(?P<ws>[\s\ufeff]+)
      | (?P<line>//[^\n\r\u2028\u2029]*)
      | (?P<block>/\*.*?\*/)
      | (?P<str>"(?:[^"\\\n]|\\.|\\\n)*"|'(?:[^'\\\n]|\\.|\\\n)*')
      | (?P<slash>/)
      | (?P<tick>`)
      | (?P<code>[^\s\ufeff"'/`]+)""",
    re.S | re.X,
)
_REGEX_BODY = re.compile(r"/(?:[^/\\\[\n]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[A-Za-z]*")
_LAST_WORD = re.compile(r"[A-Za-z0-9_$]+$")
_NEWLINE = re.compile(r"[\n\r\u2028\u2029]")
# After these words an expression starts, so a `/` opens a regular expression.
_BEFORE_EXPR = {
    "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
    "case", "do", "else", "yield", "await",
}  # fmt: skip
# Neighbours that would read as another token written together: `a + +b`, `a - -b`, `x / /re/`,
# `a < !--b` and `a-- > b` (HTML comment openers and closers in a script).
_JOINS = {("+", "+"), ("-", "-"), ("/", "/"), ("/", "*"), ("<", "!"), ("-", ">")}
# A line break after these, or before `}`, never changes how the script reads: after `;` `{` `,`
# no statement can end early (no semicolon is inserted there), and one is inserted before `}`
# with or without it. Every other line break stays (`return` / `x`, `a` / `++b`).
_NO_ASI_AFTER = ";{,"


def _regex_may_start(prev: tuple[str, str] | None) -> bool:
    """Whether a `/` after the piece `prev` opens a regular expression (else it divides)."""
    if prev is None:
        return True
    kind, text = prev
    if kind != "code":
        return False  # after a string or a regular expression: a division
    last = text[-1]
    if last in ")]}":
        return False
    word = _LAST_WORD.search(text)
    return word is None or word.group(0) in _BEFORE_EXPR


def _js_pieces(src: str) -> list[tuple[str, str, bool, bool]]:
    """Return (kind, text, space_before, newline_before) for each piece of a script, comments dropped."""
    out: list[tuple[str, str, bool, bool]] = []
    pos, space, newline = 0, False, False
    prev: tuple[str, str] | None = None
    while pos < len(src):
        m = _JS_PIECE.match(src, pos)
        if m is None:  # an unterminated string
            raise AssetError(f"render/assets: cannot read the script at {src[pos : pos + 40]!r}")
        kind, text = m.lastgroup or "code", m.group(0)
        if kind == "tick":
            raise AssetError("render/assets: template literals are not minified; use a string")
        if kind == "slash":
            if src.startswith("/*", pos):
                raise AssetError("render/assets: an unclosed comment")
            kind = "code"
            if _regex_may_start(prev):
                rx = _REGEX_BODY.match(src, pos)
                if rx is None:
                    raise AssetError(
                        f"render/assets: cannot read the regular expression at {src[pos : pos + 40]!r}"
                    )
                kind, text = "regex", rx.group(0)
        pos += len(text)
        if kind in ("ws", "line", "block"):
            space = True
            newline = newline or bool(_NEWLINE.search(text))
            continue
        out.append((kind, text, space, newline))
        prev = (kind, text)
        space = newline = False
    return out


def minify_js(src: str) -> str:
    """Return a script without comments and indentation: the same tokens, and the line breaks that can matter."""
    parts: list[str] = []
    last, last_kind = "", ""
    for kind, text, space, newline in _js_pieces(src):
        if last:
            if newline and last not in _NO_ASI_AFTER and text[0] != "}":
                parts.append("\n")
            elif space and _needs_space(last, text[0], last_kind == "regex"):
                parts.append(" ")
        parts.append(text)
        last, last_kind = text[-1], kind
    return "".join(parts) + "\n"


def _needs_space(a: str, b: str, after_regex: bool = False) -> bool:
    """Whether the blank between a piece ending in `a` and one starting with `b` must stay."""
    if (after_regex or _WORD.match(a)) and _WORD.match(b):
        return True  # two words, a word and a number, or a word after `/re/` (not its flags)
    if a.isdigit() and b == ".":
        return True  # `1 .toFixed`
    return (a, b) in _JOINS


_CSS_TOKEN = re.compile(
    r"""(?P<c>/\*.*?\*/)|(?P<s>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|(?P<w>\s+)|(?P<o>[^"'/\s]+|/)""", re.S
)


def minify_css(src: str) -> str:
    """Return a style sheet without comments, runs of blanks, or blanks beside `{ } ; ,` and after `:` `>`."""
    parts: list[str] = []
    strings: list[str] = []  # strings keep their blanks: set aside, put back at the end
    for m in _CSS_TOKEN.finditer(src):
        if m.lastgroup in ("c", "w"):
            parts.append(" ")
        elif m.lastgroup == "s":
            strings.append(m.group(0))
            parts.append(f"\0{len(strings) - 1}\0")
        else:
            parts.append(m.group(0))
    held = re.sub(r" +", " ", "".join(parts))
    held = re.sub(r" ?([{};,]) ?", r"\1", held)
    held = re.sub(r"([:>]) ", r"\1", held)
    held = re.sub(r" >", ">", held)
    held = held.replace(";}", "}").strip()
    return re.sub(r"\0(\d+)\0", lambda s: strings[int(s.group(1))], held) + "\n"
