"""The pytest plugin on real CPU kernels (pytester), and proof that without --tltrace it changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tltrace.format.names  # noqa: F401  # imported before pytester snapshots sys.modules (trace_name uses it)
from tltrace.pytest_plugin import trace_name

from ._cli import PLUGIN
from ._kernels import KERNELS
from ._records import read_manifest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent

TESTS = (
    KERNELS
    + """

def test_pass():
    build(256)


def test_fail():
    build(128)
    assert False, "deliberate failure"


def test_threads():
    build_in_threads([64, 192])


def test_no_compile():
    pass
"""
)


def _script_dirs(td: Path) -> dict[str, Path]:
    return {p.name: p for p in td.iterdir() if (p / ".run_records").is_dir()} if td.is_dir() else {}


def _manifests(sd: Path) -> list[dict]:
    return [read_manifest(r) for r in sorted((sd / ".run_records").glob("run_*"))]


@pytest.fixture
def suite(pytester, monkeypatch):
    """A test file of real CPU kernels, run by pytester in a subprocess.

    In-process runs would not do: pytester drops the modules a run imported, and
    TileLang's, TVM's and torch's native libraries cannot be loaded twice.
    """
    import importlib.util

    if importlib.util.find_spec("tilelang") is None:  # not imported here: see above
        pytest.skip("tilelang is not installed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_kernels=TESTS)
    return pytester


def test_traces_each_test_as_one_invocation_and_names_the_failure(suite):
    td = suite.path / "traces"
    res = suite.runpytest_subprocess(*PLUGIN, "--tltrace", "--tltrace-dir", str(td))
    res.assert_outcomes(passed=3, failed=1)
    dirs = _script_dirs(td)
    names = {n: trace_name(f"test_kernels.py::{n}") for n in ("test_pass", "test_fail", "test_threads")}
    assert set(dirs) == set(names.values())  # a test that compiles nothing leaves nothing
    invocations = set()
    for test, name in names.items():
        ms = _manifests(dirs[name])
        assert len(ms) == (2 if test == "test_threads" else 1)
        assert len({m["invocation"] for m in ms}) == 1  # one invocation per test ...
        invocations.add(ms[0]["invocation"])
        assert all(m["status"] == "complete" and m["records"] for m in ms)
        assert (dirs[name] / "report.html").exists()  # html is the bare flag's mode
    assert len(invocations) == 3  # ... and no other test's
    threads = {(m["thread_id"], m["thread"]) for m in _manifests(dirs[names["test_threads"]])}
    assert len(threads) == 2 and all(t[1].startswith("compiler") for t in threads)
    # The failing test's report section names its report and records; the passing ones get none.
    out = res.stdout.str()
    fail_dir = dirs[names["test_fail"]]
    section = out.split("tltrace ---", 1)[1]
    assert f"index report: {fail_dir / 'report.html'}" in section
    assert f"records: {fail_dir / '.run_records'}" in section
    assert _manifests(fail_dir)[0]["run_id"] in section
    assert out.count("index report:") == 1
    assert f"tltrace: FAILED test_kernels.py::test_fail: {fail_dir / 'report.html'}" in out
    assert "tltrace: 4 compile(s) of 3 test(s) traced" in out


def test_only_failed_keeps_only_the_failing_tests_traces(suite):
    td = suite.path / "traces"
    res = suite.runpytest_subprocess(
        *PLUGIN, "--tltrace=terminal", "--tltrace-only-failed", f"--tltrace-dir={td}", "-k", "pass or fail"
    )
    res.assert_outcomes(passed=1, failed=1)
    assert set(_script_dirs(td)) == {trace_name("test_kernels.py::test_fail")}
    out = res.stdout.str()
    assert "traces of 1 passing test(s) removed" in out
    assert "no HTML report in terminal mode" in out
    # Terminal mode streams the passes into the test's captured output.
    assert "done: " in out and "passes" in out


def test_bare_flag_before_a_path_and_a_bad_mode(suite):
    td = suite.path / "traces"
    res = suite.runpytest_subprocess(
        *PLUGIN, f"--tltrace-dir={td}", "--tltrace", "test_kernels.py", "-k", "no_compile"
    )
    res.assert_outcomes(passed=1)
    res = suite.runpytest_subprocess(*PLUGIN, "--tltrace=loud")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "--tltrace='loud' is not a trace mode" in res.stderr.str()


def test_trace_names_are_safe_and_distinct():
    ids = [
        "tests/test_a.py::test_x[1-2]",
        "../../etc::x",
        "t.py::Test::test_y[a/b]",
        ".hidden.py::t",
        "t.py::test_" + "a" * 200 + "[1]",
        "t.py::test_" + "a" * 200 + "[2]",
    ]
    names = [trace_name(i) for i in ids]
    for n in names:
        assert n and "/" not in n and "\\" not in n and not n.startswith(".") and len(n) <= 80
    assert len(set(names)) == len(names)
    assert names == [trace_name(i) for i in ids]  # stable across runs
    assert "test_x" in names[0] and names[0].startswith("tests")


# -- without the flag -----------------------------------------------------------------------------------
_PROBE = r"""
import json, os, sys
import pytest
os.environ.pop("TILELANG_DISABLE_CACHE", None)
code = pytest.main(sys.argv[1:] + ["-q", "-p", "no:cacheprovider"])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"tilelang", "tvm", "torch", "rich", "typer", "tltrace"})
print("PROBE" + json.dumps({"code": int(code), "heavy": heavy, "tltrace_mods": sorted(m for m in sys.modules if m.startswith("tltrace")),
      "env": os.environ.get("TILELANG_DISABLE_CACHE")}))
"""


def _probe(tmp: Path, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    line = [x for x in res.stdout.splitlines() if x.startswith("PROBE")][-1]
    return json.loads(line[5:])


def test_without_the_flag_the_plugin_imports_nothing_heavy_and_changes_nothing(tmp_path: Path):
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1\n")
    off = _probe(tmp_path, *PLUGIN, "test_plain.py")
    assert off["code"] == 0
    assert off["heavy"] == ["tltrace"]  # the plugin module and tltrace/__init__, nothing else
    assert off["tltrace_mods"] == ["tltrace", "tltrace._version", "tltrace.pytest_plugin"]
    assert off["env"] is None  # the kernel cache setting is left alone
    none = _probe(tmp_path, "-p", "no:tltrace", "test_plain.py")
    assert none["code"] == 0 and none["heavy"] == []


def test_pyproject_registers_the_pytest11_entry_point():
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"] == {"tltrace": "tltrace.pytest_plugin"}


def test_xdist_workers_add_up_in_the_summary(suite):
    """`pytest -n 2 --tltrace`: the controller's summary counts every worker's compiles and FAILED lines."""
    pytest.importorskip("xdist")
    td = suite.path / "traces"
    res = suite.runpytest_subprocess(*PLUGIN, "-n", "2", "--tltrace", "--tltrace-dir", str(td))
    res.assert_outcomes(passed=3, failed=1)
    out = res.stdout.str()
    fail_dir = _script_dirs(td)[trace_name("test_kernels.py::test_fail")]
    assert "tltrace: 4 compile(s) of 3 test(s) traced" in out
    assert f"tltrace: FAILED test_kernels.py::test_fail: {fail_dir / 'report.html'}" in out


CHILD_TESTS = (
    KERNELS
    + """

def test_in_a_child():
    import subprocess, sys
    subprocess.run([sys.executable, "-c", "import test_child_kernels as k; k.build(64)"], check=True)
    build(128)
"""
)


def test_a_tests_child_process_traces_into_the_tests_invocation(pytester, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("tilelang") is None:
        pytest.skip("tilelang is not installed")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path), os.environ.get("PYTHONPATH", "")])
    )
    pytester.makepyfile(test_child_kernels=CHILD_TESTS)
    td = pytester.path / "traces"
    res = pytester.runpytest_subprocess(*PLUGIN, "--tltrace", "--tltrace-dir", str(td))
    res.assert_outcomes(passed=1)
    (sd,) = _script_dirs(td).values()
    ms = _manifests(sd)
    assert len(ms) == 2 and len({m["invocation"] for m in ms}) == 1
    assert len({m["writer"]["pid"] for m in ms}) == 2
    assert "tltrace: 2 compile(s) of 1 test(s) traced" in res.stdout.str()


CRASH_TESTS = (
    KERNELS
    + """

def test_fail():
    build(128)
    assert False, "deliberate failure"


def test_crash():
    import os
    build(64)
    os._exit(7)


def test_pass():
    build(256)
"""
)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crashed_workers_traces_are_counted_and_its_test_named(pytester, monkeypatch, workers):
    """`pytest -n 2 --tltrace --tltrace-only-failed` with a test that calls os._exit(7) after a compile
    said "0 compile(s) of 0 test(s)" and named no test. The crashed worker never sends its output: its
    tests' traces are read from disk. With -n 1 the one worker has run test_fail before it crashes."""
    pytest.importorskip("xdist")
    import importlib.util

    if importlib.util.find_spec("tilelang") is None:
        pytest.skip("tilelang is not installed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_crashing=CRASH_TESTS)
    td = pytester.path / "traces"
    res = pytester.runpytest_subprocess(
        *PLUGIN, "-n", workers, "--tltrace", "--tltrace-only-failed", "--tltrace-dir", str(td)
    )
    out = res.stdout.str()
    assert "crashed while running 'test_crashing.py::test_crash'" in out  # xdist's own words
    res.assert_outcomes(passed=1, failed=2)
    dirs = _script_dirs(td)
    crash, fail = (trace_name(f"test_crashing.py::{n}") for n in ("test_crash", "test_fail"))
    assert set(dirs) == {crash, fail}  # the passing test's traces were removed
    assert [m["status"] for m in _manifests(dirs[crash])] == ["complete"]
    assert "tltrace: 2 compile(s) of 2 test(s) traced" in out
    lines = [x for x in out.splitlines() if x.startswith("tltrace: FAILED")]
    assert f"tltrace: FAILED test_crashing.py::test_fail: {dirs[fail] / 'report.html'}" in lines, lines
    (crashed,) = [x for x in lines if "test_crash " in x]
    assert crashed.startswith("tltrace: FAILED test_crashing.py::test_crash (worker gw"), crashed
    assert crashed.endswith(f"crashed while running it): {dirs[crash] / 'report.html'}"), crashed


def test_with_the_flag_tilelang_is_set_up_only_when_a_test_imports_it(tmp_path: Path):
    """The one set-up, lazy: `pytest --tltrace` on tests that never import TileLang does not import
    it either (it used to at configure); the environment is prepared (kernel cache off)."""
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert 1\n")
    on = _probe(tmp_path, *PLUGIN, "--tltrace=terminal", f"--tltrace-dir={tmp_path / 't'}", "test_plain.py")
    assert on["code"] == 0
    assert "tilelang" not in on["heavy"] and "tvm" not in on["heavy"]
    assert on["env"] == "1"  # TileLang would read it at its import


LAZY_TESTS = """
import os, subprocess, sys, time


def test_imports_tilelang_itself():
    import test_lazy_kernels as k  # TileLang is first imported here, inside the test

    k.build(128)


def test_child_outlives_the_test():
    # The child compiles into this test's invocation, says so, and outlives the test.
    code = (
        "import os, sys, time, test_lazy_kernels as k; k.build(64); print('built', flush=True); "
        "[time.sleep(0.2) for _ in range(600) if not os.path.exists(os.environ['RELEASE'])]"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, text=True,
    )
    assert "built" in (line.strip() for line in child.stdout)  # TileLang logs to stdout too
"""


def test_lazy_set_up_in_a_test_and_a_live_childs_run_outlive_only_failed(pytester, monkeypatch):
    """A test that imports TileLang itself is traced (the set-up waits for the import); under
    --tltrace-only-failed a passing test's traces go through the one pruner, which keeps the run
    of a child still alive (it used to remove the test's directory whole, that run with it)."""
    import importlib.util

    if importlib.util.find_spec("tilelang") is None:
        pytest.skip("tilelang is not installed")
    release = pytester.path / "release"
    monkeypatch.setenv("RELEASE", str(release))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path), os.environ.get("PYTHONPATH", "")])
    )
    pytester.makepyfile(test_lazy_kernels=KERNELS, test_lazy=LAZY_TESTS)
    td = pytester.path / "traces"
    try:
        res = pytester.runpytest_subprocess(
            *PLUGIN, "--tltrace=terminal", "--tltrace-dir", str(td), "test_lazy.py"
        )
        res.assert_outcomes(passed=2)
        out = res.stdout.str()
        assert "tltrace: 2 compile(s) of 2 test(s) traced" in out, out
        dirs = _script_dirs(td)
        own = _manifests(dirs[trace_name("test_lazy.py::test_imports_tilelang_itself")])
        assert [m["status"] for m in own] == ["complete"] and own[0]["records"]
        res = pytester.runpytest_subprocess(
            *PLUGIN, "--tltrace=terminal", "--tltrace-only-failed", "--tltrace-dir", str(td / "only"),
            "test_lazy.py::test_child_outlives_the_test",
        )  # fmt: skip
        res.assert_outcomes(passed=1)
        kept = _script_dirs(td / "only")
        assert list(kept) == [trace_name("test_lazy.py::test_child_outlives_the_test")], kept
        (m,) = _manifests(next(iter(kept.values())))
        assert m["status"] == "complete" and m["records"]  # the live child's run, whole
    finally:
        release.write_text("")
