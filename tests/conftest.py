"""Shared fixtures: real TileLang compiles on the CPU, kernel cache off, traces in tmp dirs."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from ._browser import CHROMIUM, CHROMIUM_ARGS

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
os.environ.pop("TL_LOWER_TRACE_DIR", None)
os.environ.setdefault("TLTRACE_EXAMPLES_CPU", "1")  # examples compile for the CPU in tests

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture
def examples_dir(tmp_path: Path) -> Path:
    """A private copy of examples/ (scripts and working files live beside the trace)."""
    dest = tmp_path / "examples"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture(scope="session")
def recorded(tmp_path_factory) -> Path:
    """The checked-in recorded traces (tests/data/traces), copied once per session: read only.

    A test that writes into a trace dir copies this one (tests/_records.py `copy_tree`).
    """
    from ._records import recorded_copy

    return recorded_copy(tmp_path_factory.mktemp("recorded") / "traces")


def cuda_available() -> bool:
    """Return True when torch sees a CUDA GPU (the `gpu`-marked tests skip otherwise)."""
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


@pytest.fixture
def need_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip without a CUDA GPU; with one, the examples compile for it (TLTRACE_EXAMPLES_CPU unset)."""
    if not cuda_available():
        pytest.skip("no CUDA GPU")
    monkeypatch.delenv("TLTRACE_EXAMPLES_CPU", raising=False)


@pytest.fixture
def run_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Invoke the tltrace CLI in-process (tests/_cli.py `cli_invoke`), cwd = tmp_path; returns the Result."""
    from ._cli import cli_invoke

    monkeypatch.chdir(tmp_path)
    return cli_invoke


@pytest.fixture
def cli_proc(tmp_path: Path):
    """Run tltrace in a child process (tests/_cli.py `cli_proc`), cwd = tmp_path unless `cwd=` says."""
    from ._cli import cli_proc as run

    def invoke(*args: object, cwd: Path | None = None, **kw):
        return run(*args, cwd=cwd if cwd is not None else tmp_path, **kw)

    return invoke


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium through Playwright, one per test session.

    Skipped when Chromium or Playwright is missing, except under CI, where .ci/run
    installs both and a missing one must fail rather than hide the browser tests.
    """
    missing = None
    try:
        from playwright import sync_api
    except ImportError:
        missing = "playwright is not installed"
    if missing is None and not os.path.exists(CHROMIUM):
        missing = f"no {CHROMIUM} (apt-get install chromium)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def wait_js(page, expression: str, timeout: float = 15.0) -> None:
    """Poll a JavaScript expression until it is truthy.

    Not `page.wait_for_function`: once its first check fails it polls through `eval` in
    the page, which the report's Content-Security-Policy (no 'unsafe-eval') refuses, so
    it fails only when the page is slower than the first check (as on CI).
    """
    import time

    end = time.monotonic() + timeout
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > end:
            raise AssertionError(f"still false after {timeout:g} s: {expression}")
        page.wait_for_timeout(50)


@pytest.fixture
def open_page(browser):
    """Open a file in a fresh browser context and wait for the page's `data-ready` mark.

    Any page error, console error, dialog or request that is not for a local file fails
    the test (the reports must work offline, from disk). `fragment` is appended to the
    URL; `init_script` runs before the page's own; `viewport` sizes the window.
    """
    contexts = []
    errors: list[str] = []

    def _open(
        path: Path, fragment: str = "", *, init_script: str | None = None, viewport: dict | None = None
    ):
        ctx = browser.new_context(**({"viewport": viewport} if viewport else {}))
        contexts.append(ctx)
        if init_script:
            ctx.add_init_script(init_script)
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        page.on(
            "console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
        page.on(
            "request", lambda r: errors.append(f"request: {r.url}") if not r.url.startswith("file:") else None
        )
        page.goto(Path(path).resolve().as_uri() + fragment)
        page.wait_for_selector("html[data-ready='1']")
        return page

    yield _open
    for ctx in contexts:
        ctx.close()
    assert not errors, errors


# -- the quick loop: `pytest -m "not compile and not browser and not slow"` ----------------------------
# A test is marked `compile` when it, or a fixture it uses, compiles with TileLang/TVM or traces a
# script (the marks are read from the source, so a new test is classified without a list to keep). Under
# that selection a test that compiles unmarked fails: in-process (the guard at the end of this file) and
# in a child started through tests/_cli.py (its PYTHONPATH holds a `tilelang` that raises ImportError).
_COMPILES = (
    "tilelang",
    "tvm",
    "make_add",
    "compile_add(",
    "compile_(",
    "EXAMPLES",
    "examples_dir",
    "trace(",
    "_traced(",
    '"run",',
    "'run',",
    "tltrace run",
    "lower_trace",
    "enable(",
    "disable(",
    '"watch",',
    "'watch',",
)


def _source(obj) -> str:
    import inspect

    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


# What differs between TileLang releases (docs/tilelang-versions.md): the seam, the pipeline the tool
# sees, launch shapes read from the IR, codegen and the edit loop, the Python API on TileLang's TVM,
# `tltrace run` end to end, Ctrl+C through TVM's FFI, the pytest plugin. CI runs these (plus every
# test that does not compile: the CLI at typer/rich's floors) on TileLang 0.1.14 at the dependency
# floors; the whole suite runs on 0.1.15.
FLOORS_MODULES = {
    "test_api",
    "test_capture",
    "test_cli_subprocess",
    "test_edit_recompile",
    "test_interrupt",
    "test_pytest_plugin",
    "test_run_cli",
    "test_signature",
    "test_tilelang_versions",
}


def pytest_collection_modifyitems(config, items) -> None:
    import inspect
    import re

    seen: dict[object, bool] = {}

    def compiles(obj, module=None, depth: int = 2) -> bool:
        """The source of `obj`, and of the module-level helpers it calls (two levels), compiles."""
        key = (obj, depth)
        if key not in seen:
            seen[key] = False  # a helper calling itself
            text = _source(obj)
            hit = any(k in text for k in _COMPILES)
            if not hit and module is not None:  # a script kept in a module-level string, e.g. SCRIPT
                for name in set(re.findall(r"\b([A-Z][A-Z0-9_]+)\b", text)):
                    value = getattr(module, name, None)
                    if isinstance(value, str) and any(k in value for k in _COMPILES):
                        hit = True
                        break
            if not hit and module is not None and depth > 0:
                for name in set(re.findall(r"\b([A-Za-z_]\w*)\(", text)):
                    helper = getattr(module, name, None)
                    if (
                        inspect.isfunction(helper)
                        and helper.__module__ == module.__name__
                        and helper is not obj
                    ):
                        if compiles(helper, module, depth - 1):
                            hit = True
                            break
            seen[key] = hit
        return seen[key]

    for item in items:
        func = getattr(item, "function", None)
        module = getattr(item, "module", None)
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
        fixture_funcs = [  # tltrace's own fixtures, but the guard below (it names TileLang to watch for it)
            d.func for name, ds in defs.items() for d in ds if d.baseid and name != _GUARD
        ]
        if (func is not None and compiles(func, module)) or any(compiles(f, module) for f in fixture_funcs):
            item.add_marker(pytest.mark.compile)
        if Path(str(item.fspath)).stem in FLOORS_MODULES:
            item.add_marker(pytest.mark.floors)


# -- the quick loop cannot slow down unnoticed ---------------------------------------------------------
# Under a selection that leaves `compile` out, a test that imports TileLang (seconds, and a compile is
# likely to follow) fails and says how to classify it. A child process started through tests/_cli.py
# (`cli_proc`, `cli_env`) is guarded by `pytest_runtest_setup` below: it cannot import TileLang.
_GUARD = "_quick_loop_imports_no_tilelang"


def _quick(item) -> bool:
    """Whether `item` runs under a selection that leaves `compile` out, and is not marked compile itself
    (a `compile` test selected by another mark, as floors, may compile)."""
    return (
        "not compile" in (item.config.getoption("markexpr", "") or "")
        and item.get_closest_marker("compile") is None
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """Before the test's fixtures: its children started through tests/_cli.py cannot import TileLang."""
    from . import _cli

    _cli.quick_children = _quick(item)


def pytest_runtest_teardown(item, nextitem) -> None:
    from . import _cli

    _cli.quick_children = False


@pytest.fixture(autouse=True)
def _quick_loop_imports_no_tilelang(request):
    if not _quick(request.node) or "tilelang" in sys.modules:
        yield
        return
    yield
    if "tilelang" in sys.modules:
        pytest.fail(
            "this test imported TileLang under the quick selection (-m 'not compile'): mark me compile "
            "(@pytest.mark.compile), or name what compiles in its source (tests/conftest.py _COMPILES)",
            pytrace=False,
        )
