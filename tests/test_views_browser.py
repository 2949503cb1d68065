"""The report items of issue 21 in Chromium: pass names with #k, wrap off scrolls, Escape clears the
search, a one-compile index opens its compile, lower_trace's report links no index, diff-runs names
its compiles. Real CPU compiles; any page error fails (conftest's open_page)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tltrace.render.html import REPORT_NAME

from ._records import EXAMPLES, read_manifest, recorded_subset, run_dirs
from .conftest import wait_js

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def html_trace(recorded: Path, tmp_path_factory) -> Path:
    """The first recorded compile of elementwise_add, with its report and its script's index."""
    from tltrace.history.report_reads import compile_report, index_report
    from tltrace.render.html import write_report
    from tltrace.render.index import write_index

    td = recorded_subset(recorded, tmp_path_factory.mktemp("views") / "traces", elementwise_add=slice(0, 1))
    (run,) = run_dirs(td / "elementwise_add")
    write_report(compile_report(run))
    write_index(index_report(td / "elementwise_add", [run]))
    return td


@pytest.fixture(scope="module")
def compile_report(html_trace: Path) -> tuple[Path, dict]:
    run = run_dirs(html_trace / "elementwise_add")[-1]
    return run / REPORT_NAME, read_manifest(run)


def selected(page) -> dict:
    return page.eval_on_selector(
        "li.tl-pass.selected", "li => ({index: +li.dataset.index, name: li.querySelector('.nm').textContent})"
    )


def test_name_hash_k_opens_the_kth_such_pass(open_page, compile_report) -> None:
    report, m = compile_report
    names = [r["name"] for r in m["records"]]
    twice = [n for n in names if names.count(n) >= 2]
    name = next((n for n in twice if "Simplify" in n), twice[0])
    second = [r["index"] for r in m["records"] if r["name"] == name][1]
    page = open_page(report, f"#{name}#2")
    assert selected(page)["index"] == second
    from urllib.parse import unquote

    assert unquote(page.url).endswith(f"#{name}#2")  # the address names it the same way
    short = name.rsplit(".", 1)[-1].upper()  # the end of a dotted name, any case
    page = open_page(report, f"#{short}#2")
    assert selected(page)["index"] == second
    page = open_page(report, f"#{name}#99")
    assert f"ran {names.count(name)} time(s)" in page.locator(".tl-missing").text_content()


def test_wrap_off_scrolls_sideways_and_cuts_nothing(open_page, compile_report) -> None:
    report, m = compile_report
    changed = next(
        r for r in m["records"] if r["status"] == "changed" and r.get("added", 0) + r.get("removed", 0) > 2
    )
    page = open_page(report, f"#{changed['index']}", viewport={"width": 700, "height": 700})
    page.click(".tl-wrap")
    assert page.locator("body.tl-nowrap").count() == 1
    host = page.locator(".tl-diffhost")
    widths = host.evaluate("h => [h.scrollWidth, h.clientWidth]")
    assert widths[0] > widths[1]  # the long lines make it scroll
    host.evaluate("h => { h.scrollLeft = 300; }")
    assert host.evaluate("h => h.scrollLeft") > 0
    cells = page.eval_on_selector_all(
        "td.code", "ts => ts.map(t => [getComputedStyle(t).textOverflow, t.scrollWidth - t.clientWidth])"
    )
    assert all(ov != "ellipsis" and extra <= 1 for ov, extra in cells)  # nothing clipped inside a cell


def test_escape_clears_the_search_and_its_highlights(open_page, compile_report) -> None:
    report, _ = compile_report
    page = open_page(report)
    page.fill("#tl-search", "T.")
    page.press("#tl-search", "Enter")
    assert page.locator("li.tl-pass.hit").count() > 0
    page.press("#tl-search", "Escape")
    assert page.locator("li.tl-pass.hit").count() == 0 and page.input_value("#tl-search") == ""
    page.fill("#tl-search", "T.")
    page.press("#tl-search", "Enter")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Escape")  # outside the box too
    assert page.locator("li.tl-pass.hit").count() == 0


def test_one_compile_index_opens_the_compile(open_page, html_trace: Path, compile_report) -> None:
    report, _ = compile_report
    page = open_page(html_trace / "elementwise_add" / REPORT_NAME)
    assert page.url.split("#")[0] == report.resolve().as_uri()
    assert page.locator("li.tl-pass").count() > 0
    back = open_page(html_trace / "elementwise_add" / REPORT_NAME, f"#run={report.parent.name}")
    assert back.locator("#ix-body tr").count() == 1  # coming back from the compile: the index stays


def test_lower_trace_report_links_no_index(open_page, tmp_path: Path) -> None:
    import tilelang.transform as transform

    import tltrace

    sys.path.insert(0, str(EXAMPLES))
    try:
        from elementwise_add import make_add
    finally:
        sys.path.remove(str(EXAMPLES))
    out = tmp_path / "lt.html"
    tltrace.lower_trace(make_add(256, 64), transform.Simplify(), mode="html", html_path=out)
    page = open_page(out)
    assert page.locator(".tl-nav").count() == 0 and page.locator("a[href*='report.html']").count() == 0


def test_diff_runs_html_names_the_compiles(open_page, run_cli, recorded: Path, tmp_path: Path) -> None:
    td = recorded_subset(recorded, tmp_path / "traces", elementwise_add=slice(0, 2))  # block 128, then 64
    out = tmp_path / "d.html"
    res = run_cli("diff-runs", "elementwise_add:-2", "elementwise_add:-1", "--html", out, "--trace-dir", td)
    assert res.exit_code == 1, res.output
    sigs = [read_manifest(d)["signature"] for d in run_dirs(td / "elementwise_add")[-2:]]
    page = open_page(out)
    runs = page.locator("#runs").text_content()
    assert sigs[0] in runs and sigs[1] in runs
    rows = page.eval_on_selector_all("#passes tbody tr td:last-child", "ts => ts.map(t => t.textContent)")
    assert sum(r == "input differs" for r in rows) < len(rows)


def test_compare_the_same_pass_of_a_sibling_side_by_side(open_page, tmp_path: Path) -> None:
    from .test_index_browser import write_invocation

    runs = write_invocation(tmp_path, 3, passes=8)
    page = open_page(runs[0] / REPORT_NAME, "#3")
    options = page.eval_on_selector_all(".tl-compare-pick option", "os => os.map(o => o.value)")
    assert options == ["", runs[1].name, runs[2].name]  # every sibling but this compile
    page.select_option(".tl-compare-pick", runs[2].name)
    page.wait_for_selector("#tl-compare table.tl-diff")
    head = page.locator(".tl-compare-head").text_content()
    sig = "gemm_bm192_bn96_k002"  # write_invocation names compile 2 so
    assert sig in head and "this compile (left)" in head
    mine = page.locator("#tl-compare td.code.l").all_text_contents()
    assert mine and page.locator("#tl-compare td.code.r").count() > 0
    page.keyboard.press("j")  # another pass: the comparison follows it
    wait_js(
        page,
        "document.querySelector('.tl-compare-head') && "
        "document.querySelector('.tl-compare-head').textContent.indexOf('Output of') >= 0",
    )
    page.wait_for_selector("#tl-compare table.tl-diff")
    page.click(".tl-compare-stop")
    assert page.locator("#tl-compare").count() == 0 and page.locator("iframe.tl-cmp-frame").count() == 0
