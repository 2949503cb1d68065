"""The child process of the layout explanation (layouts/explain.py): reruns a failed layout pass. Needs TileLang.

Run as `python -P -c` (proc/pychild.tltrace_code) with four arguments: the pass's saved
input (`tvm.ir.save_json`), the context the parent checked and filtered (a JSON object:
target, opt level, the allow-listed configs), the pass's registered name and a deadline in
seconds. It loads the input, finds its tile operations (each statement that calls a
`tl.tileop.*` operator, and each outermost `T.Parallel` loop), reruns the pass on the whole
input, then delta-debugs (bisect/ddmin.py) over the operations: an operation taken out is
its statement replaced by `T.evaluate(0)`. A subset "fails" when the pass raises (its
error's first line is kept: the smallest set's may differ from the whole input's), except
with an error that only says a fragment was left with no layout ("The layout for fragment
s can not be inferred"): taking out the operations that laid it out made that, not the
kernel (a `T.reduce_sum` alone lays out nothing: it derives its output's layout from its
input's). That error counts only when the whole input fails that very way.
Then each operation is tried alone.

It prints one JSON line (see `main`); a deadline reached leaves `complete` false and the
smallest failing set found so far. Anything TileLang prints goes to stderr.
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Any

from ..bisect.ddmin import ddmin

MARK = 917_000_000  # an op's statement replaced by T.evaluate(MARK + i) finds its printed line


class Deadline(Exception):
    pass


def first_line(error: BaseException) -> str:
    """Return the message's first line (`Check failed: (has_best) is false: no available layout found`)."""
    for ln in str(error).splitlines():
        if ln.strip():
            return ln.strip()
    return type(error).__name__


def message(error: BaseException) -> str:
    """Return the whole message (a conflict's carries both layouts)."""
    return str(error).strip()


def describe(tvm: Any, stmt: Any) -> dict[str, Any]:
    """Return an operation's kind, TileLang name and buffers (name, shape, scope, dtype), in order of use."""
    tirx = tvm.tirx
    bufs: list[Any] = []

    def visit(node: Any) -> None:
        buf = getattr(node, "buffer", None)
        if isinstance(node, (tirx.BufferLoad, tirx.BufferStore, tirx.BufferRegion)) and buf is not None:
            if not any(b.same_as(buf) for b in bufs):
                bufs.append(buf)

    if isinstance(stmt, tirx.For):
        kind, name = "parallel", "T.Parallel"
        extents = []
        s = stmt
        while _is_parallel(tirx, s):
            extents.append(_int(s.extent))
            s = s.body
        tirx.stmt_functor.post_order_visit(stmt.body, visit)
        extra: dict[str, Any] = {"extents": extents}
    else:
        call = stmt.value
        kind = str(call.op.name).rsplit(".", 1)[-1]
        name = f"T.{kind}"
        extra = {}
        if kind == "reduce":
            for a in call.args:
                if isinstance(a, tirx.StringImm):
                    name = f"T.reduce_{a.value}"
                    break
        elif kind == "fill":
            name = "T.fill"
        for a in call.args:
            tirx.stmt_functor.post_order_visit(tirx.Evaluate(a) if not isinstance(a, tirx.Stmt) else a, visit)
    out = [
        {
            "name": str(b.name),
            "shape": [_int(x) for x in b.shape],
            "scope": str(b.scope()),
            "dtype": str(b.dtype),
        }
        for b in bufs
    ]
    return {"kind": kind, "name": name, "buffers": out, **extra}


def _is_parallel(tirx: Any, s: Any) -> bool:
    return isinstance(s, tirx.For) and int(s.kind) == int(tirx.ForKind.PARALLEL)


def _int(x: Any) -> Any:
    try:
        return int(x)
    except (TypeError, ValueError):
        return str(x)


def tile_ops(tvm: Any, func: Any) -> list[Any]:
    """Return the tile operations of a function, in the printed order: tile-op calls, outermost parallel loops."""
    tirx = tvm.tirx
    ops: list[Any] = []
    inside: list[Any] = []

    def pre(s: Any) -> bool:
        if isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.Call):
            op = getattr(s.value.op, "name", "")
            if str(op).startswith("tl.tileop."):
                ops.append(s)
            return False
        if _is_parallel(tirx, s):
            ops.append(s)
            inside.append(s)
            return False  # the loop's body belongs to it
        return True

    tirx.stmt_functor.pre_order_visit(func.body, pre)
    return ops


def threads_of(tvm: Any, func: Any) -> int | None:
    """Return the extent of threadIdx.x in the function (its launch), or None."""
    tirx = tvm.tirx
    found: list[int] = []

    def visit(s: Any) -> None:
        if isinstance(s, tirx.AttrStmt) and s.attr_key == "thread_extent":
            iv = s.node
            if getattr(iv, "thread_tag", "") == "threadIdx.x":
                found.append(_int(s.value))

    tirx.stmt_functor.post_order_visit(func.body, visit)
    return found[0] if found and isinstance(found[0], int) else None


def without(tvm: Any, mod: Any, gv: Any, func: Any, removed: list[Any], mark: int | None = None) -> Any:
    """Return `mod` with the statements in `removed` replaced by T.evaluate(0) (or T.evaluate(mark))."""
    tirx = tvm.tirx
    value = 0 if mark is None else mark

    def pre(s: Any) -> Any:
        for r in removed:
            if s.same_as(r):
                return tirx.Evaluate(tirx.IntImm("int32", value))
        return None

    body = tirx.stmt_functor.ir_transform(func.body, pre, None)
    out = tvm.IRModule(dict(mod.functions.items()), mod.attrs)
    out[gv] = func.with_body(body)
    return out


_ORPHAN = re.compile(r"The layout for fragment (\S+?) can not be inferred")


def orphaned(error: str, whole: str) -> bool:
    """True when the error only says a fragment was left with no layout ("The layout for fragment s can
    not be inferred"): what taking out the operations that laid it out makes, not the kernel's failure
    (unless the whole input fails that very way)."""
    return _ORPHAN.search(error) is not None and error != whole


LOG_LINES = 200


def printed(fn: Any) -> tuple[Any, str]:
    """Return fn()'s result and what was written to fd 2 meanwhile (TileLang's C++ logging goes there)."""
    import os
    import tempfile

    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode("utf-8", errors="replace")


def main(argv: list[str]) -> int:
    # What TileLang prints goes to stderr: stdout is the answer's.
    out_stream, sys.stdout = sys.stdout, sys.stderr
    t0 = time.monotonic()
    input_path, context_path, pass_name, deadline_s = argv[0], argv[1], argv[2], float(argv[3])
    out: dict[str, Any] = {"pass": pass_name, "tests": 0, "complete": False}
    try:
        _explain(out, input_path, context_path, pass_name, t0 + deadline_s)
        out["complete"] = True
    except Deadline:
        out["stopped"] = f"the deadline ({deadline_s:g} s) came first"
    except Exception as exc:  # the explanation is best effort: say why there is none
        out["stopped"] = (
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        )
    out["seconds"] = round(time.monotonic() - t0, 3)
    out_stream.write(json.dumps(out) + "\n")
    out_stream.flush()
    return 0


def _explain(
    out: dict[str, Any], input_path: str, context_path: str, pass_name: str, deadline: float
) -> None:
    import tilelang  # type: ignore[import-not-found]  # noqa: F401  (registers TileLang's passes and ops)
    from tilelang import tvm  # type: ignore[import-not-found]

    with open(input_path, encoding="utf-8") as f:
        mod = tvm.ir.load_json(f.read())
    with open(context_path, encoding="utf-8") as f:
        ctx = json.load(f)
    target = tvm.target.Target(ctx["target"])
    make_pass = _pass_ctor(pass_name)

    def rerun(m: Any) -> BaseException | None:
        if time.monotonic() > deadline:
            raise Deadline
        out["tests"] += 1
        try:
            with (
                target,
                tvm.transform.PassContext(opt_level=int(ctx.get("opt_level", 2)), config=ctx["config"]),
            ):
                make_pass()(m)
        except Exception as exc:
            return exc
        return None

    funcs = [(gv, fn) for gv, fn in mod.functions.items() if isinstance(fn, tvm.tirx.PrimFunc)]
    picked = max(funcs, key=lambda p: len(tile_ops(tvm, p[1])), default=None)
    if picked is None:
        out["stopped"] = "the input has no TIR function"
        return
    gv, func = picked
    ops = tile_ops(tvm, func)
    out["function"] = str(gv.name_hint)
    out["threads"] = threads_of(tvm, func)
    script = mod.script()
    out["script_lines"] = script.count("\n") + 1
    described = []
    for i, op in enumerate(ops):
        d = describe(tvm, op)
        marked = without(tvm, mod, gv, func, [op], MARK + i).script().split("\n")
        at = next((k for k, ln in enumerate(marked) if str(MARK + i) in ln), None)
        d["text_line"] = None if at is None else at + 1
        d["text"] = (
            script.split("\n")[at].strip() if at is not None and at < len(script.split("\n")) else None
        )
        described.append(d)
    out["ops"] = described
    whole, said = printed(lambda: rerun(mod))
    log = [ln for ln in said.splitlines() if ln.strip()]
    if log:  # a debug build's per-root reasons (DLOG), or whatever else the pass printed
        out["tilelang_log"] = log[-LOG_LINES:]
    if whole is None:
        out["error"] = None
        return
    want = first_line(whole)
    out["error"] = want
    out["message"] = message(whole)[:20000]

    errors: dict[tuple[int, ...], str | None] = {}  # a subset's error's first line; None: it has layouts

    def fails(subset: tuple[int, ...]) -> bool:
        if subset not in errors:
            keep = set(subset)
            got = rerun(without(tvm, mod, gv, func, [op for i, op in enumerate(ops) if i not in keep]))
            errors[subset] = None if got is None else first_line(got)
        said = errors[subset]
        return said is not None and not orphaned(said, want)

    alone: dict[str, str | None] = {}
    out["alone"] = alone
    if not ops:
        out["minimal"] = []
        return
    found: list[tuple[int, ...]] = [tuple(range(len(ops)))]

    def test(subset: tuple[int, ...]) -> bool:
        ok = fails(subset)
        if ok and len(subset) < len(found[-1]):
            found.append(subset)
            out["minimal"] = list(subset)
            out["minimal_error"] = errors[subset]
        return ok

    out["minimal"] = list(found[-1])
    out["minimal_error"] = want
    try:
        minimal = ddmin(tuple(range(len(ops))), test)
    except Deadline:
        out["minimal_complete"] = False
        raise
    out["minimal"] = list(minimal)
    out["minimal_error"] = errors.get(minimal, want)
    out["minimal_complete"] = True
    for i in range(len(ops)):  # each operation alone: has it a layout?
        fails((i,))
        alone[str(i)] = errors[(i,)]


def _pass_ctor(name: str) -> Any:
    import importlib

    ns, _, short = name.rpartition(".")
    for modname in {"tl": ["tilelang.transform"], "tirx": ["tvm.tirx.transform"]}.get(ns, []):
        ctor = getattr(importlib.import_module(modname), short, None)
        if callable(ctor):
            return ctor
    raise LookupError(f"no pass named {name}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
