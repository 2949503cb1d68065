"""An oracle for fragment layouts read off generated CUDA: which `threadIdx.x` writes which element.

TileLang ends a gemm by storing its accumulator fragment to global memory, one vector a loop
iteration (`T.copy(C_l, C[...])`):

    for (int i_2 = 0; i_2 < 32; ++i_2) {
      half_t C_local_cast[2];
      ...
      float2 v_ = *(float2*)(C_l + (i_2 * 2));
      ...
      *(uint1*)(C + (<offset in threadIdx.x, blockIdx, i_2>)) = *(uint1*)(C_local_cast + 0);
    }

inside whatever `if (threadIdx.x ...)` branches warp specialization put around it. `stores`
finds that loop, evaluates the register and the offset (C's index expressions translated to
Python, nothing of tltrace's) for every `threadIdx.x` of the launch bound that takes the
branches and every iteration and vector lane, and returns the element each one writes.
"""

from __future__ import annotations

import re
from typing import Any

_STORE = re.compile(
    r"\*\(uint\d+\*\)\((?P<out>\w+) \+ \((?P<off>.*)\)\) = \*\(uint\d+\*\)\((?P<cast>\w+) \+ 0\);"
)
_LOOP = re.compile(r"for \(int (?P<v>\w+) = 0; (?P=v) < (?P<n>\d+); \+\+(?P=v)\) \{")
_SAFE = re.compile(r"[\w\s()+\-*/%<>=&|^]*")


def _py(c_expr: str) -> str:
    """A C index expression on non-negative ints as Python (floor and truncation agree there)."""
    text = re.sub(r"\(\(int\)(threadIdx|blockIdx)\.(\w)\)", lambda m: f"{m.group(1)[0]}{m.group(2)}", c_expr)
    assert _SAFE.fullmatch(text), c_expr
    return text.replace("/", "//").replace("&&", " and ").replace("||", " or ")


def _guards(src: str, pos: int) -> list[str]:
    """The conditions (Python) of the `if`/`else` blocks enclosing `pos` (braces matched)."""
    stack: list[str | None] = []
    last_if: str | None = None
    start = 0
    for i, ch in enumerate(src[:pos]):
        if ch == "{":
            head = src[start:i].strip()
            m = re.fullmatch(r"(?:.*\s)?if \((.*)\)", head, re.S)
            if head.startswith("else"):
                assert last_if is not None, head
                stack.append(f"not ({last_if})")
            elif m and head.startswith("if"):
                stack.append(m.group(1))
            else:
                stack.append(None)
            start = i + 1
        elif ch == "}":
            last_if = None
            cond = stack.pop()
            if cond is not None and not cond.startswith("not ("):
                last_if = cond
            start = i + 1
        elif ch == ";":
            start = i + 1
    return [_py(c) if not c.startswith("not (") else f"not ({_py(c[5:-1])})" for c in stack if c]


def launch_threads(src: str) -> int:
    m = re.search(r"__launch_bounds__\((\d+)", src)
    assert m, "no __launch_bounds__ in the source"
    return int(m.group(1))


def stores(src: str, frag: str, out: str, cols: int) -> dict[tuple[int, int], tuple[int, int]]:
    """Return {(threadIdx.x, register of `frag`): (row, col) of `out`} of the last store of
    `frag` to `out` (a row-major 2-D tensor `cols` wide), at blockIdx 0."""
    found = [m for m in _STORE.finditer(src) if m.group("out") == out]
    assert found, f"no vector store to {out}"
    st = found[-1]
    cast = st.group("cast")
    decl = list(re.finditer(rf"\b\w+ {cast}\[(\d+)\];", src[: st.start()]))[-1]
    width = int(decl.group(1))
    loop = list(_LOOP.finditer(src[: decl.start()]))[-1]
    read = re.search(rf"\*\(float\d+\*\)\({frag} \+ \((.*)\)\);", src[decl.end() : st.start()])
    assert read, f"no read of {frag} between {cast} and the store"
    var, n = loop.group("v"), int(loop.group("n"))
    reg = compile(_py(read.group(1)), "reg", "eval")
    off = compile(_py(st.group("off")), "off", "eval")
    guards = [compile(g, "guard", "eval") for g in _guards(src, st.start())]
    out_map: dict[tuple[int, int], tuple[int, int]] = {}
    for tx in range(launch_threads(src)):
        env: dict[str, Any] = {"tx": tx, "ty": 0, "tz": 0, "bx": 0, "by": 0, "bz": 0}
        if not all(eval(g, {}, env) for g in guards):
            continue
        for i in range(n):
            env[var] = i
            r0, o0 = eval(reg, {}, env), eval(off, {}, env)
            for lane in range(width):
                key = (tx, r0 + lane)
                assert key not in out_map, key
                out_map[key] = divmod(o0 + lane, cols)
    return out_map
