"""A page cut short anywhere, its head included, shows the page or says it is incomplete; nothing throws.

Issue 27: a report cut inside its head (CSS and script inlined before the page skeleton)
showed a blank page, and cuts inside the skeleton threw `Cannot set properties of null`. Every
page now starts with a notice (#tl-incomplete) placed before its CSS and script; the script
hides it once it runs, and shows it again, without starting, when the skeleton is cut short. A
cut inside the CSS or the script changes its hash, so the page's CSP runs neither: the notice
stays. Each cut page is opened in headless Chromium.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tltrace.render.diffruns import page as diffruns_page
from tltrace.render.pages import index_head, report_head

from ._cli import diff_last_two
from .synthetic import HtmlReportListener, synthetic_events

pytestmark = pytest.mark.browser

NOTICE = b'<p id="tl-incomplete"'


def _cuts(data: bytes, head: int) -> list[int]:
    """Cut points: across the head, dense where one part ends and the next begins, and after it."""
    notice_end = data.index(b"</p>", data.index(NOTICE)) + 4
    style = data.index(b"<style>")
    style_end = data.index(b"</style>") + 8
    points = set(range(notice_end, head, max(1, head // 24)))
    for mark in (notice_end, style, style_end):
        points.update(range(mark - 3, mark + 4))
    script = data.find(b"<script>", style_end)
    if 0 <= script < head:  # the report's and the index's script come before their skeleton
        script_end = data.index(b"</script>", script) + 9
        points.update(range(script - 3, script + 4))
        points.update(range(script_end - 12, script_end + 4))
        points.update(range(script_end, head, 89))  # the skeleton: where the null errors were
    points.update(range(head - 3, min(len(data), head + 3000), 601))
    points.update((0, 200, data.index(NOTICE) + 40, len(data)))  # before the notice is whole: blank, no error
    return sorted(p for p in points if 0 <= p <= len(data))


@pytest.fixture(scope="module")
def pages(recorded: Path, tmp_path_factory) -> dict[str, tuple[Path, bytes, int]]:
    """A compile report, an invocation index (two compiles) and a diff-runs page: (path, bytes, head size).

    The head of a report or an index is its fixed part (skeleton, CSS, script); a diff-runs page
    is written whole, so all of it counts.
    """
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    from ._records import recorded_subset

    tmp = tmp_path_factory.mktemp("cut")
    root = tmp / "script"
    listener = HtmlReportListener()
    for seed in (1, 2):
        for e in synthetic_events(
            12, root, lines=40, seed=seed, invocation="inv-cut", signature=f"sig{seed}"
        ):
            listener(e)
    listener.close()
    report = sorted(root.glob(".run_records/run_*/report.html"))[0]
    traced = recorded_subset(recorded, tmp / "traces", elementwise_add=slice(0, 2))
    diff = tmp / "diff.html"
    ab = diff_last_two(traced, "--html", diff)
    assert CliRunner().invoke(app, ab).exit_code == 1  # they differ
    out = {}
    for name, path, head in (
        ("report", report, len(report_head())),
        ("index", root / "report.html", len(index_head())),
        ("diff-runs", diff, diff.stat().st_size),
    ):
        data = path.read_bytes()
        assert len(data) >= head
        out[name] = (path, data, head)
    return out


@pytest.mark.parametrize("name", ["report", "index", "diff-runs"])
def test_a_page_cut_anywhere_shows_itself_or_the_notice(browser, pages, tmp_path: Path, name: str) -> None:
    path, data, head = pages[name]
    cut = path.parent / f"cut-{name}.html"
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    # A cut CSS or script no longer matches its CSP hash: Chromium refuses it (and says so).
    page.on(
        "console",
        lambda m: (
            errors.append(f"console: {m.text}")
            if m.type == "error" and "Content Security Policy" not in m.text
            else None
        ),
    )
    notice_end = data.index(b"</p>", data.index(NOTICE)) + 4
    shown = {"page": 0, "notice": 0}
    try:
        for k, at in enumerate(_cuts(data, head)):
            cut = path.parent / f"cut-{name}-{k}.html"  # a new name each time: nothing comes from a cache
            cut.write_bytes(data[:at])
            errors.clear()
            page.goto(cut.resolve().as_uri())
            ready = page.get_attribute("html", "data-ready") == "1"
            notice = page.is_visible("#tl-incomplete")
            text = page.evaluate("() => (document.getElementById('tl-incomplete') || {}).textContent || ''")
            cut.unlink()
            assert not errors, (name, at, head, errors)
            if at < notice_end:
                assert not ready, (name, at)  # the notice itself is cut: a blank or partial page
                continue
            assert ready != notice, (name, at, head, ready, notice)  # the page or the notice, one of them
            if notice:
                assert text.startswith("This tltrace ") and "incomplete" in text, (name, at)
                shown["notice"] += 1
            else:
                shown["page"] += 1
    finally:
        ctx.close()
    assert shown["notice"] >= 20 and shown["page"] >= 1, shown


def test_every_page_starts_with_the_notice_before_its_assets() -> None:
    for head in (report_head(), index_head(), diffruns_page().encode("utf-8")):
        at = head.index(NOTICE)
        assert at < head.index(b"<style>") and at < 1200
        assert head.find(b"<script>") == -1 or at < head.index(b"<script>")
