"""Screenshots of tltrace's report beside TileLang's built-in lower_trace report, on one kernel.

    python docs/screenshots/make.py [--out docs/screenshots] [--work DIR] [--pass NAME]

Writes one small CPU script (elementwise add at sizes 256 and 512; target c, cython,
TileLang's cache off) and runs it twice: under TileLang's own tracer
(`TL_LOWER_TRACE=html`, its report under --work/builtin) and under
`tltrace run --mode html` (--work/tltrace). Both reports of the size-256 compile are
opened in headless Chromium (Debian's /usr/bin/chromium through Playwright) at the
same pass, and saved as PNGs in --out; with Pillow installed they are reduced to 128
colours (about a third of the size). docs/report.md shows and compares them.

Needs TileLang 0.1.15 or later (the built-in tracer), playwright and Chromium. About a
minute on two cores. Not a test: the pictures are for people.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
from tests._kernels import ADD  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
VIEW = {"width": 1280, "height": 720}
COLOURS = 128  # text on flat colours: a 128-colour palette looks the same at a third of the size

SCRIPT = (
    ADD  # tests/_kernels.py: the elementwise add
    + """


if __name__ == "__main__":
    for n in (256, 512):
        tilelang.compile(make_add(n), target="c", execution_backend="cython")
"""
)


# The comparison is below the pass's own diff: bring its heading under the pass's sticky toolbar.
SCROLL_TO_COMPARE = """() => {
  const box = document.getElementById('tl-compare');
  box.scrollIntoView();
  let p = box.parentElement;
  while (p && p.scrollHeight <= p.clientHeight) p = p.parentElement;
  if (p) p.scrollTop -= 90;
}"""


# Wrap: off: scroll the diff's sideways scroller (the first box around it that scrolls) to an end.
SCROLL_SIDEWAYS = """(toEnd) => {
  let p = document.querySelector('table.tl-diff');
  while (p && p.scrollWidth <= p.clientWidth + 1) p = p.parentElement;
  if (p) p.scrollLeft = toEnd ? p.scrollWidth : 0;
}"""


def trace(work: Path) -> tuple[Path, Path]:
    """Run the script under each tracer; return (the built-in report, tltrace's trace dir)."""
    (work / "add.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TL_LOWER_TRACE", "TLTRACE"))}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    builtin = {**env, "TL_LOWER_TRACE": "html", "TL_LOWER_TRACE_DIR": str(work / "builtin")}
    for cmd, e in (
        ([sys.executable, "add.py"], builtin),
        ([sys.executable, "-m", "tltrace", "run", "--mode", "html", "--trace-dir", "tltrace", "add.py"], env),
    ):
        p = subprocess.run(cmd, cwd=work, env=e, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            sys.exit(f"make.py: {' '.join(cmd[1:])} failed:\n{p.stderr[-3000:]}")
    runs = sorted((work / "builtin" / "add" / ".run_records").glob("run_*/report.html"))
    if not runs:
        sys.exit("make.py: TileLang's tracer wrote no report (TileLang 0.1.15 or later has it)")
    return runs[0], work / "tltrace"  # the built-in's first run is the size-256 compile


def wait_js(page, expression: str, timeout: float = 20.0) -> None:
    """Poll a JavaScript expression until it is truthy (not wait_for_function: the CSP refuses its eval)."""
    end = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > end:
            raise SystemExit(f"make.py: still false after {timeout:g} s: {expression}")
        page.wait_for_timeout(50)


def shoot(page, out: Path, name: str) -> Path:
    """Save the page as out/name, reduced to COLOURS when Pillow is there; return the path."""
    path = out / name
    page.screenshot(path=str(path))
    try:
        from PIL import Image
    except ImportError:
        return path
    img = Image.open(path).convert("RGB")
    img.quantize(colors=COLOURS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        path, optimize=True
    )
    return path


def pick_pass(compile_, builtin_names: set[str], wanted: str | None) -> str:
    """Return a pass both reports have that changed the IR: `wanted`, else AnnotateReadOnlyParams.

    (Its change is at the end of a long line: where each report's diff is put to the test.)
    """
    changed = [p.name for p in compile_.passes if p.status == "changed"]
    both = [n for n in changed if n.rsplit(".", 1)[-1] in builtin_names]
    for name in (wanted, "AnnotateReadOnlyParams"):
        if name and name in both:
            return name
    if wanted:
        sys.exit(f"make.py: {wanted} did not change the IR in both reports; these did: {', '.join(both)}")
    return both[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--work", type=Path, default=None, help="keep the traces here (default: a temp dir)")
    ap.add_argument("--pass", dest="pass_", default=None, help="the pass to show (default: see pick_pass)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    import tltrace

    with tempfile.TemporaryDirectory(prefix="tltrace-shots-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        builtin_report, trace_dir = trace(work)
        inv = tltrace.load(trace_dir).invocations[-1]
        mine = next(c for c in inv.compiles if c.signature.startswith("add 256"))
        diffruns = work / "diff-runs.html"
        d = subprocess.run(
            [sys.executable, "-m", "tltrace", "diff-runs", "--trace-dir", str(trace_dir)]
            + ["add:add 256", "add:add 512", "--html", str(diffruns), "--force"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if d.returncode not in (0, 1):  # as diff's: 1 when the two differ, as these do
            sys.exit(f"make.py: tltrace diff-runs failed:\n{d.stderr[-3000:]}")
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport=VIEW)

            # TileLang's built-in report: its phase tab, then the pass in the sidebar.
            page.goto(builtin_report.resolve().as_uri())
            page.wait_for_selector(".pass-link")
            labels = set(page.eval_on_selector_all(".pass-label", "ls => ls.map(l => l.textContent)"))
            name = pick_pass(mine, labels, args.pass_)
            short = name.rsplit(".", 1)[-1]
            phase = next(p.phase for p in mine.passes if p.name == name)
            page.click(f".phase-tab[onclick*='\"{phase}\"']")
            page.click(f"#sb-{phase} .pass-link:has(.pass-label:text-is('{short}'))")
            page.wait_for_timeout(300)
            shots = [shoot(page, args.out, "builtin-pass.png")]

            # tltrace's report of the same compile, at the same pass (the one pass-name grammar).
            page.goto((mine.path / "report.html").resolve().as_uri() + f"#{name}")
            page.wait_for_selector("html[data-ready='1']")
            page.wait_for_selector("table.tl-diff")
            if page.locator(".tl-source-close").count():
                page.click(".tl-source-close")  # the Source pane has its own shot below
            shots.append(shoot(page, args.out, "tltrace-pass.png"))

            # Wrap: off keeps long lines whole and the diff scrolls sideways, to the change at the end.
            page.click("button.tl-wrap")
            page.evaluate(SCROLL_SIDEWAYS, True)
            page.wait_for_timeout(200)
            shots.append(shoot(page, args.out, "tltrace-wrap-off.png"))
            page.click("button.tl-wrap")  # back on (a saved preference of the page)
            page.evaluate(SCROLL_SIDEWAYS, False)

            # The same pass beside the other size's (compare with a sibling compile).
            page.select_option(".tl-compare-pick", index=1)
            page.wait_for_selector("#tl-compare table.tl-diff")
            page.evaluate(SCROLL_TO_COMPARE)
            page.wait_for_timeout(200)
            shots.append(shoot(page, args.out, "tltrace-compare.png"))

            # The invocation index: both compiles, failures first.
            page.set_viewport_size({"width": VIEW["width"], "height": 300})
            page.goto((trace_dir / "add" / "report.html").resolve().as_uri())
            page.wait_for_selector("html[data-ready='1']")
            wait_js(page, "document.querySelectorAll('tbody tr').length >= 2")
            shots.append(shoot(page, args.out, "tltrace-index.png"))

            # diff-runs --html: the two compiles, named by signature, and the passes that did different work.
            page.set_viewport_size({"width": VIEW["width"], "height": 420})
            page.goto(diffruns.resolve().as_uri())
            page.wait_for_selector("html[data-ready='1']")
            shots.append(shoot(page, args.out, "tltrace-diff-runs.png"))
            browser.close()
        for s in shots:
            print(f"{s}  {s.stat().st_size // 1024} KB")
        print(
            f"pass: {name}; built-in report {builtin_report.stat().st_size // 1024} KB, "
            f"tltrace's {(mine.path / 'report.html').stat().st_size // 1024} KB"
        )


if __name__ == "__main__":
    main()
