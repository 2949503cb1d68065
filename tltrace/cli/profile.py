"""`tltrace show --profile` and `tltrace show --format markdown`: where the compile time went.

Selection: the one resolver (history.resolve.selected_runs; -1/-2 an invocation,
a run id one compile); without RUN, the newest invocation of each located script. The numbers come from
profile.py; this module only selects, formats and prints.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ..history.profile import BACKEND, UNTIMED, fmt_seconds, invocation_of, profile
from ..render.visible import visible

DEFAULT_TOP = 20
MARKDOWN_TOP = 10


def select(
    target: str | None,
    run: str | None,
    trace_dir: Path,
    kernel: str | None,
    *,
    signature: str | None = None,
) -> list:
    """Return the manifests to profile or summarise: what the REF names (history.resolve.selected_runs)."""
    from ..history.resolve import selected_runs

    return [r.require() for r in selected_runs(target, run, trace_dir, kernel=kernel, signature=signature)]


def _scope(manifests: list) -> str:
    scripts = sorted({m.script for m in manifests})
    invs = {invocation_of(m) or m.run_id for m in manifests}
    if len(manifests) == 1:
        m = manifests[0]
        return f"{m.script}  {m.run_id}  ({m.signature or m.kernel or '?'})"
    return (
        f"{', '.join(scripts[:3])}{' ...' if len(scripts) > 3 else ''}: {len(manifests)} compiles in "
        f"{len(invs)} invocation{'s' if len(invs) != 1 else ''}"
    )


def print_profile(manifests: list, top: int | None, as_json: bool) -> None:
    """Print the profile table (or JSON) of these compiles."""
    prof = profile(manifests)
    n = DEFAULT_TOP if top is None else top
    if as_json:
        sys.stdout.write(json.dumps(prof.to_json(n, spread=len(manifests) > 1), indent=2) + "\n")
        return
    from rich.table import Table
    from rich.text import Text

    from .shared import console as _console

    con = _console()
    head = Text(_scope(manifests), style="bold")
    head.append(
        f"\ncompile time {fmt_seconds(prof.wall_s)}, passes and codegen {fmt_seconds(prof.recorded_s)} "
        "(nested passes counted in their parent too)",
        style="dim",
    )
    if not prof.exact:
        head.append(
            "\nsome records have no start time (older tltrace): the backend build is not split out",
            style="yellow",
        )
    con.print(head, soft_wrap=True)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (
        ("pass", "left"),
        ("count", "right"),
        ("total", "right"),
        ("mean", "right"),
        ("max", "right"),
        ("share", "right"),
        ("", "left"),
    ):
        table.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for row in prof.top(n):
        style = "cyan" if row.kind == BACKEND else "dim" if row.kind == UNTIMED else ""
        note = (
            "nested"
            if row.nested
            else "after codegen"
            if row.kind == BACKEND
            else "between passes"
            if row.kind == UNTIMED
            else ""
        )
        table.add_row(
            Text(row.name, style=style),
            str(row.count),
            fmt_seconds(row.total_s),
            fmt_seconds(row.mean_s),
            fmt_seconds(row.max_s),
            f"{prof.share(row) * 100:.1f}%",
            Text(note, style="dim"),
        )
    con.print(table)
    if len(prof.rows) > n:
        con.print(Text(f"{len(prof.rows) - n} more row(s); --top N shows more", style="dim"))


# -- markdown (CI step summary) ---------------------------------------------------------------------
def _facts_markdown(baseline: str, pairs: list[tuple[Any, Any, list[dict[str, Any]]]]) -> list[str]:
    """Return the 'Facts changed' section: one row per fact that moved, per compile paired with the baseline."""
    moved = [(a, b, c) for a, b, c in pairs if c]
    lines = ["", f"### Facts changed against {_md(baseline)}", ""]
    if not pairs:
        return [*lines, "No compile pairs with one of the baseline (diff-runs says why)."]
    if not moved:
        return [*lines, f"No fact changed in {len(pairs)} compile(s) paired with the baseline."]
    lines += ["| compile | fact | baseline | now |", "|---|---|---:|---:|"]
    for _a, b, changes in moved:
        for ch in changes:
            was, now = (str(v).lower() if isinstance(v, bool) else str(v) for v in (ch["a"], ch["b"]))
            lines.append(
                f"| {_md(b.signature or b.kernel or '?')} | {_md(ch['name'])} | {_md(was)} | {_md(now)} |"
            )
    return lines


def _md_code(text: Any) -> str:
    """Return a cell showing `text` as code when it is a plain id, else escaped as `_md` does (it is data)."""
    s = str(text if text is not None else "")
    return f"`{s}`" if re.fullmatch(r"[A-Za-z0-9_.:-]{1,120}", s) else _md(s)


def _md(text: Any) -> str:
    """Return text safe inside a markdown table cell (no pipes, no newlines, no HTML)."""
    s = str(text if text is not None else "")
    s = visible(s.splitlines()[0]) if s else ""
    for a, b in (
        ("\\", "\\\\"),
        ("&", "&amp;"),
        ("|", "\\|"),
        ("<", "&lt;"),
        (">", "&gt;"),
        ("`", "'"),
        ("*", "\\*"),
        ("_", "\\_"),
        ("[", "\\["),
        ("]", "\\]"),
    ):
        s = s.replace(a, b)
    return s[:120]


def _failed_at(m) -> str:
    for r in m.records:
        if r.status == "failed":
            return f"{r.name} (#{r.index})"
    return "after the last pass" if m.status in ("error", "interrupted") else ""


def fact_changes(
    target: str | None,
    run: str | None,
    baseline: str,
    trace_dir: Path,
    kernel: str | None,
    signature: str | None,
) -> tuple[str, list[tuple[Any, Any, list[dict[str, Any]]]]]:
    """Return (the baseline as named, [(baseline manifest, manifest, changed facts)]) for `--baseline`.

    The compiles pair as diff-runs pairs two invocations (history/compare.pair_compiles);
    `changed` is facts.changes: [{name, a, b}], empty when no fact moved.
    """
    from ..facts import changes, facts_of
    from ..history.compare import pair_compiles
    from ..history.resolve import parse_ref, selected_runs

    now = selected_runs(target, run, trace_dir, kernel=kernel, signature=signature)
    base = parse_ref(baseline, trace_dir, target, kernel).runs
    a = [r.require() for r in base]
    b = [r.require() for r in now]
    out = []
    for i, j, _how in pair_compiles(a, b):
        if i is not None and j is not None:
            out.append((a[i], b[j], changes(facts_of(base[i]), facts_of(now[j]))))
    return baseline, out


def markdown(manifests: list, top: int | None, changed: tuple[str, list] | None = None) -> str:
    """Return a markdown summary: the compiles (failures first), the facts changed against a baseline
    (`changed`: fact_changes' answer), and the slowest passes."""
    prof = profile(manifests)
    by_run = {c.manifest.run_id: c for c in prof.compiles}
    several_scripts = len({m.script for m in manifests}) > 1
    failed = [m for m in manifests if m.status != "complete"]
    lines = [f"## tltrace: {_md(_scope(manifests))}", ""]
    lines.append(
        f"{len(manifests)} compile(s), {len(failed)} not complete; compile time {fmt_seconds(prof.wall_s)}."
    )
    lines.append("")
    head = [
        "status",
        *(["script"] if several_scripts else []),
        "compile",
        "passes",
        "changed",
        "failed",
        "compile time",
        "failed at",
        "run",
    ]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")
    from ..history.summary import CompileSummary, order

    summaries = [CompileSummary.of(m, status=m.status, position=i) for i, m in enumerate(manifests)]
    for m in (manifests[s.position] for s in order(summaries)):
        c = m.counts
        mark = "✅" if m.status == "complete" else "❌"
        cells = [
            f"{mark} {_md(m.status)}",
            *([_md(m.script)] if several_scripts else []),
            _md(m.signature or m.kernel or "?"),
            str(len(m.records)),
            str(c.get("changed", 0)),
            str(c.get("failed", 0)),
            fmt_seconds(by_run[m.run_id].wall_s),
            _md(_failed_at(m)),
            _md_code(m.run_id),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if changed is not None:
        lines += _facts_markdown(*changed)
    n = MARKDOWN_TOP if top is None else top
    lines += ["", f"### Slowest passes (top {min(n, len(prof.rows))} of {len(prof.rows)})", ""]
    lines.append("| pass | count | total | mean | max | share |")
    lines.append("|---|---:|---:|---:|---:|---:|")
    for row in prof.top(n):
        name = _md(row.name) + (" (nested)" if row.nested else "")
        lines.append(
            f"| {name} | {row.count} | {fmt_seconds(row.total_s)} | {fmt_seconds(row.mean_s)} | "
            f"{fmt_seconds(row.max_s)} | {prof.share(row) * 100:.1f}% |"
        )
    return "\n".join(lines) + "\n"
