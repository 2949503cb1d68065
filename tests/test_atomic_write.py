"""fs/atomic.atomic_write: the old file or the new one, with the permissions `open()` and the old file give.

The oracle is the operating system (`os.stat`, the umask read with `os.umask`), not tltrace. No compile.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tltrace.fs import atomic


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_a_new_file_gets_what_open_gives_and_an_old_one_keeps_its_mode(tmp_path: Path) -> None:
    made = tmp_path / "made.txt"
    with open(made, "w") as fh:
        fh.write("x")
    new = tmp_path / "new.json"
    atomic.atomic_write(new, b"{}")
    assert new.read_bytes() == b"{}" and _mode(new) == _mode(made) == 0o666 & ~_umask()
    for mode in (0o600, 0o755, 0o444):
        old = tmp_path / f"old{mode:o}.json"
        old.write_text("old")
        old.chmod(mode)
        atomic.atomic_write(old, [b"new ", b"text"])
        assert old.read_bytes() == b"new text" and _mode(old) == mode
    wide = tmp_path / "wide.json"
    atomic.atomic_write(wide, b"w", mode=0o666)  # bits the umask would take: given all the same
    assert _mode(wide) == 0o666
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_a_write_stopped_after_its_temporary_leaves_the_old_file_and_a_temporary_the_cleanup_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "manifest.json"
    target.write_bytes(b"old")
    seen: list[Path] = []

    def hook(what: str, path: Path) -> None:
        seen.append(path)
        if what == "create":
            raise KeyboardInterrupt  # stopped between the temporary and the rename

    monkeypatch.setattr(atomic, "STEP_HOOK", hook)
    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write(target, b"new")
    monkeypatch.setattr(atomic, "STEP_HOOK", None)
    assert target.read_bytes() == b"old"
    assert not seen[0].exists()  # removed on the way out
    # A killed writer leaves it: its name is one that the stale-temporary cleanup removes.
    seen[0].write_bytes(b"half")
    assert atomic.remove_stale_temps(tmp_path, ["manifest.json"]) == [seen[0]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_a_write_leaves_the_user_s_random_stream_alone(tmp_path: Path) -> None:
    """A script that seeds `random` draws the same numbers whether or not tltrace writes files
    between its draws (the temporary names come from a generator of tltrace's own)."""
    import random

    random.seed(1234)
    untouched = [random.random() for _ in range(3)]
    random.seed(1234)
    drawn = [random.random()]
    for i in range(5):
        atomic.atomic_write(tmp_path / f"f{i}", b"x")
    drawn += [random.random() for _ in range(2)]
    assert drawn == untouched


def test_a_forked_child_names_its_temporaries_apart_from_its_parent(tmp_path: Path) -> None:
    """The names' generator is reseeded in a forked child: parent and child do not draw the same
    temporary names after the fork (which O_EXCL would survive, by retrying, but not cheaply)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next names, to the parent
        os.close(r)
        os.write(w, " ".join(f"{atomic._names.getrandbits(32):08x}" for _ in range(4)).encode())
        os._exit(0)
    os.close(w)
    theirs = os.read(r, 4096).decode().split()
    os.close(r)
    os.waitpid(pid, 0)
    ours = [f"{atomic._names.getrandbits(32):08x}" for _ in range(4)]
    assert len(theirs) == 4 and theirs != ours
