"""The Python API against the examples of docs/api.md: lower_trace, enable/disable, create_pass_instrument."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tltrace
import tltrace.errors

from ._records import EXAMPLES, read_manifest

CPU = {"target": "c", "execution_backend": "cython"}


@pytest.fixture(scope="module")
def tl():
    import tilelang
    import tilelang.transform as transform
    from tilelang import tvm

    return tilelang, tvm, transform


@pytest.fixture(scope="module")
def make_add():
    sys.path.insert(0, str(EXAMPLES))
    try:
        from elementwise_add import make_add
    finally:
        sys.path.remove(str(EXAMPLES))
    return make_add


@pytest.fixture(autouse=True)
def _always_disable():
    yield
    tltrace.disable()


def runs_under(trace_dir: Path) -> list[Path]:
    return sorted(trace_dir.glob("*/.run_records/run_*"))


def _page_data(path) -> str:
    """A report's data as the page reads it (its chunks, packed ones inflated), as one JSON text."""
    import json

    from tltrace.render.pages import chunk_values

    return json.dumps(chunk_values(path.read_bytes()))


def test_import_is_cheap_and_hooks_nothing() -> None:
    code = (
        "import sys, tltrace; print(sorted(m for m in ('tilelang', 'tvm', 'rich', 'typer') if m in sys.modules)); "
        "print(tltrace.__version__, callable(tltrace.enable), 'lower_trace' in dir(tltrace))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "0.1.0 True True"]
    with pytest.raises(AttributeError):
        tltrace.no_such_thing  # noqa: B018


def test_the_public_api_is_listed_in_one_place() -> None:
    """tltrace.__all__ is tltrace/api/__init__.py's list; every name resolves, none imports TileLang."""
    import tltrace.api

    assert set(tltrace.__all__) == {"__version__", *tltrace.api.__all__}
    code = (
        "import sys, tltrace\n"
        "got = {n: getattr(tltrace, n) for n in tltrace.__all__}\n"
        "assert all(callable(v) for n, v in got.items() if n != '__version__'), got\n"
        "print(sorted(m for m in ('tilelang', 'tvm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.splitlines() == ["[]"], out.stderr


def test_lower_trace_single_pass(tl, make_add, capsys) -> None:
    _, _, transform = tl
    results = tltrace.lower_trace(make_add(256, 64), transform.Simplify())
    assert len(results) == 1
    r = results[0]
    assert set(r) == {
        "name",
        "before_script",
        "after_script",
        "diff_lines",
        "insertions",
        "deletions",
        "changed",
        "rows",
        "note",
    }
    assert r["name"] == "Simplify" and r["before_script"].startswith("# from tvm.script")
    assert r["changed"] == bool(r["diff_lines"])
    assert "lower_trace/01 Simplify" in capsys.readouterr().out


def test_lower_trace_named_chain_both(tl, make_add, tmp_path: Path, capsys) -> None:
    _, tvm, transform = tl
    from tltrace.render.html import write_report  # noqa: F401  # a broken html.py fails here, never skips

    func = make_add(256, 64)
    html = tmp_path / "my_diff.html"
    results = tltrace.lower_trace(
        func,
        [
            ("Bind", tvm.tirx.transform.BindTarget(tvm.target.Target("c"))),
            ("Annotate", tvm.tirx.transform.AnnotateDeviceRegions()),
            ("Split", tvm.tirx.transform.SplitHostDevice()),
            ("ThreadSync", transform.ThreadSync("shared")),
        ],
        mode="both",
        html_path=str(html),
    )
    assert [r["name"] for r in results] == ["Bind", "Annotate", "Split", "ThreadSync"]
    bind = results[0]
    assert bind["changed"] and bind["insertions"] == 1 and bind["deletions"] == 1
    assert bind["diff_lines"][:2] == ["--- step 1 before", "+++ step 1 after"]
    assert results[1]["before_script"] == bind["after_script"]  # steps chain
    assert html.is_file() and "Bind" in _page_data(html)
    assert f"HTML report written to: {html}" in capsys.readouterr().out


def test_lower_trace_list_of_passes_on_a_module(tl, make_add) -> None:
    _, tvm, transform = tl
    mod = tvm.IRModule({"main": make_add(256, 64)})
    results = tltrace.lower_trace(
        mod,
        [transform.Simplify(), tvm.tirx.transform.BindTarget(tvm.target.Target("c"))],
        mode="terminal",
        context=0,
    )
    assert [r["name"] for r in results] == ["Simplify", "tirx.BindTarget"]
    assert all(not ln.startswith(" ") for ln in results[1]["diff_lines"])  # context 0


def test_lower_trace_failing_pass_reraises(tl, make_add, capsys) -> None:
    _, tvm, _ = tl
    with pytest.raises(Exception, match="target"):
        tltrace.lower_trace(make_add(256, 64), tvm.tirx.transform.AnnotateDeviceRegions())
    out = capsys.readouterr().out
    assert "FAILED" in out and "error:" in out


def test_lower_trace_bad_mode(make_add) -> None:
    with pytest.raises(tltrace.errors.UsageError, match="mode must be"):
        tltrace.lower_trace(make_add(256, 64), [], mode="pdf")


def test_enable_disable_around_two_compiles(tl, make_add, tmp_path: Path) -> None:
    tilelang, _, _ = tl
    td = tmp_path / "traces"
    tltrace.enable(mode="terminal", trace_dir=td)
    tltrace.enable(mode="terminal", trace_dir=td)  # idempotent: still one tool, one run per compile
    k1 = tilelang.compile(make_add(256, 128), **CPU)
    k2 = tilelang.compile(make_add(256, 64), **CPU)
    assert k1 is not None and k2 is not None
    assert tltrace.flush()  # a compile returns before its worker wrote all of it: flush() waits
    runs = runs_under(td)
    assert len(runs) == 2
    kernels = [read_manifest(r) for r in runs]
    assert [m["status"] for m in kernels] == ["complete", "complete"] and kernels[0]["kernel"] == "add"
    # The two compilations have their own records, each starting at index 0.
    assert all(m["records"][0]["index"] == 0 for m in kernels)
    # One enable()..disable() span is one invocation, whatever enable() is called again with.
    assert kernels[0]["invocation"] == kernels[1]["invocation"] == tltrace.enabled().invocation
    assert kernels[0]["signature"] != kernels[1]["signature"]
    tltrace.disable()
    tltrace.disable()  # idempotent
    tilelang.compile(make_add(256, 32), **CPU)
    assert len(runs_under(td)) == 2
    assert tltrace.enabled() is None
    tltrace.enable(mode="terminal", trace_dir=td)
    tilelang.compile(make_add(256, 32), **CPU)
    tltrace.disable()
    third = read_manifest(runs_under(td)[-1])
    assert third["invocation"] != kernels[0]["invocation"]  # a new span, a new invocation


def test_enable_none_disables_and_later_settings_win(tl, make_add, tmp_path: Path) -> None:
    tilelang, _, _ = tl
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "a")
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "b")
    tilelang.compile(make_add(256, 128), **CPU)
    assert runs_under(tmp_path / "a") == [] and len(runs_under(tmp_path / "b")) == 1
    tltrace.enable(mode=None)
    assert tltrace.enabled() is None


def test_codegen_output_none_suppresses_working_files(tl, make_add, tmp_path: Path) -> None:
    tilelang, _, _ = tl
    tltrace.enable(mode="both", trace_dir=tmp_path / "off", codegen_output=None)
    tilelang.compile(make_add(256, 128), **CPU)
    tltrace.enable(mode="both", trace_dir=tmp_path / "on")
    tilelang.compile(make_add(256, 128), **CPU)
    (off,) = runs_under(tmp_path / "off")
    (on,) = runs_under(tmp_path / "on")
    assert not list(off.parent.parent.glob("codegen*.cpp"))
    assert (on.parent.parent / "codegen_device.cpp").is_file()
    # Codegen is recorded either way.
    assert read_manifest(off)["records"][-1]["name"] == "codegen_device"


def test_env_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("tilelang")
    monkeypatch.setenv("TL_LOWER_TRACE", "1")
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", str(tmp_path / "envdir"))
    tltrace.enable()
    s = tltrace.enabled()
    assert s is not None and s.mode == "html" and s.trace_dir == tmp_path / "envdir"
    assert s.working_files_enabled()


def test_create_pass_instrument_standalone(tl, make_add, tmp_path: Path) -> None:
    _, tvm, transform = tl
    mod = tvm.IRModule({"main": make_add(256, 64)})
    inst = tltrace.create_pass_instrument(mode="terminal", trace_dir=tmp_path, name="mine")
    with tvm.transform.PassContext(instruments=[inst]):
        tvm.transform.Sequential(
            [transform.Simplify(), tvm.tirx.transform.BindTarget(tvm.target.Target("c"))]
        )(mod)
    m = read_manifest(inst.last_run_dir)
    assert m["kernel"] == "mine" and m["status"] == "complete"
    by_name = {r["name"]: r for r in m["records"]}
    assert by_name["tirx.BindTarget"]["status"] == "changed" and by_name["tirx.BindTarget"].get("depth") == 1
    assert by_name["tirx.BindTarget"]["parent"] == by_name["sequential"]["index"]


@pytest.mark.parametrize(
    "kwargs", [{"context": -3}, {"keep": -5}, {"keep": "5"}, {"context": True}, {"trace_dir": 7}, {"mode": 3}]
)
def test_enable_validates_as_the_cli_does(kwargs, tmp_path: Path, run_cli) -> None:
    pytest.importorskip("tilelang")
    kwargs.setdefault("trace_dir", tmp_path)
    with pytest.raises((tltrace.errors.UsageError, TypeError)):
        tltrace.enable(**kwargs)
    assert tltrace.enabled() is None
    for flag in ("--keep", "--context"):
        if (
            flag[2:] in kwargs
            and isinstance(kwargs[flag[2:]], int)
            and not isinstance(kwargs[flag[2:]], bool)
        ):
            r = run_cli("run", flag, str(kwargs[flag[2:]]), "x.py")
            assert r.exit_code == 2 and r.stderr.startswith("tltrace: error: ")


def test_lower_trace_rejects_what_is_not_ir(tl) -> None:
    _, _, transform = tl
    with pytest.raises(TypeError, match="PrimFunc or an IRModule, not NoneType"):
        tltrace.lower_trace(None, transform.Simplify())
    with pytest.raises(TypeError, match="PrimFunc or an IRModule, not str"):
        tltrace.lower_trace("T.prim_func", transform.Simplify())


def test_lower_trace_rejects_what_is_not_a_pass(tl, make_add) -> None:
    with pytest.raises(TypeError, match="not NoneType"):
        tltrace.lower_trace(make_add(256, 64), [None])
    with pytest.raises(TypeError, match="step 'x'"):
        tltrace.lower_trace(make_add(256, 64), [("x", 3)])
    with pytest.raises(TypeError, match="context must be an int"):
        tltrace.lower_trace(make_add(256, 64), [], context="3")


def test_failed_step_names_its_error_type_once(tl, make_add, tmp_path: Path, capsys) -> None:
    _, tvm, _ = tl
    out = tmp_path / "r.html"
    with pytest.raises(Exception, match="target"):
        tltrace.lower_trace(
            make_add(256, 64), tvm.tirx.transform.AnnotateDeviceRegions(), mode="both", html_path=out
        )
    printed = capsys.readouterr().out
    assert "error:" in printed
    html = _page_data(out)
    assert "Error: " in html
    assert not any(
        f"{e}: {e}:" in html or f"{e}: {e}:" in printed
        for e in ("RuntimeError", "InternalError", "TVMError", "ValueError")
    )


def test_error_text_names_the_type_once() -> None:
    from tltrace.session.capture import error_text

    assert error_text(RuntimeError("RuntimeError: boom")) == "RuntimeError: boom"
    assert error_text(RuntimeError("boom")) == "RuntimeError: boom"
    assert error_text("ValueError: x") == "ValueError: x"
    assert error_text(ValueError()) == "ValueError"
    tb = "Traceback (most recent call last):\n  File x, line 1\nInternalError: Check failed: y"
    assert error_text(RuntimeError(tb)) == "RuntimeError: InternalError: Check failed: y"


def test_second_pipeline_in_one_session_is_run2(tl, make_add, tmp_path: Path) -> None:
    """Two lowerings inside one compile session: the second's passes are filed under run2_pipeline_c."""
    tilelang, tvm, _ = tl
    from tilelang.instrumentation import compile_pass_instrumentation, instrument_current_pass_context

    tltrace.enable(mode="terminal", trace_dir=tmp_path, quiet=True)
    with tvm.target.Target("c"), compile_pass_instrumentation(name="two"), instrument_current_pass_context():
        tilelang.lower(make_add(256, 128), target="c")
        tilelang.lower(make_add(512, 128), target="c")
    tltrace.disable()
    (run,) = runs_under(tmp_path)
    phases = [r["phase"] for r in read_manifest(run)["records"]]
    assert "pipeline_c" in phases and "run2_pipeline_c" in phases
    first_run2 = phases.index("run2_pipeline_c")
    assert "run2_pipeline_c" not in phases[:first_run2] and "pipeline_c" not in phases[first_run2:]


def test_unreadable_codegen_source_is_said() -> None:
    from tltrace.session.codegen import module_source

    class Broken:
        def inspect_source(self):
            raise RuntimeError("no source here")

    heard: list[str] = []
    assert module_source(Broken(), on_error=heard.append) == ""
    assert (
        len(heard) == 1 and "could not read the generated source" in heard[0] and "no source here" in heard[0]
    )


def test_a_finished_compile_keeps_no_session_alive(tl, make_add, tmp_path: Path) -> None:
    """TVM keeps each PassInstrument it was given (a cycle through C++ that Python's collector
    cannot see); a compile's records and IR must not stay with it once the compile has ended.
    Oracle: Python's own collector, asked which TraceSession objects are still alive."""
    import gc

    from tltrace.session.capture import TraceSession

    tilelang, _, _ = tl
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, TraceSession)}  # other tests' own
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "traces")
    for block in (128, 64, 32):
        tilelang.compile(make_add(256, block), **CPU)
    assert tltrace.flush()
    tltrace.disable()
    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, TraceSession) and id(o) not in before]
    assert alive == [], f"{len(alive)} compile sessions kept after their compiles ended"
