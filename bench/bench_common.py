"""What the benchmark scripts share: bytes on disk as `du` counts them, and how they start Chromium.

(Not `_common`: bench/capture.py puts examples/ first on sys.path, whose `_common` is the examples'.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def compile_setup() -> None:
    """What a compiling benchmark's process sets first: TileLang's kernel cache off, no TL_LOWER_TRACE."""
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    os.environ.pop("TL_LOWER_TRACE", None)


def cpu_bench_setup() -> None:
    """What a CPU benchmark's process sets first: `compile_setup`, the examples compiled for the CPU,
    examples/ on sys.path right after bench/."""
    compile_setup()
    os.environ.setdefault("TLTRACE_EXAMPLES_CPU", "1")
    sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "examples"))


REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/ holds what the benchmarks share with the tests
from tests._browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402,F401  (re-exported to the benchmarks)


def median_s(fn, n: int) -> float:
    """The median wall time of `n` calls of `fn()`, in seconds."""
    import statistics
    import time

    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def md_head(*columns: str) -> list[str]:
    """A Markdown table's head: the row of `columns`, then its rule."""
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def bench_settings(trace_dir: Path, mode: str = "terminal", quiet: bool = True, **more):
    """tltrace's Settings for a benchmark's traced compiles: into `trace_dir` as script `bench`, quiet, no
    retention, no working file; `more` fields on top (sync, ptx, ...)."""
    from tltrace.config import Settings

    return Settings(
        mode=mode, trace_dir=trace_dir, script_name="bench", quiet=quiet, keep=0, codegen_output=None, **more
    )


def configuration(cfg: str, sub: Path, tltrace):
    """Return (enter, leave) that turn configuration `cfg` on and off, writing into `sub`: "untraced";
    "built-in terminal" or "built-in html" (TileLang's own tracer); else tltrace, `tltrace(mode)` (a
    `session`) in the mode `cfg` names ("html" in it, else terminal)."""
    import tilelang.tools.lower_trace as lt

    if cfg == "untraced":
        return (lambda: None), (lambda: None)
    if cfg.startswith("built-in"):
        mode = "terminal" if "terminal" in cfg else "html"
        return (lambda: lt.enable(mode=mode, trace_dir=str(sub), codegen_output=None)), lt.disable
    return tltrace("html" if "html" in cfg else "terminal")


def session(s, listeners: list):
    """Return (enter, leave) that install tltrace's controller with settings `s` and the recorders tltrace
    run and enable() register, its events handed to each of `listeners`; leave uninstalls it (waiting
    for its worker) and closes the listeners."""
    from tltrace.session import controller
    from tltrace.tracing.recorders import register_defaults

    register_defaults()

    def emit(e):
        for li in listeners:
            li(e)

    def leave():
        controller.uninstall()
        for li in listeners:
            if hasattr(li, "close"):
                li.close()

    return (lambda: controller.install(s, emit)), leave


def report_listeners(s) -> list:
    """The HTML report listener `tltrace run` adds for settings `s` (none unless `s.html`)."""
    if not s.html:
        return []
    from tltrace.history.report_reads import LiveReads
    from tltrace.render.html import HtmlReportListener

    return [HtmlReportListener(s, reads=LiveReads())]


def per_pass_floor(root: Path) -> int:
    """Blocks (bytes, as `du` counts them) that the spec's layout alone takes in a tltrace trace dir.

    Every directory but `.objects`, plus each distinct per-pass file (`<run>/<phase>/NN_<Pass>_<side>.<ext>`:
    the before/after texts the spec requires, one inode per distinct text). No manifest, no
    source map, no reproducer, no registry: what any store that keeps the per-pass files as
    plain files must allocate. Hard links counted once.
    """
    alloc: dict[int, int] = {}
    if not root.exists():
        return 0
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        st = p.stat()
        if p.is_dir():
            if p.name != ".objects":  # tltrace's own store of the texts, not the spec's layout
                alloc[st.st_ino] = st.st_blocks * 512
        elif len(p.parts) >= 3 and p.parts[-3].startswith("run_") and p.parent.name != ".objects":
            alloc[st.st_ino] = st.st_blocks * 512
    return sum(alloc.values())


def disk_bytes(root: Path) -> tuple[int, int]:
    """Return (apparent bytes of distinct files, bytes allocated on disk as `du` counts them).

    Hard links are counted once, as `du` does; allocation includes directories. A missing
    `root` holds nothing: (0, 0).
    """
    size: dict[int, int] = {}
    alloc: dict[int, int] = {}
    if not root.exists():
        return 0, 0
    for p in [root, *root.rglob("*")]:
        if p.is_symlink():
            continue
        st = p.stat()
        alloc[st.st_ino] = st.st_blocks * 512
        if p.is_file():
            size[st.st_ino] = st.st_size
    return sum(size.values()), sum(alloc.values())
