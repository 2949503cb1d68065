"""Capture engine on real CPU compiles: every pass once, in order, with phase, nesting, texts on disk."""

from __future__ import annotations

import importlib.metadata
import os
import sys
import threading
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.format import pack
from tltrace.history.loading import load_manifest
from tltrace.history.texts import text_of
from tltrace.runner import Target, run_target
from tltrace.session.events import PassRecorded
from tltrace.session.store import RunStore

from ._kernels import compile_add as _compile_add
from ._observer import observe
from ._records import manifests as _manifests
from .conftest import EXAMPLES


@pytest.fixture(scope="module")
def gemm_trace(tmp_path_factory):
    """One traced compile of examples/gemm.py, with an independent observer beside it."""
    tmp = tmp_path_factory.mktemp("gemm")
    settings = Settings(
        mode="terminal", trace_dir=tmp, script_name="gemm", quiet=True, command=("tltrace", "run", "gemm.py")
    )
    events: list = []
    import tilelang  # noqa: F401

    with observe() as ref:
        code = run_target(Target(str(EXAMPLES / "gemm.py")), settings, events.append)
    assert code == 0
    (manifest,) = _manifests(tmp / "gemm")
    run_dir = tmp / "gemm" / ".run_records" / manifest.run_id
    return manifest, run_dir, events, ref


def test_manifest_header(gemm_trace):
    manifest, run_dir, _, _ = gemm_trace
    assert manifest.status == "complete"
    assert manifest.kernel == "gemm"
    assert manifest.target == "c"
    assert manifest.backend == "cython"
    assert manifest.tilelang_version == importlib.metadata.version("tilelang")
    assert manifest.command == ["tltrace", "run", "gemm.py"]
    assert manifest.run_id.startswith("run_") and manifest.run_id.split("_")[4] == str(os.getpid())


def test_every_pass_once_in_order(gemm_trace):
    manifest, _, _, reference = gemm_trace
    passes = [r for r in manifest.records if r.phase != "codegen"]
    assert [r.index for r in manifest.records] == list(range(len(manifest.records)))
    # Same passes, same order, same nesting, same phase as an independent observer saw them.
    assert len(passes) == len(reference.passes)
    for rec, (name, depth, phase) in zip(passes, reference.passes):
        assert (rec.depth, rec.phase) == (depth, phase)
        assert name.endswith(rec.name.split("@")[0]) or rec.name.startswith("pass_fn")


def test_phases_and_codegen(gemm_trace):
    manifest, run_dir, _, reference = gemm_trace
    phases = {r.phase for r in manifest.records}
    assert phases == {phase for _, _, phase in reference.passes} | {"codegen"}
    # The tile-op lowering (TileLang's own pass, named by its API) runs inside a pipeline and changes the IR.
    from tilelang.transform import LowerTileOp

    lower = {r.name: r for r in manifest.records}[LowerTileOp.__name__]
    assert lower.phase.startswith("pipeline_") and lower.status == "changed"
    cg = manifest.records[-1]
    assert (cg.name, cg.phase, cg.role, cg.status) == ("codegen_device", "codegen", "device", "codegen")
    assert [cg.ffi] == reference.codegen  # the TVM function TileLang's codegen called, as TileLang named it
    assert cg.after_file == f"codegen/{cg.index:02d}_codegen_device_after.cpp"
    src = text_of(run_dir, cg, "after")
    assert src is not None and "gemm_kernel" in src and "#include" in src


def test_nesting_has_parents(gemm_trace):
    manifest, _, _, _ = gemm_trace
    by_index = {r.index: r for r in manifest.records}
    nested = [r for r in manifest.records if r.depth > 0]
    assert nested, "HoistIfThenElse and SplitHostDevice run nested passes"
    for r in nested:
        parent = by_index[r.parent]
        assert parent.depth == r.depth - 1 and parent.index < r.index


def test_texts_chain_and_are_stored_once(gemm_trace):
    manifest, run_dir, _, reference = gemm_trace
    pipeline = next(phase for _, _, phase in reference.passes if phase.startswith("pipeline_"))  # TileLang's
    top = [r for r in manifest.records if r.phase == pipeline and r.depth == 0]
    assert len(top) > 1
    for prev, cur in zip(top, top[1:]):
        assert cur.before_hash == prev.after_hash, (prev.name, cur.name)
    noop = next(r for r in manifest.records if r.status == "noop")
    assert noop.before_hash == noop.after_hash
    assert text_of(run_dir, noop, "before") == text_of(run_dir, noop, "after")
    assert not list(run_dir.rglob("*.tir"))  # no file per text: one pack
    data = (run_dir / pack.PACK).read_bytes()
    stored = pack.parse(data)
    named = [h for r in manifest.records for h in (r.before_hash, r.after_hash) if h]
    assert set(named) <= set(stored.entries)  # (and the Python sources the maps name)
    whole = len(pack.MAGIC) + sum(
        len(pack.entry(h, bytes(n), base=stored.bases.get(h))) for h, (_, n) in stored.index.items()
    )
    assert whole == len(data)  # each distinct text once: no entry twice
    total = sum(
        len((text_of(run_dir, r, s) or "").encode()) for r in manifest.records for s in ("before", "after")
    )
    assert sum(n for _, n in stored.index.values()) < 0.5 * total


def test_events_carry_texts(gemm_trace):
    manifest, _, events, _ = gemm_trace
    recorded = [e for e in events if isinstance(e, PassRecorded)]
    assert len(recorded) == len(manifest.records)
    changed = next(e for e in recorded if e.record.status == "changed")
    assert changed.before != changed.after
    # --quiet: no live view shows the +/- counts, so capture leaves them to the reader
    # (history/derived.py), who counts them from the stored texts.
    assert changed.record.added is None and changed.record.removed is None
    (read,) = [
        r for r in load_manifest(gemm_trace[1], derive=True).records if r.index == changed.record.index
    ]
    assert read.added + read.removed > 0


def test_two_threads_two_clean_runs(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import tilelang
        from elementwise_add import make_add
        from softmax import make_softmax
    finally:
        sys.path.remove(str(EXAMPLES))
    from tltrace.session import controller

    settings = Settings(mode="terminal", trace_dir=tmp_path, script_name="threads", quiet=True)
    controller.install(settings, lambda e: None)
    errors: list[BaseException] = []

    def compile_one(func):
        try:
            tilelang.compile(func, target="c", execution_backend="cython")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    try:
        threads = [
            threading.Thread(target=compile_one, args=(f,))
            for f in (make_add(512, 64), make_softmax(32, 16, 4))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        controller.uninstall()
    assert not errors
    manifests = _manifests(tmp_path / "threads")
    assert sorted(m.kernel for m in manifests) == ["add", "softmax"]
    for m in manifests:
        assert [r.index for r in m.records] == list(range(len(m.records)))
        run_dir = tmp_path / "threads" / ".run_records" / m.run_id
        src = text_of(run_dir, m.records[-1], "after") or ""
        other = "softmax" if m.kernel == "add" else "add_kernel"
        assert f"{m.kernel}_kernel" in src and other not in src


def test_record_paths_cannot_escape(tmp_path):
    store = RunStore(tmp_path / "s")
    store.open()
    for phase, name in [
        ("../../..", "../../etc/passwd"),
        ("/abs", "a/b\\c"),
        ("pipeline_c", "<img onerror=x>"),
        ("", ""),
        ("..", ".."),
    ]:
        rel = store.record_path(phase, 3, name, "before")
        store.write_plain(rel, "text")
        dest = (store.run_dir / rel).resolve()
        assert dest.is_relative_to(store.run_dir.resolve()), rel
        assert len(Path(rel).parts) == 2


def test_keep_newest_runs(run_cli, examples_dir, tmp_path):
    for _ in range(3):
        r = run_cli(
            "run",
            "--quiet",
            "--keep",
            "2",
            "--trace-dir",
            tmp_path / "tr",
            examples_dir / "elementwise_add.py",
            "--n",
            "256",
        )
        assert r.exit_code == 0, r.stderr
    runs = sorted((tmp_path / "tr" / "elementwise_add" / ".run_records").glob("run_*"))
    assert len(runs) == 2
    # Stored texts of the pruned run are gone unless another run still links them.
    objects = list((tmp_path / "tr" / "elementwise_add" / ".run_records" / ".objects").rglob("*"))
    assert all(p.is_dir() or p.stat().st_nlink > 1 for p in objects)


def _traced(tmp_path, listener):
    from tltrace.session import controller

    settings = Settings(mode="terminal", trace_dir=tmp_path, script_name="fail", quiet=True)
    controller.install(settings, listener)
    try:
        return _compile_add()
    finally:
        controller.uninstall()


def test_failing_listener_is_one_warning(tmp_path, capsys):
    """No listener can say it, so the core says it once through Python's warnings (it never prints)."""
    from tltrace.session.events import TltraceWarning

    def listener(event):
        if isinstance(event, PassRecorded):
            raise RuntimeError("terminal went away")

    with pytest.warns(TltraceWarning) as caught:
        kernel = _traced(tmp_path, listener)
    assert kernel is not None
    said = [str(w.message) for w in caught if issubclass(w.category, TltraceWarning)]
    assert len(said) == 1 and said[0].startswith("tltrace: could not show an event")
    assert "terminal went away" in said[0]
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (m,) = _manifests(tmp_path / "fail")
    _traced(tmp_path / "quiet", lambda event: None)  # the same compile with a listener that works
    (reference,) = _manifests(tmp_path / "quiet" / "fail")
    assert m.status == "complete" and len(m.records) == len(reference.records) > 0


def test_store_failure_is_one_warning_and_compile_goes_on(tmp_path):
    from tltrace.session.events import Notice, RunStarted

    notices = []

    def listener(event):
        if isinstance(event, RunStarted):
            # Sabotage: a directory where the stored texts should go (as a full disk would fail a write).
            (event.run_dir / pack.PACK).mkdir(parents=True)
        if isinstance(event, Notice):
            notices.append(event)

    kernel = _traced(tmp_path, listener)
    import torch

    a, b, c = torch.ones(256), torch.ones(256), torch.zeros(256)
    kernel(a, b, c)
    assert torch.equal(c, a + b)
    warnings = [n for n in notices if n.kind == "warning"]
    assert len(warnings) == 1
    assert warnings[0].message.startswith("tracing stopped for this kernel:")


def test_terminal_prints_nested_passes_under_their_parent(gemm_trace):
    """Nested passes finish before their parent; the stream still shows the parent first, in start order."""
    import io

    from rich.console import Console

    from tltrace.render.terminal import TerminalView
    from tltrace.session.events import RunFinished

    manifest, run_dir, events, _ = gemm_trace
    assert any(r.depth > 0 for r in manifest.records)
    buf = io.StringIO()
    view = TerminalView(
        Settings(mode="terminal", trace_dir=run_dir, quiet=False, all_passes=True),
        console=Console(file=buf, width=200, color_system=None),
    )
    for e in events:
        view(e)
    rest = [line.split("] ", 1)[1] for line in buf.getvalue().splitlines() if line.startswith("[gemm")]
    shown = [r.split()[0] for r in rest if "/" in r.split()[0]]
    assert [int(s.split("/")[1]) for s in shown] == list(range(len(manifest.records)))
    # The compile finishes, then its invocation.
    from tltrace.session.events import InvocationFinished

    assert isinstance(events[-2], RunFinished) and isinstance(events[-1], InvocationFinished)
    assert events[-1].runs == (events[-2].manifest,)


def test_summary_says_interrupted_on_ctrl_c(gemm_trace):
    from dataclasses import replace

    from tltrace.render.terminal import summary_line

    manifest, run_dir, _, _ = gemm_trace
    assert "done: " in summary_line(manifest, run_dir).plain
    stopped = replace(manifest, status="error", error="KeyboardInterrupt")
    assert "interrupted: " in summary_line(stopped, run_dir).plain
    failed = replace(manifest, status="error", error="InternalError: layout")
    assert "compile failed: " in summary_line(failed, run_dir).plain


def test_closed_stdout_pipe_does_not_break_the_stream(gemm_trace, monkeypatch):
    """`tltrace run x.py | head`: once the reader is gone, output is dropped; no SystemExit in a pass callback."""
    from tltrace.render import terminal

    class Closed:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    redirected = []
    monkeypatch.setattr(terminal.os, "dup2", lambda a, b: redirected.append(b))
    manifest, run_dir, events, _ = gemm_trace
    console = terminal._StreamConsole(file=Closed(), width=120)
    view = terminal.TerminalView(Settings(mode="terminal", trace_dir=run_dir, quiet=False), console=console)
    for e in events:
        view(e)  # raises nothing
    assert console.quiet and redirected


def test_text_of_reuses_a_text_only_when_nothing_in_the_module_is_new(tmp_path) -> None:
    """A print is skipped (the very same text object comes back) for the same module, the same
    function map, or the same functions and attributes; new attributes or a new function are
    printed again."""
    import tilelang.language as T
    from tilelang import tvm

    from tltrace.session.capture import TraceSession

    @T.prim_func
    def add(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as _:
            for i in T.Parallel(16):
                B[i] = A[i] + 1.0

    s = TraceSession(Settings(trace_dir=tmp_path, script_name="t", quiet=True), lambda e: None)
    mod = tvm.IRModule({"main": add})
    first = s.text_of(mod)
    assert "def main" in first
    assert s.text_of(mod) is first  # the same module
    assert s.text_of(mod.clone()) is first  # a new module sharing the function map
    gv = mod.get_global_var("main")
    new_map = mod.clone()
    new_map.update_func(gv, mod[gv])  # a new map holding the same function
    assert not new_map.functions.same_as(mod.functions)
    assert s.text_of(new_map) is first
    # What Simplify does to code it cannot simplify: a new function object around the very same
    # fields (params, body, buffer map, attrs): not printed again
    with tvm.target.Target("c"):
        rebuilt = tvm.tirx.transform.Simplify()(mod)
    assert not rebuilt["main"].same_as(mod["main"])
    assert rebuilt["main"].body.same_as(mod["main"].body)
    assert s.text_of(rebuilt) is first
    # a new body object (structurally the same: still printed, never assumed equal)
    new_body = mod.clone()
    new_body.update_func(gv, mod[gv].with_body(tvm.tirx.SeqStmt([mod[gv].body, tvm.tirx.Evaluate(0)])))
    body_text = s.text_of(new_body)
    assert body_text is not first and body_text == str(new_body)

    @T.prim_func
    def add_j(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=16) as _:
            for j in T.Parallel(16):
                B[j] = A[j] + 1.0

    # the same function but for a variable's name (structurally equal): printed again
    assert tvm.ir.structural_equal(add_j.with_attrs(mod[gv].attrs), mod[gv])
    renamed_var = mod.clone()
    renamed_var.update_func(gv, add_j.with_attrs(mod[gv].attrs))
    s.text_of(mod)
    renamed_text = s.text_of(renamed_var)
    assert renamed_text == str(renamed_var) and "B[j]" in renamed_text and renamed_text != first
    with_attr = mod.with_attr("tl.note", "x")
    text = s.text_of(with_attr)
    assert text is not first and "tl.note" in text and text == str(with_attr)
    renamed = with_attr.clone()
    renamed.update_func(gv, mod[gv].with_attr("global_symbol", "other"))
    again = s.text_of(renamed)
    assert again is not text and again == str(renamed) and '"other"' in again
    # A pass that updates its input module in place (mod->Update, as AnnotateEntryFunc does)
    # and returns the same object: the module is the same, its text is not.
    renamed.update_func(gv, mod[gv].with_attr("global_symbol", "in_place"))
    updated = s.text_of(renamed)
    assert updated == str(renamed) and '"in_place"' in updated and updated != again
