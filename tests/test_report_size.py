"""A one-kernel compile report is at most 150 KB, whatever its kernel (issue #54).

Issue 54: a 2048-element CPU kernel compiled once (`tltrace run --mode html` of one `T.Parallel`
kernel) made a 165,194-byte report: the report's script (78 KB) and its profile went in as
they are written. They now travel deflated (render/pages.py `packed`), unpacked in the page by
unpack.js. The examples are traced here on the CPU, once per module; the CUDA gemm with its PTX
and SASS views is held to the same limit in tests/test_stages.py. The page still opens and its
views (the profile, packed after the data) still work, from file://, with nothing but the file.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from pathlib import Path

import pytest

from tests._cli import cli_proc
from tests._records import REPO
from tltrace.history import runs
from tltrace.render.pages import PACK_TYPE

LIMIT = 150_000  # bytes: issue #54's budget for a one-kernel report
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """The compile report of each example traced once: {name: report.html}."""
    home = tmp_path_factory.mktemp("size")
    out = {}
    for name, args in (("elementwise_add", ["--n", "2048"]), ("gemm", [])):
        cli_proc(
            "run",
            "-q",
            "--mode",
            "html",
            EXAMPLES / f"{name}.py",
            *args,
            cwd=home,
            rc=0,
            TLTRACE_EXAMPLES_CPU="1",
        )
        found = runs.run_dirs(home / "tmp" / "lower_trace_dir" / name)
        assert len(found) == 1  # one kernel, compiled once
        out[name] = found[0] / "report.html"
    return out


def _unpacked(page: str) -> list[str]:
    """The texts of the page's packed scripts, inflated by zlib (the oracle of unpack.js)."""
    out = []
    for m in re.finditer(rf'<script type="{re.escape(PACK_TYPE)}">([^<]*)</script>', page):
        out.append(zlib.decompress(base64.b64decode(m.group(1)), -15).decode("utf-8"))
    return out


@pytest.mark.parametrize("name", ["elementwise_add", "gemm"])
def test_a_one_kernel_report_is_at_most_150_kb(reports, name: str) -> None:
    size = reports[name].stat().st_size
    assert size <= LIMIT, f"{name}'s one-kernel report is {size} bytes, over {LIMIT}"


def test_the_packed_scripts_are_the_pages_scripts_allowed_by_hash(reports) -> None:
    page = reports["elementwise_add"].read_text(encoding="utf-8")
    texts = _unpacked(page)
    assert len(texts) == 2  # the report's script, and its profile's (the compile ended)
    assert "TLReport" in texts[0] and "tltraceProfile" in texts[1]
    csp = re.search(r'script-src ([^;"]+)', page)
    assert csp
    for js in texts:
        digest = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
        assert f"'sha256-{digest}'" in csp.group(1)
    assert "window.TLReport" not in page  # not also carried unpacked


@pytest.mark.browser
def test_the_packed_report_and_its_late_profile_work_offline(reports, open_page, tmp_path: Path) -> None:
    path = reports["elementwise_add"]
    page = open_page(path)  # fails on any page error or any request that is not a local file
    manifest = runs.load_run(path.parent).require()
    assert page.locator("#tl-passes li.tl-pass").count() == len(manifest.records)
    assert page.locator("#tl-view table").count() >= 1  # a pass's diff is on screen
    page.click("#tl-profile-btn")  # the profile: packed after the data, unpacked at load
    page.wait_for_selector("#tl-profile .tl-prof-chart svg, #tl-profile .tl-prof-chart div")
    assert page.locator("#tl-profile").is_visible()
    page.screenshot(path=str(tmp_path / "packed-profile.png"))
