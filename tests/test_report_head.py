"""The compile report's fixed head (skeleton, CSS and JS before the first compile's data) is measured.

Every compile report carries the same head, so it is the floor of a report's size. docs/report.md
quotes its size in bytes ("The report head is N bytes"); this test measures it in a one-kernel
report rebuilt from the recorded traces, and fails when it is over 100 KB (issue #36's budget),
or more than 5% away from the quoted figure either way (grown past it, or shrunk so far that the
figure is stale). Nothing is compiled.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests._records import REPO, run_dirs
from tltrace.history.report_reads import compile_report
from tltrace.render.html import write_report
from tltrace.render.pages import _CHAINED_OPEN, _CHUNK_OPEN, report_head

DOC = REPO / "docs" / "report.md"
SLACK = 0.05  # the head may differ this much from the documented size before the test fails
LIMIT = 100_000  # bytes: the head's budget, whatever docs/report.md says


def documented_head_bytes() -> int:
    m = re.search(r"The report head is ([\d,]+) bytes", DOC.read_text(encoding="utf-8"))
    assert m, "docs/report.md should say 'The report head is N bytes'"
    return int(m.group(1).replace(",", ""))


def test_report_head_size_is_measured_and_held(recorded: Path, tmp_path: Path) -> None:
    run = run_dirs(recorded / "gemm")[0]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["kernel"]  # one kernel, one compile
    data = write_report(compile_report(run), tmp_path / "report.html").read_bytes()
    head = report_head()
    # The head is every byte before the first compile's data: the file starts with it and the
    # first data chunk follows at once.
    assert data.startswith(head) and data[len(head) :].startswith((_CHUNK_OPEN, _CHAINED_OPEN))
    size, quoted = len(head), documented_head_bytes()
    assert size <= LIMIT, f"the report head is {size} bytes, over its budget of {LIMIT}: shrink the CSS/JS"
    assert quoted <= LIMIT, f"docs/report.md quotes a head of {quoted} bytes, over the budget of {LIMIT}"
    budget = int(quoted * (1 + SLACK))
    assert size <= budget, (
        f"the report head is {size} bytes, over its budget of {budget} ({quoted} in docs/report.md + 5%): "
        "shrink the CSS/JS, or justify the growth and update docs/report.md"
    )
    assert size >= quoted * (1 - SLACK), (
        f"the report head shrank to {size} bytes: update docs/report.md ({quoted})"
    )
    assert size < len(data)  # the compile's data follows (the report is head + data)
