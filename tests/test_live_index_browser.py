"""The invocation index read while its compile runs says `running`, never `0 passes` (issue #54).

Issue 32 and 54: the live index showed "passes 0" for a compile under way. A real CPU compile of
the gemm example is traced, and the index is copied each time it is read while the compile's own
report holds pass records but no final status (the compile is running); each copy is opened in
Chromium beside the live file. Whatever was read, the row of a running compile says running, in
its status and passes cells, never 0 passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._records import EXAMPLES, REPO
from tltrace.render.pages import chunk_values

pytestmark = pytest.mark.browser


def test_the_live_index_says_running_while_the_compile_runs(open_page, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env.update(TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_CPU="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    script_dir = tmp_path / "tmp" / "lower_trace_dir" / "gemm"
    index = script_dir / "report.html"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tltrace", "run", "-q", "--mode", "html", str(EXAMPLES / "gemm.py")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    snaps: list[tuple[bytes, int]] = []
    try:
        while proc.poll() is None:
            time.sleep(0.02)  # polling: what is read is checked, not when
            reports = sorted(script_dir.glob(".run_records/run_*/report.html"))
            if not index.is_file() or not reports:
                continue
            live = index.read_bytes()
            report = reports[0].read_bytes()
            chunks = [c for c in chunk_values(report) if c]  # packed ones inflated (pages.Packer)
            recs = sum(1 for c in chunks if c.get("t") == "rec")
            done = any(c.get("t") == "meta" and c.get("status") == "complete" for c in chunks)
            if recs and not done and b'"t":"end"' not in live:
                snaps.append((live, recs))
    finally:
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    assert snaps, "the index was never read while the compile ran"
    for k, (live, recs) in enumerate(snaps[:: max(1, len(snaps) // 4)]):
        copy = script_dir / f"snap-{k}.html"  # beside the live index: its links resolve as they would
        copy.write_bytes(live)
        page = open_page(copy)
        cells = page.eval_on_selector_all(
            "#ix-body tr",
            "trs => trs.map(tr => [tr.dataset.status, [...tr.cells].map(c => c.textContent.trim())])",
        )
        head = page.evaluate(
            "() => [...document.getElementById('ix-body').closest('table').tHead.rows[0].cells]"
            ".map(c => c.textContent.trim().toLowerCase())"
        )
        assert len(cells) == 1, cells
        status, texts = cells[0]
        passes = next(i for i, h in enumerate(head) if h.startswith("passes"))
        assert status == "running", (recs, cells)
        assert texts[passes] == "running" and "0" not in texts, (recs, head, texts)
