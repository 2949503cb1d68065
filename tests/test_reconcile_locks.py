"""The working files' locks and the registry's per-process view of its index (issue 51, round 5).

A lock given `tidy` runs it only when its last holder may have been killed holding it (the
lock file does not say CLEAN); the registry keeps the index it last read or wrote and
lists the directory again only when the index is another file or a claim was killed.
The oracle is the file system: what another process (a forked child) wrote or left.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests._fork import KILLED, in_child
from tests._reconcile import codegen
from tltrace.config import Settings
from tltrace.fs import atomic as _atomic
from tltrace.reconcile import files, registry
from tltrace.reconcile.variant import Variant
from tltrace.reconcile.workflow import Ledger


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    monkeypatch.setattr(files, "FSYNC", False)


def _tidied(lock: Path) -> int:
    calls = []
    with _atomic.locked(lock, tidy=lambda: calls.append(1)):
        pass
    return len(calls)


def test_tidy_runs_only_after_a_holder_that_did_not_let_go_cleanly(tmp_path):
    lock = tmp_path / "d" / ".w.lock"
    assert _tidied(lock) == 0  # made by this lock: no holder before it (and its directory made)
    assert _tidied(lock) == 0  # the last holder let go
    with pytest.raises(RuntimeError), _atomic.locked(lock, tidy=lambda: None):
        raise RuntimeError("a failed write")
    assert _tidied(lock) == 1 and _tidied(lock) == 0

    def killed_holding() -> None:
        with _atomic.locked(lock, tidy=lambda: None):
            os._exit(KILLED)

    assert in_child(killed_holding) == KILLED
    assert _tidied(lock) == 1 and _tidied(lock) == 0
    with _atomic.locked(lock):  # a lock without tidy leaves the state as it is
        pass
    assert _tidied(lock) == 0
    old = tmp_path / "d" / ".older.lock"
    old.write_bytes(b"")  # an older tltrace's lock file: it never said CLEAN
    assert _tidied(old) == 1 and _tidied(old) == 0


G = "int k() { return 1; }\n"
# Variants 2 and 3 differ only in their key (e.g. a block size the launch does not show): the
# same file label, so only the registry tells their files apart (`_k_..` and `_k_.._2`).
VS = [Variant(f"v{i}", str(i), (("shape", str(1024 * (i + 1 - (i == 3)))), ("grid", "8"))) for i in range(6)]


def _settings(root: Path) -> Settings:
    return Settings(mode="both", trace_dir=root, script_name="s", script_key="path:/nowhere/s.py")


def _compile(root: Path, v: Variant, ledger: Ledger | None = None) -> Path:
    out = _outcome(root, v, ledger)
    assert out.path is not None and not out.warnings, out.warnings
    return out.path


def _outcome(root: Path, v: Variant, ledger: Ledger | None):
    return _outcome_in(_settings(root), v, ledger, G + f"// {v.key}\n")


def _owners(d: Path) -> dict[str, str]:
    """Owner record name -> the variant key it names, read from disk."""
    import json

    return {p.name: json.loads(p.read_text())["key"] for p in d.glob(".*.owner")}


def test_a_claim_sees_what_another_process_registered_since_its_last_claim(tmp_path):
    ledger = Ledger()
    p0, p1 = _compile(tmp_path, VS[0], ledger), _compile(tmp_path, VS[1], ledger)
    # Another invocation (a process of its own) registers two more variants in between.
    assert in_child(lambda: [_compile(tmp_path, v) for v in VS[2:4]]) == 0
    theirs = _owners(p0.parent)
    p3, p2 = _compile(tmp_path, VS[3], ledger), _compile(tmp_path, VS[2], ledger)  # the other order
    p4 = _compile(tmp_path, VS[4], ledger)
    assert len({p0, p1, p2, p3, p4}) == 5  # every variant its own file
    owners = _owners(p0.parent)
    assert {n: owners[n] for n in theirs} == theirs  # each keeps the file the other process gave it
    assert sorted(owners.values()) == sorted(f"k|{v.key}" for v in VS[:5])


def test_a_claim_killed_between_its_owner_record_and_the_index_is_seen_by_this_process(tmp_path):
    """The child's owner record is on disk but the index it would have written is not: this
    process's view of the index (unchanged file) must not hide it, at every step of the claim."""
    ledger = Ledger()
    for v in VS[:2]:
        _compile(tmp_path / "count", v, ledger)
    steps = [0]

    def counting(what: str, path: Path) -> None:
        steps[0] += 1

    _atomic.STEP_HOOK = counting
    try:
        _compile(tmp_path / "count", VS[2], ledger)
    finally:
        _atomic.STEP_HOOK = None
    assert steps[0] >= 4
    for k in range(1, steps[0] + 1):
        root = tmp_path / f"k{k}"
        ledger = Ledger()
        for v in VS[:2]:
            _compile(root, v, ledger)  # this process's view of root's index: complete
        assert in_child(lambda root=root: _compile(root, VS[2]), kill_at_step=k) == KILLED
        left = _owners(root / "s")  # what the killed claim had made its own
        p3 = _compile(root, VS[3], ledger)
        p2 = _compile(root, VS[2], ledger)
        assert p2 != p3, f"a kill at step {k}: two variants share {p2.name}"
        owners = _owners(p2.parent)
        assert sorted(owners.values()) == sorted(f"k|{v.key}" for v in VS[:4]), (k, owners)
        assert {n: owners[n] for n in left} == left, (
            f"a kill at step {k}: a file was handed to another variant"
        )
        assert not list(p2.parent.glob(".*.tmp")), k  # the killed write's temp file is gone


def test_the_view_is_dropped_when_the_index_is_replaced_by_hand(tmp_path):
    ledger = Ledger()
    p0 = _compile(tmp_path, VS[0], ledger)
    p1 = _compile(tmp_path, VS[1], ledger)
    d = p0.parent
    index = d / registry.files.REGISTRY_NAME
    index.unlink()  # lost: rebuilt from the owner records, and said
    out = _outcome(tmp_path, VS[2], ledger)
    assert any("is missing" in w for w in out.warnings), out.warnings
    assert out.path not in (p0, p1)
    assert _compile(tmp_path, VS[1], ledger) == p1


def test_an_owner_record_another_process_rewrote_is_read_again(tmp_path):
    """This invocation's claim skips rewriting an owner record that already names it: a record
    another invocation rewrote since (the file this process read is gone) must be read again."""
    import json

    ledger = Ledger()
    mine = _settings(tmp_path)
    p0 = _outcome_in(mine, VS[0], ledger).path
    owner = next(p0.parent.glob(".*.owner"))
    assert json.loads(owner.read_text())["invocation"] == mine.invocation
    assert in_child(lambda: _outcome_in(_settings(tmp_path), VS[0], None)) == 0  # another invocation
    assert json.loads(owner.read_text())["invocation"] != mine.invocation
    assert _outcome_in(mine, VS[0], ledger).path == p0
    assert json.loads(owner.read_text())["invocation"] == mine.invocation  # this invocation's again


def _outcome_in(s: Settings, v: Variant, ledger: Ledger | None, generated: str = G):
    return codegen(s, generated, v, ledger)
