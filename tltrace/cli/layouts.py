"""`tltrace show ... --layouts [--at BUF I,J | --thread T]`: each buffer's layout (docs/layouts.md),
what holds one element, or what one thread holds.

Threads are threadIdx.x (layouts/model.py). A recorded layout that cannot be evaluated (damaged,
or beyond layouts/check.py's limits) is a records problem: one line, exit 3.
"""

from __future__ import annotations

from typing import Any

from ..errors import RecordsError, UsageError
from .records import _print_json
from .shared import console


def parse_at(spec: list[str] | None) -> tuple[str, list[int]] | None:
    """Return (buffer, indices) of `--at BUF I,J`; UsageError on anything else."""
    if not spec:
        return None
    buf, idx = spec
    try:
        index = [int(x) for x in idx.replace(" ", "").split(",")]
    except ValueError:
        raise UsageError(
            f"--at {buf} {idx}: the indices are comma-separated integers, as in --at C_l 0,2"
        ) from None
    if any(i < 0 for i in index):
        raise UsageError(f"--at {buf} {idx}: indices are not negative")
    return buf, index


def _compile_data(run: Any) -> dict[str, Any]:
    from ..layouts import model

    m = run.manifest
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "signature": m.signature,
        "kernel": m.kernel,
        "layouts": [_public(e) for e in model.final(m.layouts)],
    }
    failed = model.failure_of(m.layouts)
    if failed:
        out["failed"] = failed
    from .explain import explanation

    why = explanation(run)  # a failed layout pass: a conflict's two layouts, parsed from its message
    conflict = (why or {}).get("conflict")
    if conflict and conflict.get("layouts"):
        out["conflict"] = conflict
    return out


GRID_ROWS, GRID_COLS = 8, 16  # the corner of a conflict's two layouts drawn side by side


def conflict_grids(conflict: dict[str, Any]) -> list[dict[str, Any]]:
    """Return each of a conflict's layouts' thread grid (its top-left corner), or its error, side by side."""
    from ..layouts import check, model

    out = []
    for lay in conflict.get("layouts") or []:
        e = dict(lay.get("entry") or {})
        e.update(
            buffer=e.get("buffer") or "?", dtype="float32", scope="local.fragment", shape=e.get("input_shape")
        )
        try:
            g = model.grid(e)
            rows = [r[:GRID_COLS] for r in g["thread"][0][:GRID_ROWS]] if "thread" in g else None
        except (check.LayoutError, KeyError, TypeError, ValueError) as exc:
            out.append({"label": lay.get("label"), "error": str(exc)})
            continue
        out.append({"label": lay.get("label"), "threads": rows, "rows": g["rows"], "cols": g["cols"]})
    return out


def _print_conflict(con: Any, conflict: dict[str, Any]) -> None:
    from rich.text import Text

    bufs = " and ".join(_name(b) for b in conflict.get("buffers") or [])
    where = f" in {_name(conflict['where'])}" if conflict.get("where") else ""
    con.print(
        Text(f"layout conflict between {bufs}{where}: threadIdx.x of each element, side by side", style="red")
    )
    grids = conflict_grids(conflict)
    for g in grids:
        if "error" in g:
            con.print(Text(f"  {_name(g.get('label') or '?')}: not drawn ({g['error']})", style="dim"))
    drawn = [g for g in grids if g.get("threads")]
    if len(drawn) < 2:
        return
    a, b = drawn[0], drawn[1]
    width = max(len(str(x)) for g in (a, b) for r in g["threads"] for x in r) + 1
    cols = len(a["threads"][0])
    title = [
        f"{_name(g.get('label') or '?')} ({g['rows']}x{g['cols']}, first {len(g['threads'])}x{cols})"
        for g in (a, b)
    ]
    con.print(Text(f"  {title[0]:<{width * cols}}  │ {title[1]}", style="bold"), soft_wrap=True)
    for ra, rb in zip(a["threads"], b["threads"]):
        line = Text("  ")
        for x, y in zip(ra, rb):
            line.append(f"{x:>{width}}", style="" if x == y else "red")
        line.append("  │ ")
        for x, y in zip(ra, rb):
            line.append(f"{y:>{width}}", style="" if x == y else "red")
        con.print(line, soft_wrap=True)
    same = sum(x == y for ra, rb in zip(a["threads"], b["threads"]) for x, y in zip(ra, rb))
    total = sum(len(r) for r in a["threads"])
    con.print(Text(f"  {total - same} of these {total} elements are held by different threads", style="dim"))


def _public(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("func", "buffer", "scope", "dtype", "shape", "kind", "input_shape", "output_shape", "vars", "index",
            "thread", "replicate", "thread_range", "blocks", "record", "pass")  # fmt: skip
    return {k: e.get(k) for k in keys if k in e}


NAME_WIDTH = 80  # a longer buffer name (a crafted manifest) is cut where it is printed; --json has it whole
TEXT_WIDTH = 200  # a longer layout expression is cut in the table (TileLang's longest: ~120)


def _name(buf: Any, width: int = NAME_WIDTH) -> str:
    """A buffer name as printed: one line, control characters spelt (render/visible.py), cut to `width`."""
    from ..render.table import cut_end
    from ..render.visible import visible

    return visible(cut_end(str(buf), width), one_line=True)


def _span(rng: list[int] | None) -> str:
    return f"{rng[0]}..{rng[0] + rng[1] - 1}" if rng else "?"


def _unreadable(buf: Any, exc: Exception) -> RecordsError:
    return RecordsError(
        f"the recorded layout of {_name(buf)} cannot be evaluated: {_name(exc, 2 * TEXT_WIDTH)}"
    )


def _where(buf: str, answer: dict[str, Any]) -> str:
    """The parenthesis after `thread T register R`: the thread's warp and place among the fragment's."""
    buf = _name(buf)
    rng = answer.get("thread_range")
    if not rng:
        return "(thread range not recorded: threads as TileLang numbers them, from 0)"
    if len(answer["thread"]) == 1:
        t, lt = answer["thread"][0], answer["logical_thread"][0]
        return f"(warp {t // 32} lane {t % 32}; thread {lt} of {buf}'s threads {_span(rng)})"
    return f"({buf}'s threads {_span(rng)})"


def _at(run: Any, buf: str, index: list[int], as_json: bool) -> None:
    from ..layouts import expr, model

    entry = model.find(run.manifest.layouts, buf)
    if entry is None:
        names = (
            ", ".join(_name(e.get("buffer")) for e in model.final(run.manifest.layouts)) or "none recorded"
        )
        raise UsageError(f"--at: no layout of a buffer {_name(repr(buf))} in this compile (layouts: {names})")
    try:
        answer = model.at(entry, index)
    except expr.ExprError as exc:  # check.LayoutError too: the record, not the question
        raise _unreadable(buf, exc) from None
    except ValueError as exc:
        raise UsageError(f"--at: {exc}") from None
    data = {"buffer": buf, "index": index, "kind": entry.get("kind"), **answer}
    where = f"{_name(buf)}[{','.join(map(str, index))}]"
    if as_json:
        _print_json(data)
    elif "thread" in answer:
        threads = ",".join(str(t) for t in answer["thread"])
        print(f"{where}: thread {threads} register {answer['register']} {_where(buf, answer)}")
    else:
        print(f"{where}: offset {answer['offset']} bank {answer['bank']} ({answer['width']}-byte elements)")


def held(run: Any, thread: int) -> dict[str, Any]:
    """Return what threadIdx.x `thread` holds of each final fragment layout of one compile."""
    from ..layouts import expr, model

    block = _block_threads(run)
    if block is not None and thread >= block:
        raise UsageError(
            f"--thread {thread}: no such thread in this compile: its kernel launches {block} threads a block "
            f"(threadIdx.x 0..{block - 1})"
        )
    out: dict[str, Any] = {"run_id": run.run_id, "thread": thread, "warp": thread // 32, "lane": thread % 32}
    buffers = []
    for e in model.final(run.manifest.layouts):
        if e.get("kind") != "fragment":
            continue
        try:
            got = model.held_by(e, thread)
        except expr.ExprError as exc:
            raise _unreadable(e.get("buffer"), exc) from None
        buffers.append({
            "func": e.get("func"), "buffer": e.get("buffer"), "dtype": e.get("dtype"),
            "input_shape": e.get("input_shape"), "thread_range": got["thread_range"],
            "logical_thread": got["logical_thread"], "elements": got["elements"],
        })  # fmt: skip
    out["buffers"] = buffers
    return out


def _block_threads(run: Any) -> int | None:
    """The threads of one block the compiled kernel launches (the `threads` fact: the device IR's
    threadIdx.x extents, producers of a warp-specialized kernel included); None when not known."""
    from ..facts import facts_of

    try:
        n = facts_of(run).get("threads")
    except Exception:
        return None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def _print_held(data: dict[str, Any]) -> None:
    t = data["thread"]
    print(f"thread {t} (warp {data['warp']} lane {data['lane']})")
    if not data["buffers"]:
        print("no fragment layouts recorded (shared buffers are not held by threads)")
    for b in data["buffers"]:
        name, rng = _name(b["buffer"]), b["thread_range"]
        if not b["elements"]:
            print(f"{name}: none ({name}'s threads are {_span(rng)})")
            continue
        of = (
            f"thread {b['logical_thread']} of {name}'s threads {_span(rng)}"
            if rng
            else "thread range not recorded"
        )
        print(f"{name}: {len(b['elements'])} elements ({of})")
        for x in b["elements"]:
            print(f"  register {x['register']}: [{','.join(map(str, x['index']))}]")


def show(sel: Any, as_json: bool, at_spec: list[str] | None, thread: int | None = None) -> None:
    """Print the selected compiles' layouts, or (`at_spec`) what holds one element of one buffer,
    or (`thread`) what one threadIdx.x holds of each fragment."""

    runs = [r for r in sel.runs if r.manifest is not None]
    at = parse_at(at_spec)
    if at is not None and thread is not None:
        raise UsageError("--at and --thread exclude each other: ask for one element or one thread")
    if at is not None:
        _at(sel.one("--at"), at[0], at[1], as_json)
        return
    if thread is not None:
        data = held(sel.one("--thread"), thread)
        if as_json:
            _print_json(data)
        else:
            _print_held(data)
        return
    compiles = [_compile_data(r) for r in runs]
    if as_json:
        _print_json({"compiles": compiles})
        return
    _print(compiles)


def _print(data: list[dict[str, Any]]) -> None:
    from rich.text import Text

    from ..render.table import Column, cut_end, fit

    con = console()
    for one in data:
        head = Text(_name(one["signature"] or one["run_id"], TEXT_WIDTH), style="bold")
        head.append(f"  {_name(one['run_id'])}", style="dim")
        con.print(head, soft_wrap=True)
        if not one["layouts"] and not one.get("failed"):
            con.print(Text("no layouts recorded (no fragment or shared buffer was laid out)", style="dim"))
            continue
        rows = []
        for e in one["layouts"]:
            shape = "x".join(map(str, e.get("input_shape") or []))
            if e.get("kind") == "fragment":
                rng = e.get("thread_range")
                what = f"threads {rng[0]}..{rng[0] + rng[1] - 1}" if rng else "threads ?"
                what += f", replicate {e.get('replicate')}"
                first = rng[0] if rng else 0  # threadIdx.x of the expression's thread 0
                expr_text = (
                    f"thread = {first} + ({e.get('thread')})" if first else f"thread = {e.get('thread')}"
                )
            else:
                what = "offset = " + ", ".join(e.get("index") or [])
                expr_text = ""
            cells = [
                (e.get("buffer") or "", "bold"), (e.get("scope") or "", ""), (e.get("dtype") or "", ""),
                (shape, ""), (what, "dim"), (expr_text, "dim"), (str(e.get("pass") or "input"), "dim"),
            ]  # fmt: skip
            rows.append(
                [
                    (_name(text, TEXT_WIDTH if k in (4, 5) else NAME_WIDTH), st)
                    for k, (text, st) in enumerate(cells)
                ]
            )
        columns = [
            Column("buffer"), Column("scope"), Column("dtype"), Column("shape"),
            Column("layout", cut=cut_end), Column("thread", cut=cut_end), Column("fixed by", cut=cut_end),
        ]  # fmt: skip
        for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
            con.print(line, soft_wrap=True)
        failed = one.get("failed")
        if failed:
            named = ", ".join(map(_name, failed["named"])) or "none named"
            con.print(
                Text(f"layout inference failed at pass {failed['pass']} (#{failed['record']}): buffers named {named}",
                     style="red"),
                soft_wrap=True,
            )  # fmt: skip
            for b in failed["buffers"]:
                mark = " (named in the error)" if b["buffer"] in failed["named"] else ""
                what = " ".join(_name(b[k]) for k in ("buffer", "scope", "dtype", "shape"))
                con.print(Text(f"  {what}{mark}"), soft_wrap=True)
        if one.get("conflict"):
            _print_conflict(con, one["conflict"])
