"""Crash tests of the working-file transaction: a kill after EVERY file-system step, then a rerun.

The real file layer runs in a forked child whose step hook (`_atomic.STEP_HOOK`) calls
os._exit after step k (each temp file created, rename, unlink: of a working file, its
baseline, a backup, the journal, or a registry). For every k the parent then reruns
what the user would run next and checks: no false PATCHED (never the stale text as an
edit), the tag the interrupted run never printed, the user's edit still on disk, the
files in the state the decision table expects, and no temp file left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._fork import KILLED, in_child
from tests._reconcile import codegen
from tltrace.config import Settings
from tltrace.fs import atomic as _atomic
from tltrace.reconcile import files
from tltrace.reconcile.resolve import pending, resolve
from tltrace.reconcile.variant import Variant
from tltrace.reconcile.workflow import settle

CRASHED = KILLED
G0 = "".join(f"line {i}\n" for i in range(12))
G1 = G0.replace("line 9", "line 9 changed")  # new codegen, far from the edit
EDIT = G0.replace("line 2", "line 2 EDITED")


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    monkeypatch.setattr(files, "FSYNC", False)


def _settings(root: Path) -> Settings:
    return Settings(mode="both", trace_dir=root, script_name="s", script_key="path:/nowhere/s.py")


def _compile(root: Path, generated: str, variant: Variant | None = None):
    """What session/tool.py does: reconcile, say the tag (here: append it to `said`), settle."""
    out = codegen(_settings(root), generated, variant)
    if out.tag:
        with open(root / "said", "a") as fh:
            fh.write(out.tag + "\n")
    settle(out)
    return out


def _said(root: Path) -> list[str]:
    try:
        return (root / "said").read_text().split()
    except FileNotFoundError:
        return []


def _run_child(k: int, action) -> bool:
    """Run `action` in a forked child killed right after its k-th step; True when it was killed."""
    code = in_child(action, kill_at_step=k)
    assert code in (0, CRASHED), f"the child failed at step {k} (exit {code})"
    return code == CRASHED


def _texts(d: Path) -> set[str]:
    return {
        p.read_text()
        for p in d.rglob("*")
        if p.is_file() and not p.name.endswith(".lock") and p.name != "said"
    }


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if p.name.endswith(".tmp") or p.name.endswith(".journal"))


def _steps(tmp_path: Path, setup, action) -> int:
    root = tmp_path / "count"
    root.mkdir()
    setup(root)
    n = 0

    def hook(what: str, path: Path) -> None:
        nonlocal n
        n += 1

    _atomic.STEP_HOOK = hook
    try:
        action(root)
    finally:
        _atomic.STEP_HOOK = None
    return n


def _crash_everywhere(tmp_path: Path, setup, action, check) -> int:
    n = _steps(tmp_path, setup, action)
    assert n >= 3
    for k in range(1, n + 1):
        root = tmp_path / f"k{k}"
        root.mkdir()
        setup(root)
        assert _run_child(k, lambda root=root: action(root)), f"step {k} of {n} was not reached"
        check(root, k, last=(k == n))
    root = tmp_path / "beyond"
    root.mkdir()
    setup(root)
    assert not _run_child(n + 1, lambda: action(root))  # n really is every step
    return n


def _wf(root: Path) -> files.WorkingFile:
    return files.WorkingFile(root / "s" / "codegen_device.cpp")


def test_kill_after_every_step_of_the_first_run(tmp_path):
    """Registries, baseline and working file created from nothing: a rerun never says INIT-BACKUP."""

    def check(root, k, last):
        out = _compile(root, G0)
        assert out.tag is None, (k, out.tag, out.message)
        assert out.compile_text == G0
        wf = _wf(root)
        assert wf.path.read_text() == wf.original.read_text() == G0
        assert not wf.bak.exists()
        assert _leftovers(root) == []

    n = _crash_everywhere(tmp_path, lambda root: None, lambda root: _compile(root, G0), check)
    assert n >= 6  # script registry, kernel registry, .latest, journal, .original, W


def test_kill_after_every_step_of_regenerated(tmp_path):
    def setup(root):
        _compile(root, G0)

    def check(root, k, last):
        out = _compile(root, G1)
        assert out.tag != "PATCHED" and out.compile_text == G1, (k, out.tag)
        assert out.tag == "REGENERATED" or (last and out.tag is None), (k, out.tag)
        wf = _wf(root)
        assert wf.path.read_text() == wf.original.read_text() == G1
        assert _leftovers(root) == []
        assert _compile(root, G1).tag is None  # settled

    _crash_everywhere(tmp_path, setup, lambda root: _compile(root, G1), check)


def test_kill_after_every_step_of_conflict(tmp_path):
    def setup(root):
        _wf(root).path.parent.mkdir(parents=True, exist_ok=True)
        _compile(root, G0).path.write_text(EDIT)

    def check(root, k, last):
        wf = _wf(root)
        assert EDIT in _texts(root), f"the edit is lost after a kill at step {k}"
        said_before = _said(root)
        out = _compile(root, G1)
        assert out.tag != "PATCHED" and out.compile_text == G1, (k, out.tag)
        # Said by the killed run, or by the next one: never by neither (not even after the last step).
        assert out.tag == "CONFLICT" or (out.tag is None and "CONFLICT" in said_before), (
            k,
            out.tag,
            said_before,
        )
        assert EDIT in _texts(root)
        assert wf.path.read_text() == wf.original.read_text() == G1
        assert pending(wf) and EDIT in {p.read_text() for p in wf.backups()}
        assert _leftovers(root) == []
        r = resolve(wf)  # and the saved edit still rebases onto the new codegen
        assert r.conflicts == 0 and r.text == G1.replace("line 2", "line 2 EDITED")

    _crash_everywhere(tmp_path, setup, lambda root: _compile(root, G1), check)


V0 = Variant("aaaa", "1024", (("shape", "1024"), ("grid", "8"), ("threads", "128")))
V1 = Variant("bbbb", "1024", (("shape", "1024"), ("grid", "16"), ("threads", "64")))


def test_kill_after_every_step_of_a_new_launch_shape_under_an_edit(tmp_path):
    """One kernel, its block size changed under an edit: CONFLICT in the one file (the owner
    record and the index are re-pointed first), whatever step the kill hit."""

    def setup(root):
        _compile(root, G0, V0).path.write_text(EDIT)

    def check(root, k, last):
        wf = _wf(root)
        assert EDIT in _texts(root), f"the edit is lost after a kill at step {k}"
        said_before = _said(root)
        out = _compile(root, G1, V1)
        assert out.path == wf.path, (k, out.path)  # the kernel's one file, never a second one
        assert out.tag != "PATCHED" and out.compile_text == G1, (k, out.tag)
        assert out.tag == "CONFLICT" or (out.tag is None and "CONFLICT" in said_before), (k, out.tag)
        assert wf.path.read_text() == G1 and EDIT in {p.read_text() for p in wf.backups()}
        assert _leftovers(root) == []
        assert sorted(p.name for p in wf.path.parent.glob("codegen*.cpp")) == ["codegen_device.cpp"]
        assert _compile(root, G0, V0).path == wf.path  # and back: the lineage goes on in the same file

    _crash_everywhere(tmp_path, setup, lambda root: _compile(root, G1, V1), check)


def test_kill_after_every_step_of_resolve_conflict(tmp_path):
    merged = G1.replace("line 2", "line 2 EDITED")

    def setup(root):
        _compile(root, G0).path.write_text(EDIT)
        assert _compile(root, G1).tag == "CONFLICT"

    def check(root, k, last):
        wf = _wf(root)
        assert EDIT in _texts(root) or merged in _texts(root)
        if pending(wf):  # the user runs resolve-conflict again
            assert resolve(wf).text == merged
        assert _leftovers(root) == []
        out = _compile(root, G1)
        assert out.tag == "PATCHED" and out.compile_text == merged, (k, out.tag)
        assert EDIT in _texts(root)  # the saved edit stays in a numbered backup
        assert _leftovers(root) == []

    _crash_everywhere(tmp_path, setup, lambda root: resolve(_wf(root)), check)
