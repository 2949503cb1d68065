"""PATCHED is the promise that the edit ran: an edit that was not compiled is NOTE in every view.

A custom caller of TileLang's codegen seam whose build returns something that is not a TVM
module gets its build's result back untouched (the script asserts it: the oracle that the edit
did not run). The stream, the working-files list at the run's end, the record, `show` (the
list and the compile), `show --json` and the report's data then say NOTE, never PATCHED (#48).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

SCRIPT = '''
import sys
import tilelang.language as T
from tilelang import tvm
from tilelang.instrumentation import compile_pass_instrumentation, run_codegen_with_instrumentation


class Fake:
    """A build result that is no TVM module, but carries source as TileLang's modules do."""

    def __init__(self, text):
        self.text = text

    def inspect_source(self):
        return self.text


@T.prim_func
def add_one(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
    with T.Kernel(1, threads=1) as _bx:
        for i in T.serial(16):
            B[i] = A[i] + 1.0


mod = tvm.IRModule({"main": add_one})
print("SYMBOL", add_one.attrs["global_symbol"])
BASE = "int edited(void) {\\n  return 5;\\n}\\n"


def seam(build):
    with compile_pass_instrumentation(name="edit"):
        return run_codegen_with_instrumentation("target.build.tilelang_c", mod, None, build)


if sys.argv[1:] == ["first"]:
    seam(lambda: tvm.runtime._ffi_api.CSourceModuleCreate(BASE, "c", [], None))
elif sys.argv[1:] == ["real"]:
    built = tvm.runtime._ffi_api.CSourceModuleCreate(BASE, "c", [], None)
    print("HANDED BACK" if seam(lambda: built) is not built else "BUILD RESULT UNTOUCHED")
else:
    fake = Fake(BASE)
    assert seam(lambda: fake) is fake, "the build's own result must come back: the edit is not compiled"
    print("BUILD RESULT UNTOUCHED")
'''


def _data_chunks(report: Path) -> list[str]:
    from tltrace.render.pages import chunk_values, report_head

    raw = report.read_bytes()[len(report_head()) :]
    return [json.dumps(c) for c in chunk_values(raw) if c is not None]


@pytest.fixture
def noted(tmp_path, run_cli):
    """The seam script run twice under `--mode both`: once to make its working file, once, edited,
    through a build that returns no TVM module. Returns (the second run's result, the working file)."""
    script = tmp_path / "seam_note.py"
    script.write_text(SCRIPT)
    r = run_cli("run", "--mode", "both", script, "first")
    assert r.exit_code == 0, r.stdout + r.stderr
    (w,) = (tmp_path / "tmp" / "lower_trace_dir" / "seam_note").glob("codegen*.cpp")
    w.write_text(w.read_text().replace("return 5", "return 6"))
    r = run_cli("run", "--mode", "both", script)
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "BUILD RESULT UNTOUCHED" in r.stdout  # the oracle: the edit did not run
    return r, w


def test_an_edit_not_compiled_is_never_called_patched(noted, run_cli, tmp_path):
    r, w = noted
    assert "kept for the diff view but not compiled" in r.stdout
    assert "PATCHED" not in r.stdout + r.stderr
    listed = r.stdout.split("working files", 1)[1].splitlines()
    assert any(w.name in x and x.rstrip().endswith("NOTE") for x in listed), r.stdout

    runs = sorted((tmp_path / "tmp" / "lower_trace_dir" / "seam_note" / ".run_records").glob("run_*"))
    manifest = json.loads((runs[-1] / "manifest.json").read_text())
    assert [x.get("reconcile") for x in manifest["records"]] == ["NOTE"]
    chunks = _data_chunks(runs[-1] / "report.html")
    assert chunks and not [c for c in chunks if "PATCHED" in c]
    assert any('"NOTE"' in c for c in chunks)

    for args in (("seam_note",), ("seam_note", "-1"), ("seam_note", "--json"), ("seam_note", "-1", "--json")):
        s = run_cli("show", *args)
        assert s.exit_code == 0, s.stderr
        assert "PATCHED" not in s.stdout, (args, s.stdout)
        assert "NOTE" in s.stdout, (args, s.stdout)
    assert "not compiled" in run_cli("show", "seam_note", "-1").stdout  # its "edited:" line says so


def test_the_seams_compile_is_named_by_its_primfunc_and_its_hints_work(noted, run_cli):
    """A custom caller's compile has no name of its own: the stream names it by the PrimFunc's
    global_symbol (not its key in the IRModule, `main`), as the working file's notices do."""
    import shlex

    r, _ = noted
    symbol = re.search(r"^SYMBOL (\S+)$", r.stdout, re.M).group(1)
    stream = [x for x in r.stdout.splitlines() if x.startswith("[")]
    assert stream and all(x.startswith(f"[{symbol} 16") for x in stream), r.stdout
    hints = {h.split("  (", 1)[0] for h in re.findall(r"tltrace show .*$", r.stdout, re.M)}
    assert hints, r.stdout
    for hint in hints:
        s = run_cli(*shlex.split(hint)[1:])
        assert s.exit_code == 0, (hint, s.stderr)


def test_not_compiled_turns_a_patched_outcome_and_its_working_file_into_note(tmp_path):
    """The hand-back of a PATCHED edit failing after the decision: one call changes the outcome and
    the working file's status in the ledger (what the end-of-run list reads)."""
    from tltrace.reconcile import files
    from tltrace.reconcile.workflow import CodegenOutcome, Ledger, _Seen, not_compiled, working_files_held

    path = tmp_path / "codegen_device.cpp"
    ledger = Ledger()
    ledger.reconciled[path] = _Seen(files.WorkingFile(path, "k", "device", None), "x", None, None, "PATCHED")
    patched = CodegenOutcome("edit", "PATCHED", f"from {path}", path, origin=path)
    got = not_compiled(patched, "handing it back failed", ledger)
    assert (got.tag, got.origin) == ("NOTE", None)
    assert (
        got.message == f"edits in {path} are kept for the diff view but not compiled: handing it back failed"
    )
    assert [h.tag for h in working_files_held(ledger)] == ["NOTE"]
    other = CodegenOutcome("gen", "REGENERATED", "m", path)
    assert not_compiled(other, "why", ledger) is other


def test_an_edit_whose_hand_back_fails_is_note_not_patched(tmp_path, run_cli, monkeypatch):
    """The decision said PATCHED, then handing the edit back to the build failed (a fault injected
    into tltrace's own step): the build's result goes on, and every view says NOTE."""
    from tltrace.session import codegen

    script = tmp_path / "seam_note.py"
    script.write_text(SCRIPT)
    assert run_cli("run", "--mode", "both", script, "first").exit_code == 0
    (w,) = (tmp_path / "tmp" / "lower_trace_dir" / "seam_note").glob("codegen*.cpp")
    w.write_text(w.read_text().replace("return 5", "return 6"))
    r = run_cli("run", "--mode", "both", script, "real")  # unbroken: the edit is handed back
    assert "HANDED BACK" in r.stdout and "PATCHED" in r.stdout, r.stdout

    def broken(*args, **kwargs):
        raise OSError("no room for the module")

    monkeypatch.setattr(codegen, "source_module", broken)
    r = run_cli("run", "--mode", "both", script, "real")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "BUILD RESULT UNTOUCHED" in r.stdout  # the oracle: the edit did not run
    assert "PATCHED" not in r.stdout + r.stderr, r.stdout
    assert "not compiled: handing it back failed (OSError: no room for the module)" in r.stdout
    listed = r.stdout.split("working files", 1)[1].splitlines()
    assert any(w.name in x and x.rstrip().endswith("NOTE") for x in listed), r.stdout
    runs = sorted((tmp_path / "tmp" / "lower_trace_dir" / "seam_note" / ".run_records").glob("run_*"))
    manifest = json.loads((runs[-1] / "manifest.json").read_text())
    assert [x.get("reconcile") for x in manifest["records"]] == ["NOTE"]
