"""Custom callers of TileLang's codegen seam never crash a traced process (issue 33).

`run_codegen_with_instrumentation(name, mod, target, build)` is public: a caller may pass a None
target, a stand-in module, a build of its own. tltrace used to call the codegen FFI a second time
with the event's module and target for the source map, and `target.build.tilelang_c(mod, None)`
dies with SIGSEGV in native code. tests/seam_child.py runs those calls in a child process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.compile

REPO = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).with_name("seam_child.py")


def _child(trace_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["TILELANG_DISABLE_CACHE"] = "1"
    env.pop("PYTHONFAULTHANDLER", None)
    p = subprocess.run(
        [sys.executable, str(CHILD), str(trace_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if p.returncode < 0:
        name = signal.Signals(-p.returncode).name
        pytest.fail(
            f"the traced process died of {name}; its last output:\n{p.stdout[-3000:]}{p.stderr[-3000:]}"
        )
    assert p.returncode == 0 and "ALL OK" in p.stdout, p.stdout[-3000:] + p.stderr[-5000:]
    return p


def _after_map(run_dir: Path) -> str | None:
    """The source-map hash of the run's (one) device codegen record's generated source."""
    from tltrace.history import sourcemaps as sms

    manifest = json.loads((run_dir / "manifest.json").read_text())
    (rec,) = [r for r in manifest["records"] if r["name"] == "codegen_device"]
    return sms.load(run_dir).records.get(rec["index"], (None, None))[1]


def test_custom_callers_get_what_their_build_returned(tmp_path):
    """Every case in the child: the process lives and each caller gets its build's result or the edit."""
    p = _child(tmp_path / "trace")
    # A worker's stream output may come between the child's lines (compiles return before their
    # records): each case is one write of its own line, found wherever it lands.
    said = [ln[ln.index("ok ") + 3 :] for ln in p.stdout.splitlines() if "ok " in ln]
    for case in (
        "target None, target.build.tilelang_c",
        "a MagicMock module, target None",
        "an FFI name that does not exist",
        "a build returning None",
        "two threads sharing one working file",
        "an edit through target.build.tilelang_c",
        "an edit, a build returning a non-TVM object",
    ):
        assert case in said, case
    assert "Traceback" not in p.stderr and "tracing stopped" not in p.stderr + p.stdout, p.stderr[-3000:]
    # The source map is made for TileLang's own codegen (its compile, or its wrapper called by
    # a custom caller), and never for a build of the caller's own, even one calling the same FFI.
    runs = {ln.split()[1]: Path(ln.split()[2]) for ln in p.stdout.splitlines() if ln.startswith("run ")}
    assert _after_map(runs["lowered"]) is not None
    assert _after_map(runs["wrapper"]) is not None
    assert _after_map(runs["ffi_as_custom"]) is None


def test_threads_and_edit_with_sync(tmp_path):
    """The same seam calls with --sync (records written on the compiling threads)."""
    p = _child(tmp_path / "trace", "sync", "threads", "edit", "none_targets")
    assert "ok two threads sharing one working file" in p.stdout
    assert "ok an edit through target.build.tilelang_c" in p.stdout


def test_the_allow_list_names_tilelangs_own_codegens():
    """Every FFI the source map may call again is registered by this TileLang, and source-only."""
    import tilelang  # noqa: F401  (registers the codegens)
    import tvm_ffi

    from tltrace.session import native

    for event_ffi, rerun in native.SOURCE_CODEGENS.items():
        assert rerun == event_ffi or rerun == event_ffi + "_without_compile", event_ffi
        assert rerun.endswith("_without_compile") or rerun.startswith("target.build.tilelang_c")
        registered = tvm_ffi.get_global_func(rerun, allow_missing=True) is not None
        assert registered or "ascend" in rerun, rerun  # TileLang 0.1.14 has no Ascend codegen
    assert native.source_codegen("target.build.llvm") is None
    assert native.source_codegen("target.build.no_such_codegen") is None


def test_only_tilelangs_own_build_of_the_event_may_be_rerun():
    """may_rerun_codegen: TileLang's wrapper with the event's module and a real Target; nothing else."""
    from tilelang import tvm
    from tilelang.backend.device_codegen import global_func_device_codegen
    from tilelang.instrumentation import (
        PassInstrumentationTool,
        compile_pass_instrumentation,
        run_codegen_with_instrumentation,
    )

    from tltrace.session import native

    seen: list[str | None] = []

    class Ask(PassInstrumentationTool):
        def run_codegen(self, event, next_call):
            seen.append(native.may_rerun_codegen(event, next_call))
            return "not run"  # the codegen itself is not needed to answer

    mod, target = tvm.IRModule(), tvm.target.Target("c")
    with compile_pass_instrumentation(
        name="ask", tools=[Ask()], include_default_tools=False, reuse_existing=False
    ):
        global_func_device_codegen("target.build.tilelang_c")(mod, target)  # TileLang's own
        global_func_device_codegen("target.build.tilelang_cuda")(mod, target)  # its twin is called
        global_func_device_codegen("target.build.tilelang_c")(mod, None)  # no Target
        global_func_device_codegen("target.build.llvm")(mod, target)  # not a source-only codegen
        run_codegen_with_instrumentation("target.build.tilelang_c", mod, target, lambda: None)  # custom
        # A custom build holding the same names as TileLang's lambda is still not TileLang's code.
        global_func_name = "target.build.tilelang_c"
        run_codegen_with_instrumentation(
            global_func_name, mod, target, lambda: (global_func_name, mod, target)
        )
    assert seen == [
        "target.build.tilelang_c",
        "target.build.tilelang_cuda_without_compile",
        None,
        None,
        None,
        None,
    ]
