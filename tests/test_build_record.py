"""The backend build as the record keeps it (issue 32, items 3 and 4), over real CPU compiles and real edits.

A typo in an edited working file fails the backend build (g++): its errors are on the compile
(the manifest's `build`, at the working file's lines), in `show`, `show --json`, the summary
line, the report and the watch summary. A compiled edit keeps the source TileLang generated:
the report labels its panes truthfully and draws the edit against it; a bundle carries it and
replay says the recording was PATCHED.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests._cli import cli_proc
from tests._kernels import op_line, op_of, swap_op
from tests._records import rec_text
from tests._schema import validator
from tltrace.format import build as fb
from tltrace.format.records import RunManifest
from tltrace.history.texts import stored_text
from tltrace.reconcile.build import errors_first, parse_diagnostics, parse_failed_build, rebuild

NOTE = "  // my edit"  # an edit that keeps the result (a wrong result would fail the run)
TYPO = " this is not C"


def _tltrace(cwd: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, timeout=timeout, COLUMNS="200")


def _newest(script_dir: Path) -> Path:
    return sorted((script_dir / ".run_records").glob("run_*"))[-1]


@pytest.fixture(scope="module")
def edits(tmp_path_factory):
    """Three runs of one kernel: as generated, with an edit that builds (PATCHED), with a typo in it."""
    root = tmp_path_factory.mktemp("build")
    examples = Path(__file__).resolve().parent.parent / "examples"
    script = examples / "elementwise_add.py"
    d = root / "tmp" / "lower_trace_dir" / "elementwise_add"
    w = d / "codegen_device.cpp"
    run = ("run", "-q", "--mode", "both", str(script), "--n", "512")
    out = {"root": root, "script": script, "dir": d, "working": w}
    p = _tltrace(root, *run)
    assert p.returncode == 0, p.stdout + p.stderr
    out["plain"] = _newest(d)
    generated = w.read_text()
    noted = generated.split("\n")
    noted[op_line(generated)] += NOTE
    w.write_text("\n".join(noted))
    p = _tltrace(root, *run)
    assert p.returncode == 0 and "PATCHED" in p.stdout, p.stdout + p.stderr
    out["patched"] = _newest(d)
    lines = w.read_text().splitlines()
    n = next(i for i, x in enumerate(lines, 1) if NOTE in x)
    lines[n - 1] = swap_op(lines[n - 1], "+" + TYPO)
    w.write_text("\n".join(lines) + "\n")
    p = _tltrace(root, *run)
    assert p.returncode != 0, p.stdout + p.stderr
    out.update(failed=_newest(d), line=n, generated=generated, stdout=p.stdout, stderr=p.stderr)
    return out


def _manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def test_a_typo_in_an_edit_is_a_failed_build_with_its_errors_at_the_working_files_line(edits):
    m = _manifest(edits["failed"])
    b = m["build"]
    assert m["status"] == "error" and not [r for r in m["records"] if r["status"] == "failed"]
    assert b["status"] == "failed" and b["compiler"] == "g++"
    errs = [d for d in b["diagnostics"] if d["severity"] == "error"]
    assert errs and b["diagnostics"][: len(errs)] == errs  # errors first
    assert {(d["file"], d["line"]) for d in errs} == {(str(edits["working"]), edits["line"])}
    assert isinstance(errs[0]["column"], int) and TYPO.split()[0] in b["log"]
    # the log names the working file, never the temporary copy g++ was given
    assert "/tmp/tmp" not in b["log"] and str(edits["working"]) in b["log"].splitlines()[0]
    # the summary line says the build failed, a stage of its own (no pass failed)
    summary = [x for x in edits["stdout"].splitlines() if x.startswith("[add 512] ")][-1]
    assert summary.startswith(f"[add 512] build failed (g++, {len(errs)} error"), summary
    assert "0 failed" in summary  # no pass failed: the build did


def test_show_and_its_json_keep_the_build_errors(edits):
    root, d = edits["root"], edits["dir"]
    at = f"{edits['working']}:{edits['line']}:"
    p = _tltrace(root, "show", str(d), "-1")
    assert p.returncode == 0, p.stderr
    assert "build failed (g++, " in p.stdout and at in p.stdout, p.stdout
    p = _tltrace(root, "show", str(d), "-1", "--json")
    data = json.loads(p.stdout)
    validator("run").validate(data)
    assert data["build"]["diagnostics"][0]["file"] == str(edits["working"])
    p = _tltrace(root, "show", str(d), "--json")
    rows = {r["run_id"]: r for r in json.loads(p.stdout)["runs"]}
    row = rows[edits["failed"].name]
    assert row["failed_at"] == "build (g++)" and row["error"].startswith(at), row
    assert rows[edits["plain"].name]["failed_at"] is None


def test_a_compiled_edit_keeps_the_generated_source_beside_it(edits):
    plain, patched = _manifest(edits["plain"]), _manifest(edits["patched"])
    assert plain["build"] is None  # built as generated: nothing to say
    (e,) = patched["build"]["edits"]
    rec = next(r for r in patched["records"] if r["index"] == e["record"])
    assert rec["reconcile"] == "PATCHED" and e["working_file"] == rec["working_file"]
    generated = stored_text(edits["patched"], e["generated_file"], e["generated_hash"])
    assert generated == edits["generated"] and (e["added"], e["removed"]) == (1, 1) and e["compiled"] is True
    assert NOTE in rec_text(edits["patched"], rec)  # the record's after: what was compiled
    assert "status" not in patched["build"]  # it built


def test_bundle_carries_the_edit_and_replay_says_patched(edits):
    root = edits["root"]
    out = root / "patched.zip"
    p = _tltrace(root, "bundle", str(edits["dir"]), edits["patched"].name, "-o", str(out))
    assert p.returncode == 0, p.stderr
    import zipfile

    e = _manifest(edits["patched"])["build"]["edits"][0]
    with zipfile.ZipFile(out) as zf:
        assert zf.read(f"texts/{e['generated_hash']}").decode() == edits["generated"]
    p = _tltrace(root, "replay", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(
        "add 512: recorded PATCHED: codegen_device compiled the user's edit of codegen_device.cpp"
    )
    assert "+1 -1" in lines[0] and lines[1].startswith("add 512: same: "), p.stdout


@pytest.mark.browser
def test_the_report_says_the_build_failed_and_shows_the_edit_against_the_generated(edits, open_page):
    from tests.conftest import wait_js

    page = open_page(edits["failed"] / "report.html")
    box = page.locator("#tl-runerror")
    assert box.locator("b").inner_text().startswith("Build failed (g++, ")
    assert box.locator(".msg").inner_text().startswith(f"{edits['working']}:{edits['line']}:")
    page.click(".tl-runerror-more")
    full = page.locator(".tl-runerror-full").inner_text()
    assert f"{edits['working']}:{edits['line']}:" in full and "error:" in full.split("Compilation Failed")[0]

    page = open_page(edits["patched"] / "report.html", "#codegen_device")
    wait_js(page, "document.querySelector('.tl-editdiff table')")
    titles = page.locator(".tl-pane h3").all_inner_texts()
    assert titles[1] == "Compiled device source (after): your edit of codegen_device.cpp", titles
    rows = page.locator(".tl-editdiff tr:has(td.del), .tl-editdiff tr:has(td.add)").all_inner_texts()
    assert len(rows) == 1 and op_of(rows[0]) == "+" and rows[0].count(NOTE.strip()) == 1, (
        rows
    )  # one line changed
    assert "PATCHED" in page.locator(".tl-edited").inner_text()

    page = open_page(edits["plain"] / "report.html", "#codegen_device")
    wait_js(page, "document.querySelectorAll('.tl-pane h3').length === 2")
    assert page.locator(".tl-pane h3").all_inner_texts()[1] == "Generated device source (after)"
    assert page.locator(".tl-editdiff").count() == 0


# -- the pure parts, and a real g++ on a small file (no TileLang) ----------------------------------------------

MESSAGE = (
    "RuntimeError: Compilation Failed! ['g++', '-std=c++17', '-fPIC', '-shared', '/tmp/tmpab12.cpp', "
    "'-I/x', '-o', '/tmp/tmpab12.so']\n\n"
    '#line 1 "/w/codegen_device.cpp"\nint f() { return 0 }\n'
)


def test_the_build_error_message_gives_back_its_command_and_source():
    f = parse_failed_build(MESSAGE)
    assert f is not None and f.command[0] == "g++" and f.command[-1] == "/tmp/tmpab12.so"
    assert f.captured == "" and f.code.startswith('#line 1 "/w/codegen_device.cpp"\n')
    assert parse_failed_build("RuntimeError: something else") is None
    assert parse_failed_build("Compilation Failed! not a list\n\nx") is None
    piped = parse_failed_build("Compilation Failed! ['hipcc', 'a.cpp']\na.cpp:3:1: error: no\n\ncode")
    assert piped is not None and "error: no" in piped.captured and piped.code == ""


def test_diagnostics_of_gcc_and_nvcc_forms_errors_first():
    log = (
        "/w/k.cpp: In function 'int f()':\n"
        "/w/k.cpp:3:5: warning: unused x\n"
        "   3 | int x;\n"
        "/w/k.cpp:4:9: error: expected ';'\n"
        "    4 | return 0 }\n"
        '/w/k.cu(7): error: identifier "y" is undefined\n'
    )
    diags = parse_diagnostics(log)
    assert [(d["line"], d["column"], d["severity"]) for d in diags] == [
        (3, 5, "warning"),
        (4, 9, "error"),
        (7, None, "error"),
    ]
    ordered = errors_first(log).splitlines()
    assert ordered[0] == "/w/k.cpp: In function 'int f()':" and ordered[1].startswith("/w/k.cpp:4:9: error")
    assert ordered.index('/w/k.cu(7): error: identifier "y" is undefined') < ordered.index(
        "/w/k.cpp:3:5: warning: unused x"
    )


def test_rebuild_reads_gccs_errors_and_never_touches_the_named_files(tmp_path):
    code = '#line 1 "/w/codegen_device.cpp"\nint f() { return 0 }\n'
    src, lib = tmp_path / "tmpzz.cpp", tmp_path / "tmpzz.so"
    f = parse_failed_build(
        f"Compilation Failed! {['g++', '-fPIC', '-shared', str(src), '-o', str(lib)]!r}\n\n{code}"
    )
    log, why, copy = rebuild(f)
    assert why == "" and copy is not None and not src.exists() and not lib.exists()
    (d,) = [x for x in parse_diagnostics(log) if x["severity"] == "error"]
    assert (d["file"], d["line"]) == ("/w/codegen_device.cpp", 1)
    ok = parse_failed_build(
        f"Compilation Failed! {['g++', '-fsyntax-only', str(src), '-o', str(lib)]!r}\n\nint g();\n"
    )
    assert rebuild(ok)[:2] == (None, "it built when rebuilt")
    nowhere = parse_failed_build("Compilation Failed! ['g++', 'a.cpp']\n\nint g();\n")
    assert rebuild(nowhere)[0] is None


def test_the_build_field_read_back():
    b = {
        "version": 1,
        "status": "failed",
        "compiler": "g++",
        "diagnostics": [
            {"file": "/w/k.cpp", "line": 4, "column": 9, "severity": "error", "message": "expected ';'"},
            {"file": "/w/k.cpp", "line": 3, "column": None, "severity": "warning", "message": "unused"},
        ],
    }
    m = RunManifest("run_x", "s", build=b)
    assert fb.failed(fb.of(m)) and fb.headline(b) == "build failed (g++, 1 error)"
    assert fb.error_lines(b) == ["/w/k.cpp:4:9: error: expected ';'"]
    assert fb.error_lines({"status": "failed", "why": "rebuilding took over 60s"}) == [
        "(the backend's compiler's diagnostics not recorded: rebuilding took over 60s)"
    ]
    assert not fb.failed(None) and fb.edits({"edits": [{"record": "x"}]}) == []
    assert RunManifest.from_json(json.loads(m.dumps())).build == b


def test_the_summary_line_names_the_build_stage():
    from tltrace.render.terminal import summary_line

    b = {"version": 1, "status": "failed", "compiler": "g++", "diagnostics": []}
    m = RunManifest(
        "run_x", "s", kernel="add", status="error", error="RuntimeError: Compilation Failed! [...]", build=b
    )
    line = summary_line(m, Path("/nowhere"), label="add 512").plain
    assert line.startswith("[add 512] build failed (g++): 0 passes, 0 changed, 0 failed, 0 codegen"), line


def test_a_generated_source_that_fails_is_named_at_its_working_file(tmp_path):
    """No edit, no `#line`: g++ names its temporary copy; the errors are moved to the working file's lines."""
    from tltrace.format.records import CODEGEN, PassRecord
    from tltrace.reconcile.build import BuildRecorder
    from tltrace.session.recorder import CodegenCall, PassEvent
    from tltrace.session.store import RunStore

    code = "int f() {\n  return 0\n}\n"
    w = tmp_path / "codegen_device.cpp"
    w.write_text(code)
    store = RunStore(tmp_path / "script")
    store.open()
    r = BuildRecorder()
    r.attach(store)
    call = CodegenCall("target.build.tilelang_c", None, "c", None, code, code, str(w))
    r.codegen(PassEvent(None, "codegen_device", "codegen", codegen=True, role="device"), call)
    rec = PassRecord(
        5, "codegen_device", "codegen", status=CODEGEN, after_file="codegen/5_codegen_device_after.cpp"
    )
    r.recorded(rec, "tir", code, (None, None))
    src, lib = tmp_path / "tmpq.cpp", tmp_path / "tmpq.so"
    cmd = ["g++", "-fPIC", "-shared", str(src), "-o", str(lib)]
    error = f"RuntimeError: Compilation Failed! {cmd!r}\n\n{code}\nint call() {{ return f(); }}"
    r.ended(RunManifest("run_x", "s", status="error", error=error, records=(rec,)))
    b = r.value()
    assert b["status"] == "failed" and "edits" not in b
    (d,) = [x for x in b["diagnostics"] if x["severity"] == "error"]
    assert (d["file"], d["line"]) == (str(w), 2) and "source.cpp" not in b["log"], b


def test_an_nvrtc_failure_with_its_log_is_a_failed_build_at_the_working_files_line():
    """TileLang's nvrtc message (tests/test_edit_nvrtc.py builds it the same way) with a verbose log: no child."""
    from tests.test_edit_nvrtc import OPTIONS, WORKING, injected, nvrtc_log, tilelang_message
    from tltrace.reconcile.build import BuildRecorder

    r = BuildRecorder()
    b = r._diagnose("RuntimeError: " + tilelang_message(injected(), OPTIONS, nvrtc_log(WORKING, 4)))
    assert b is not None and b["status"] == "failed" and b["compiler"] == "nvrtc"
    assert fb.error_lines(b) == [f'{WORKING}:4: error: expected a ";"']
