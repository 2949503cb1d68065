"""kill -9 at any moment: the report on disk still opens and lists every pass recorded before the kill."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tltrace.render.html import REPORT_NAME

from ._cli import cli_argv, cli_env
from ._records import read_manifest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

REPO = Path(__file__).resolve().parent.parent

# Feeds a long synthetic trace with large texts (so kills land inside writes too) and
# acknowledges each pass on stdout once the listener has returned.
DRIVER = """
import sys
import time
from pathlib import Path
sys.path.insert(0, sys.argv[4])
from tests.synthetic import HtmlReportListener, synthetic_events
listener = HtmlReportListener()
sys.stdout.write("ready\\n")  # imports done: the kill delay counts from here (a loaded machine starts slowly)
sys.stdout.flush()
for event in synthetic_events(5000, Path(sys.argv[1]), lines=int(sys.argv[2]), seed=int(sys.argv[3])):
    listener(event)
    record = getattr(event, "record", None)
    if record is not None:
        sys.stdout.write(f"{record.index}\\n")
        sys.stdout.flush()
        time.sleep(0.003)  # a compile's pace, roughly: keeps the reports a browser-friendly size
"""


@pytest.fixture(scope="module")
def page_of(browser):
    """Return listed(report): the record indexes a report shows; fails on any page error."""
    ctx = browser.new_context()

    def listed(report: Path) -> list[int]:
        """Return the record indexes the report lists; fail on any page error."""
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            page.goto(report.resolve().as_uri())
            page.wait_for_selector("html[data-ready='1']", timeout=10_000)
            shown = page.eval_on_selector_all("li.tl-pass", "ls => ls.map(l => +l.dataset.index)")
        finally:
            page.close()
        assert not errors, (report, errors)
        return shown

    yield listed
    ctx.close()


def _reader(stream, out: list[str]) -> threading.Thread:
    def run():
        for line in stream:
            out.append(line)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _kill_once_acked(args: list[str], delay: float) -> list[str]:
    """Run `python -c ARGS` (tltrace from this checkout), wait (30 s at most) for its first
    acknowledged line, SIGKILL it `delay` seconds later; return the lines it acknowledged."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE, text=True, env=env)
    acked: list[str] = []
    reader = _reader(proc.stdout, acked)
    deadline = time.time() + 30
    while not acked and time.time() < deadline and proc.poll() is None:
        time.sleep(0.005)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    reader.join(5)
    return acked


def test_kill_loop_on_a_synthetic_trace(tmp_path: Path, page_of):
    rng = random.Random(1234)
    # Kill times from "before the report exists" to "hundreds of passes in", shuffled.
    delays = [0.0, 0.02, 0.1] + [rng.uniform(0.15, 0.9) for _ in range(19)]
    rng.shuffle(delays)
    opened = 0
    for k, delay in enumerate(delays):
        root = tmp_path / f"k{k}"
        lines = rng.choice([40, 300, 800])
        acked = _kill_once_acked([DRIVER, str(root), str(lines), str(k), str(REPO)], delay)
        done = [int(x) for x in acked if x.strip().isdigit()]
        link = next(iter(sorted((root / ".run_records").glob(f"run_*/{REPORT_NAME}"))), root / REPORT_NAME)
        if not done and not link.exists():
            continue  # killed before the first pass: nothing to show, nothing lost
        assert link.exists(), f"kill {k} after {delay:.2f}s: {len(done)} passes acknowledged, no report"
        shown = page_of(link)
        assert set(done) <= set(shown), f"kill {k}: passes {sorted(set(done) - set(shown))[:5]} missing"
        opened += 1
    assert opened >= 15


def test_kill_loop_on_real_compiles(tmp_path: Path, page_of, examples_dir: Path):
    script = tmp_path / "compile_loop.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(examples_dir)!r})\n"
        "import elementwise_add as m\n"
        "for i in range(200):\n"
        "    m.main(['--n', str(1024 + 128 * i)])\n"
    )
    rng = random.Random(7)
    env = cli_env(TLTRACE_EXAMPLES_CPU="1")
    for k in range(3):
        trace = tmp_path / f"trace{k}"
        proc = subprocess.Popen(
            cli_argv("run", script, "--mode", "html", "--trace-dir", trace, "--keep", "0"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
        )
        records = trace / "compile_loop" / ".run_records"
        deadline = time.time() + 60
        while time.time() < deadline and not list(records.glob("run_*/report.html")):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 1.2))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        runs = sorted(p for p in records.iterdir() if p.name.startswith("run_"))
        assert runs
        for run in runs:
            log = run / "records.jsonl"
            if log.exists():
                import json

                lines = log.read_text().splitlines()
                # The capture engine logs a record, then emits it: all but the last logged are in the report.
                expected = []
                for line in lines[:-1]:
                    expected.append(json.loads(line)["index"])
            else:
                expected = [r["index"] for r in read_manifest(run)["records"]]
            if not expected and not (run / REPORT_NAME).exists():
                continue
            shown = page_of(run / REPORT_NAME)
            assert set(expected) <= set(shown), (run, sorted(set(expected) - set(shown))[:5])


# Many small compiles of one invocation, in two threads; acknowledges each finished compile.
INDEX_DRIVER = """
import sys
import threading
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from tests.synthetic import HtmlReportListener, synthetic_events
listener = HtmlReportListener()
lock = threading.Lock()
sys.stdout.write("ready\\n")
sys.stdout.flush()

def work(t):
    for i in range(400):
        seed = int(sys.argv[2]) * 10000 + t * 1000 + i
        events = list(synthetic_events(8, Path(sys.argv[1]), seed=seed, invocation="inv-kill",
                                       signature=f"sig_{t}_{i}", lines=30, failed_at=3 if i % 7 == 0 else None))
        for e in events:
            listener(e)
        with lock:
            sys.stdout.write(events[0].run_dir.name + "\\n")
            sys.stdout.flush()

threads = [threading.Thread(target=work, args=(t,)) for t in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_kill_mid_invocation_leaves_an_index_listing_every_finished_compile(tmp_path: Path, browser):
    rng = random.Random(99)
    ctx = browser.new_context()
    opened = 0
    try:
        for k in range(8):
            root = tmp_path / f"k{k}"
            acked = _kill_once_acked([INDEX_DRIVER, str(root), str(k), str(REPO)], rng.uniform(0.3, 1.5))
            done = {x.strip() for x in acked if x.strip().startswith("run_")}
            index = root / REPORT_NAME
            if not done and not index.exists():
                continue
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            try:
                page.goto(index.resolve().as_uri())
                page.wait_for_selector("html[data-ready='1']", timeout=10_000)
                shown = dict(
                    page.eval_on_selector_all(
                        "#ix-body tr", "trs => trs.map(tr => [tr.dataset.run, tr.dataset.status])"
                    )
                )
            finally:
                page.close()
            assert not errors, errors
            assert done <= set(shown), f"kill {k}: {sorted(done - set(shown))[:3]} finished but not listed"
            assert all(shown[r] in ("complete", "failed") for r in done)
            opened += 1
    finally:
        ctx.close()
    assert opened >= 6
