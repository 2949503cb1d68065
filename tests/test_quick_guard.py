"""The quick selection's guard on child processes: a child started through tests/_cli.py cannot import
TileLang while a test not marked `compile` runs under -m "not compile" (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys

from . import _cli


def _stub_package() -> str:
    """The package the stand-in replaces, read from its folder (not spelled here: this module's source
    naming it would mark these tests compile)."""
    (pkg,) = [p.name for p in _cli.NO_TILELANG.iterdir() if (p / "__init__.py").is_file()]
    return pkg


def test_the_guard_is_on_exactly_under_the_quick_selection(request) -> None:
    quick = "not compile" in (request.config.getoption("markexpr", "") or "")
    assert _cli.quick_children is quick
    on_path = str(_cli.NO_TILELANG) in _cli.cli_env()["PYTHONPATH"].split(":")
    assert on_path is quick


def test_a_child_importing_the_compiler_fails_loudly_and_says_how_to_mark_it(monkeypatch) -> None:
    monkeypatch.setattr(_cli, "quick_children", True)
    p = subprocess.run(
        [sys.executable, "-c", f"import {_stub_package()}"],
        env=_cli.cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "ImportError: quick selection: this test compiles; mark it compile" in p.stderr, p.stderr
    assert p.stderr.startswith("quick selection: this test compiles"), p.stderr  # said before any handler


def test_the_stand_in_is_off_the_path_when_the_guard_is_off(monkeypatch) -> None:
    monkeypatch.setattr(_cli, "quick_children", False)
    assert str(_cli.NO_TILELANG) not in _cli.cli_env()["PYTHONPATH"].split(":")
