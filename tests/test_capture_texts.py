"""Every record's before/after text equals what an inline-printing tool saw at the same callback.

A second instrumentation tool, registered beside tltrace, prints the module inline at
each pass callback and before each codegen call. Passes that update their input module
in place and return it (tirx.AnnotateEntryFunc, tl.SplitHostDevice) are where a reuse
rule keyed on the module object goes wrong; real compiles run them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.format.records import CODEGEN, FAILED, RunManifest
from tltrace.history.runs import text_of
from tltrace.runner import Target, run_target

from ._kernels import SM90A
from .conftest import EXAMPLES


class _InlinePrinter:
    """One tool per compile: (sequence, name, before, after) of every pass, printed at its callback."""

    def __init__(self) -> None:
        self.compiles: list[list[list]] = []  # per compile: [seq, name, before, after]; codegen: seq None

    def install(self) -> None:
        from tilelang.instrumentation import (
            PassEventObserver,
            PassInstrumentationTool,
            StackedPassInstrument,
            register_pass_instrumentation_tool,
        )

        printer = self

        class Obs(PassEventObserver):
            def __init__(self, rows: list, counter) -> None:
                self.rows, self.counter = rows, counter

            def pass_started(self, mod, event):
                row = [event.sequence, event.name, mod.script(), None]
                self.rows.append(row)
                return row

            def pass_finished(self, mod, event, row):
                row[3] = mod.script()

        class Tool(PassInstrumentationTool):
            def __init__(self) -> None:
                self.rows: list = []
                self.counter = itertools.count()
                printer.compiles.append(self.rows)

            def create_pass_instrument(self):
                return StackedPassInstrument(
                    Obs(self.rows, self.counter), sequence_allocator=self.counter.__next__
                )

            def run_codegen(self, event, next_call):
                self.rows.append([None, "codegen", event.mod.script(), None])
                return next_call()

        register_pass_instrumentation_tool("test-inline-printer", Tool)

    def remove(self) -> None:
        from tilelang.instrumentation import unregister_pass_instrumentation_tool

        unregister_pass_instrumentation_tool("test-inline-printer")


def _trace_with_printer(
    script: Path,
    tmp: Path,
    name: str,
    *,
    sync: bool = False,
    exact: bool = False,
    check_texts: bool = False,
    events: list | None = None,
) -> tuple[list[tuple[RunManifest, Path]], list]:
    settings = Settings(
        mode="terminal",
        trace_dir=tmp,
        script_name=name,
        quiet=True,
        codegen_output=None,
        sync=sync,
        exact=exact,
        check_texts=check_texts,
    )
    import tilelang  # noqa: F401

    printer = _InlinePrinter()
    printer.install()
    try:
        code = run_target(
            Target(str(script)), settings, events.append if events is not None else lambda e: None
        )
    finally:
        printer.remove()
    assert code == 0
    runs = []
    for run_dir in sorted((tmp / name / ".run_records").glob("run_*")):
        runs.append((RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text())), run_dir))
    runs.sort(key=lambda r: r[0].started)
    compiles = [rows for rows in printer.compiles if rows]
    return runs, compiles


def _wrong(runs: list[tuple[RunManifest, Path]], compiles: list) -> tuple[int, int, list[str]]:
    """Return (records compared, records whose texts differ from the inline print, descriptions)."""
    assert len(runs) == len(compiles) and runs
    compared, wrong = 0, []
    for (manifest, run_dir), rows in zip(runs, compiles):
        passes = [r for r in manifest.records if r.status != CODEGEN]
        codegens = [r for r in manifest.records if r.status == CODEGEN]
        seen = sorted((r for r in rows if r[0] is not None), key=lambda r: r[0])
        seen_cg = [r for r in rows if r[0] is None]
        assert len(passes) == len(seen), (manifest.run_id, len(passes), len(seen))
        assert len(codegens) == len(seen_cg)
        for rec, (_, name, before, after) in zip(passes, seen):
            compared += 1
            got_before = text_of(run_dir, rec, "before")
            got_after = text_of(run_dir, rec, "after") if rec.status != FAILED else None
            if got_before != before or got_after != after:
                wrong.append(
                    f"{rec.index} {rec.name} ({name}): {rec.status}, before ok={got_before == before}"
                )
            elif rec.status != ("noop" if before == after else "changed"):
                wrong.append(f"{rec.index} {rec.name}: status {rec.status}, texts say otherwise")
        for rec, (_, _, before, _) in zip(codegens, seen_cg):
            compared += 1
            if text_of(run_dir, rec, "before") != before:
                wrong.append(f"{rec.index} {rec.name}: codegen input differs")
    return compared, len(wrong), wrong


@pytest.mark.parametrize(
    ("sync", "exact"), [(False, False), (True, False), (False, True)], ids=["worker", "sync", "exact"]
)
def test_every_record_text_equals_an_inline_print_on_a_cpu_gemm(tmp_path, sync, exact) -> None:
    """With the background worker (snapshots printed later), with --sync (printed at once), and
    with --exact (no equality rule: tests/test_print_rule.py tests the rule on its own)."""
    runs, compiles = _trace_with_printer(EXAMPLES / "gemm.py", tmp_path, "gemm", sync=sync, exact=exact)
    compared, wrong, what = _wrong(runs, compiles)
    assert wrong == 0, what
    names = {r.name for m, _ in runs for r in m.records}
    # The in-place passes ran, and each is recorded as the change it made.
    assert any("AnnotateEntryFunc" in n for n in names)
    in_place = [r for m, _ in runs for r in m.records if "AnnotateEntryFunc" in r.name]
    assert all(r.status == "changed" for r in in_place)


@pytest.mark.parametrize("exact", [False, True], ids=["rule", "exact"])
def test_every_record_text_equals_an_inline_print_on_an_sm90a_lowering(tmp_path, exact) -> None:
    """CUDA codegen for sm_90a needs no GPU and no nvcc; SplitHostDevice runs here."""
    script = tmp_path / "sm90a.py"
    script.write_text(SM90A)
    runs, compiles = _trace_with_printer(script, tmp_path / "trace", "sm90a", exact=exact)
    compared, wrong, what = _wrong(runs, compiles)
    assert wrong == 0, what
    split = [r for m, _ in runs for r in m.records if "SplitHostDevice" in r.name]
    assert split and all(r.status == "changed" for r in split)


def _trace_checked(tmp: Path, monkeypatch, *, broken_rule: bool) -> tuple[list, list, list]:
    """The CPU gemm under --check-texts, beside the inline printer; optionally with an equality
    rule that calls every pair of modules equal (the fault the check is for)."""
    from tltrace.session import snapshot
    from tltrace.session.events import Notice

    if broken_rule:
        monkeypatch.setattr(snapshot, "_EQUAL", [lambda a, b: True])
    events: list = []
    runs, compiles = _trace_with_printer(EXAMPLES / "gemm.py", tmp, "gemm", check_texts=True, events=events)
    notices = [e for e in events if isinstance(e, Notice) and "inline print" in e.message]
    return runs, compiles, notices


@pytest.mark.compile
def test_check_texts_says_all_equal_on_a_cpu_gemm(tmp_path, monkeypatch) -> None:
    runs, compiles, notices = _trace_checked(tmp_path, monkeypatch, broken_rule=False)
    assert _wrong(runs, compiles)[1] == 0
    assert len(notices) == len(runs) and all(n.kind == "info" and "all equal" in n.message for n in notices)
    checked = int(notices[0].message.split()[0])
    assert checked >= 2 * len(runs[0][0].records) - 5  # (nearly) every side of every pass; codegen aside


@pytest.mark.compile
def test_check_texts_catches_a_wrong_reuse_and_records_the_inline_print(tmp_path, monkeypatch) -> None:
    """An equality rule that is wrong (every module 'equal' to the last): without the check the
    records would repeat the first text; with it, each differing text is replaced by the inline
    print, the records are right, and the run says how many differed and in which passes."""
    runs, compiles, notices = _trace_checked(tmp_path, monkeypatch, broken_rule=True)
    compared, wrong, what = _wrong(runs, compiles)
    assert compared and wrong == 0, what
    assert notices and all(n.kind == "warning" for n in notices)
    differed = int(notices[0].message.split()[0])
    assert differed > 0 and "the records hold the inline print" in notices[0].message
