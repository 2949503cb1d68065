"""The file layer under random edit / change-the-kernel / rerun / resolve sequences (no TileLang).

A model keeps what each working file and baseline should hold; every step checks the
decision against the table in docs/edit-recompile.md (computed here independently of decide.py) and that
every text a working file held when tltrace touched it is still on disk somewhere.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tltrace.config import Settings
from tltrace.reconcile import files
from tltrace.reconcile.merge import merge3
from tltrace.reconcile.resolve import pending, resolve
from tltrace.reconcile.workflow import layout_for, reconcile_codegen

LINES = st.sampled_from(["int a;\n", "int b;\n", "x = a + b;\n", "x = a - b;\n", "return x;\n", "}\n"])
TEXTS = st.lists(LINES, min_size=1, max_size=5).map("".join)
KERNELS = ("add", "mul")
ROLES = ("device", "host")
TARGETS = st.sampled_from([(k, r) for k in KERNELS for r in ROLES])


def _has_markers(text: str) -> bool:
    """A `<<<<<<<` line with a `>>>>>>>` line after it: a merge not finished."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("<<<<<<<")]
    return bool(starts) and any(line.startswith(">>>>>>>") for line in lines[starts[0] :])


def expected_tag(baseline, working, generated):
    """The decision table of docs/edit-recompile.md, written out once more."""
    if baseline is None:
        return "INIT-BACKUP" if working is not None else None
    if working is None:
        working = baseline
    if working == baseline:
        return None if generated == baseline else "REGENERATED"
    if generated == baseline:
        return "UNRESOLVED" if _has_markers(working) else "PATCHED"
    return "SYNCED" if working == generated else "CONFLICT"


class WorkingFiles(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="tltrace-stateful-"))
        self.generated = {t: "int a;\nreturn x;\n" for t in self._targets()}
        self.base: dict = {t: None for t in self._targets()}
        self.work: dict = {t: None for t in self._targets()}
        self.latest: dict = {t: None for t in self._targets()}
        self.bak: dict = {t: None for t in self._targets()}
        self.obak: dict = {t: None for t in self._targets()}
        self.must_keep: set[bytes] = set()
        self.paths: dict = {}

    @staticmethod
    def _targets():
        return [(k, r) for k in KERNELS for r in ROLES]

    def teardown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def settings(self) -> Settings:
        return Settings(mode="both", trace_dir=self.root, script_name="script")

    def path(self, t) -> Path | None:
        return self.paths.get(t)

    # -- the user ------------------------------------------------------------------------------
    @precondition(lambda self: self.paths)
    @rule(data=st.data(), text=TEXTS)
    def edit(self, data, text):
        t = data.draw(st.sampled_from(sorted(self.paths)))
        self.path(t).write_text(text)
        self.work[t] = text

    @rule(t=TARGETS, text=TEXTS)
    def change_kernel(self, t, text):
        self.generated[t] = text

    @precondition(lambda self: self.paths)
    @rule(data=st.data())
    def delete_original(self, data):
        t = data.draw(st.sampled_from(sorted(self.paths)))
        files.WorkingFile(self.path(t)).original.unlink(missing_ok=True)
        self.base[t] = None

    @precondition(lambda self: self.paths)
    @rule(data=st.data())
    def delete_working(self, data):
        t = data.draw(st.sampled_from(sorted(self.paths)))
        self.path(t).unlink(missing_ok=True)
        self.work[t] = None

    # -- tltrace ---------------------------------------------------------------------------------
    def _current(self, t) -> bytes | None:
        p = self.path(t)
        return p.read_bytes() if p is not None and p.is_file() else None

    def _check_kept(self, t, before: bytes | None, baseline: str | None):
        """An edit tltrace took out of the working file must be in a backup, from now on."""
        if baseline is not None and before == baseline.encode():
            return  # not an edit: the codegen it was synced from
        if self.latest[t] is not None and before == self.latest[t].encode():
            return  # not an edit: the newest codegen (its baseline may have been deleted)
        if before is not None and self._current(t) != before:
            self.must_keep.add(before)

    @rule(t=TARGETS)
    def rerun(self, t):
        kernel, role = t
        before, base_before = self._current(t), self.base[t]
        gen = self.generated[t]
        want = expected_tag(self.base[t], self.work[t], gen)
        out = reconcile_codegen(
            self.settings(), kernel=kernel, role=role, generated=gen, compiles_source=True, backend="cython"
        )
        assert out.tag == want, (self.base[t], self.work[t], gen)
        self.paths[t] = out.path
        self._check_kept(t, before, base_before)
        if want == "UNRESOLVED":  # never compiled; the file stays as it is
            assert out.compile_text == gen and self._current(t) == before
            self.latest[t] = gen
            return
        if want == "PATCHED":
            assert out.compile_text == self.work[t]
        else:
            assert out.compile_text == gen
        if want == "CONFLICT":
            self.bak[t], self.obak[t] = self.work[t], self.base[t]
        if want == "INIT-BACKUP":
            self.bak[t] = self.work[t]
            self.obak[t] = None  # an INIT-BACKUP .bak pairs with no baseline
        if want != "PATCHED":
            self.base[t] = gen
            if want != "SYNCED":
                self.work[t] = gen
        if self.work[t] is None:
            self.work[t] = self.base[t]
        self.latest[t] = gen

    @precondition(lambda self: self.paths)
    @rule(data=st.data(), strategy=st.sampled_from(["merge", "ours", "theirs"]))
    def resolve_conflict(self, data, strategy):
        t = data.draw(st.sampled_from(sorted(self.paths)))
        wf = files.WorkingFile(self.path(t))
        if not pending(wf):
            return
        before, base_before = self._current(t), self.base[t]
        r = resolve(wf, strategy=strategy)
        self._check_kept(t, before, base_before)
        assert not wf.original_bak.exists() and not wf.bak.exists()  # archived as .N
        # The merge's labels name files as they are after the resolve: the numbered backup
        # that holds the edit (it must exist) and the baseline, which now holds the new codegen.
        held = [b for b in sorted(wf.bak.parent.glob(wf.bak.name + ".*")) if b.read_text() == self.bak[t]]
        want = {
            "ours": self.bak[t],
            "theirs": self.latest[t],
            "merge": merge3(
                self.obak[t],
                self.bak[t],
                self.latest[t],
                ours_label=f"your edits ({held[-1].name if held else wf.bak.name})",
                theirs_label=f"new codegen ({wf.original.name})",
            ).text
            if self.obak[t] is not None
            else None,
        }[strategy]
        if want is not None:
            assert r.text == want
        self.work[t], self.base[t] = r.text, self.latest[t]
        self.bak[t] = self.obak[t] = None

    # -- what must always hold ---------------------------------------------------------------------
    @invariant()
    def disk_matches_model(self):
        for t, p in self.paths.items():
            wf = files.WorkingFile(p)
            got_w = p.read_text() if p.exists() else None
            got_b = wf.original.read_text() if wf.original.exists() else None
            assert got_w == self.work[t]
            assert got_b == self.base[t]

    @invariant()
    def nothing_lost(self):
        on_disk = {p.read_bytes() for p in self.root.rglob("*") if p.is_file()}
        missing = [m for m in self.must_keep if m not in on_disk]
        assert not missing

    @invariant()
    def kernels_never_share_files(self):
        ps = [p for p in self.paths.values()]
        assert len(set(ps)) == len(ps)
        for (kernel, role), p in self.paths.items():
            assert p.name in (f"codegen_{role}.cpp", f"codegen_{kernel}_{role}.cpp")


WorkingFiles.TestCase.settings = settings(
    max_examples=100, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch):
    monkeypatch.setattr(files, "FSYNC", False)


test_working_files = WorkingFiles.TestCase


# -- the file layer's rough edges -----------------------------------------------------------------------
@pytest.fixture
def wf(tmp_path):
    def new():  # one Settings per run, as `tltrace run` makes
        return Settings(mode="both", trace_dir=tmp_path, script_name="s")

    return new(), lambda gen, **kw: reconcile_codegen(
        new(),
        kernel="k",
        role="device",
        generated=gen,
        compiles_source=kw.get("src", True),
        backend="tvm_ffi",
    )


def test_non_utf8_working_file_is_left_alone(wf):
    s, run = wf
    out = run("gen\n")
    out.path.write_bytes(b"\xff\xfe not utf-8")
    out2 = run("gen2\n")
    assert out2.compile_text == "gen2\n" and out2.tag is None
    assert "not UTF-8" in out2.warnings[0]
    assert out.path.read_bytes() == b"\xff\xfe not utf-8"


def test_working_path_is_a_directory(wf):
    s, run = wf
    p = layout_for(s).device_path
    p.mkdir(parents=True)
    (p / "keep.txt").write_text("mine")
    out = run("gen\n")
    assert out.compile_text == "gen\n" and "directory" in out.warnings[0]
    assert (p / "keep.txt").read_text() == "mine"


def test_deleted_original_warns_and_backs_up(wf):
    s, run = wf
    out = run("gen\n")
    out.path.write_text("my edit\n")
    files.WorkingFile(out.path).original.unlink()
    out2 = run("gen\n")
    assert out2.tag == "INIT-BACKUP" and any("missing" in w for w in out2.warnings)
    assert files.WorkingFile(out.path).bak.read_text() == "my edit\n"


def test_note_for_binary_backend(wf):
    s, run = wf
    out = run("gen\n", src=False)
    out.path.write_text("edited\n")
    out2 = run("gen\n", src=False)
    assert out2.tag == "NOTE" and "tvm_ffi" in out2.message
    assert out2.compile_text == "edited\n"  # kept for the diff view; tool.py does not compile it


def test_every_conflict_backup_is_kept(wf):
    s, run = wf
    out = run("g0\n")
    for i in range(1, 4):
        out.path.write_text(f"edit {i}\n")
        assert run(f"g{i}\n").tag == "CONFLICT"
    w = files.WorkingFile(out.path)
    assert w.bak.read_text() == "edit 3\n"  # the documented name holds the newest
    assert w.original_bak.read_text() == "g2\n"
    assert [p.read_text() for p in w.backups()] == ["edit 3\n", "edit 2\n", "edit 1\n"]
    assert [p.read_text() for p in w.baseline_backups()] == ["g2\n", "g1\n", "g0\n"]


def test_same_kernel_same_shape_new_code_in_one_run_goes_through_the_table(tmp_path):
    """A notebook recompiling a kernel at one shape: the edit meets the decision table, not a new file."""
    s = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    a = reconcile_codegen(
        s, kernel="add", role="device", generated="n=1\n", compiles_source=True, backend=None
    )
    a.path.write_text("my edit\n")
    b = reconcile_codegen(
        s, kernel="add", role="device", generated="n=2\n", compiles_source=True, backend=None
    )
    assert b.path == a.path and b.tag == "CONFLICT"
    assert files.WorkingFile(a.path).bak.read_text() == "my edit\n"


def test_custom_path_names(tmp_path):
    s = Settings(
        mode="terminal", trace_dir=tmp_path, script_name="s", codegen_output=tmp_path / "foo.kernel.cpp"
    )
    d = reconcile_codegen(s, kernel="k", role="device", generated="d\n", compiles_source=True, backend=None)
    h = reconcile_codegen(s, kernel="k", role="host", generated="h\n", compiles_source=True, backend=None)
    o = reconcile_codegen(
        s, kernel="other", role="device", generated="o\n", compiles_source=True, backend=None
    )
    assert (d.path.name, h.path.name, o.path.name) == (
        "foo.kernel.cpp",
        "foo.kernel_host.cpp",
        "foo.kernel_other.cpp",
    )
    assert files.insert_before_ext(Path("foo"), "_host") == Path("foo_host")
    assert files.insert_before_ext(Path("foo.cpp"), "_host") == Path("foo_host.cpp")


def test_threads_sharing_a_working_file(tmp_path):
    s = Settings(mode="both", trace_dir=tmp_path, script_name="s")
    reconcile_codegen(s, kernel="k", role="device", generated="g\n", compiles_source=True, backend=None)
    errors, outs = [], []

    def go(i):
        try:
            st_ = Settings(mode="both", trace_dir=tmp_path, script_name="s")
            outs.append(
                reconcile_codegen(
                    st_,
                    kernel="k",
                    role="device",
                    generated=f"g{i % 2}\n",
                    compiles_source=True,
                    backend=None,
                )
            )
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    w = files.WorkingFile(outs[0].path)
    assert w.path.read_text() == w.original.read_text() in ("g0\n", "g1\n")
    assert not list(w.path.parent.glob(".*.tmp"))
