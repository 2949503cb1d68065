"""The invocation index (a script's report.html) in headless Chromium: any page error fails the test.

Also prints how long a 300-compile index takes to open (no assertion on time).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tltrace.render.html import REPORT_NAME, HtmlReportListener

from .synthetic import synthetic_events

pytestmark = pytest.mark.browser

EVIL = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def write_invocation(
    script_dir: Path, n: int, *, passes: int = 6, failing=(), invocation: str = "inv-1", hostile: bool = False
) -> list[Path]:
    """Feed n synthetic compiles of one invocation to one listener; return their run dirs in start order."""
    listener = HtmlReportListener()
    runs = []
    for i in range(n):
        sig = f"gemm_bm{64 * (1 + i % 4)}_bn{32 * (1 + i % 3)}_k{i:03d}"
        if hostile and i == 1:
            sig = f"gemm{EVIL}"
        events = list(
            synthetic_events(
                passes,
                script_dir,
                seed=i,
                invocation=invocation,
                signature=sig,
                kernel="gemm",
                lines=10,
                failed_at=2 if i in failing else None,
            )
        )
        for e in events:
            listener(e)
        runs.append(events[0].run_dir)
    listener.close()
    return runs


def rows(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#ix-body tr",
        "trs => trs.map(tr => ({run: tr.dataset.run, status: tr.dataset.status, "
        "sig: tr.querySelector('td.sig a').textContent, href: tr.querySelector('td.sig a').href}))",
    )


def test_index_lists_failed_first_sorts_filters_and_links(open_page, tmp_path: Path):
    runs = write_invocation(tmp_path, 12, failing=(4, 9), hostile=True)
    page = open_page(tmp_path / REPORT_NAME)
    shown = rows(page)
    assert len(shown) == 12
    assert [r["run"] for r in shown[:2]] == [runs[4].name, runs[9].name]  # failed compiles first
    assert {r["status"] for r in shown[:2]} == {"failed"} and {r["status"] for r in shown[2:]} == {"complete"}
    assert (
        page.locator(f"#ix-body tr[data-run='{runs[4].name}'] .ix-failat").text_content().startswith("Pass2")
    )
    for r in shown:  # each row links to that compile's own report, which exists
        assert r["href"].endswith(f"/.run_records/{r['run']}/report.html")
        assert (tmp_path / ".run_records" / r["run"] / REPORT_NAME).is_file()
    assert any(r["sig"] == f"gemm{EVIL}" for r in shown)  # hostile text shown as text
    assert page.evaluate("window.__pwned") is None
    # Sort by signature, then reverse.
    page.click("#ix-head th[data-key='label']")
    sigs = [r["sig"] for r in rows(page)]
    assert sigs == sorted(sigs)
    page.click("#ix-head th[data-key='label']")
    assert [r["sig"] for r in rows(page)] == sorted(sigs, reverse=True)
    # Filter by text and by status.
    page.fill("#ix-filter", "bm192")
    page.wait_for_selector("html[data-shown='3']", state="attached")
    assert all("bm192" in r["sig"] for r in rows(page))
    page.fill("#ix-filter", "")
    page.select_option("#ix-status-filter", "failed")
    page.wait_for_selector("html[data-shown='2']", state="attached")
    assert "2 failed" in page.locator("#ix-status").text_content()


def test_compile_report_links_back_and_switches_to_siblings(open_page, tmp_path: Path):
    runs = write_invocation(tmp_path, 5)
    page = open_page(runs[2] / REPORT_NAME)
    back = page.locator(".tl-nav a")
    assert back.get_attribute("href") == f"../../report.html#run={runs[2].name}"
    options = page.eval_on_selector_all(".tl-nav select.tl-switch option", "os => os.map(o => o.value)")
    assert options == [r.name for r in runs]
    assert page.eval_on_selector(".tl-nav select.tl-switch", "s => s.value") == runs[2].name
    page.keyboard.press("j")  # another pass than the one it opened on
    page.keyboard.press("j")
    picked = page.eval_on_selector("li.tl-pass.selected .nm", "n => n.textContent")
    page.select_option(".tl-nav select.tl-switch", runs[4].name)
    page.wait_for_url(f"**/{runs[4].name}/report.html#*")  # the sibling opens on the same pass
    page.wait_for_selector("html[data-ready='1']")
    assert page.eval_on_selector("li.tl-pass.selected .nm", "n => n.textContent") == picked
    page.click(".tl-nav a")
    page.wait_for_url("**/report.html#run=*")
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator(f"#ix-body tr.ix-from[data-run='{runs[4].name}']").count() == 1


def test_index_of_300_compiles_opens(open_page, tmp_path: Path):
    """Opens and sorts failures first (bench/report.py measures how fast)."""
    write_invocation(tmp_path, 300, passes=6, failing=(7, 150, 299))
    page = open_page(tmp_path / REPORT_NAME)
    assert int(page.evaluate("document.documentElement.dataset.readyMs")) >= 0
    assert len(rows(page)) == 300 and [r["status"] for r in rows(page)[:3]] == ["failed"] * 3


def test_compiles_of_a_killed_invocation_read_incomplete_once_the_index_is_stale(open_page, tmp_path: Path):
    import os

    listener = HtmlReportListener()
    for seed, sig, cut in ((1, "gemm_done", None), (2, "gemm_killed", 2)):
        events = list(
            synthetic_events(
                4, tmp_path, seed=seed, invocation="inv-k", signature=sig, kernel="gemm", lines=5
            )
        )
        for e in events[:cut]:  # the second compile's process dies after two events
            listener(e)
    index = tmp_path / REPORT_NAME
    assert {r["sig"]: r["status"] for r in rows(open_page(index))} == {
        "gemm_done": "complete",
        "gemm_killed": "running",
    }
    old = time.time() - 3600  # nothing appended for an hour: its writer is gone
    os.utime(index, (old, old))
    shown = rows(open_page(index))
    assert [(r["sig"], r["status"]) for r in shown] == [
        ("gemm_killed", "incomplete"),
        ("gemm_done", "complete"),
    ]
