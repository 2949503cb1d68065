"""pytest plugin: `pytest --tltrace[=terminal|html|both]` traces each test's TileLang compiles.

Registered through the `pytest11` entry point (name `tltrace`). Each test is one
invocation, filed under a script directory named after its node id (sanitised):
`<trace-dir>/<node id>/`. A failing test's report gets a `tltrace` section that
names its report and records; `--tltrace-only-failed` removes the traces of
tests that passed. The `tltrace` fixture gives a test its own traced compiles
(`tltrace.last("gemm").check("codegen_device", "CHECK: ...")`; docs/facts.md "Checks").

Without `--tltrace` this module only declares its options: it imports nothing
beyond the standard library and pytest, touches no environment variable and
registers nothing with TileLang (tests/test_pytest_plugin.py checks both).
A bare `--tltrace` means html: the index report is what a failing test names.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

MODES = ("terminal", "html", "both")
DEFAULT_MODE = "html"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("tltrace", "TileLang compile traces (tltrace)")
    group.addoption(
        "--tltrace",
        action="store",
        nargs="?",
        const=DEFAULT_MODE,
        default=None,
        metavar="terminal|html|both",
        dest="tltrace",
        help="Trace every TileLang compile of each test, one invocation per test "
        f"(bare --tltrace: {DEFAULT_MODE}).",
    )
    group.addoption(
        "--tltrace-dir",
        action="store",
        default=None,
        metavar="DIR",
        dest="tltrace_dir",
        help="Where traces go [default: TL_LOWER_TRACE_DIR, else ./tmp/lower_trace_dir].",
    )
    group.addoption(
        "--tltrace-only-failed",
        action="store_true",
        default=False,
        dest="tltrace_only_failed",
        help="Keep the traces of failing tests only.",
    )


def pytest_load_initial_conftests(early_config: Any, parser: Any, args: list[str]) -> None:
    """Let `pytest --tltrace tests/` mean the html default, not a mode named 'tests/'."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--tltrace" and i + 1 < len(args) and args[i + 1] not in MODES:
            args[i] = f"--tltrace={DEFAULT_MODE}"


def pytest_configure(config: Any) -> None:
    mode = config.getoption("tltrace", None)
    if mode is None:
        return
    if mode not in MODES:
        raise pytest.UsageError(f"--tltrace={mode!r} is not a trace mode; use terminal, html or both")
    from .config import env_knobs
    from .errors import UsageError

    try:
        env_knobs()  # a bad TLTRACE_* variable: one line now, not an error in every test's set-up
    except UsageError as exc:
        raise pytest.UsageError(f"tltrace: {exc}") from None
    tracer = _Tracer(config, mode)
    tracer.setup()
    config.stash[_STASH] = tracer


def pytest_unconfigure(config: Any) -> None:
    tracer = config.stash.get(_STASH, None)
    if tracer is not None:
        tracer.teardown()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    tracer = item.config.stash.get(_STASH, None)
    if tracer is None:
        return (yield)
    tracer.begin(item)
    try:
        return (yield)
    finally:
        tracer.end(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    report = yield
    tracer = item.config.stash.get(_STASH, None)
    if tracer is not None and report.failed:
        tracer.failed.add(item.nodeid)
        text = tracer.section(item)
        if text:
            report.sections.append(("tltrace", text))
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    tracer = config.stash.get(_STASH, None)
    if tracer is not None:
        for line in tracer.summary():
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    """Under pytest-xdist, a worker hands what it traced to the controller, whose summary adds it up."""
    tracer = session.config.stash.get(_STASH, None)
    workeroutput = getattr(session.config, "workeroutput", None)
    if tracer is not None and isinstance(workeroutput, dict):
        workeroutput["tltrace"] = tracer.to_worker_output()


def pytest_runtest_logreport(report: Any) -> None:
    """Under pytest-xdist (the controller): which worker ran each test, and which tests failed.

    A crashed worker never sends its output (pytest_sessionfinish does not run there); the
    summary then reads its tests' traces from disk, and its crashed test's failed report
    ("worker 'gw1' crashed while running ...") names the test.
    """
    tracer = _tracer_of(report)
    if tracer is not None:
        tracer.reported(report)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_handlecrashitem(crashitem: str, report: Any, sched: Any) -> None:
    tracer = _tracer_of(report)
    if tracer is not None:
        tracer.crashed[str(crashitem)] = _worker_name(getattr(report, "node", None))


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without it
def pytest_testnodedown(node: Any, error: Any) -> None:
    tracer = node.config.stash.get(_STASH, None)
    if tracer is None:
        return
    data = (getattr(node, "workeroutput", None) or {}).get("tltrace")
    if isinstance(data, dict):
        tracer.merge_worker_output(data)
    else:  # it crashed (or was killed): what it traced is on disk only
        tracer.lost.add(node)


@pytest.fixture(name="tltrace")
def tltrace_fixture(request: Any) -> Any:
    """This test's traced compiles: `tltrace.last("gemm").check("codegen_device", "CHECK: ...")`.

    Needs `pytest --tltrace`: without it (or when TileLang could not be set up) the test is
    skipped, with the reason, since it has no compile to look at.
    """
    tracer = request.config.stash.get(_STASH, None)
    if tracer is None:
        pytest.skip("the tltrace fixture reads this test's traced compiles: run pytest with --tltrace")
    if tracer.off:
        pytest.skip("tltrace could not set up TileLang (see the warning above): no compile is traced")
    test = tracer.tests.get(request.node.nodeid)
    if test is None:  # pragma: no cover - begin() runs before every test's fixtures
        pytest.skip("tltrace is not tracing this test")
    return TracedCompiles(test)


class TracedCompiles:
    """What the `tltrace` fixture gives a test: the compiles it has made so far, oldest first."""

    def __init__(self, test: _Test) -> None:
        self._test = test

    @property
    def compiles(self) -> list[Any]:
        """Return this test's compiles (tltrace.api.reading.Compile), in the order they started."""
        from .api.reading import Compile
        from .history import runs
        from .session.worker import drain

        drain()  # the records of a compile on another thread are on disk too
        out = []
        collector = self._test.collector
        with collector._lock:
            dirs = list(collector.started)
        for run_dir in dirs:
            run = runs.load_run(run_dir)
            if run.manifest is not None:
                out.append(Compile(run))
        return out

    def last(self, name: str | None = None) -> Any:
        """Return the newest compile of kernel `name` (or whose signature starts with it); any when None.

        Raises LookupError naming the compiles there are when none matches.
        """
        found = self.compiles
        hits = [c for c in found if name is None or c.kernel == name or (c.signature or "").startswith(name)]
        if not hits:
            names = ", ".join(c.label for c in found[-5:]) or "none"
            what = "no TileLang compile" if name is None else f"no compile of {name!r}"
            raise LookupError(f"{what} in this test so far (its compiles: {names})")
        return hits[-1]

    def __iter__(self) -> Any:
        return iter(self.compiles)

    def __len__(self) -> int:
        return len(self.compiles)

    def __repr__(self) -> str:
        return f"<tltrace: {len(self)} compile(s) of this test>"


def _tracer_of(report: Any) -> _Tracer | None:
    node = getattr(report, "node", None)
    config = getattr(node, "config", None) or getattr(report, "config", None)
    if config is None:
        return None
    return config.stash.get(_STASH, None)


def _worker_name(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", None) or "?")


_STASH: Any = pytest.StashKey["_Tracer"]()


def trace_name(nodeid: str) -> str:
    """Return the script-directory name for a test node id: one safe path component, unique, at most 80."""
    from .format.names import safe_component

    name = safe_component(nodeid.replace("::", "__"), fallback="test")
    if len(name) > 70:  # cut ids (long parametrisations) would collide: keep a hash of the whole id
        digest = hashlib.sha1(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        name = f"{safe_component(name[:60], fallback='test')}-{digest}"
    return name


class _Test:
    """One test's trace: its settings, listeners and the compiles it made."""

    def __init__(self, script_dir: Path, existed: bool, collector: Any) -> None:
        self.predicted = script_dir  # where the test's compiles are expected to go
        self.existed = existed
        self.collector = collector
        self.life: Any = None  # the test's invocation (tracing.lifecycle.Lifecycle)

    @property
    def script_dir(self) -> Path:
        """Where the test's compiles went (the first run's script dir), else where they would go."""
        for run_dir in list(self.collector.started):
            return Path(run_dir).parent.parent
        return self.predicted


class _Tracer:
    """Turns tracing on around each test, with that test's node id as the script name."""

    def __init__(self, config: Any, mode: str) -> None:
        from .config import env_trace_dir

        self.config = config
        self.mode = mode
        self.only_failed = bool(config.getoption("tltrace_only_failed"))
        opt = config.getoption("tltrace_dir")
        self.trace_dir = Path(opt if opt else env_trace_dir()).absolute()
        self.failed: set[str] = set()
        self.tests: dict[str, _Test] = {}
        self.kept: list[tuple[str, Path, int]] = []
        self.removed = 0
        self._lock = threading.Lock()
        self.started = time.time()  # the session's start: a crashed worker's traces are newer
        # xdist controller: worker node -> its tests, in order (held, so no id is reused while we read)
        self.ran_by: dict[Any, list[str]] = {}
        self.lost: set[Any] = set()  # worker nodes that went down without their output
        self.crashed: dict[str, str] = {}  # node id -> the worker that crashed running it
        self.off = False  # TileLang could not be set up: nothing is traced

    def setup(self) -> None:
        """Check TileLang from its files and prepare the environment; it is imported by the tests, if at all.

        Each test's invocation then starts with the lifecycle's one set-up (`Lifecycle.start`):
        TileLang is set up when the test session imports it, as under `tltrace run`.
        """
        from .tracing.setup import check

        try:
            check(use_cache=False)
        except Exception as exc:  # the tests still run; their compiles are not traced
            self.untraced(str(exc))

    def untraced(self, reason: str) -> None:
        """Say once that TileLang could not be set up; the tests run on, untraced."""
        import sys

        with self._lock:
            said, self.off = self.off, True
        if not said:
            sys.stderr.write(f"tltrace: warning: {reason}; tests run untraced\n")

    def teardown(self) -> None:
        pass  # each test's invocation ended with its test (`end`)

    # -- one test ----------------------------------------------------------------------------------
    def begin(self, item: Any) -> None:
        if self.off:
            return
        from .config import build_settings
        from .render.terminal import TerminalView
        from .tracing.collector import RunCollector
        from .tracing.lifecycle import Lifecycle

        # A fresh Settings per test: its own invocation id, and a script identity of its own.
        settings = build_settings(
            mode=self.mode,
            trace_dir=self.trace_dir,
            script_name=trace_name(item.nodeid),
            command=("pytest", item.nodeid),
            script_key=f"pytest:{item.nodeid}",
            wait=True,  # a test may crash its worker right after a compile: its records are on disk
        )
        script_dir = settings.script_dir
        collector = RunCollector()
        listeners: list[Any] = [collector]
        if settings.terminal:
            listeners.append(TerminalView(settings))
        if settings.html:
            from .history.report_reads import LiveReads
            from .render.html import HtmlReportListener

            listeners.append(HtmlReportListener(settings, reads=LiveReads()))
        test = _Test(script_dir, script_dir.exists(), collector)
        # One invocation per test; a listener that fails is said once and never breaks the test.
        test.life = Lifecycle(settings, listeners).open()
        self.tests[item.nodeid] = test
        # The one set-up: traced from now (or from the test's own `import tilelang`); Python
        # processes the test starts trace into its invocation.
        try:
            test.life.start(on_failure=self.untraced)
        except Exception as exc:  # pragma: no cover - setup() checked the seam; never breaks the test
            self.untraced(str(exc))

    def end(self, item: Any) -> None:
        test = self.tests.pop(item.nodeid, None)
        if test is None:
            return
        if test.life is not None:
            # The one end sequence, without the reports: the test's section and the summary say it.
            test.life.end(report=False)
        self._add_children(test)
        runs = test.collector.manifests()
        if not runs:
            return
        if self.only_failed and item.nodeid not in self.failed:
            self._remove(test)
            return
        with self._lock:
            self.kept.append((item.nodeid, test.script_dir, len(runs)))

    def _add_children(self, test: _Test) -> None:
        """Count the compiles the test's child processes made (read from disk) with its own."""
        from .session.events import InvocationFinished
        from .tracing.children import gather

        own = test.collector.manifests()
        if test.life is None:
            return
        g = gather(test.script_dir, test.life.id, (m.run_id for m in own))
        if g.runs:
            test.collector(InvocationFinished(test.life.id, tuple(own) + tuple(g.runs)))

    def _remove(self, test: _Test) -> None:
        """Remove a passing test's traces through history's one pruner, as a retention policy.

        `Policy.passing_test`: the test's invocation goes (its runs, its child processes' runs,
        its lock file, the stored texts no run links any more), and the script dir with it when
        the test made it and nothing else is left; a run that may still be written stays.
        """
        from .history.retention import Policy, apply

        sd = test.script_dir
        if test.life is None or not _inside(sd, self.trace_dir) or sd.is_symlink():
            return
        made = not test.existed and sd == test.predicted
        try:
            apply([sd], Policy.passing_test(test.life.id, made_dir=made))
        except OSError:
            pass
        self.removed += 1

    # -- what the user reads -------------------------------------------------------------------------
    def section(self, item: Any) -> str:
        """Return the `tltrace` section of a failing test's report: its report and records."""
        test = self.tests.get(item.nodeid)
        if test is None:
            return ""
        self._add_children(test)
        runs = test.collector.manifests()
        td = self.trace_dir
        lines = [f"{len(runs)} TileLang compile(s) traced for this test"]
        if not runs:
            lines[0] = "no TileLang compile ran in this test (nothing traced)"
            return "\n".join(lines)
        from .format.layout import REPORT, RUN_RECORDS

        index = test.script_dir / REPORT
        if self.mode in ("html", "both"):
            lines.append(f"index report: {index}")
        else:
            lines.append("no HTML report in terminal mode (--tltrace=html or both writes one)")
        lines.append(f"records: {test.script_dir / RUN_RECORDS}")
        for m in runs:
            counts = m.counts
            label = m.signature or m.kernel or "?"
            failed = (
                f", failed at {next(r.name for r in m.records if r.status == 'failed')}"
                if counts.get("failed")
                else ""
            )
            lines.append(f"  {label}: {m.status}, {len(m.records)} passes{failed}  {m.run_id}")
        from .proc.shell import command  # here: without --tltrace the plugin imports nothing of tltrace

        lines.append(f"show: {command('tltrace', 'show', '--trace-dir', td, test.script_dir.name)}")
        return "\n".join(lines)

    def to_worker_output(self) -> dict[str, Any]:
        """Return what this process traced as plain data (pytest-xdist sends it to the controller)."""
        return {
            "kept": [[nodeid, str(sd), n] for nodeid, sd, n in self.kept],
            "failed": sorted(self.failed),
            "removed": self.removed,
        }

    def merge_worker_output(self, data: dict[str, Any]) -> None:
        """Add one xdist worker's traces to this (the controller's) summary."""
        with self._lock:
            for nodeid, sd, n in data.get("kept", []):
                self.kept.append((str(nodeid), Path(sd), int(n)))
            self.failed.update(str(x) for x in data.get("failed", []))
            self.removed += int(data.get("removed", 0))

    def reported(self, report: Any) -> None:
        """Note a test's report: failed ones, and (xdist controller) the worker that ran it."""
        nodeid = str(getattr(report, "nodeid", "") or "")
        if not nodeid:
            return
        with self._lock:
            if getattr(report, "failed", False):
                self.failed.add(nodeid)
            node = getattr(report, "node", None)
            if node is not None:
                tests = self.ran_by.setdefault(node, [])
                if nodeid not in tests:
                    tests.append(nodeid)

    def _left_on_disk(self) -> list[tuple[str, Path, int]]:
        """Return (node id, script dir, compiles) of the tests of crashed workers, read from disk.

        Their worker never sent what it kept; a test's compiles are the runs under its script
        directory made since this session began whose command is that test's. Never raises.
        """
        from .format import scripts
        from .format.ids import time_of_id
        from .history.loading import load_manifest, run_dirs

        with self._lock:
            known = {k[0] for k in self.kept}
            tests = [t for node in self.lost for t in self.ran_by.get(node, [])]
        out = []
        for nodeid in dict.fromkeys(tests):
            if nodeid in known:
                continue
            try:
                sd = scripts.lookup(self.trace_dir, trace_name(nodeid), f"pytest:{nodeid}")
                dirs = run_dirs(sd)
            except Exception:
                continue
            n = 0
            for d in dirs:
                t = time_of_id(d.name)
                if t is not None and t < self.started - 1.0:
                    continue  # an earlier session's
                try:
                    m = load_manifest(d)
                except Exception:
                    continue
                if tuple(m.command[:2]) == ("pytest", nodeid):
                    n += 1
            if n:
                out.append((nodeid, sd, n))
        return out

    def summary(self) -> list[str]:
        from .format.layout import REPORT

        kept = self.kept + self._left_on_disk()
        n = sum(k[2] for k in kept)
        out = [f"tltrace: {n} compile(s) of {len(kept)} test(s) traced under {self.trace_dir}"]
        if self.removed:
            out.append(f"tltrace: traces of {self.removed} passing test(s) removed (--tltrace-only-failed)")
        for nodeid, sd, _ in kept:
            if nodeid not in self.failed:
                continue
            where = sd / REPORT if self.mode in ("html", "both") else sd
            worker = self.crashed.get(nodeid)
            why = f" (worker {worker} crashed while running it)" if worker is not None else ""
            out.append(f"tltrace: FAILED {nodeid}{why}: {where}")
        traced = {k[0] for k in kept}
        for nodeid, worker in self.crashed.items():
            if nodeid not in traced:
                out.append(
                    f"tltrace: FAILED {nodeid} (worker {worker} crashed while running it): no compile traced"
                )
        return out


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
        return True
    except ValueError:
        return False
