"""The pytest `tltrace` fixture on real CPU compiles (pytester): checks in a test, and without --tltrace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ._cli import PLUGIN
from ._kernels import KERNELS

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent

TESTS = (
    KERNELS
    + '''

def test_checks_hold(tltrace):
    build(256)
    c = tltrace.last("add")
    assert c.kernel == "add" and len(tltrace) == 1
    c.check("codegen_device", "CHECK: int32_t", "CHECK-NOT: cp_async")
    c.check("codegen_device", """
        CHECK: for (int32_t
        CHECK-SAME: ++
    """)
    assert tltrace.last() is not None  # any compile
    text = c.pass_("codegen_device").after
    assert c.facts["wgmma"] == text.count("wgmma") == 0  # a C build: no tensor-core path
    c.expect("wgmma == 0 and cp_async == 0")


def test_expect_fails(tltrace):
    build(256)
    tltrace.last("add").expect("wgmma >= 1")


def test_check_fails(tltrace):
    build(256)
    tltrace.last("add").check("codegen_device", "CHECK: int32_t", "CHECK: wgmma_ss")


def test_nothing_compiled(tltrace):
    tltrace.last("add")


def test_unknown_stage(tltrace):
    build(128)
    tltrace.last("add").check("NoSuchPass", "CHECK: x")
'''
)


@pytest.fixture
def suite(pytester, monkeypatch):
    """A test file of real CPU kernels run by pytester in a subprocess (tests/test_pytest_plugin.py says why)."""
    import importlib.util

    if importlib.util.find_spec("tilelang") is None:
        pytest.skip("tilelang is not installed")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_kernels=TESTS)
    return pytester


def test_the_fixture_gives_the_tests_compiles_and_checks_them(suite) -> None:
    td = suite.path / "traces"
    res = suite.runpytest_subprocess(*PLUGIN, "--tltrace=terminal", f"--tltrace-dir={td}", "-q")
    res.assert_outcomes(passed=1, failed=4)
    out = res.stdout.str()
    # A failed check: an AssertionError with FileCheck's message and the lines around the point.
    failure = out.split("test_check_fails", 2)[2].split("test_nothing_compiled", 1)[0]
    assert (
        "AssertionError: add " in failure
        and "--match codegen_device: CHECK: int32_t | CHECK: wgmma_ss" in failure
    )
    assert "CHECK: expected string not found (scanning from here)" in failure
    assert "codegen_device:" in failure and "| " in failure
    assert "--expect wgmma >= 1" in out and "wgmma is 0" in out
    assert "LookupError: no compile of 'add' in this test so far (its compiles: none)" in out
    assert "no pass named 'NoSuchPass'" in out


def test_without_tltrace_the_fixture_skips_and_says_why(suite) -> None:
    res = suite.runpytest_subprocess(*PLUGIN, "-rs", "-k", "checks_hold or nothing")
    res.assert_outcomes(skipped=2)
    assert (
        "the tltrace fixture reads this test's traced compiles: run pytest with --tltrace" in res.stdout.str()
    )
