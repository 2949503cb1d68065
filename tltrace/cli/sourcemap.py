"""`tltrace show ... --source-map`: generated source or a pass's IR with the Python line of each line."""

from __future__ import annotations

import sys
from typing import Any

from ..render.safejson import dumps
from .shared import console


def show(run: Any, pass_spec: str | None, as_json: bool) -> None:
    """Print one compile's source map: its generated source, or with `pass_spec` that pass's IR."""
    from ..history import runs
    from ..history import sourcemaps as V
    from ..sourcemap import lines as sm

    manifest = run.require()
    maps = V.require(run.path)
    kernel = V.kernel_file(maps)
    if pass_spec is None:
        data = V.summary(run)
        if as_json:
            sys.stdout.write(dumps(data, indent=2, default=str) + "\n")
            return
        for role in ("device", "host"):
            if data["codegen"][role]:
                _print_lines(f"generated {role} source", data["codegen"][role], kernel)
        if not any(data["codegen"].values()):
            console().print("(no generated source in this compile)", markup=False, highlight=False)
        return
    rec = runs.find_record(manifest, pass_spec, run.path)
    side = V.side_of(rec)
    lines = V.annotated(run, rec, side, maps)
    if as_json:
        out = {
            "run_id": run.run_id,
            "path": str(run.path),
            "record": rec.to_json(),
            "side": side,
            "source_file": kernel,
            "lines": lines,
        }
        loc = sm.error_location(rec.error)
        if loc is not None:
            out["error_src"] = {"file": loc[0], "line": loc[1]}
            from ..history.failsite import fail_site

            site = fail_site(run.path, manifest, rec)
            if site is not None:  # the failing operation's line, where the error names an allocation
                out["fail_site"] = site.to_json()
        sys.stdout.write(dumps(out, indent=2, default=str) + "\n")
        return
    _print_lines(f"{rec.name} (#{rec.index}), IR {side}", lines, kernel)


def _print_lines(title: str, lines: list[dict[str, Any]], kernel: str | None) -> None:
    from rich.text import Text

    from ..history.sourcemaps import short

    con = console()
    stmts = sum(1 for x in lines if x["src"] is not None)
    inferred = sum(1 for x in lines if x["src"] is not None and x["src"].get("inferred"))
    head = Text(title, style="bold")
    head.append(f"  {stmts} of {len(lines)} lines carry a Python line", style="dim")
    if inferred:
        head.append(f" ({inferred} inferred from an enclosing statement, marked ~)", style="dim")
    con.print(head, soft_wrap=True)
    labels = [short(x["src"], kernel) for x in lines]
    width = max([len(s) for s in labels] + [2])
    for label, x in zip(labels, lines):
        t = Text(label.rjust(width), style="cyan")
        t.append(" \u2502 ", style="dim")
        t.append(x["text"])
        con.print(t, soft_wrap=True, markup=False, highlight=False)
