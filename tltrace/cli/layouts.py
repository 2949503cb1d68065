"""`tltrace show ... --layouts [--at BUF I,J]`: each buffer's layout (docs/layouts.md), or what holds one element."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
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
    return out


def _public(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("func", "buffer", "scope", "dtype", "shape", "kind", "input_shape", "output_shape", "vars", "index",
            "thread", "replicate", "thread_range", "blocks", "record", "pass")  # fmt: skip
    return {k: e.get(k) for k in keys if k in e}


def show(sel: Any, as_json: bool, at_spec: list[str] | None) -> None:
    """Print the selected compiles' layouts, or (`at_spec`) what holds one element of one buffer."""
    from ..layouts import expr, model

    runs = [r for r in sel.runs if r.manifest is not None]
    at = parse_at(at_spec)
    if at is not None:
        run = sel.one("--at")
        buf, index = at
        entry = model.find(run.manifest.layouts, buf)
        if entry is None:
            names = ", ".join(e["buffer"] for e in model.final(run.manifest.layouts)) or "none recorded"
            raise UsageError(f"--at: no layout of a buffer {buf!r} in this compile (layouts: {names})")
        try:
            answer = model.at(entry, index)
        except (ValueError, expr.ExprError) as exc:
            raise UsageError(f"--at: {exc}") from None
        data = {"buffer": buf, "index": index, "kind": entry.get("kind"), **answer}
        if as_json:
            _print_json(data)
        elif "thread" in answer:
            threads = ",".join(str(t) for t in answer["thread"])
            print(f"{buf}[{','.join(map(str, index))}]: thread {threads} register {answer['register']}")
        else:
            print(
                f"{buf}[{','.join(map(str, index))}]: offset {answer['offset']} bank {answer['bank']} "
                f"({answer['width']}-byte elements)"
            )
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
        head = Text(one["signature"] or one["run_id"], style="bold")
        head.append(f"  {one['run_id']}", style="dim")
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
                expr_text = f"thread = {e.get('thread')}"
            else:
                what = "offset = " + ", ".join(e.get("index") or [])
                expr_text = ""
            rows.append([
                (e.get("buffer") or "", "bold"), (e.get("scope") or "", ""), (e.get("dtype") or "", ""),
                (shape, ""), (what, "dim"), (expr_text, "dim"), (str(e.get("pass") or "input"), "dim"),
            ])  # fmt: skip
        columns = [
            Column("buffer"), Column("scope"), Column("dtype"), Column("shape"),
            Column("layout", cut=cut_end), Column("thread", cut=cut_end), Column("fixed by", cut=cut_end),
        ]  # fmt: skip
        for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
            con.print(line, soft_wrap=True)
        failed = one.get("failed")
        if failed:
            named = ", ".join(failed["named"]) or "none named"
            con.print(
                Text(f"layout inference failed at pass {failed['pass']} (#{failed['record']}): buffers named {named}",
                     style="red"),
                soft_wrap=True,
            )  # fmt: skip
            for b in failed["buffers"]:
                mark = " (named in the error)" if b["buffer"] in failed["named"] else ""
                con.print(
                    Text(f"  {b['buffer']} {b['scope']} {b['dtype']} {b['shape']}{mark}"), soft_wrap=True
                )
