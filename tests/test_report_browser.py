"""The HTML report in headless Chromium: every feature clicked through; any page error fails the test."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

from tltrace.render.html import REPORT_NAME, report_head
from tltrace.render.pages import LATE_SCRIPTS, PACK_TYPE, chunk_values, late_script
from tltrace.session.events import PassRecorded

from ._cli import diff_last_two
from .conftest import wait_js
from .synthetic import cpu_manifest, synthetic_events, write_synthetic_report

pytestmark = pytest.mark.browser


@pytest.fixture
def open_report(open_page):
    """Open a report (conftest's open_page: any page error fails the test)."""
    return open_page


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    """A 60-pass synthetic run (with codegen) and its events."""
    root = tmp_path_factory.mktemp("trace")
    events = list(synthetic_events(60, root, seed=3))
    report = write_synthetic_report(60, root, seed=3)
    passes = [e for e in events if isinstance(e, PassRecorded)]
    return report, passes


def selected(page) -> dict:
    return page.eval_on_selector(
        "li.tl-pass.selected",
        "li => ({index: +li.dataset.index, "
        "status: li.dataset.status, name: li.querySelector('.nm').textContent})",
    )


def visible_statuses(page) -> list[str]:
    return page.eval_on_selector_all("li.tl-pass:not(.hidden)", "ls => ls.map(l => l.dataset.status)")


def first_with(passes, status):
    return next(p for p in passes if p.record.status == status)


def test_lists_every_pass_with_header_and_first_diff(open_report, trace):
    report, passes = trace
    page = open_report(report)
    assert page.locator("li.tl-pass").count() == len(passes)
    assert page.locator("#tl-kernel").text_content() == "synthetic_kernel"
    meta = page.locator("#tl-meta").text_content()
    for word in ("target c", "backend cython", "TileLang 0.1.15", "tltrace run synthetic.py"):
        assert word in meta
    assert page.locator("#tl-runstatus").text_content() == "complete"
    # The first changed pass opens with a diff: a del and an add cell with word highlights.
    assert selected(page)["status"] == "changed"
    assert page.locator("td.code.del .w").count() >= 1 and page.locator("td.code.add .w").count() >= 1
    assert page.locator("li.tl-pass[data-status='changed'] .add").first.text_content().startswith("+")
    dots = set(page.eval_on_selector_all("li.tl-pass .tl-dot", "ds => ds.map(d => d.textContent)"))
    assert dots == {"\u25cf", "\u25cb", "\u25c6"}
    assert page.locator("li.tl-pass .dur").first.text_content().endswith("s")


def test_filter_badges(open_report, trace):
    report, passes = trace
    page = open_report(report)
    page.click(".tl-badge[data-filter='changed']")
    assert set(visible_statuses(page)) == {"changed"}
    assert len(visible_statuses(page)) == sum(p.record.status == "changed" for p in passes)
    page.click(".tl-badge[data-filter='codegen']")
    assert visible_statuses(page) == ["codegen", "codegen"]
    assert selected(page)["status"] == "codegen"
    page.click(".tl-badge[data-filter='codegen']")
    assert len(visible_statuses(page)) == len(passes)
    page.click(".tl-badge[data-filter='failed']")
    assert visible_statuses(page) == []
    assert "No pass selected" in page.locator("#tl-view").text_content()


def test_phase_tabs_and_hide_noop(open_report, trace):
    report, passes = trace
    page = open_report(report)
    page.click(".tl-tab[data-phase='phase2']")
    phases = page.eval_on_selector_all("li.tl-pass:not(.hidden)", "ls => ls.map(l => l.dataset.phase)")
    assert set(phases) == {"phase2"} and len(phases) == sum(p.record.phase == "phase2" for p in passes)
    assert page.locator(".tl-tab.active").get_attribute("data-phase") == "phase2"
    page.check("#tl-hide-noop")
    assert "noop" not in visible_statuses(page) and visible_statuses(page)
    page.click(".tl-tab[data-phase='']")
    page.uncheck("#tl-hide-noop")
    assert len(visible_statuses(page)) == len(passes)


def test_j_k_move_between_visible_passes_and_keep_the_fragment(open_report, trace):
    report, passes = trace
    start = 10
    page = open_report(report, f"#{passes[start].record.name}@{start}")
    assert selected(page)["index"] == start
    page.keyboard.press("j")
    assert selected(page)["index"] == start + 1
    name = selected(page)["name"].lstrip("\u21b3 ")
    assert page.evaluate("decodeURIComponent(location.hash.slice(1))") in (name, f"{name}@{start + 1}")
    page.keyboard.press("k")
    page.keyboard.press("k")
    assert selected(page)["index"] == start - 1
    page.check("#tl-hide-noop")
    before = selected(page)["index"]
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("j")
    assert selected(page)["status"] != "noop" and selected(page)["index"] > before


def test_n_p_jump_to_the_next_and_previous_pass_that_changed_the_ir(open_report, trace):
    """Issue 54: j/k step every pass; n/p (and J/K) skip the no-ops, as the records' statuses say."""
    report, passes = trace
    statuses = [p.record.status for p in passes]
    start = next(i for i in range(1, len(statuses)) if statuses[i] == "noop" and statuses[i - 1] != "noop")
    page = open_report(report, f"#{passes[start].record.name}@{start}")
    assert selected(page)["index"] == start
    want = next(i for i in range(start + 1, len(statuses)) if statuses[i] != "noop")
    page.keyboard.press("n")
    assert selected(page)["index"] == want
    page.keyboard.press("p")
    back = max(i for i in range(want) if statuses[i] != "noop")
    assert back < start and selected(page)["index"] == back
    page.keyboard.press("Shift+J")  # J/K: the same, beside j/k
    assert selected(page)["index"] == want
    for _ in range(len(statuses)):  # at the end it stays on the last pass that is not a no-op
        page.keyboard.press("n")
    assert selected(page)["index"] == max(i for i, s in enumerate(statuses) if s != "noop")
    page.keyboard.press("?")
    assert "n/p" in page.locator("#tl-help").inner_text().replace(" ", "")


def test_fragment_selects_a_pass(open_report, trace):
    report, passes = trace
    target = passes[17].record
    page = open_report(report, f"#{target.name}@{target.index}")
    assert selected(page)["index"] == target.index
    unique = next(p.record for p in passes if sum(q.record.name == p.record.name for q in passes) == 1)
    page = open_report(report, f"#{unique.name}")
    assert selected(page)["index"] == unique.index
    page.evaluate(f"location.hash = '#{passes[5].record.name}@5'")
    wait_js(page, "document.querySelector('li.tl-pass.selected').dataset.index === '5'")


def test_shift_e_and_expand_buttons(open_report, trace):
    report, passes = trace
    page = open_report(report)
    folds = page.locator("tr.fold").count()
    rows = page.locator("table.tl-diff tbody tr:not(.fold)").count()
    assert folds >= 1
    page.keyboard.press("Shift+E")
    assert page.locator("tr.fold").count() == 0
    assert page.locator("table.tl-diff tbody tr").count() > rows
    page.keyboard.press("Shift+E")
    assert page.locator("tr.fold").count() == folds
    # Expand 20 reveals twenty lines; Expand all removes the fold.
    btn = page.locator("tr.fold button", has_text="Expand 20").first
    btn.click()
    assert page.locator("table.tl-diff tbody tr:not(.fold)").count() == rows + 20
    page.locator("tr.fold button.tl-expand-all").first.click()
    assert page.locator("tr.fold").count() == folds - 1


def test_f7_manual_alignment(open_report, trace):
    report, passes = trace
    page = open_report(report)
    page.keyboard.press("Shift+E")  # every line on screen
    page.keyboard.press("F7")
    assert page.locator("#tl-align-banner").is_visible()
    page.locator("tr[data-l='10'] td.code.l").click()
    assert page.locator("tr.pick[data-l='10']").count() == 1
    page.locator("tr[data-r='20'] td.code.r").click()
    anchor = page.locator("tr.anchor")
    assert anchor.count() == 1
    assert anchor.get_attribute("data-l") == "10" and anchor.get_attribute("data-r") == "20"
    # Forcing line 11 against line 21 makes lines 1-10 left and 11-20 right unmatched.
    assert page.locator("td.code.del").count() >= 10 and page.locator("td.code.add").count() >= 10
    page.click("button.tl-clear-align")
    assert page.locator("tr.anchor").count() == 0
    page.keyboard.press("F7")
    page.keyboard.press("Escape")
    assert not page.locator("#tl-align-banner").is_visible()


def test_theme_persists_across_reload(open_report, trace):
    report, passes = trace
    page = open_report(report)
    first = page.get_attribute("html", "data-theme")
    page.click("#tl-theme")
    flipped = page.get_attribute("html", "data-theme")
    assert flipped != first and flipped in ("dark", "light")
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    assert page.get_attribute("html", "data-theme") == flipped
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == ("rgb(13, 17, 23)" if flipped == "dark" else "rgb(255, 255, 255)")


def test_copy_buttons_copy_before_and_after(open_report, trace):
    report, passes = trace
    stub = (
        "window.__copied = [];"
        "Object.defineProperty(navigator, 'clipboard', {value: {writeText: t => "
        "{ window.__copied.push(t); return Promise.resolve(); }}});"
    )
    page = open_report(report, init_script=stub)
    ev = next(p for p in passes if p.record.index == selected(page)["index"])
    page.click("button.tl-copy-before")
    page.click("button.tl-copy-after")
    assert page.evaluate("window.__copied") == [ev.before, ev.after]
    wait_js(page, "document.querySelector('button.tl-copy-after').textContent.startsWith('Copied')")


def test_search_finds_passes_that_introduce_a_string_and_jumps(open_report, trace):
    report, passes = trace
    page = open_report(report)
    intro = next(
        p
        for p in passes
        if p.record.status == "changed"
        and "inserted by pass" in p.after
        and "inserted by pass" not in p.before
    )
    needle = f"inserted by pass {intro.after.split('inserted by pass ')[1].split()[0]}"
    page.fill("#tl-search", needle)
    page.press("#tl-search", "Enter")
    results = page.locator(".tl-sr")
    assert results.count() >= 1
    first = results.first
    assert first.locator(".tl-sr-tag").text_content() == "introduces"
    assert first.get_attribute("data-pos") is not None
    assert page.locator("li.tl-pass.hit").count() == results.count()
    first.click()
    assert selected(page)["index"] == intro.record.index
    hit = page.locator("tr.hitrow")
    assert hit.count() == 1 and needle in hit.text_content()
    page.fill("#tl-search", "no such text anywhere")
    page.press("#tl-search", "Enter")
    assert "No pass contains" in page.locator(".tl-sr-head").text_content()


def test_failed_pass_shows_error_box_and_ir_before(open_report, tmp_path: Path):
    report = write_synthetic_report(25, tmp_path, failed_at=14)
    page = open_report(report)
    assert selected(page)["status"] == "failed"  # a failed run opens on its failure
    box = page.locator(".tl-error")
    assert "TVMError: Check failed" in box.text_content()
    assert "IR before the failure" in page.locator(".tl-pane h3").text_content()
    assert page.locator(".tl-pane td.code").count() > 100
    assert page.locator("#tl-runstatus").text_content() == "compile failed"
    page.click(".tl-badge[data-filter='failed']")
    assert visible_statuses(page) == ["failed"]


def test_codegen_record_shows_tir_and_source(open_report, trace):
    report, passes = trace
    page = open_report(report)
    page.click(".tl-tab[data-phase='codegen']")
    heads = page.eval_on_selector_all(".tl-pane h3", "hs => hs.map(h => h.textContent)")
    assert heads == ["TIR (before codegen)", "Generated device source (after)"]
    assert "device_main" in page.locator(".tl-pane").nth(1).text_content()
    page.keyboard.press("j")
    assert "Generated host source (after)" in page.locator(".tl-pane h3").nth(1).text_content()
    assert "host" in page.locator(".tl-pass-head .info").text_content()


def test_nested_pass_links_to_its_parent(open_report, trace):
    report, passes = trace
    child = next(p.record for p in passes if p.record.depth == 1)
    page = open_report(report, f"#{child.name}@{child.index}")
    assert page.locator("li.tl-pass.selected .nm").text_content().startswith("\u21b3")
    page.click("button.tl-parent")
    assert selected(page)["index"] == child.parent


def test_sidebar_collapse_and_resize(open_report, trace):
    report, passes = trace
    page = open_report(report)
    width = page.evaluate("document.getElementById('tl-sidebar').getBoundingClientRect().width")
    box = page.locator("#tl-resizer").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 50)
    page.mouse.down()
    page.mouse.move(box["x"] + 150, box["y"] + 50)
    page.mouse.up()
    wider = page.evaluate("document.getElementById('tl-sidebar').getBoundingClientRect().width")
    assert wider > width + 100
    page.click("#tl-collapse")
    assert not page.locator("#tl-sidebar").is_visible()
    page.click("#tl-expand-sidebar")
    assert page.locator("#tl-sidebar").is_visible()


def shown(text: str) -> str:
    """How the report shows text: invisible bidi/line-separator controls as visible U+XXXX boxes."""
    return re.sub(
        "[\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]",
        lambda m: f"U+{ord(m.group()):04X}",
        text,
    )


def test_hostile_names_show_as_text_and_never_run(open_report, tmp_path: Path):
    report = write_synthetic_report(30, tmp_path, hostile=True, failed_at=22)
    events = list(synthetic_events(30, tmp_path, hostile=True, failed_at=22))
    kernel = events[0].manifest.kernel
    page = open_report(report)
    assert page.evaluate("window.__pwned") is None
    # Scripts: the head's and the late ones tltrace appended (pages.LATE_SCRIPTS), nothing else.
    data = report.read_bytes()
    ours = 1 + sum(late_script(n) in data for n in LATE_SCRIPTS)
    # Each travels packed (pages.packed): the pack, the script that unpacks it, the script it becomes.
    assert page.locator(f'script[type="{PACK_TYPE}"]').count() == ours
    assert page.locator("img").count() == 0 and page.locator("script:not(.tl-d)").count() == 3 * ours
    assert page.locator("#tl-kernel").text_content() == shown(kernel)
    hostile = next(e.record for e in events if isinstance(e, PassRecorded) and "</script>" in e.record.name)
    page = open_report(report, f"#{hostile.name.replace('%', '%25').replace('#', '%23')}")
    assert page.locator(".tl-pass-head h2").text_content().endswith(shown(hostile.name))
    page.keyboard.press("Shift+E")
    assert page.locator("td.code", has_text="window.__pwned=1").count() >= 1
    page.click(".tl-badge[data-filter='failed']")
    assert "</script><script>" in page.locator(".tl-error pre").text_content()
    page.fill("#tl-search", "<img src=x")
    page.press("#tl-search", "Enter")
    assert page.locator(".tl-sr").count() >= 1
    assert page.evaluate("window.__pwned") is None


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.77, 0.999])
def test_truncated_report_opens_with_the_passes_before_the_cut(open_report, trace, tmp_path: Path, cut):
    report, passes = trace
    data = report.read_bytes()
    head = len(report_head())
    short = tmp_path / REPORT_NAME
    short.write_bytes(data[: head + int((len(data) - head) * cut)])
    old = time.time() - 3600  # a killed run: the file stopped changing long ago
    os.utime(short, (old, old))
    # the passes whose record chunk is whole before the cut (the first chunks hold the input whole,
    # the outputs after it are its changes: a small cut may end before the first record)
    whole = [c for c in chunk_values(short.read_bytes()[head:]) if c is not None]
    expected = len({c["index"] for c in whole if c.get("t") == "rec"})
    assert expected > 0 or cut < 0.5
    page = open_report(short)
    count = page.locator("li.tl-pass").count()
    assert count == expected <= len(passes)
    assert "incomplete" in page.locator("#tl-runstatus").text_content()
    page.keyboard.press("j")


def test_real_compile_report(open_report, run_cli, examples_dir: Path, tmp_path: Path):
    trace = tmp_path / "trace"
    result = run_cli("run", examples_dir / "elementwise_add.py", "--mode", "html", "--trace-dir", trace)
    assert result.exit_code == 0, result.output
    report = next((trace / "elementwise_add" / ".run_records").glob(f"run_*/{REPORT_NAME}"))
    page = open_report(report, "#LowerTileOp")
    assert selected(page)["name"] == "LowerTileOp"
    assert page.locator("td.code.add").count() >= 1
    assert page.locator("#tl-kernel").text_content() == "add"
    assert page.locator(".tl-tab[data-phase='codegen']").count() == 1


def _report_from(
    tmp_path: Path, passes: list[tuple[str, str, str, str]], *, error: str | None = None
) -> Path:
    """Write a report of hand-made passes (name, status, before, after); `error` fails the run after them."""
    import time
    from dataclasses import replace

    from tltrace.format.layout import text_hash
    from tltrace.format.records import PassRecord
    from tltrace.render.html import HtmlReportListener
    from tltrace.session.events import RunFinished, RunStarted

    run_dir = tmp_path / ".run_records" / "run_hand"
    manifest = cpu_manifest("run_hand", "hand", "k")
    listener = HtmlReportListener()
    listener(RunStarted(manifest, run_dir, tmp_path))
    records = []
    for i, (name, status, before, after) in enumerate(passes):
        rec = PassRecord(
            index=i,
            name=name,
            phase="codegen" if status == "codegen" else "pipeline_c",
            status=status,
            added=1,
            removed=1,
            duration_s=0.001,
            before_hash=text_hash(before),
            after_hash=text_hash(after),
            role="device" if status == "codegen" else None,
        )
        records.append(rec)
        listener(PassRecorded(manifest, rec, before, after, run_dir))
    final = replace(
        manifest.with_records(records),
        finished=time.time(),
        status="error" if error else "complete",
        error=error,
    )
    listener(RunFinished(final, run_dir, tmp_path))
    listener.close()
    return run_dir / REPORT_NAME


def test_error_after_the_last_pass_shows_in_a_banner_and_opens_the_source(open_report, tmp_path: Path):
    # An edited codegen file that does not compile: no pass failed, the run did.
    err = "RuntimeError: Compilation Failed! ['/usr/bin/g++', 'x.cpp']\n\nint f() { return 0 BROKEN; }"
    report = _report_from(
        tmp_path,
        [
            ("Simplify", "changed", "a\nb\n", "a\nc\n"),
            ("codegen_device", "codegen", "tir\n", "int f() { return 0 BROKEN; }\n"),
        ],
        error=err,
    )
    page = open_report(report)
    assert selected(page)["name"] == "codegen_device"  # the source the compiler rejected
    banner = page.locator("#tl-runerror")
    assert banner.is_visible()
    assert "Compilation Failed!" in banner.locator(".msg").text_content()
    assert "error" not in page.locator("#tl-meta").text_content()  # not squeezed into the header
    assert not page.locator(".tl-runerror-full").is_visible()
    page.click(".tl-runerror-more")
    assert "return 0 BROKEN" in page.locator(".tl-runerror-full").text_content()


def test_failed_pass_banner_links_to_the_pass(open_report, tmp_path: Path):
    report = write_synthetic_report(25, tmp_path, failed_at=14)
    page = open_report(report, "#Pass0Simplify")
    assert "Failed in" in page.locator("#tl-runerror").text_content()
    page.click(".tl-runerror-go")
    assert selected(page)["status"] == "failed"
    assert page.locator(".tl-copy-after").is_disabled()


def test_a_complete_run_has_no_error_banner(open_report, trace):
    page = open_report(trace[0])
    assert not page.locator("#tl-runerror").is_visible()


def test_bidi_controls_are_shown_not_applied(open_report, tmp_path: Path):
    report = write_synthetic_report(30, tmp_path, hostile=True, failed_at=22)
    page = open_report(report, "#Pass0Simplify")
    page.keyboard.press("Shift+E")
    # No text the page shows carries a live override: every one is a visible box instead.
    live = page.evaluate("""() => {
        const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        let n = 0; while (w.nextNode()) if (w.currentNode.parentNode.nodeName !== "SCRIPT" &&
            /[\\u202a-\\u202e\\u2066-\\u2069\\u2028]/.test(w.currentNode.data)) n++;
        return n; }""")
    assert live == 0
    assert page.locator("td.code .tl-ctl", has_text="U+202E").count() >= 1
    assert page.locator("#tl-kernel .tl-ctl").count() == 2
    page.click("text=Copy before")  # the copy keeps the real text
    page.click(".tl-badge[data-filter='failed']")
    assert page.locator(".tl-error pre .tl-ctl").count() >= 1


def test_word_highlights_only_on_lines_that_resemble_each_other(open_report, tmp_path: Path):
    before = "x = 1\nT.copy(T.region(A[0], 1, 32), T.region(B[0], 2, 32))\nkeep\nbuf = T.alloc(128)\n"
    after = "x = 1\nfor i_j_fused in range(128):\nkeep\nbuf = T.alloc(256)\n"
    report = _report_from(tmp_path, [("LowerTileOp", "changed", before, after)])
    page = open_report(report)
    del_rows = page.locator("td.code.del")
    assert del_rows.count() == 2
    assert del_rows.nth(0).locator(".w").count() == 0  # unrelated lines: no confetti
    assert del_rows.nth(1).locator(".w").text_content() == "128"
    assert page.locator("td.code.add").nth(1).locator(".w").text_content() == "256"
    page.fill("#tl-search", "range(128)")
    page.press("#tl-search", "Enter")
    assert (
        page.locator(".tl-sr-head").text_content()
        == "1 pass contains \u201crange(128)\u201d; 1 introduces it"
    )


# -- issue 10: alignment, gutters, toggles, running runs, keys, links, narrow windows ---------------
WRAP_BEFORE = "def f():\n    a = 1\n    b = g(a)\n    c = h(b)\n" + "".join(
    f"    x{i} = {i}\n" for i in range(30)
)
WRAP_AFTER = (
    "def f():\n    with T.block():\n        a = 1\n        b = g(a)\n        c = h(b, 2)\n"
    + "".join(f"    x{i} = {i}\n" for i in range(30))
)


def test_reindented_rows_have_a_tilde_gutter_and_ignore_whitespace_hides_them(open_report, tmp_path: Path):
    report = _report_from(tmp_path, [("Wrap", "changed", WRAP_BEFORE, WRAP_AFTER)])
    page = open_report(report)
    kinds = page.eval_on_selector_all("table.tl-diff tr[data-kind]", "ts => ts.map(t => t.dataset.kind)")
    assert kinds[:5] == ["same", "add", "reindent", "reindent", "change"]
    re_row = page.locator("tr[data-kind='reindent']").first
    assert re_row.locator("td.g.l").text_content() == "~" and re_row.locator("td.g.r").text_content() == "~"
    assert "re" in re_row.locator("td.code.r").get_attribute("class").split()
    assert page.locator("tr[data-kind='add'] td.g.r").first.text_content() == "+"
    assert page.locator("tr[data-kind='change'] td.g.l").first.text_content() == "\u2212"
    # word highlights only inside the true pair: c = h(b) -> c = h(b, 2)
    assert page.locator("td.code .w").all_text_contents() == [", 2"]
    page.check(".tl-ignore-ws input")
    assert page.locator("td.code.re").count() == 0 and page.locator("td.code.add").count() == 2
    page.keyboard.press("j")  # keys still work after the checkbox
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator(".tl-ignore-ws input").is_checked()  # the choice is kept


def test_show_all_context_button(open_report, tmp_path: Path):
    report = _report_from(tmp_path, [("Wrap", "changed", WRAP_BEFORE, WRAP_AFTER)])
    page = open_report(report)
    assert page.locator("tr.fold").count() == 1
    page.click(".tl-context-all")
    assert page.locator("tr.fold").count() == 0
    assert page.locator(".tl-context-all").text_content() == "Fold context"
    page.click(".tl-context-all")
    assert page.locator("tr.fold").count() == 1


def test_newline_and_whitespace_only_changes_are_explained(open_report, tmp_path: Path):
    report = _report_from(
        tmp_path, [("Eol", "changed", "x = 1\n", "x = 1"), ("Ws", "changed", "x = 1 \n", "x = 1\n")]
    )
    page = open_report(report, "#Eol")
    assert "no newline at end" in page.locator(".tl-diffnote").text_content()
    page.keyboard.press("j")
    assert page.locator(".tl-diffnote").text_content().startswith("Whitespace only")


def test_codegen_header_has_no_repeated_words_and_no_counts(open_report, trace):
    report, passes = trace
    cg = first_with(passes, "codegen").record
    page = open_report(report, f"#{cg.index}")
    info = page.locator(".tl-pass-head .info").text_content()
    assert "codegen \u00b7 codegen" not in info and "+" not in info and "\u2212" not in info
    assert page.locator(f"li.tl-pass[data-index='{cg.index}'] .st").text_content() == ""


def test_keys_work_after_clicking_a_checkbox_or_a_button_not_in_the_search_field(open_report, trace):
    report, passes = trace
    page = open_report(report, "#10")
    page.click("#tl-hide-noop")
    page.click("#tl-hide-noop")
    start = selected(page)["index"]
    page.keyboard.press("j")
    assert selected(page)["index"] == start + 1
    page.click("#tl-theme")
    page.keyboard.press("k")
    assert selected(page)["index"] == start
    page.click(".tl-copy-before")
    page.keyboard.press("Shift+E")
    assert page.locator("tr.fold").count() == 0
    page.click("#tl-search")
    page.keyboard.press("j")
    assert selected(page)["index"] == start and page.input_value("#tl-search") == "j"


@pytest.fixture(scope="module")
def real_report(recorded, tmp_path_factory):
    """The recorded CPU gemm's compile report, rebuilt from its records."""
    from tltrace.history.report_reads import compile_report
    from tltrace.render.html import write_report

    from ._records import recorded_subset, run_dirs

    td = recorded_subset(recorded, tmp_path_factory.mktemp("real") / "traces", gemm=None)
    return write_report(compile_report(run_dirs(td / "gemm")[-1]))


@pytest.mark.parametrize(
    "fragment, expect",
    [
        ("#lowertileop", "LowerTileOp"),
        ("#LAYOUTINFERENCE", "LayoutInference"),
        ("#BindTarget", "tirx.BindTarget"),
        ("#bindtarget", "tirx.BindTarget"),
    ],
)
def test_deep_links_by_name_any_case_and_name_suffix(open_report, real_report, fragment, expect):
    page = open_report(real_report, fragment)
    assert selected(page)["name"] == expect


def test_deep_link_by_index_and_unknown_name(open_report, real_report):
    page = open_report(real_report, "#16")
    assert selected(page)["index"] == 16
    page = open_report(real_report, "#NoSuchPass")
    assert "No pass named \u201cNoSuchPass\u201d" in page.locator("#tl-view").text_content()
    assert page.locator("li.tl-pass.selected").count() == 0
    assert page.url.endswith("#NoSuchPass")  # the address is not rewritten
    page.keyboard.press("j")
    assert selected(page)["index"] == 0


def test_gemm_layout_inference_aligns_reindents_without_unrelated_highlights(open_report, real_report):
    page = open_report(real_report, "#LayoutInference")
    kinds = page.eval_on_selector_all("table.tl-diff tr[data-kind]", "ts => ts.map(t => t.dataset.kind)")
    import subprocess

    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "show",
            str(real_report.parent),
            "--pass",
            "LayoutInference",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rows = json.loads(shown.stdout)["rows"]
    adds = sum(r["kind"] == "add" for r in rows)  # how many, the TileLang release decides (3 on 0.1.15)
    # Re-indented lines paired (not a -/+ wall); the browser's adds are the engine's, and few.
    assert kinds.count("reindent") >= 10 and kinds.count("add") == adds <= 5
    pairs = page.eval_on_selector_all(
        "tr[data-kind='change']",
        "ts => ts.map(t => [t.querySelector('td.code.l').textContent.trim(),"
        " t.querySelector('td.code.r').textContent.trim()])",
    )
    for left, right in pairs:  # a true pair starts with the same call: never T.copy drawn as T.fill
        assert left.lstrip("# ").split("(")[0] == right.split("(")[0]


def test_js_engine_in_chromium_gives_the_python_rows(open_report, real_report):
    from .test_diff_engine import corpus_pairs, python_side

    page = open_report(real_report)
    pairs = [(b, a) for _, b, a in corpus_pairs()]
    got = page.evaluate(
        """(pairs) => pairs.map(([b, a]) => {
        const A = TLDiff.splitLines(b), B = TLDiff.splitLines(a);
        return TLDiff.align(A, B).map(r => [r.kind, r.a, r.b]);
    })""",
        pairs,
    )
    assert got == [python_side(b, a)["rows"] for b, a in pairs]


def test_f7_alignment_survives_reload(open_report, tmp_path: Path):
    report = _report_from(tmp_path, [("Wrap", "changed", WRAP_BEFORE, WRAP_AFTER)])
    page = open_report(report)
    page.keyboard.press("F7")
    page.click("tr[data-l='0'] td.code.l")
    page.click("tr[data-r='5'] td.code.r")
    assert page.locator("tr.anchor").count() == 1
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("tr.anchor").count() == 1
    page.click(".tl-clear-align")
    page.reload()
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("tr.anchor").count() == 0


def test_narrow_window_collapses_the_sidebar_and_caps_a_saved_width(browser, open_report, trace):
    report, _ = trace
    page = open_report(report, init_script="localStorage.setItem('tltrace-sidebar-width', '3000')")
    assert page.evaluate("document.getElementById('tl-sidebar').getBoundingClientRect().width") <= 1280 / 2
    from playwright.sync_api import expect

    # The page hears of the new size in a resize event, soon after.
    page.set_viewport_size({"width": 800, "height": 700})
    expect(page.locator("#tl-sidebar")).to_be_hidden()
    expect(page.locator("#tl-expand-sidebar")).to_be_visible()
    page.keyboard.press("j")  # still usable
    page.set_viewport_size({"width": 1280, "height": 700})
    expect(page.locator("#tl-sidebar")).to_be_visible()


def test_long_lines_break_between_tokens_and_wrap_can_be_turned_off(open_report, tmp_path: Path):
    long_b = (
        "    C_local[i, j] = "
        + " + ".join(f"A_shared[i, k_{n}] * B_shared[k_{n}, j]" for n in range(12))
        + "\n"
    )
    long_a = long_b.replace("k_3", "k_33")
    report = _report_from(tmp_path, [("Long", "changed", "x = 0\n" + long_a, "x = 0\n" + long_b)])
    page = open_report(report)
    before_breaks = page.evaluate("""() => Array.from(document.querySelectorAll('td.code wbr')).map(w => {
        let p = w.previousSibling; while (p && p.nodeType !== 3) p = p.lastChild || p.previousSibling;
        const n = w.nextSibling; let q = n; while (q && q.nodeType !== 3) q = q.firstChild || q.nextSibling;
        return [p ? p.textContent.slice(-1) : '', q ? q.textContent.slice(0, 1) : ''];
    })""")
    assert before_breaks
    for prev, nxt in before_breaks:  # never between two identifier characters
        assert not (re.match(r"\w", prev) and re.match(r"\w", nxt)), (prev, nxt)
    code = page.locator("tr[data-kind='change'] td.code.r")
    assert code.text_content() == long_b.rstrip("\n")  # the text itself is untouched (copy works)
    tall = code.bounding_box()["height"]
    page.click(".tl-wrap")
    assert page.locator("body.tl-nowrap").count() == 1
    assert code.bounding_box()["height"] < tall


def test_running_report_says_running_and_refreshes_until_complete(open_report, tmp_path: Path):
    from tltrace.render.html import HtmlReportListener
    from tltrace.session.events import RunFinished

    events = list(synthetic_events(30, tmp_path, seed=5))
    listener = HtmlReportListener()
    fed = 0
    passes = 0
    while passes < 12:
        ev = events[fed]
        listener(ev)
        passes += isinstance(ev, PassRecorded)
        fed += 1
    report = Path(events[0].run_dir) / REPORT_NAME
    page = open_report(report, "#5")
    status = page.locator("#tl-runstatus")
    assert status.text_content() == "running \u2014 12 passes so far"
    assert "running" in status.get_attribute("class").split()
    assert page.evaluate("getComputedStyle(document.getElementById('tl-runstatus')).color") != page.evaluate(
        "getComputedStyle(document.querySelector('.tl-dot.failed') || document.body).color"
    )
    page.keyboard.press("j")
    sel = selected(page)["index"]
    page.keyboard.press("Shift+E")  # all context: the view is long enough to scroll
    page.evaluate("document.getElementById('tl-view').scrollTop = 300")
    top = page.evaluate("document.getElementById('tl-view').scrollTop")
    assert top > 0
    for ev in events[fed:]:
        listener(ev)
    listener.close()
    assert isinstance(events[-1], RunFinished)
    from playwright.sync_api import expect

    expect(page.locator("#tl-runstatus")).to_have_text("complete", timeout=20000)
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("li.tl-pass").count() == sum(isinstance(e, PassRecorded) for e in events)
    assert selected(page)["index"] == sel  # the reader's place is kept across the refresh
    assert page.evaluate("document.getElementById('tl-view').scrollTop") == top
    assert page.locator("tr.fold").count() == 0


def test_killed_run_still_says_incomplete(open_report, trace, tmp_path: Path):
    report, _ = trace
    data = report.read_bytes()
    cut = tmp_path / REPORT_NAME
    cut.write_bytes(data[: len(report_head()) + (len(data) - len(report_head())) // 2])
    old = time.time() - 3600
    os.utime(cut, (old, old))
    page = open_report(cut)
    assert page.locator("#tl-runstatus").text_content().startswith("incomplete")


# -- diff-runs --html ---------------------------------------------------------------------------------
def test_diff_runs_page_under_csp_renders_text_only(browser, tmp_path: Path):
    from tltrace.render import diffruns

    hostile = "</script><img src=x onerror=alert(1)> \u202e"
    data = {
        "a": {
            "script": "s",
            "run_id": "run_a",
            "kernel": hostile,
            "target": "c",
            "backend": "cython",
            "passes": 2,
            "status": "complete",
        },
        "b": {
            "script": "s",
            "run_id": "run_b",
            "kernel": "k",
            "target": "c",
            "backend": "cython",
            "passes": 2,
            "status": "complete",
        },
        "same": False,
        "counts": {"output differs": 1},
        "first_output_change": {"phase": "p", "name": hostile, "occurrence": 1, "a_index": 0, "b_index": 0},
        "first_output_divergence": None,
        "first_input_divergence": None,
        "codegen": {},
        "passes": [
            {
                "phase": "p",
                "name": hostile,
                "occurrence": 1,
                "a_index": 0,
                "b_index": 0,
                "status": "output differs",
            }
        ],
        "diffs": [
            {
                "label": hostile,
                "status": "output differs",
                "a_index": 0,
                "b_index": 0,
                "note": "",
                "open": True,
                "diff": [
                    ["file", "--- A"],
                    ["file", "+++ B"],
                    ["hunk", "@@ -1,2 +1,2 @@"],
                    ["del", "-" + hostile],
                    ["add", "+x"],
                    ["reindent", "~    y"],
                ],
            }
        ],
    }
    out = diffruns.write(data, tmp_path / "d.html")
    html = out.read_text(encoding="utf-8")
    assert "script-src 'sha256-" in html and "style-src 'sha256-" in html and "unsafe-inline" not in html
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
    page.goto(out.as_uri())
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("img").count() == 0
    assert page.locator("pre.diff span.k-del").text_content() == "-" + hostile
    assert page.locator("pre.diff span.k-reindent").text_content() == "~    y"
    assert page.evaluate(
        "getComputedStyle(document.querySelector('.k-add')).backgroundColor"
    ) != page.evaluate("getComputedStyle(document.body).backgroundColor")
    ctx.close()
    assert not errors, errors


def test_diff_runs_html_of_real_runs_in_chromium(browser, run_cli, recorded: Path, tmp_path: Path):
    from ._records import recorded_subset

    td = recorded_subset(recorded, tmp_path / "t", elementwise_add=slice(0, 2))  # block 128, then 64
    out = tmp_path / "d.html"
    res = run_cli(*diff_last_two(td, "--html", out))
    assert res.exit_code == 1, res.output
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(out.as_uri())
    page.wait_for_selector("html[data-ready='1']")
    assert page.locator("details[open] pre.diff span.k-add").count() >= 1
    assert page.locator("details[open] pre.diff span.k-hunk").count() >= 1
    assert "input differs" in page.locator("#passes").text_content()
    ctx.close()
    assert not errors, errors
