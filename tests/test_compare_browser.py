"""#32 item 6 and #37 in Chromium: "Compare with…" reaches earlier invocations of the script, names
the facts that changed, steps between the differing passes (codegen included), draws in view and
keeps its choice; the diff-runs page has a diff under "codegen device: differs".

Two real compile-only sm_90a builds of a pipelined GEMM (3 stages, then 1: a kernel change),
each its own invocation with its HTML report. Any page error fails (conftest's open_page).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.render.html import REPORT_NAME

from ._records import REPO, read_manifest, run_dirs
from .conftest import wait_js

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def two_invocations(tmp_path_factory) -> Path:
    """The script dir of two invocations of gemm: 3 stages, then 1."""
    from .test_facts import GEMM

    home = tmp_path_factory.mktemp("compare")
    (home / "gemm.py").write_text(GEMM)
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for stages in (3, 1):
        p = subprocess.run(
            [sys.executable, "-m", "tltrace", "run", "-q", "--mode", "html", "--trace-dir", "traces",
             "gemm.py", json.dumps([["sm_90a", stages, {}]])],
            cwd=home, env=env, capture_output=True, text=True,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr[-2000:]
    return home / "traces" / "gemm"


@pytest.mark.parametrize("width", [1440, 800])
def test_compare_with_an_earlier_invocation(open_page, two_invocations: Path, width: int) -> None:
    older, newer = run_dirs(two_invocations)
    m_old, m_new = read_manifest(older), read_manifest(newer)
    assert m_old["invocation"] != m_new["invocation"]  # one compile each: no sibling to offer
    page = open_page(newer / REPORT_NAME, viewport={"width": width, "height": 900})
    groups = page.eval_on_selector_all(".tl-compare-pick optgroup", "gs => gs.map(g => g.label)")
    assert groups == ["earlier invocations"]
    options = page.eval_on_selector_all(".tl-compare-pick option", "os => os.map(o => o.value)")
    assert options == ["", older.name]
    page.select_option(".tl-compare-pick", older.name)
    wait_js(page, "document.querySelector('#tl-compare .tl-compare-step')")
    # The select keeps the choice (it used to spring back to "compare with…").
    assert page.eval_on_selector(".tl-compare-pick", "s => s.value") == older.name
    # Drawn where the reader is looking: its head is inside the window.
    top = page.eval_on_selector("#tl-compare", "b => b.getBoundingClientRect().top")
    assert 0 <= top < 900
    # The facts that changed, named as diff-runs names them (an arrow between the values).
    facts_new, facts_old = m_new["facts"]["values"], m_old["facts"]["values"]
    changed = [
        k for k in facts_new if None not in (facts_new[k], facts_old[k]) and facts_new[k] != facts_old[k]
    ]
    assert "smem_dynamic" in changed and "num_stages" in changed
    line = page.locator("#tl-compare .tl-compare-facts").text_content()
    for k in changed:
        assert f"{k} {str(facts_new[k]).lower()} \u2192 {str(facts_old[k]).lower()}" in line
    # Step pass by pass: next differing pass, then codegen (a real diff of the generated source).
    before = page.eval_on_selector("li.tl-pass.selected", "li => +li.dataset.index")
    page.click("#tl-compare .tl-compare-next")
    wait_js(page, f"+document.querySelector('li.tl-pass.selected').dataset.index > {before}")
    wait_js(page, "document.querySelector('#tl-compare table.tl-diff')")
    page.click("#tl-compare .tl-compare-codegen")
    wait_js(
        page,
        "document.querySelector('.tl-compare-head') && "
        "document.querySelector('.tl-compare-head').textContent.indexOf('codegen') >= 0 && "
        "document.querySelector('#tl-compare table.tl-diff')",
    )
    assert page.eval_on_selector(".tl-compare-pick", "s => s.value") == older.name
    assert 0 <= page.eval_on_selector("#tl-compare", "b => b.getBoundingClientRect().top") < 900
    page.click(".tl-compare-stop")
    assert page.locator("#tl-compare").count() == 0
    assert page.eval_on_selector(".tl-compare-pick", "s => s.value") == ""


def test_diff_runs_page_has_the_codegen_diff_and_steps(open_page, run_cli, two_invocations, tmp_path) -> None:
    out = tmp_path / "d.html"
    td = two_invocations.parent
    res = run_cli("diff-runs", "--trace-dir", td, "gemm:-2", "gemm:-1", "--html", out)
    assert res.exit_code == 1, res.output
    page = open_page(out)
    link = page.locator("#firsts li", has_text="codegen device: differs").locator("a")
    target = link.get_attribute("href")
    assert target and target.startswith("#")
    cg = page.locator(f"details{target}")
    assert cg.get_attribute("open") is not None  # open: the diff is under the line
    assert cg.locator("pre.diff span.k-add").count() >= 1 and cg.locator("pre.diff span.k-del").count() >= 1
    assert "\u2192" in page.locator("#firsts li.facts").text_content()
    # previous / next step between the diffs
    first = page.locator("#diffs details").first
    first.locator("a.tl-step", has_text="next").click()
    second_id = page.locator("#diffs details").nth(1).get_attribute("id")
    wait_js(page, f"document.getElementById('{second_id}').open")


def test_compare_with_a_run_that_clean_removed_says_it_is_gone(
    open_page, run_cli, recorded, tmp_path
) -> None:
    """A report written before `tltrace clean --keep 3` still lists the runs clean removed; picking one
    says the run is gone (it stayed on "Loading…" for ever), and a run that is there still compares."""
    from ._records import recorded_subset

    trace = recorded_subset(recorded, tmp_path / "traces", elementwise_add=None)
    runs = run_dirs(trace / "elementwise_add")
    assert len(runs) >= 5, runs
    for run in runs:  # each compile's report, the newest last: it offers the four before it
        res = run_cli("show", "--trace-dir", trace, run, "--html")
        assert res.exit_code == 0, res.stderr
    newest = runs[-1]
    res = run_cli("clean", "--trace-dir", trace, "--keep", "3", "elementwise_add")
    assert res.exit_code == 0, res.output
    gone = [r for r in runs if not r.exists()]
    kept = [r for r in runs[:-1] if r.exists()]
    assert gone and kept and newest.exists()

    page = open_page(newest / REPORT_NAME)
    offered = page.eval_on_selector_all(".tl-compare-pick option", "os => os.map(o => o.value)")
    assert gone[0].name in offered and kept[0].name in offered  # written before the clean
    page.select_option(".tl-compare-pick", gone[0].name)
    wait_js(page, "document.querySelector('#tl-compare.tl-compare-gone')")
    text = page.locator("#tl-compare").text_content()
    assert "gone" in text and gone[0].name in text and "Loading" not in text
    assert page.eval_on_selector(
        f".tl-compare-pick option[value='{gone[0].name}']", "o => o.disabled && o.text.endsWith('(gone)')"
    )
    page.select_option(".tl-compare-pick", kept[0].name)  # one that is there compares as before
    wait_js(page, "document.querySelector('#tl-compare .tl-compare-step')")
    page.wait_for_timeout(2500)  # its frame said it is there: never called gone afterwards
    assert page.locator("#tl-compare.tl-compare-gone").count() == 0
