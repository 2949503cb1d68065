"""The Layouts view in headless Chromium: sampled cells agree with the layout's JSON (layouts/model.py).

A recorded compile's manifest gets layouts (recorded ones, tests/data/layouts/recorded.json,
and a 256x256 fragment), its report is written, and the view is opened: the labelled window's
cells, the filters, the window moved across a large buffer, a replicated fragment, a shared
buffer's banks and bank conflicts, and a failure's buffers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tltrace.layouts import model
from tltrace.render.html import REPORT_NAME

from ._records import recorded_add_with
from .conftest import wait_js

pytestmark = pytest.mark.browser

RECORDED = Path(__file__).parent / "data" / "layouts" / "recorded.json"

BIG = {
    "buffer": "Big", "scope": "local.fragment", "dtype": "float32", "shape": [256, 256], "kind": "fragment",
    "input_shape": [256, 256], "output_shape": [512], "vars": ["_i", "_j"],
    "index": ["_i // 16 * 32 + _j // 64 * 8 + _j % 8"], "thread": "_i % 16 * 8 + _j % 64 // 8",
    "replicate": 1, "thread_range": [0, 128], "blocks": ["tilelang_root"],
}  # fmt: skip


HUGE = {
    **BIG,
    "buffer": "Huge",
    "shape": [10**30] * 3,
    "input_shape": [10**30] * 3,
    "vars": ["_i", "_j", "_k"],
}
WIDE = {**BIG, "buffer": "Wide", "shape": [2048, 1024], "input_shape": [2048, 1024]}  # valid, 2M cells


def entries() -> list[dict[str, Any]]:
    """A swizzled A_s, a warp-specialized C_l (threads 128..255), a replicated fragment, BIG, and
    two the view refuses: a shape of 1e30 (issue 49) and a valid one of more cells than it draws."""
    out = json.loads(RECORDED.read_text())["entries"]
    return [out[0], out[2], next(e for e in out if (e.get("replicate") or 1) > 1), BIG, HUGE, WIDE]


@pytest.fixture(scope="module")
def report(recorded: Path, tmp_path_factory) -> Path:
    from tltrace.history.report_reads import compile_report
    from tltrace.render.html import write_report

    layouts = {
        "version": 1,
        "snapshots": [{"record": 3, "pass": "LayoutInference", "funcs": [{"func": "main", "layouts": entries()}]}],
        "failed": {
            "record": 9, "pass": "Later", "named": ["C_l"],
            "funcs": [{"func": "main", "layouts": [], "buffers": [
                {"buffer": "C_l", "scope": "local.fragment", "dtype": "float32", "shape": [128, 128]},
                {"buffer": "A_s", "scope": "shared.dyn", "dtype": "float16", "shape": [128, 32]},
            ]}],
        },
    }  # fmt: skip
    run = recorded_add_with(recorded, tmp_path_factory.mktemp("layouts") / "traces", layouts=layouts)
    write_report(compile_report(run))
    return run / REPORT_NAME


def open_layouts(open_page, report: Path, buffer_pos: int):
    page = open_page(report)
    wait_js(page, "document.getElementById('tl-layouts-btn')")
    page.click("#tl-layouts-btn")
    page.select_option(".tl-lay-pick", str(buffer_pos))
    wait_js(page, "document.querySelector('.tl-lay-win td')")
    return page


def cells(page) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        ".tl-lay-win td",
        "tds => tds.map(td => Object.assign({dim: td.classList.contains('tl-lay-dim')}, td.dataset))",
    )


def check_cells(got: list[dict[str, Any]], entry: dict[str, Any], lead: list[int]) -> None:
    assert got
    for c in random.Random(3).sample(got, min(60, len(got))):
        idx = [*lead, int(c["row"]), int(c["col"])] if len(entry["input_shape"]) > 1 else [int(c["col"])]
        want = model.at(entry, idx)
        if entry["kind"] == "fragment":
            assert (
                c["thread"] == ",".join(map(str, want["thread"])) and int(c["register"]) == want["register"]
            ), (idx, c)
        else:
            assert int(c["offset"]) == want["offset"] and int(c["bank"]) == want["bank"], (idx, c)


def test_big_fragment_cells_filters_and_window(open_page, report: Path) -> None:
    page = open_layouts(open_page, report, 3)
    got = cells(page)
    assert len(got) == 16 * 16
    check_cells(got, BIG, [])
    # the whole buffer is one canvas; a click moves the labelled window there
    box = page.locator(".tl-lay-canvas").bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] * 0.8)
    moved = cells(page)
    assert max(int(c["row"]) for c in moved) > 180 and max(int(c["col"]) for c in moved) > 200
    check_cells(moved, BIG, [])
    # show thread 5: only its cells stay lit
    page.fill("input[data-filter='thread']", "5")
    wait_js(page, "document.querySelector('.tl-lay-win td.tl-lay-dim')")
    for c in cells(page):
        assert c["dim"] == (c["thread"] != "5"), c
    page.fill("input[data-filter='register']", "7")
    wait_js(page, "document.querySelector(\"input[data-filter='thread']\").value === ''")
    for c in cells(page):
        assert c["dim"] == (c["register"] != "7"), c


def test_replicated_fragment_names_every_thread(open_page, report: Path) -> None:
    e = entries()[2]
    page = open_layouts(open_page, report, 2)
    got = cells(page)
    assert all(len(c["thread"].split(",")) == e["replicate"] for c in got)
    check_cells(got, e, [])
    assert "replicated \u00d7" + str(e["replicate"]) in page.inner_text(".tl-lay-info")


def test_shared_banks_and_conflicts(open_page, report: Path) -> None:
    e = entries()[0]
    page = open_layouts(open_page, report, 0)
    check_cells(cells(page), e, [0])
    for access in ("row", "col"):
        page.select_option(".tl-lay-access", access)
        want = model.conflicts(e, access, (0,))
        wait_js(page, f"document.querySelector('.tl-lay-conflicts').dataset.maxWays === '{want['max_ways']}'")
    page.fill(".tl-lay-tools label:first-child input", "2")  # the last pipeline stage
    wait_js(page, "document.querySelector('.tl-lay-win td')")
    check_cells(cells(page), e, [2])


def test_failure_lists_the_buffers(open_page, report: Path) -> None:
    page = open_layouts(open_page, report, 0)
    named = page.eval_on_selector_all(".tl-lay-failed .tl-lay-named", "ns => ns.map(n => n.dataset.buffer)")
    assert named == ["C_l"]
    assert "A_s" in page.inner_text(".tl-lay-failed")


def test_warp_specialized_fragment_numbers_threads_by_threadidx(open_page, report: Path) -> None:
    """C_l of a warp-specialized sm_90a gemm: the cells name threadIdx.x 128..255, as the header
    says (issue 48); C_l[3,5] is thread 142, as the generated store has it (tests/test_layouts.py)."""
    e = entries()[1]
    assert e["thread_range"] == [128, 128]
    page = open_layouts(open_page, report, 1)
    got = cells(page)
    check_cells(got, e, [])
    assert all(128 <= int(c["thread"]) <= 255 for c in got)
    assert "threads 128\u2013255" in page.inner_text(".tl-lay-info")
    cell = next(c for c in got if (c["row"], c["col"]) == ("3", "5"))
    assert (cell["thread"], cell["register"]) == ("142", "1")
    page.fill("input[data-filter='thread']", "142")
    wait_js(page, "document.querySelector('.tl-lay-win td.tl-lay-dim')")
    assert {c["thread"] for c in cells(page) if not c["dim"]} == {"142"}


@pytest.mark.parametrize("pos, words", [(4, "cannot be evaluated here"), (5, "more than the 1048576 cells")])
def test_refused_shapes_say_so(open_page, report: Path, pos: int, words: str) -> None:
    """A 1e30 x 1e30 x 1e30 buffer threw "Invalid array length"; now it, and a valid buffer of more
    cells than the view draws, are a line in the panel (docs/layouts.md); no page error."""
    page = open_page(report)
    wait_js(page, "document.getElementById('tl-layouts-btn')")
    page.click("#tl-layouts-btn")
    page.select_option(".tl-lay-pick", str(pos))
    wait_js(page, "document.querySelector('.tl-lay-body p.tl-empty')")
    text = page.inner_text(".tl-lay-body")
    assert words in text and "tltrace show --layouts" in text, text
    assert page.eval_on_selector_all(".tl-lay-win td", "tds => tds.length") == 0
