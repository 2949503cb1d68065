"""Working files stay inside their directory whatever the disk says; links and odd paths are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.errors import UsageError
from tltrace.format import scripts
from tltrace.format.names import is_safe_component, safe_component
from tltrace.reconcile import files
from tltrace.reconcile.workflow import Ledger, reconcile_codegen, unapplied_edits

_LEDGERS: dict[str, Ledger] = {}


def _ledger(settings: Settings) -> Ledger:
    """The ledger of `settings`' invocation (the part of tracing.invocation.Invocation that reconcile sees)."""
    return _LEDGERS.setdefault(settings.invocation, Ledger())


def _compile(settings: Settings, kernel: str, text: str, role: str = "device"):
    return reconcile_codegen(
        settings,
        kernel=kernel,
        role=role,
        generated=text,
        compiles_source=True,
        backend="cython",
        ledger=_ledger(settings),
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def test_poisoned_kernel_registry_writes_nothing_outside(tmp_path):
    trace = tmp_path / "trace"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pwned_device.cpp").write_text("the user's own file\n")
    s = Settings(mode="both", trace_dir=trace, script_name="s")
    _compile(s, "first", "a\n")
    reg = trace / "s" / files.REGISTRY_NAME
    reg.write_text(
        json.dumps(
            {
                "version": 1,
                "kernels": {
                    "first": "",
                    "evil": "_x/../../../outside/pwned",
                    "dots": "..",
                    "abs": "/etc/passwd",
                    "num": 3,
                },
            }
        )
    )
    before = _snapshot(outside)
    for kernel in ("evil", "dots", "abs", "num"):
        out = _compile(s, kernel, f"{kernel}\n")
        assert out.path.parent == trace / "s", out.path
        assert is_safe_component(out.path.name)
    assert _snapshot(outside) == before
    assert sorted(os.listdir(outside)) == ["pwned_device.cpp"]  # not moved to .bak either
    assert not list(tmp_path.glob("*.bak*"))
    kernels = json.loads(reg.read_text())["kernels"]
    assert all("/" not in v and ".." != v.strip("_") for v in kernels.values())


def test_poisoned_script_registry_stays_in_the_trace_dir(tmp_path):
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / scripts.REGISTRY).write_text(
        json.dumps(
            {
                "version": 1,
                "scripts": {"path:/a/k.py": "../outside", "path:/b/k.py": "/etc", "path:/c/k.py": ".hidden"},
            }
        )
    )
    for key in ("path:/a/k.py", "path:/b/k.py", "path:/c/k.py"):
        d = scripts.claim(trace, "k", key)
        assert d.parent == trace and is_safe_component(d.name)
    assert not (tmp_path / "outside").exists()


def test_names_keep_letters_of_every_script_and_never_escape():
    assert safe_component("a b ü") == "a_b_ü" != safe_component("a_b")
    assert safe_component("größe") == "größe"
    for evil in ("../../etc", "..", ".", "/abs", "a/b", "a\\b", "x\x00y", "\u202eexe", "." * 5, "_" * 3):
        out = safe_component(evil)
        assert "/" not in out and "\\" not in out and not out.startswith(".") and out
        assert safe_component(out) == out
    assert len(safe_component("ü" * 500).encode()) <= 120


def test_same_name_scripts_get_their_own_dirs(tmp_path):
    trace = tmp_path / "trace"
    x, y = tmp_path / "x" / "kernel.py", tmp_path / "y" / "kernel.py"
    for p in (x, y):
        p.parent.mkdir()
        p.write_text("")
    dx = Settings(trace_dir=trace, script_name="kernel", script_key=scripts.identity_of(x)).claim_script_dir()
    dy = Settings(trace_dir=trace, script_name="kernel", script_key=scripts.identity_of(y)).claim_script_dir()
    assert dx == trace / "kernel" and dy == trace / "kernel_2"
    scripts._claimed.clear()  # a new process: the registry, not memory, decides
    assert scripts.script_dir_for(trace, str(y)) == dy and scripts.script_dir_for(trace, str(x)) == dx
    assert scripts.script_dir_for(trace, "kernel") == dx
    u, a = tmp_path / "a b ü.py", tmp_path / "a_b.py"
    du = Settings(trace_dir=trace, script_name="a b ü", script_key=scripts.identity_of(u)).claim_script_dir()
    da = Settings(trace_dir=trace, script_name="a_b", script_key=scripts.identity_of(a)).claim_script_dir()
    assert du.name == "a_b_ü" and da.name == "a_b"


def test_symlinked_working_file_is_refused_and_left_alone(tmp_path):
    s = Settings(mode="both", trace_dir=tmp_path / "trace", script_name="s")
    wf = _compile(s, "k", "gen\n").path
    repo = tmp_path / "repo.cpp"
    repo.write_text("my edit in my repo\n")
    wf.unlink()
    wf.symlink_to(repo)
    out = _compile(s, "k", "gen2\n")
    assert out.compile_text == "gen2\n" and out.tag is None
    assert "symbolic link" in out.warnings[0] and "not applied" in out.warnings[0]
    assert wf.is_symlink() and repo.read_text() == "my edit in my repo\n"
    original = files.WorkingFile(wf).original
    original.unlink()
    original.symlink_to(repo)  # a link among the companions is refused too
    wf.unlink()
    out = _compile(s, "k", "gen3\n")
    assert "symbolic link" in out.warnings[0] and repo.read_text() == "my edit in my repo\n"


def test_codegen_output_refuses_files_it_did_not_write(tmp_path):
    script = tmp_path / "victim.py"
    script.write_text("print('hi')\n")
    with pytest.raises(UsageError, match="existing file that tltrace did not write"):
        files.check_codegen_output(script)
    with pytest.raises(UsageError, match="is a directory"):
        files.check_codegen_output(tmp_path)
    link = tmp_path / "link.cpp"
    link.symlink_to(tmp_path / "nowhere.cpp")
    with pytest.raises(UsageError, match="symbolic link"):
        files.check_codegen_output(link)
    with pytest.raises(UsageError, match="not a directory"):
        files.check_codegen_output(script / "k.cpp")
    new = tmp_path / "work" / "k.cpp"
    assert files.check_codegen_output(new) == new  # a new path is fine
    s = Settings(mode="terminal", trace_dir=tmp_path, codegen_output=new)
    _compile(s, "k", "gen\n")
    assert files.check_codegen_output(new) == new  # and so is a working file of tltrace's own


def test_codegen_output_cli_refusal_is_one_line(run_cli, tmp_path):
    script = tmp_path / "victim.py"
    script.write_text("print('hi')\n")
    r = run_cli("run", "--codegen-output", script, script)
    assert r.exit_code == 2
    assert r.stderr.startswith("tltrace: error: --codegen-output") and len(r.stderr.splitlines()) == 1
    assert script.read_text() == "print('hi')\n"
    r = run_cli("run", "--codegen-output", tmp_path, script)
    assert r.exit_code == 2 and "is a directory" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["victim.py"]


def test_unapplied_edit_is_reported_when_working_files_are_off(tmp_path):
    both = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    wf = _compile(both, "k", "gen\n").path
    assert unapplied_edits(Settings(mode="both", trace_dir=tmp_path, script_name="s")) == []  # no edit
    wf.write_text("edit\n")
    term = Settings(mode="terminal", trace_dir=tmp_path, script_name="s")
    [u] = unapplied_edits(term)
    assert u.path == wf and "working files are off" in u.message and u.message.startswith(f"edit in {wf}")
    [u] = unapplied_edits(Settings(mode="both", trace_dir=tmp_path, script_name="s"), cached={"k"})
    assert "kernel cache" in u.reason
    again = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    assert _compile(again, "k", "gen\n").tag == "PATCHED"
    assert unapplied_edits(again, _ledger(again)) == []  # compiled in this run: nothing to say


def test_resolve_conflict_takes_the_forms_show_takes(run_cli, tmp_path):
    td = tmp_path / "tmp" / "lower_trace_dir"
    s = Settings(mode="both", trace_dir=td, script_name="s")
    base = "".join(f"{i}\n" for i in range(8))
    _compile(s, "k", base).path.write_text(base.replace("6", "mine"))
    assert (
        _compile(Settings(mode="both", trace_dir=td, script_name="s"), "k", base.replace("1", "new")).tag
        == "CONFLICT"
    )
    r = run_cli("resolve-conflict", "s", "--dry-run")  # a bare script name, as `tltrace show s`
    assert r.exit_code == 0, r.stderr
    assert r.stdout == base.replace("1", "new").replace("6", "mine")
    r = run_cli("resolve-conflict", "nosuch")
    assert r.exit_code == 2 and r.stderr.startswith("tltrace: error: no such script or trace dir: nosuch")
    r = run_cli("resolve-conflict", td / "s")
    assert r.exit_code == 0 and "resolved (merge)" in r.stdout


def test_same_name_scripts_in_two_dirs_with_real_compiles(run_cli, examples_dir, tmp_path):
    import shutil

    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        shutil.copy(examples_dir / "elementwise_add.py", tmp_path / sub / "kernel.py")
        shutil.copy(examples_dir / "_common.py", tmp_path / sub / "_common.py")
    td = tmp_path / "tmp" / "lower_trace_dir"
    for sub, n in (("x", "256"), ("y", "512")):
        r = run_cli("run", "--quiet", "--mode", "both", tmp_path / sub / "kernel.py", "--n", n)
        assert r.exit_code == 0, r.stderr
    assert (td / "kernel" / "codegen_device.cpp").is_file() and (
        td / "kernel_2" / "codegen_device.cpp"
    ).is_file()
    for sub, d in (("x", "kernel"), ("y", "kernel_2")):
        r = run_cli("show", tmp_path / sub / "kernel.py", "--json")
        assert r.exit_code == 0, r.stderr
        [run] = json.loads(r.stdout)["runs"]
        assert Path(run["path"]).parents[1].name == d


def test_a_full_disk_on_the_conflict_path_claims_no_conflict_it_did_not_save(tmp_path, monkeypatch):
    """No space for the backups: the run says the edit is not applied, and nothing it did not do."""
    import errno

    s = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    wf = _compile(s, "k", "gen\n").path
    wf.write_text("gen\nmy edit\n")
    real = files.write_atomic

    def full(path, *a, **kw):
        if Path(path).name != wf.name + ".latest":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, *a, **kw)

    monkeypatch.setattr(files, "write_atomic", full)
    s2 = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    out = _compile(s2, "k", "gen2\n")
    assert out.compile_text == "gen2\n"
    assert out.tag is None and out.message is None, (out.tag, out.message)  # no "edits saved to .bak"
    assert any("not applied" in w and "No space" in w for w in out.warnings), out.warnings
    assert wf.read_text() == "gen\nmy edit\n" and not files.WorkingFile(wf).bak.exists()
    # The end of the run does not add a second, wrong reason ("edited after k compiled").
    assert unapplied_edits(s2, _ledger(s2)) == []
    monkeypatch.setattr(files, "write_atomic", real)
    assert (
        _compile(Settings(mode="both", trace_dir=tmp_path, script_name="s"), "k", "gen2\n").tag == "CONFLICT"
    )
