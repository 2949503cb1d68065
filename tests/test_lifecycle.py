"""tracing/lifecycle.py: the one fan-out, the one fork check, the one outlived notice, and who uses them."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.format.records import RunManifest
from tltrace.session.events import InvocationFinished, Notice, RunStarted, TltraceWarning
from tltrace.tracing.invocation import find
from tltrace.tracing.lifecycle import Fanout, Lifecycle

from ._cli import cli_env, cli_proc, py_proc

PKG = Path(__file__).resolve().parent.parent / "tltrace"


def _settings(tmp_path: Path) -> Settings:
    return Settings(mode="terminal", trace_dir=tmp_path, script_name="s", quiet=True, keep=0)


def _started(settings: Settings) -> RunStarted:
    m = RunManifest(run_id="run_x", script="s", kernel="add", invocation=settings.invocation)
    return RunStarted(m, settings.script_dir / ".run_records" / "run_x", settings.script_dir)


class Broken:
    def __init__(self) -> None:
        self.calls = 0
        self.closed = 0

    def __call__(self, event: object) -> None:
        self.calls += 1
        raise RuntimeError("listener bug")

    def close(self) -> None:
        self.closed += 1
        raise OSError("disk full")


def test_a_failing_listener_is_said_once_and_the_others_go_on(tmp_path: Path) -> None:
    broken, seen = Broken(), []
    fan = Fanout([broken, seen.append])
    with pytest.warns(TltraceWarning) as said:
        for i in range(3):
            fan(Notice("info", f"n{i}"))
        fan.close()  # its close fails too: still one warning for this listener
    assert broken.calls == 3 and broken.closed == 1
    assert [e.message for e in seen] == ["n0", "n1", "n2"]
    texts = [str(w.message) for w in said]
    assert len(texts) == 1 and "Broken" in texts[0] and "RuntimeError: listener bug" in texts[0]


def test_finish_reports_once_and_closes_the_listeners(tmp_path: Path) -> None:
    class Closing(list):
        closed = 0

        def __call__(self, event: object) -> None:
            self.append(event)

        def close(self) -> None:
            self.closed += 1

    seen = Closing()
    s = _settings(tmp_path)
    life = Lifecycle(s, [seen]).open()
    assert find(life.id) is life.invocation
    assert life.finish() is True
    assert find(life.id) is None
    assert [type(e) for e in seen] == [InvocationFinished] and seen.closed == 1
    life.finish()  # once: a second finish reports nothing more
    assert [type(e) for e in seen] == [InvocationFinished]


def test_in_a_fork_child_nothing_is_reported_or_closed(tmp_path: Path) -> None:
    """The one fork check: a child of os.fork() inherits the object; only the parent reports."""
    seen: list[object] = []
    life = Lifecycle(_settings(tmp_path), [seen.append]).open()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: say what it saw, then leave without running the parent's atexit
        try:
            out = {"forked": life.forked(), "finished": life.finish(), "events": len(seen)}
            os.write(write, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = json.loads(f.read())
    os.waitpid(pid, 0)
    assert child == {"forked": True, "finished": False, "events": 0}
    assert not life.forked() and find(life.id) is life.invocation  # the parent's is still open
    assert life.finish() is True and [type(e) for e in seen] == [InvocationFinished]


def test_a_process_that_outlived_its_job_says_so_once(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    s = _settings(tmp_path)
    seen: list[object] = []
    life = Lifecycle(s, [seen.append], root={"pid": gone.pid, "start": None})
    life(_started(s))
    life(_started(s))
    notices = [e for e in seen if isinstance(e, Notice)]
    assert len(notices) == 1 and "outlived the traced job" in notices[0].message
    assert f"pid {gone.pid}" in notices[0].message and s.invocation in notices[0].message
    # The job's root itself never says it; nor does a child whose root still runs.
    for root in (None, {"pid": os.getpid(), "start": None}):
        seen.clear()
        Lifecycle(s, [seen.append], root=root)(_started(s))
        assert not [e for e in seen if isinstance(e, Notice)]


def _calls(path: Path) -> set[str]:
    """Return what a module calls anywhere: `name` for name(...), `obj.attr` for obj.attr(...);
    tltrace's live Invocation and Propagation as `tracing.Invocation`, `tracing.Propagation`."""
    out = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ours = {
        a.asname or a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[-1] in ("invocation", "children")
        and ("tracing" in (node.module or "") or path.parent.name == "tracing")
        for a in node.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ours:
                out.add(f"tracing.{f.id}")

            f = node.func
            if isinstance(f, ast.Name):
                out.add(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                out.add(f"{f.value.id}.{f.attr}")
    return out


def test_the_four_entry_points_share_the_lifecycle() -> None:
    """run, enable(), the pytest plugin and a child open their invocation through Lifecycle, and nothing else does."""
    entry = ["runner.py", "api/trace.py", "pytest_plugin.py", "tracing/child.py"]
    for name in entry:
        assert "Lifecycle" in _calls(PKG / name), f"tltrace/{name} does not open a Lifecycle"
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        calls = _calls(path)
        if rel == "tracing/lifecycle.py":
            assert {
                "tracing.Invocation",
                "tracing.Propagation",
                "controller.install",
            } <= calls  # the checks are real
            continue
        assert "tracing.Invocation" not in calls, f"tltrace/{rel} makes an Invocation: use tracing.lifecycle"
        assert "tracing.Propagation" not in calls, (
            f"tltrace/{rel} propagates on its own: use Lifecycle.propagate"
        )
        assert "controller.install" not in calls, (
            f"tltrace/{rel} installs the tool itself: use Lifecycle.install"
        )


def _attr_calls(path: Path) -> set[str]:
    """Return the names a module calls, bare or as an attribute (`x.y.start(...)` gives 'start'); a
    lifecycle's own methods (on `life`, `span`, `test.life`) as `lifecycle.NAME`."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                out.add(f.attr)
                owner = f.value
                name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
                if name in ("life", "span", "_span"):
                    out.add(f"lifecycle.{f.attr}")
            else:
                out.add(getattr(f, "id", ""))
    return out


def test_the_four_entry_points_start_and_end_through_the_lifecycle() -> None:
    """One set-up and one end sequence: each entry point calls its lifecycle's `start()` and `end()`,
    and sets TileLang up, installs, ends or prunes no other way (tracing/setup.py, Lifecycle.end)."""
    own = {
        "set_up_tilelang",
        "prepare_environment",
        "check_seam",
        "silence_builtin_tracer",
        "seam_on_disk",
        "AfterImport",
        "retire",
        "lifecycle.install",
        "lifecycle.propagate",
        "lifecycle.stop_propagation",
        "lifecycle.finish",
        "lifecycle.close",
    }
    for name in ["runner.py", "api/trace.py", "pytest_plugin.py", "tracing/child.py"]:
        calls = _attr_calls(PKG / name)
        assert {"lifecycle.start", "lifecycle.end"} <= calls, (
            f"tltrace/{name} does not start and end its Lifecycle"
        )
        assert not calls & own, f"tltrace/{name} does the lifecycle's work itself: {sorted(calls & own)}"


_LAZY = r"""
import atexit, json, os, sys
# Registered before tltrace's own: runs last, after enable()'s end at exit.
atexit.register(lambda: print("AT EXIT", "tilelang" in sys.modules, flush=True))
import tltrace
tltrace.enable(trace_dir=sys.argv[1], quiet=True)
print(json.dumps({
    "imported": "tilelang" in sys.modules,
    "enabled": tltrace.enabled() is not None,
    "cache_off": os.environ.get("TILELANG_DISABLE_CACHE"),
    "child_env": "TLTRACE_CHILD" in os.environ,
}), flush=True)
if sys.argv[2] == "disable":
    tltrace.disable()
    print(json.dumps({"imported": "tilelang" in sys.modules, "enabled": tltrace.enabled()}), flush=True)
"""


@pytest.mark.parametrize("how", ["disable", "exit"])
def test_enable_imports_no_tilelang_until_the_user_does(tmp_path: Path, how: str) -> None:
    """enable() sets TileLang up lazily, as `tltrace run` does: it checks, turns the kernel cache
    off and propagates, but imports nothing; neither does disable() nor the end at exit."""
    env = {k: v for k, v in cli_env().items() if k not in ("TILELANG_DISABLE_CACHE", "TLTRACE_CHILD")}
    p = py_proc("-c", _LAZY, tmp_path / "t", how, env=env, cwd=tmp_path, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    lines = p.stdout.splitlines()
    on = json.loads(lines[0])
    assert on == {"imported": False, "enabled": True, "cache_off": "1", "child_env": True}
    if how == "disable":
        assert json.loads(lines[1]) == {"imported": False, "enabled": None}
    assert lines[-1] == "AT EXIT False"


# What a plain `tltrace run --quiet` never needs: --ncu's readers, the layout explainer (only for a
# failed compile), the recorders of --ptx/--sass, --remarks and --line-directives, and at the end
# (the job's other processes gathered) the readers' resolution of names.
NOT_IMPORTED = (
    "tltrace.history.runs",
    "tltrace.history.resolve",
    "tltrace.cli.hot",
    "tltrace.runtime.profiled",
    "tltrace.history.hotlines",
    "tltrace.layouts.explain",
    "tltrace.stages.recorder",
    "tltrace.remarks.recorder",
    "tltrace.sourcemap.line_directives",
)


def test_a_quiet_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    """Start-up and the first compile pay no import they never use (issue 51: the cost seen from outside).

    The child's own sys.modules, read at its exit (after `tltrace run` ended its run), is the oracle."""
    from ._kernels import KERNELS

    script = tmp_path / "s.py"
    script.write_text(
        "import atexit, json, sys\n" + KERNELS + "\nOUT = sys.argv[1]\n"
        "atexit.register(lambda: json.dump(sorted(m for m in sys.modules if m.startswith('tltrace')),"
        " open(OUT, 'w')))\n"
        "build(128)\n"
    )
    out = tmp_path / "modules.json"
    cli_proc("run", "--quiet", "--trace-dir", tmp_path / "trace", script, out, cwd=tmp_path, rc=0)
    loaded = set(json.loads(out.read_text()))
    assert {"tltrace.runner", "tltrace.sourcemap.recorder", "tltrace.facts.recorder"} <= loaded  # it traced
    assert [m for m in NOT_IMPORTED if m in loaded] == []
    assert len(list((tmp_path / "trace" / "s" / ".run_records").glob("run_*"))) == 1
