"""The report's views of what a compile did when it ran (issue 53), in Chromium: its launches
(`run --launches`) listed on its compile page, and its Python lines shaded by hot-line share
(`run --ncu`) in the Source pane.

The oracles: the script's own torch tensors and its ast (as tests/test_launches.py), the kernel's
definition for the grid (ceil(n / block)), and `show --hot --json` for the shares. Any page error
fails (conftest's open_page).
"""

from __future__ import annotations

import json
import math

import pytest

from tltrace.history.report_reads import compile_report
from tltrace.render.html import write_report
from tltrace.render.pages import chunk_values

from ._cli import cli_proc
from ._kernels import DYNAMIC_SCALE, SCALE_BLOCK
from ._ncu import profiled_trace
from ._schema import check
from .conftest import wait_js
from .test_launches import _launch_lines, _run_scale

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def scale_report(tmp_path_factory):
    """The dynamic-size script run once on the CPU under `tltrace run --launches`: (its report, what the
    script saw); the report as `tltrace run` left it in the compile's run directory."""
    d, seen = _run_scale(tmp_path_factory.mktemp("runviews"), opts=("--mode", "html"))
    (run_dir,) = (d / "td" / "scale" / ".run_records").glob("run_*")
    return run_dir / "report.html", seen, d


def _launch_table(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#tl-launches tr.tl-launch", "trs => trs.map(tr => Array.from(tr.cells, c => c.textContent))"
    )


def test_the_compile_page_lists_the_launches(open_page, scale_report) -> None:
    report, seen, d = scale_report
    page = open_page(report)
    rows = _launch_table(page)
    (line,) = _launch_lines(DYNAMIC_SCALE)
    want = [
        [
            str(k + 1),
            f"scale.py:{line}",
            str(math.ceil(s["size"] / SCALE_BLOCK)),
            str(SCALE_BLOCK),
            ", ".join(f"{p} {a[1]}[{', '.join(map(str, a[0]))}]" for p, a in zip("AB", s["args"])),
        ]
        for k, s in enumerate(seen)
    ]
    print("launch rows:", rows)
    assert rows == want
    assert page.text_content("#tl-launches summary") == f"Launches ({len(seen)})"


def test_the_launch_table_is_capped(open_page, scale_report, tmp_path, monkeypatch) -> None:
    """Past the cap the page lists the first launches and counts the rest."""
    from tltrace.history import report_reads

    report, seen, _ = scale_report
    monkeypatch.setattr(report_reads, "REPORT_LAUNCHES", 2)
    out = write_report(compile_report(report.parent), out=tmp_path / "capped.html")
    page = open_page(out)
    assert [r[0] for r in _launch_table(page)] == ["1", "2"]
    assert page.text_content("#tl-launches summary") == f"Launches ({len(seen)})"
    assert "and 1 more" in page.text_content(".tl-launches-more")


@pytest.fixture(scope="module")
def hot_report(tmp_path_factory):
    """The recorded FlashAttention forward (tests/data/ncu): its report as `run` left it, then its profile
    stored and the report rebuilt as `run --ncu` does when it ends (cli/hot.py); and `show --hot --json`."""
    from tltrace.cli.hot import _shade_report
    from tltrace.runtime.profiled import PROFILE

    root = tmp_path_factory.mktemp("hotview")
    run_dir, _ = profiled_trace(root)
    kept = (run_dir / PROFILE).read_bytes()
    (run_dir / PROFILE).unlink()
    before = write_report(compile_report(run_dir))  # the report of the run, before ncu's profile
    assert not [c for c in chunk_values(before.read_bytes()) if c and c.get("t") == "hot"]
    (run_dir / PROFILE).write_bytes(kept)
    _shade_report(run_dir)
    res = cli_proc(
        "show",
        "--trace-dir",
        root / "fa_plain_trace",
        "example_mha_fwd_bshd",
        "-1",
        "--hot",
        "--json",
        "--top",
        "1000",
        cwd=root,
        rc=0,
    )
    (kernel,) = check(json.loads(res.stdout), "hot")["kernels"]
    return before, kernel


def test_the_hottest_python_line_is_shaded_with_its_share(open_page, hot_report) -> None:
    report, kernel = hot_report
    top = kernel["lines"][0]
    page = open_page(report)
    # As a click on a line mapped to it does: the Source pane opens at that file's line.
    page.evaluate("([f, n]) => window.tltraceSourceMap.pick(f, n)", [top["file"], top["line"]])
    row = f'#tl-source-body tr[data-py="{top["line"]}"]'
    wait_js(page, f"document.querySelector('{row}')")
    got = page.eval_on_selector(
        row, "tr => ({cls: tr.className, share: tr.dataset.hotShare, title: tr.title})"
    )
    print(f"hottest line {top['file']}:{top['line']}: {got}")
    assert {"tl-hot", "tl-hot-5"} <= set(got["cls"].split())  # the darkest shade
    assert float(got["share"]) == top["share"]
    assert f"{100 * top['share']:.1f}% of {kernel['kernel']}" in got["title"]
    assert f"top stall: {top['stalls'][0][0]}" in got["title"]
    shaded = page.eval_on_selector_all(
        "#tl-source-body tr.tl-hot", "trs => trs.map(tr => [+tr.dataset.py, +tr.dataset.hotShare])"
    )
    want = sorted(
        [x["line"], x["share"]] for x in kernel["lines"] if x["file"] == top["file"] and x["share"] > 0
    )
    assert sorted(shaded) == want  # every line of show --hot with a share, and no other
