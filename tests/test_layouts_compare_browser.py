"""#30 item 4 in Chromium: the report's "compare with…" names the buffers whose layout changed and
draws both grids of a chosen one (layouts.js `compare`, the rule of layouts/model.changed).

Real compile-only sm_90a gemms: one invocation of block_M 128 and 64 (siblings: A_s and C_l
change), then one of block_M 64 alone (an earlier invocation's compile with the same layouts).
The two grids' sampled cells agree with each compile's own JSON (model.at on its manifest).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tltrace.layouts import model
from tltrace.render.html import REPORT_NAME

from ._kernels import MATMUL
from ._records import REPO, read_manifest, run_dirs
from .conftest import wait_js

pytestmark = [pytest.mark.browser, pytest.mark.compile]

GEMM = (
    '''"""Compile-only sm_90a gemms, one per block_M in argv (siblings of one invocation)."""'''
    + MATMUL
    + """

target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
for bm in sys.argv[1:]:
    with target:
        tilelang.lower(matmul(256, 256, 256, int(bm), 128, 32, 3, 128), target=target)
"""
)


@pytest.fixture(scope="module")
def compiles(tmp_path_factory) -> dict[str, Any]:
    """{"earlier": run dir of block_M 64 (first invocation), 128 / 64: the second invocation's run dirs}."""
    home = tmp_path_factory.mktemp("laycmp")
    (home / "gemm.py").write_text(GEMM)
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for sizes in (["64"], ["128", "64"]):
        p = subprocess.run(
            [sys.executable, "-m", "tltrace", "run", "-q", "--mode", "html", "--trace-dir", "traces", "gemm.py", *sizes],
            cwd=home, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr[-2000:]
    runs = run_dirs(home / "traces" / "gemm")
    assert len(runs) == 3
    out: dict[str, Any] = {"earlier": runs[0]}
    for run in runs[1:]:
        a_s = model.find(read_manifest(run)["layouts"], "A_s")
        assert a_s is not None
        out[str(a_s["input_shape"][-2])] = run
    assert read_manifest(out["128"])["invocation"] == read_manifest(out["64"])["invocation"]
    return out


def final(run: Path) -> list[dict[str, Any]]:
    return model.final(read_manifest(run)["layouts"])


def check_cells(cells: list[dict[str, str]], entry: dict[str, Any]) -> None:
    """Sampled cells of a grid's labelled window are what model.at says of that compile's entry."""
    assert cells
    lead = [0] * (len(entry["input_shape"]) - 2)
    for c in random.Random(30).sample(cells, min(60, len(cells))):
        want = model.at(entry, [*lead, int(c["row"]), int(c["col"])])
        if entry["kind"] == "fragment":
            assert c["thread"] == ",".join(map(str, want["thread"])), c
            assert int(c["register"]) == want["register"], c
        else:
            assert (int(c["offset"]), int(c["bank"])) == (want["offset"], want["bank"]), c


def side_cells(page, side: str) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        f"#tl-compare .tl-lay-side[data-side='{side}'] .tl-lay-win td",
        "tds => tds.map(td => Object.assign({}, td.dataset))",
    )


def test_compare_names_changed_layouts_and_draws_both_grids(open_page, compiles) -> None:
    mine, theirs = compiles["64"], compiles["128"]
    changed = model.changed_final(final(mine), final(theirs))
    names = [c["buffer"] for c in changed]
    assert "A_s" in names and "C_l" in names, names
    page = open_page(mine / REPORT_NAME)
    groups = page.eval_on_selector_all(".tl-compare-pick optgroup", "gs => gs.map(g => g.label)")
    assert groups[0] == "this invocation"
    page.select_option(".tl-compare-pick", theirs.name)
    wait_js(page, "document.querySelector('#tl-compare .tl-compare-layouts')")
    line = page.inner_text("#tl-compare .tl-compare-layouts summary")
    assert line.startswith("layouts changed: ")
    assert [x.split(" (")[0] for x in line[len("layouts changed: ") :].split(", ")] == names
    # the grids are drawn when opened; the picker lists the changed buffers
    assert page.locator("#tl-compare .tl-lay-win").count() == 0
    page.click("#tl-compare .tl-compare-layouts summary")
    wait_js(page, "document.querySelectorAll('#tl-compare .tl-lay-side .tl-lay-win td').length")
    opts = page.eval_on_selector_all("#tl-compare .tl-lay-pick option", "os => os.map(o => o.textContent)")
    assert [o.split(" (")[0] for o in opts] == names
    for pos, c in enumerate(changed):
        page.select_option("#tl-compare .tl-lay-pick", str(pos))
        wait_js(
            page, f"document.querySelector('#tl-compare .tl-lay-pair').dataset.buffer === '{c['buffer']}'"
        )
        for side, entry in (("mine", c["a"]), ("theirs", c["b"])):
            if entry is None:
                assert side_cells(page, side) == []
            else:
                check_cells(side_cells(page, side), entry)
        for side, entry in (("mine", c["a"]), ("theirs", c["b"])):  # each side names its own shape
            if entry is not None:
                info = page.inner_text(f"#tl-compare .tl-lay-side[data-side='{side}'] .tl-lay-info")
                assert "\u00d7".join(map(str, entry["input_shape"])) in info, (side, info)
        # one scale for both canvases: pixels per element alike, the bigger buffer drawn bigger
        px = page.eval_on_selector_all(
            "#tl-compare .tl-lay-canvas", "cs => cs.map(c => [+c.dataset.px, c.height])"
        )
        if c["a"] and c["b"]:
            assert px[0][0] == px[1][0], px
            rows = [e["input_shape"][-2] for e in (c["a"], c["b"])]
            assert (px[0][1] < px[1][1]) == (rows[0] < rows[1]), (px, rows)
    # the box follows the selected pass and keeps its choice and its grids
    page.select_option("#tl-compare .tl-lay-pick", str(names.index("C_l")))
    page.click("#tl-compare .tl-compare-next")
    wait_js(page, "document.querySelector('#tl-compare .tl-compare-layouts')")
    assert page.eval_on_selector("#tl-compare .tl-compare-layouts", "d => d.open")
    assert page.eval_on_selector("#tl-compare .tl-lay-pair", "p => p.dataset.buffer") == "C_l"
    c_l = next(c for c in changed if c["buffer"] == "C_l")
    check_cells(side_cells(page, "theirs"), c_l["b"])


def test_compare_with_the_same_layouts_says_so(open_page, compiles) -> None:
    mine, earlier = compiles["64"], compiles["earlier"]
    assert model.changed_final(final(mine), final(earlier)) == []
    page = open_page(mine / REPORT_NAME)
    page.select_option(".tl-compare-pick", earlier.name)
    wait_js(page, "document.querySelector('#tl-compare .tl-compare-layouts')")
    assert page.inner_text("#tl-compare .tl-compare-layouts summary") == "layouts: the same in both compiles"
    assert page.locator("#tl-compare .tl-lay-pick").count() == 0
