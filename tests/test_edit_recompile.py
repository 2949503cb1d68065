"""Edit and recompile with real CPU compiles (target="c", cython): edits change the numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ._kernels import op_of, ops, swap_op


def _edit(path: Path, old: str, new: str) -> None:
    """Turn the operator between A and B in a kernel's generated C (found in it) from `old` into `new`."""
    text = path.read_text()
    assert op_of(text) == old, text
    path.write_text(swap_op(text, new))


def _tags(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        for tag in ("PATCHED", "REGENERATED", "SYNCED", "CONFLICT", "INIT-BACKUP", "NOTE"):
            if line.startswith("[") and f"] {tag}" in line:
                out.append(f"{line.split(']')[0][1:].split()[0]}:{tag}")  # the kernel of `[vadd 1024]`
    return out


def test_two_kernels_edit_conflict_resolve(run_cli, examples_dir, tmp_path):
    script = examples_dir / "two_kernels.py"
    d = tmp_path / "tmp" / "lower_trace_dir" / "two_kernels"
    run = lambda *a: run_cli("run", "--quiet", "--mode", "both", script, *a)  # noqa: E731

    r = run()
    assert r.exit_code == 0, r.stdout + r.stderr
    assert _tags(r.stdout) == []
    vadd, vmul = d / "codegen_device.cpp", d / "codegen_vmul_device.cpp"
    assert vadd.is_file() and vmul.is_file() and (d / "codegen_device.cpp.original").is_file()

    _edit(vadd, "+", "-")  # edit the first kernel: + becomes -
    r = run()
    assert _tags(r.stdout) == ["vadd:PATCHED"]
    assert "vadd: computes a-b" in r.stdout and "vmul: computes a*b" in r.stdout
    assert r.exit_code == 1

    r = run("--n", "2048")  # one kernel, changed under the edit: the spec's table, in its one file
    assert _tags(r.stdout) == ["vadd:CONFLICT"], r.stdout
    assert "vadd: computes a+b" in r.stdout and "vadd changed (1024 -> 2048)" in r.stdout
    assert not (d / "codegen_vadd_2048_device.cpp").exists()
    assert op_of((d / "codegen_device.cpp.bak").read_text()) == "-" and op_of(vadd.read_text()) == "+"
    r = run_cli("resolve-conflict", script)  # the loop bound and the edited line do not touch: clean
    assert r.exit_code == 0, r.stderr
    r = run("--n", "2048")
    assert _tags(r.stdout) == ["vadd:PATCHED"] and "vadd: computes a-b" in r.stdout

    r = run("--serial")  # vadd's code changes (and its size, back to 1024): under the edit
    assert _tags(r.stdout) == ["vadd:CONFLICT"]
    assert "vadd: computes a+b" in r.stdout  # regenerated from the new codegen
    assert op_of((d / "codegen_device.cpp.bak").read_text()) == "-"

    r = run_cli("resolve-conflict", script)  # the edit and the new codegen changed the same line
    assert r.exit_code == 4, r.stderr
    assert "<<<<<<< your edits" in vadd.read_text() and "-" in ops(vadd.read_text())
    latest = (d / "codegen_device.cpp.latest").read_text()
    assert op_of(latest) == "+"
    vadd.write_text(swap_op(latest, "-"))  # fixed by hand

    _edit(vmul, "*", "+")  # and the second kernel: * becomes +
    r = run("--serial")
    assert _tags(r.stdout) == ["vadd:PATCHED", "vmul:PATCHED"]
    assert "vadd: computes a-b" in r.stdout and "vmul: computes a+b" in r.stdout

    # an untraced run afterwards, with TileLang's kernel cache on, never sees the edits
    env = {k: v for k, v in os.environ.items() if k != "TILELANG_DISABLE_CACHE"}
    env["TILELANG_CACHE_DIR"] = str(tmp_path / "cache")
    traced = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "--quiet", "--mode", "both", str(script), "--serial"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "vadd: computes a-b" in traced.stdout, traced.stdout + traced.stderr
    plain = subprocess.run(
        [sys.executable, str(script), "--serial"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "vadd: computes a+b" in plain.stdout and "vmul: computes a*b" in plain.stdout


def test_codegen_output_paths_and_none(run_cli, examples_dir, tmp_path):
    script = examples_dir / "two_kernels.py"
    out = tmp_path / "work" / "k.cpp"
    r = run_cli("run", "--quiet", "--codegen-output", out, script)  # terminal mode: the path turns them on
    assert r.exit_code == 0, r.stderr
    assert out.is_file() and (tmp_path / "work" / "k_vmul.cpp").is_file()
    assert not (tmp_path / "work" / "k_host.cpp").exists()  # cython: no host codegen
    _edit(out, "+", "-")
    r = run_cli("run", "--quiet", "--codegen-output", out, script)
    assert _tags(r.stdout) == ["vadd:PATCHED"] and "vadd: computes a-b" in r.stdout

    r = run_cli("run", "--quiet", "--mode", "both", "--no-codegen-output", script, "--m", "512")
    assert r.exit_code == 0
    assert not list((tmp_path / "tmp" / "lower_trace_dir" / "two_kernels").glob("codegen*"))


def test_resolve_conflict_errors_and_markers(run_cli, tmp_path):
    from tltrace.config import Settings
    from tltrace.reconcile.workflow import reconcile_codegen

    td = tmp_path / "tmp" / "lower_trace_dir"
    r = run_cli("resolve-conflict")
    assert r.exit_code == 2 and "no traced scripts" in r.stderr
    base = "".join(f"line {i}\n" for i in range(6))

    def compile_(text):
        s = Settings(mode="both", trace_dir=td, script_name="k")
        return reconcile_codegen(
            s, kernel="k", role="device", generated=text, compiles_source=True, backend="cython"
        )

    wf = compile_(base).path
    wf.write_text(base.replace("line 2", "mine"))
    assert compile_(base.replace("line 2", "theirs")).tag == "CONFLICT"
    r = run_cli("resolve-conflict", "--dry-run")
    assert r.exit_code == 4 and "<<<<<<< your edits" in r.stdout
    assert wf.read_text() == base.replace("line 2", "theirs")  # dry run: nothing written
    r = run_cli("resolve-conflict", td / "k", "--role", "host")
    assert r.exit_code == 2 and "no unresolved CONFLICT" in r.stderr
    r = run_cli("resolve-conflict", "k.py")
    assert r.exit_code == 4 and "1 conflicting hunk" in r.stderr
    assert "=======\n" in wf.read_text()
    out = compile_(base.replace("line 2", "theirs"))  # the baseline advanced; markers are never compiled
    assert out.tag == "UNRESOLVED" and out.compile_text == base.replace("line 2", "theirs")
    assert f"{wf.name}:3 has conflict markers" in out.message
    assert "<<<<<<< your edits (codegen_device.cpp.bak.1)" in wf.read_text()  # labels name files that exist
    assert (wf.parent / "codegen_device.cpp.bak.1").is_file() and (
        wf.parent / "codegen_device.cpp.original"
    ).is_file()
    r = run_cli("resolve-conflict", "k.py")  # found again, not "no conflict"
    assert r.exit_code == 4 and f"{wf.name}:3 still has conflict markers" in r.stderr
    r = run_cli("resolve-conflict", "k.py", "--ours")  # a side of each hunk
    assert r.exit_code == 0 and wf.read_text() == base.replace("line 2", "mine")
    assert compile_(base.replace("line 2", "theirs")).tag == "PATCHED"
    r = run_cli("resolve-conflict", "k.py", "--ours", "--theirs")
    assert r.exit_code == 2
