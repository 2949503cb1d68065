"""The HTML report's cost: tltrace's append-only report vs TileLang's built-in report writer.

Measured in one run, so the ratios compare like with like on a noisy machine:

* report writing for an N-pass synthetic trace (default 500): wall time of the
  listener calls and bytes written, vs TileLang's `generate_html` called after
  every pass on the same records (what its tracer does, with its section cache);
* real report sizes for the examples, each traced once by tltrace
  (`tltrace run --mode html`) and once by the built-in (`TL_LOWER_TRACE=html`);
* headless Chromium on the N-pass report: time to the first diff on screen,
  and the time of one j/k step (median and worst of 40).

Run: `python bench/report.py [--passes 500] [--no-examples] [--no-browser]`.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import CHROMIUM, CHROMIUM_ARGS

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXAMPLES = ("elementwise_add", "gemm", "softmax")


def _events(n: int, root: Path) -> list:
    sys.path.insert(0, str(REPO))  # the synthetic traces live with the tests
    from tests.synthetic import synthetic_events

    return list(synthetic_events(n, root, lines=120, seed=11))


def ours_write(events: list) -> tuple[float, int, Path]:
    """Return (seconds in the listener, bytes written, report path) for one synthetic run."""
    from tltrace.render.html import REPORT_NAME, HtmlReportListener

    listener = HtmlReportListener()
    t0 = time.perf_counter()
    for event in events:
        listener(event)
    listener.close()
    seconds = time.perf_counter() - t0
    return seconds, listener.bytes_written, events[0].run_dir / REPORT_NAME


def reference_write(events: list, out_dir: Path) -> tuple[float, int, Path] | None:
    """Return (seconds, bytes written, path) for TileLang's writer flushed after every pass, as its tracer does."""
    try:
        from tilelang.tools.lower_trace.core import (
            STATUS_CODEGEN,
            STATUS_COMPLETED,
            STATUS_FAILED,
            LowerRecord,
        )
        from tilelang.tools.lower_trace.html import generate_html
    except Exception as exc:  # tilelang missing or changed
        print(f"bench/report.py: TileLang's built-in report writer unavailable: {exc}", file=sys.stderr)
        return None
    from tltrace.session.events import PassRecorded

    status = {
        "changed": STATUS_COMPLETED,
        "noop": STATUS_COMPLETED,
        "failed": STATUS_FAILED,
        "codegen": STATUS_CODEGEN,
    }
    records = []
    for e in events:
        if not isinstance(e, PassRecorded):
            continue
        r = e.record
        records.append(
            LowerRecord(
                phase=r.phase,
                name=r.name,
                index=r.index,
                before_text=e.before,
                after_text=e.after,
                changed=e.before != e.after,
                add_lines=r.added,
                del_lines=r.removed,
                status=status[r.status],
                error_msg=r.error or "",
                depth=r.depth,
                parent_index=r.parent,
            )
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.html"
    cache: dict = {}
    written = 0
    t0 = time.perf_counter()
    for i in range(1, len(records) + 1):
        generate_html(records[:i], str(path), section_cache=cache)
        written += path.stat().st_size
    seconds = time.perf_counter() - t0
    return seconds, written, path


def example_sizes(work: Path) -> list[tuple[str, int, int | None]]:
    """Return (example, tltrace report bytes, built-in report bytes) for each example, traced on this machine."""
    env = dict(os.environ, TILELANG_DISABLE_CACHE="1")
    env.pop("TL_LOWER_TRACE", None)
    env.setdefault("TLTRACE_EXAMPLES_CPU", "1")
    out = []
    for name in EXAMPLES:
        script = REPO / "examples" / f"{name}.py"
        ours_dir = work / "ours" / name
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tltrace",
                "run",
                str(script),
                "--mode",
                "html",
                "--trace-dir",
                str(ours_dir),
            ],
            env=env,
            capture_output=True,
            check=True,
        )
        ours = sum(
            os.path.getsize(p) for p in glob.glob(str(ours_dir / name / ".run_records/run_*/report.html"))
        )
        ref_dir = work / "ref" / name
        ref_env = dict(env, TL_LOWER_TRACE="html", TL_LOWER_TRACE_DIR=str(ref_dir))
        ref_size = None
        try:
            subprocess.run(
                [sys.executable, str(script)], env=ref_env, capture_output=True, check=True, cwd=work
            )
            # glob's ** skips dot directories: name .run_records outright.
            reports = glob.glob(str(ref_dir / name / ".run_records" / "run_*" / "report.html"))
            ref_size = sum(os.path.getsize(p) for p in reports) if reports else None
        except subprocess.CalledProcessError:
            pass
        out.append((name, ours, ref_size))
    return out


def browser_times(report: Path, steps: int = 40) -> tuple[float, float, float] | None:
    """Return (ms to first diff, median ms per j/k step, worst ms) in headless Chromium."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not os.path.exists(CHROMIUM):
        return None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        firsts = []
        step_times: list[float] = []
        for _ in range(3):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(report.resolve().as_uri())
            page.wait_for_selector("html[data-ready='1']")
            firsts.append(float(page.get_attribute("html", "data-ready-ms") or "nan"))
            # One step: the key event, the new view built, and the layout it needs.
            step_times += page.evaluate(
                """(steps) => {
                    const out = [];
                    for (let i = 0; i < steps; i++) {
                        const key = i % 4 === 3 ? 'k' : 'j';
                        const t0 = performance.now();
                        document.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
                        document.body.getBoundingClientRect();
                        document.getElementById('tl-view').scrollHeight;
                        out.push(performance.now() - t0);
                    }
                    return out;
                }""",
                steps,
            )
            page.close()
        browser.close()
    return statistics.median(firsts), statistics.median(step_times), max(step_times)


def measure(passes: int = 500, examples: bool = True, browser: bool = True) -> str:
    """Return a markdown section with the report benchmarks, measured now."""
    lines = [f"## HTML report ({passes}-pass synthetic trace, examples on this machine)", ""]
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-report-") as tmp:
        work = Path(tmp)
        events = _events(passes, work / "ours")
        secs, written, report = ours_write(events)
        size = report.stat().st_size
        ref = reference_write(events, work / "ref")
        lines += ["| report writing | wall time | bytes written | final file |", "|---|---:|---:|---:|"]
        lines.append(
            f"| tltrace (append per pass) | {secs:.3f} s | {written / 1e6:.2f} MB | {size / 1e6:.2f} MB |"
        )
        if ref is not None:
            rsecs, rwritten, rpath = ref
            rsize = rpath.stat().st_size
            lines.append(
                f"| TileLang built-in (rewrite per pass) | {rsecs:.2f} s | {rwritten / 1e6:.1f} MB | "
                f"{rsize / 1e6:.2f} MB |"
            )
            lines.append(
                f"| ratio tltrace / built-in | {secs / rsecs:.2g} | {written / rwritten:.2g} | "
                f"{size / rsize:.2f} |"
            )
        lines += ["", f"tltrace wrote {written / size:.2f}x its final file (target: at most 1.5x)."]
        budget = [
            (
                "report writing: bytes written per final byte",
                "<= 1.5x",
                f"{written / size:.2f}x",
                "ok" if written / size <= 1.5 else "OVER",
            )
        ]
        if examples:
            lines += [
                "",
                "| example (real compile) | tltrace report | built-in report | ratio |",
                "|---|---:|---:|---:|",
            ]
            worst = 0.0
            for name, ours, theirs in example_sizes(work / "examples"):
                ratio = f"{ours / theirs:.2f}" if theirs else "n/a"
                theirs_s = f"{theirs / 1e3:.0f} KB" if theirs else "n/a"
                lines.append(f"| {name} | {ours / 1e3:.0f} KB | {theirs_s} | {ratio} |")
                worst = max(worst, ours / theirs if theirs else 0.0)
            if worst:
                budget.append(
                    (
                        "example reports: tltrace's size vs the built-in's, largest ratio",
                        "<= 0.25x",
                        f"{worst:.2f}x",
                        "ok" if worst <= 0.25 else "OVER",
                    )
                )
            real = sorted(
                glob.glob(
                    str(
                        work
                        / "examples"
                        / "ours"
                        / "gemm"
                        / "gemm"
                        / ".run_records"
                        / "run_*"
                        / "report.html"
                    )
                )
            )
            if browser and real:
                from autotune import open_report

                o = open_report(Path(real[-1]))
                if "ms" in o:
                    lines += [
                        "",
                        f"Headless Chromium, the gemm example's compile report ({o['bytes'] / 1e3:.0f} KB, "
                        f"every view it draws on open, the profile view included where there is one): "
                        f"ready {o['ms']:.0f} ms after navigation (median of 3), "
                        f"{len(o['errors'])} page errors.",
                    ]
                    budget.append(
                        (
                            "gemm example's compile report: ready in headless Chromium, no page errors",
                            "< 1000 ms",
                            f"{o['ms']:.0f} ms",
                            "ok" if o["ms"] < 1000 and not o["errors"] else "OVER",
                        )
                    )
        if browser:
            times = browser_times(report)
            if times is None:
                lines += ["", "Chromium timings skipped (no playwright or /usr/bin/chromium)."]
            else:
                first, med, worst = times
                lines += [
                    "",
                    f"Headless Chromium, {passes}-pass report ({size / 1e6:.2f} MB): first diff on screen "
                    f"{first:.0f} ms after navigation (median of 3; target < 1000 ms); one j/k step "
                    f"{med:.1f} ms median, {worst:.1f} ms worst of 120 (target < 50 ms).",
                ]
                budget += [
                    (
                        f"{passes}-pass report: first diff on screen in headless Chromium",
                        "< 1000 ms",
                        f"{first:.0f} ms",
                        "ok" if first < 1000 else "OVER",
                    ),
                    (
                        f"{passes}-pass report: one j/k step, worst of 120",
                        "< 50 ms",
                        f"{worst:.1f} ms",
                        "ok" if worst < 50 else "OVER",
                    ),
                ]
        lines += ["", "| target | limit | measured | verdict |", "|---|---:|---:|---|"]
        lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in budget]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passes", type=int, default=500)
    ap.add_argument("--no-examples", action="store_true")
    ap.add_argument("--no-browser", action="store_true")
    a = ap.parse_args(argv)
    print(measure(a.passes, examples=not a.no_examples, browser=not a.no_browser))
    return 0


if __name__ == "__main__":
    sys.exit(main())
