"""Reproducers and bundles (tltrace repro / bundle / replay) on real CPU compiles.

Each repro is copied to another directory, the script removed, and run with `python -I`;
the bundle is replayed from another directory. The passes are picked from the manifest.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tltrace.history import runs

from ._cli import cli_env as _env
from ._cli import cli_proc
from ._kernels import LOWER_FAILS

TWO = """
import tilelang
import tilelang.language as T


def make(op, n=512, block=64):
    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if op == "add":
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]
                else:
                    C[bx * block + i] = A[bx * block + i] * B[bx * block + i]

    return k.with_attr("global_symbol", "v" + op)


for op in ("add", "mul"):
    tilelang.compile(make(op), target="c", execution_backend="cython")
"""


def _tltrace(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    """Both scripts traced once into one trace dir; returns the directory holding them."""
    work = tmp_path_factory.mktemp("rerun")
    (work / "fails.py").write_text(LOWER_FAILS)
    (work / "two.py").write_text(TWO)
    for script in ("fails.py", "two.py"):
        p = _tltrace("run", "--quiet", "--trace-dir", "tr", script, cwd=work)
        assert (p.returncode != 0) == (script == "fails.py"), p.stderr[-2000:]
    return work


def _manifest(work: Path, script: str, kernel: str | None = None):
    sel = runs.open_selection(script, None, work / "tr", kernel)
    run = sel.one()
    return run, run.require()


def test_every_compile_saves_its_frontend_context_and_failed_input(traced: Path) -> None:
    run, m = _manifest(traced, "two.py", "vadd")
    assert m.repro is not None
    frontend = runs.record_path(run.path, m.repro["frontend"])
    context = json.loads(runs.record_path(run.path, m.repro["context"]).read_text())  # type: ignore[union-attr]
    assert frontend is not None and frontend.stat().st_size > 0
    assert context["target"]["kind"] == "c" and context["versions"]["tilelang"] == m.tilelang_version
    assert not m.repro.get("inputs")  # nothing failed
    run, m = _manifest(traced, "fails.py")
    (failed,) = [r for r in m.records if r.status == "failed"]
    rel = m.repro["inputs"][str(failed.index)]
    assert runs.record_path(run.path, rel).read_text().startswith("{")  # type: ignore[union-attr]


def test_the_context_written_before_the_target_is_bound_leaves_no_stored_text(traced: Path) -> None:
    """context.json is rewritten once a pass binds the target; the first version was a stored
    text that nothing linked any more (a block on disk per compile, until `clean`). Every stored
    text is now linked from a run directory."""
    run, m = _manifest(traced, "two.py", "vadd")
    context = json.loads(runs.record_path(run.path, m.repro["context"]).read_text())  # type: ignore[index,union-attr]
    assert "bound_target" in context  # the rewrite happened
    assert not (run.path.parent / ".objects").exists()  # the run's texts are in its pack, context.json a file


def _standalone(src: Path, tmp: Path) -> subprocess.CompletedProcess:
    """Copy a repro directory away from the script and run it under `python -I` from elsewhere."""
    dest = tmp / "elsewhere" / src.name
    shutil.copytree(src, dest)
    return subprocess.run(
        [sys.executable, "-I", str(dest / "repro.py")],
        cwd=tmp,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )


@pytest.fixture(scope="module")
def repros(traced: Path, tmp_path_factory) -> list[tuple[Path, object]]:
    """Repros of two changed passes of vmul (the first, and LowerTileOp) and of the failed pass."""
    _, two = _manifest(traced, "two.py", "vmul")
    changed = [r for r in two.records if r.status == "changed"]
    # LowerTileOp's input does not survive JSON where it carries layouts; any changed pass does else.
    second = next((r for r in changed if r.name == "LowerTileOp"), changed[-1])
    _, fails = _manifest(traced, "fails.py")
    (failed,) = [r for r in fails.records if r.status == "failed"]
    cases = [("two.py", "vmul", changed[0]), ("two.py", "vmul", second), ("fails.py", None, failed)]
    base = tmp_path_factory.mktemp("repros")
    outs = []
    for script, kernel, rec in cases:
        out = base / f"r{len(outs)}"
        spec = rec.name if rec.status == "failed" else str(rec.index)
        args = ["repro", "--trace-dir", "tr", script, "--pass", spec, "-o", str(out)]
        p = _tltrace(*args, *(["--kernel", kernel] if kernel else []), cwd=traced)
        assert p.returncode == 0, p.stdout + p.stderr[-2000:]
        assert "reproduced" in p.stdout and "path: " in p.stdout
        outs.append((out, rec))
    return outs


def test_repros_of_two_changed_passes_and_a_failed_one_run_standalone(
    traced: Path, repros, tmp_path: Path
) -> None:
    scripts = [traced / "fails.py", traced / "two.py"]
    hidden = [s.rename(s.with_suffix(".hidden")) for s in scripts]
    try:
        for out, rec in repros:
            p = _standalone(out, tmp_path)
            assert p.returncode == 0, p.stdout + p.stderr[-2000:]
            assert p.stdout.strip().endswith("reproduced")
            assert "imported tltrace" not in p.stdout  # the child says when it did
            if rec.status == "failed":
                assert "the same error" in p.stdout and rec.error.splitlines()[0][:40] in p.stdout
    finally:
        for h, s in zip(hidden, scripts):
            h.rename(s)


def test_a_changed_recording_is_not_reproduced(repros, tmp_path: Path) -> None:
    out = tmp_path / "r"
    shutil.copytree(repros[0][0], out)
    after = out / "after.tir"
    after.chmod(0o644)
    after.write_text(after.read_text() + "# not what the pass wrote\n")
    p = subprocess.run(
        [sys.executable, "-I", str(out / "repro.py")], capture_output=True, text=True, env=_env()
    )
    assert p.returncode == 1 and "not reproduced" in p.stdout and "+++ rerun" in p.stdout


@pytest.mark.parametrize("edit", ["name", "ordinal"])
def test_a_recorded_pass_this_tilelang_does_not_reach_is_one_line_exit_5(
    repros, tmp_path: Path, edit: str
) -> None:
    """repro.json naming a pass the replayed compile does not have there: one line, exit 5, no traceback.

    Before, the replay child raised RuntimeError and repro.py printed its traceback under
    "not reproduced: the rerun did not finish (exit status 1)".
    """
    out = tmp_path / "r"
    shutil.copytree(repros[0][0], out)
    spec_path = out / "repro.json"
    spec_path.chmod(0o644)
    spec = json.loads(spec_path.read_text())
    recorded = spec["pass"]["name"]
    if edit == "name":
        spec["pass"]["name"] = "tl.NoSuchPass"
    else:
        spec["pass"]["ordinal"] = 100000
    spec_path.write_text(json.dumps(spec))
    p = subprocess.run(
        [sys.executable, "-I", str(out / "repro.py"), "--replay"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert p.returncode == 5, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr and "RuntimeError" not in p.stdout + p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("repro.py: the replay on TileLang ") and "does not reach the pass" in line
    if edit == "name":  # the pass this TileLang runs there, as its own compile names it: the recorded one
        assert f"is {recorded} here, the recording has tl.NoSuchPass there" in line
    else:
        assert "fewer than 100001" in line


def test_bundle_replays_in_another_directory_without_the_script(traced: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "two.zip"
    p = _tltrace("bundle", "--trace-dir", "tr", "two.py", "-o", str(bundle), cwd=traced)
    assert p.returncode == 0, p.stderr
    with zipfile.ZipFile(bundle) as zf:
        names = zf.namelist()
    assert "README.md" in names and "bundle.json" in names
    assert sum(n.endswith("/frontend.json") for n in names) == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (traced / "two.py").rename(traced / "two.hidden")
    try:
        p = _tltrace("replay", str(bundle), cwd=elsewhere)
    finally:
        (traced / "two.hidden").rename(traced / "two.py")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": same:") == 2
    assert not list(elsewhere.iterdir())  # the replay's records went to a temporary directory


def test_replay_refuses_what_is_not_a_bundle(tmp_path: Path, run_cli) -> None:
    (tmp_path / "x.zip").write_bytes(b"not a zip")
    r = run_cli("replay", str(tmp_path / "x.zip"))
    assert r.exit_code == 3 and "not a tltrace bundle" in r.stderr
    r = run_cli("replay", str(tmp_path / "missing.zip"))
    assert r.exit_code == 2


def test_repro_refuses_a_directory_it_did_not_write(traced: Path, tmp_path: Path) -> None:
    _, two = _manifest(traced, "two.py", "vadd")
    (tmp_path / "mine.txt").write_text("keep me")
    p = _tltrace(
        "repro",
        "--trace-dir",
        "tr",
        "two.py",
        "--kernel",
        "vadd",
        "--pass",
        "0",
        "-o",
        str(tmp_path),
        cwd=traced,
    )
    assert p.returncode == 2 and "did not write" in p.stderr
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_report_offers_the_repro_command(traced: Path, open_page) -> None:
    run, m = _manifest(traced, "fails.py")
    p = _tltrace("show", "--trace-dir", "tr", "fails.py", "--html", cwd=traced)
    assert p.returncode == 0, p.stderr
    page = open_page(run.path / "report.html")
    (failed,) = [r for r in m.records if r.status == "failed"]
    # The trace dir as an absolute path and the script dir: it works pasted anywhere (#32).
    script_dir = run.path.absolute().parent.parent
    where = ["--trace-dir", str(script_dir.parent), script_dir.name]
    command = shlex.join(["tltrace", "repro", *where, m.run_id, "--pass", str(failed.index)])
    assert command in page.locator(".tl-error .tl-repro").text_content()
    assert page.locator(".tl-copy-repro").get_attribute("title") == command


def test_a_run_without_reproducer_data_is_one_line_exit_3(traced: Path, tmp_path: Path) -> None:
    run, m = _manifest(traced, "two.py", "vadd")
    copy = tmp_path / "old" / ".run_records" / run.path.name
    shutil.copytree(run.path, copy)
    data = json.loads((copy / "manifest.json").read_text())
    del data["repro"]  # as tltrace before reproducers wrote it
    (copy / "manifest.json").write_text(json.dumps(data))
    p = _tltrace("repro", str(copy), "--pass", "0", "-o", str(tmp_path / "r"), cwd=tmp_path)
    assert p.returncode == 3 and p.stderr.count("\n") == 1 and "tltrace run" in p.stderr
    assert not (tmp_path / "r").exists()


def test_a_compile_a_kill_cut_replays_as_the_same_as_far_as_its_recording_goes(
    traced: Path, tmp_path: Path
) -> None:
    """Before, the cut compile's replay said `differs (N only in B)` and exited 1: every pass past the
    cut ran only in the replay, though each recorded one matched."""
    from .test_cut_readers import _cut_as_a_kill_leaves_it

    work = tmp_path / "work"
    shutil.copytree(traced / "tr", work / "tr")
    run, manifest = _manifest(work, "two.py", "vmul")
    _cut_as_a_kill_leaves_it(run.path)  # (the oracle: it keeps the first half of the records)
    kept = len(manifest.records) // 2
    bundle = tmp_path / "cut.zip"
    p = _tltrace("bundle", "--trace-dir", "tr", "two.py", "-o", str(bundle), cwd=work)
    assert p.returncode == 0 and "1 cut short (interrupted)" in p.stdout, p.stdout + p.stderr
    p = _tltrace("replay", str(bundle), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert sum(": same: " in line for line in lines) == 1, lines
    (said,) = [line for line in lines if "same as far as the recording goes" in line]
    past = len(manifest.records) - kept
    assert said.endswith(
        f"its {kept} recorded passes match; the recording was cut short (interrupted), "
        f"the {past} passes past it ran only in the replay"
    ), said
