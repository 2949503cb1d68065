"""`tltrace show` on one compile: its passes (`show RUN`), one pass's diff or stage text (`--pass`),
and what the passes wrote to stderr (`--remarks`, alone or under a pass's diff)."""

from __future__ import annotations

from typing import Any

from ..errors import TltraceError
from .records import _command_line, _ms, _print_json, _t, _when
from .shared import console as _console
from .shared import warn as _warn


def show_run(run, as_json: bool) -> None:
    from ..format import build as fbuild
    from ..history import runs

    m = run.manifest
    missing = runs.missing_files(run)
    from .explain import explanation, lines_of

    why = explanation(run)  # a compile that failed in a layout pass: why (None for any other)
    if as_json:
        data = m.to_json()
        data["path"] = str(run.path)
        data["status"] = run.status
        data["missing_files"] = missing
        data["command_line"] = _command_line(m.command)
        data["layout_explanation"] = why
        _print_json(data)
        return
    from functools import partial

    from rich.text import Text

    from ..render.terminal import STATUS_STYLE, TAG_STYLE
    from ..render.visible import visible

    con = _console()
    head = Text()
    one = partial(visible, one_line=True)  # names from the records: each on its line
    head.append(f"{one(m.script)}  ", style="bold")
    head.append(one(run.run_id))
    head.append(
        f"\n{one(runs.label(m, '?'))}  {one(m.target or '?')}/{one(m.backend or '?')}  {_when(m.started)}  {run.status}",
        style="dim",
    )
    if m.signature and m.kernel and not m.signature.startswith(m.kernel):
        head.append(f"  (kernel {one(m.kernel)})", style="dim")
    if m.invocation:
        head.append(f"\ninvocation {m.invocation}", style="dim")
    from ..history.callsites import frames_of, label

    frames = frames_of(m.stack)
    if frames:
        head.append("\ncalled from " + " \u203a ".join(label(f) for f in frames[-3:]), style="dim")
        head.append(f"  ({frames[-1][0]})" if not frames[-1][0].startswith("(") else "", style="dim")
    build = fbuild.of(m)
    if fbuild.failed(build) and not any(r.status == "failed" for r in m.records):
        head.append(f"\n{fbuild.headline(build)}:", style="bold red")  # errors at the working file's lines
        for err in fbuild.error_lines(build):
            head.append(f"\n  {err}", style="red")
    elif m.error:
        head.append(f"\nerror: {m.error.splitlines()[0] if m.error.strip() else m.error}", style="red")
        for k, said in enumerate(lines_of(why)):
            head.append(f"\n{'why: ' if k == 0 else '     '}{one(said)}", style="yellow" if k == 0 else "dim")
    for e in fbuild.edits(build):
        head.append(
            f"\nedited: {e.get('working_file') or '?'} (+{e.get('added', 0)} -{e.get('removed', 0)} "
            f"against the generated {e.get('generated_file')})"
            + ("; kept for the diff view, not compiled" if e.get("compiled") is False else ""),
            style="yellow",
        )
    if m.command:
        head.append("\n$ " + _command_line(m.command), style="dim")
    if (
        m.skipped
    ):  # a step of `tltrace bisect`: the passes as the table spells them; the one numbering is its #
        from ..format.names import pass_display_name

        names = ", ".join(pass_display_name(str(s.get("name"))) for s in m.skipped if isinstance(s, dict))
        head.append(f"\nbisect step: skipped {len(m.skipped)} top-level pass(es): {names}", style="yellow")
    con.print(head, soft_wrap=not con.is_terminal)
    from ..render.table import Column, cut_end, cut_middle, fit

    columns = [
        Column("#", "right"),
        Column("phase", drop=2),
        Column("pass", cut=cut_middle, min_width=14),
        Column("status"),
        Column("+", "right"),
        Column("-", "right"),
        Column("ms", "right", drop=1),
        Column("", cut=cut_end, min_width=10),
    ]
    rows = []
    for rec in m.records:
        label, style = STATUS_STYLE.get(rec.status, (rec.status, ""))
        extra = rec.reconcile or (rec.error.splitlines()[0][:80] if rec.error and rec.error.strip() else "")
        rows.append(
            [
                (str(rec.index), ""),
                (rec.phase, ""),
                ("  " * rec.depth + rec.name, ""),
                (label, style),
                (str(rec.added) if rec.added else "", ""),
                (str(rec.removed) if rec.removed else "", ""),
                (_ms(rec.duration_s), ""),
                (extra, TAG_STYLE.get(rec.reconcile or "", "red" if rec.error else "")),
            ]
        )
    for line in fit(columns, rows, con.width if con.is_terminal else None, rule=False):
        con.print(line, soft_wrap=True)
    c = m.counts
    con.print(
        _t(
            f"{len(m.records)} passes, {c.get('changed', 0)} changed, {c.get('failed', 0)} failed, "
            f"{c.get('codegen', 0)} codegen"
            + (" so far (still running)" if run.status == "running" else "")
            + (f", {fbuild.headline(build)}" if fbuild.failed(build) else ""),
            "dim",
        )
    )
    if missing:
        _warn(
            f"{missing} record file(s) are missing under {run.path}; diffs fall back to the stored copies "
            "(the run's pack, or .objects) where they still exist"
        )


def _remark_of(run, index: int) -> dict[str, Any] | None:
    """The remark the pass of record `index` left (manifest `remarks`), or None."""
    rem = run.manifest.remarks
    for p in rem.get("passes") or () if isinstance(rem, dict) else ():
        if isinstance(p, dict) and p.get("index") == index and isinstance(p.get("text"), str):
            return p
    return None


def _no_remarks(run) -> str:
    return (
        f"{run.run_id} was not run with --remarks; "
        f"rerun it with 'tltrace run --remarks' (or --remarks=vectorize) to keep what its passes print"
    )


def _print_remark(con: Any, p: dict[str, Any]) -> None:
    from rich.text import Text

    kinds = ", ".join(p.get("kinds") or ())
    head = Text(f"#{p.get('index')} {p.get('name')}", style="bold")
    head.append(f"  {p.get('lines', 0)} line(s) on stderr" + (f"  [{kinds}]" if kinds else ""), style="dim")
    con.print(head, soft_wrap=True)
    for line in p["text"].rstrip("\n").splitlines():
        con.print(Text("  " + line), soft_wrap=True)  # data: never markup
    if p.get("truncated"):
        con.print(Text(f"  ... {p.get('bytes')} bytes in all (the first 64 KiB are kept)", style="dim"))


def show_remarks(run, as_json: bool) -> None:
    """Every pass's remarks of one compile (`show RUN --remarks`)."""
    rem = run.require().remarks
    if as_json:
        _print_json(
            {"run_id": run.run_id, "signature": run.manifest.signature, "path": str(run.path), "remarks": rem}
        )
        return
    if not isinstance(rem, dict):
        raise TltraceError(_no_remarks(run))
    con = _console()
    passes = [p for p in rem.get("passes") or () if isinstance(p, dict) and isinstance(p.get("text"), str)]
    planners = ", ".join(rem.get("planners") or ()) or "none"
    con.print(
        _t(
            f"{run.run_id}: {len(passes)} pass(es) wrote to stderr (planners: {planners}; "
            "top-level passes serialised)",
            "dim",
        )
    )
    for p in passes:
        _print_remark(con, p)


def show_pass(
    run, spec: str, context: int, as_json: bool, ignore_whitespace: bool = False, remarks: bool = False
) -> None:
    """Print one pass of `run` as `show --pass` does: its line and its diff (`bisect` reuses it), with
    `remarks` its remark under it."""
    from ..diff import diff
    from ..format.passref import ref_of, resolve
    from ..format.records import STAGE_ROLES
    from ..history import runs

    rec = runs.find_record(run.require(), spec, run.path)
    found = resolve(run.manifest.records, spec)
    others = (
        [ref_of(run.manifest.records, i) for i in found.matches if i != found.pos] if found.others else []
    )
    before = runs.read_text(run, rec, "before")
    after = runs.read_text(run, rec, "after") if rec.after_file or rec.after_hash else None
    if rec.role in STAGE_ROLES and after is not None:
        _show_stage(run, rec, after, as_json, others)
        return
    d = diff(before, after) if after is not None else None
    if as_json:
        out = {
            **_pass_json(run, rec),
            "diff": [
                line
                for _, line in d.unified(
                    context=context, a_name=f"{rec.name} before", b_name=f"{rec.name} after", tilde=False
                )
            ]
            if d is not None and d.changed
            else [],
            "rows": d.rows_json() if d is not None else None,
            "note": d.note if d is not None else None,
        }
        if after is None:
            out["before"] = before
        if others:
            out["others"] = others
        if remarks:
            out["remarks"] = _remark_of(run, rec.index)
        _print_json(out)
        return
    from rich.text import Text

    from ..render.terminal import diff_view, pass_line

    con = _console()
    if others:  # `--pass Simplify` of five: the first, and say where the others are, as `--pass` takes them
        numbers = [f"#{run.manifest.records[i].index}" for i in found.matches if i != found.pos]
        _warn(
            f"{rec.name} ran {len(others) + 1} times; this is the first (#{rec.index}); the others: "
            + ", ".join(numbers[:6])
            + (", ..." if len(numbers) > 6 else "")
        )
    counts = None
    if d is not None and ignore_whitespace:  # the header counts what the diff below shows
        counts = (
            sum(1 for r in d.rows if r.b is not None and r.kind not in ("same", "reindent")),
            sum(1 for r in d.rows if r.a is not None and r.kind not in ("same", "reindent")),
        )
    con.print(
        pass_line(runs.label(run.manifest, "?"), rec, d.note if d is not None else None, counts),
        soft_wrap=True,
    )
    if rec.error:
        con.print(Text(f"    error: {rec.error}", style="red"), soft_wrap=True)
        from ..history.failsite import fail_site

        # The failing operation's line (a T.copy), where the error points at the buffer's allocation.
        site = fail_site(run.path, run.manifest, rec)
        if site is not None:
            why = site.describe() or "the kernel's Python line"
            con.print(Text(f"    at {site.file}:{site.line} ({why})", style="red"), soft_wrap=True)
    # The texts may be huge: their lines are streamed, never laid out by Rich as one Text.
    from ..render.terminal import LINE_STYLE
    from ..render.visible import write_lines

    if d is None:
        con.print(Text("    (the pass failed: no output was recorded; the IR it was given:)", style="dim"))
        write_lines(con, (("", line) for line in before.splitlines()), {}, indent="")
    else:
        lines = d.unified(
            context=context, a_name="before", b_name="after", ignore_whitespace=ignore_whitespace
        )
        if lines:
            write_lines(con, lines, LINE_STYLE)
        else:
            con.print(diff_view(d, context, ignore_whitespace=ignore_whitespace), soft_wrap=True)
    if remarks:
        if not isinstance(run.manifest.remarks, dict):
            _warn(_no_remarks(run))
            return
        p = _remark_of(run, rec.index)
        if p is None:
            con.print(Text(f"    (#{rec.index} {rec.name} wrote nothing to stderr)", style="dim"))
        else:
            _print_remark(con, p)


def _pass_json(run, rec) -> dict[str, Any]:
    """Return what `show --pass --json` says first of any pass: its compile and its record."""
    return {
        "run_id": run.run_id,
        "signature": run.manifest.signature,
        "path": str(run.path),
        "record": rec.to_json(),
    }


def _show_stage(run, rec, text: str, as_json: bool, others: list[str]) -> None:
    """Print a PTX or SASS stage (run --ptx, --sass): its text, not a diff against another language's."""
    from ..history import runs

    if as_json:
        out = {
            **_pass_json(run, rec),
            "diff": [],  # no diff: the stage's input is another language
            "rows": None,
            "note": None,
            "text": text,
        }
        if others:
            out["others"] = others
        _print_json(out)
        return
    from ..render.terminal import pass_line
    from ..render.visible import write_lines

    con = _console()
    con.print(pass_line(runs.label(run.manifest, "?"), rec, None, None), soft_wrap=True)
    write_lines(con, (("", line) for line in text.splitlines()), {}, indent="")
