"""A compile report's earlier invocations ("Compare with…", #32 item 6): which compiles it offers.

The recorded traces: elementwise_add three times (one compile per invocation).
"""

from __future__ import annotations

import json
from pathlib import Path

from tltrace.history.report_reads import compile_report, earlier_compiles
from tltrace.render.html import write_report

from ._records import read_manifest, recorded_subset, run_dirs


def _earlier(report: Path) -> list[list[str]]:
    chunks = [
        json.loads(x.split(">", 1)[1]) for x in report.read_text().split("</script>") if '"t":"earlier"' in x
    ]
    return chunks[-1]["runs"] if chunks else []


def test_a_report_offers_the_earlier_compiles_of_its_kernel_that_have_reports(
    recorded: Path, tmp_path: Path
) -> None:
    td = recorded_subset(recorded, tmp_path / "traces", elementwise_add=slice(0, 3))
    first, second, third = run_dirs(td / "elementwise_add")
    assert len({read_manifest(d)["invocation"] for d in (first, second, third)}) == 3
    write_report(compile_report(first))  # the second has no report (a terminal-mode run): it is not offered
    newest = write_report(compile_report(third))
    offered = _earlier(newest)
    assert [r[0] for r in offered] == [first.name]
    assert read_manifest(first)["signature"] in offered[0][1]
    write_report(compile_report(second))
    assert [r[0] for r in _earlier(write_report(compile_report(third)))] == [
        second.name,
        first.name,
    ]  # newest first
    assert (
        earlier_compiles(td / "elementwise_add", read_manifest(first)["invocation"], first.name) == []
    )  # nothing before the first
