"""Who owns a script dir and a working file is recoverable from the dir and the file's owner record:
a lost or damaged registry is said and never hands one script's (or variant's) edit to another."""

from __future__ import annotations

from pathlib import Path

from tests._reconcile import codegen
from tltrace.config import Settings
from tltrace.format import scripts
from tltrace.reconcile import files
from tltrace.reconcile.variant import Variant
from tltrace.reconcile.workflow import Ledger

G = "int k() { return 1 + 2; }\n"
EDIT = G.replace("+", "-")


def _settings(trace: Path, where: str) -> Settings:
    return Settings(mode="both", trace_dir=trace, script_name="k", script_key=f"path:/{where}/k.py")


_ledger = {"now": Ledger()}  # the current invocation's ledger


def _compile(s: Settings, text: str = G, variant: Variant | None = None, kernel: str = "add"):
    return codegen(s, text, variant, _ledger["now"], kernel)


def _forget(trace: Path) -> None:
    """A new process (a new invocation): nothing remembered of earlier claims."""
    scripts._claimed.clear()
    scripts._problems.clear()
    _ledger["now"] = Ledger()


def test_a_lost_script_registry_never_hands_one_scripts_edit_to_another(tmp_path):
    trace = tmp_path / "t"
    xx, yy = _settings(trace, "xx"), _settings(trace, "yy")
    wx = _compile(xx).path
    _forget(trace)
    wy = _compile(yy).path
    assert wx.parent.name == "k" and wy.parent.name == "k_2"
    wx.write_text(EDIT)  # xx's edit
    for damage in ("rm", "truncate", "doctor"):
        reg = trace / scripts.REGISTRY
        if damage == "rm":
            reg.unlink()
        elif damage == "truncate":
            reg.write_text('{"scripts": {"path:/yy/k.p')
        else:  # a registry that names xx's directory for yy
            reg.write_text('{"version": 1, "scripts": {"path:/yy/k.py": "k", "path:/xx/k.py": "k_2"}}')
        _forget(trace)
        out = _compile(_settings(trace, "yy"))
        assert out.path == wy and out.tag is None and out.compile_text == G, (damage, out)  # not xx's edit
        assert any("registry" in w or scripts.REGISTRY in w for w in out.warnings), (damage, out.warnings)
        _forget(trace)
        out = _compile(_settings(trace, "xx"))
        assert out.path == wx and out.tag == "PATCHED" and out.compile_text == EDIT, (
            damage
        )  # and xx keeps its own


def test_a_dir_no_record_claims_is_not_guessed(tmp_path):
    """A script dir from before owner records, with the registry lost: nobody is handed it."""
    trace = tmp_path / "t"
    w = _compile(_settings(trace, "xx")).path
    w.write_text(EDIT)
    (w.parent / scripts.OWNER).unlink()
    (trace / scripts.REGISTRY).unlink()
    _forget(trace)
    out = _compile(_settings(trace, "yy"))
    assert out.path.parent.name == "k_2" and out.compile_text == G
    assert any("missing" in x for x in out.warnings)
    assert w.read_text() == EDIT


V256 = Variant("aaaa", "256", (("shape", "256"), ("grid", "4"), ("threads", "64")))
V512 = Variant("bbbb", "512", (("shape", "512"), ("grid", "8"), ("threads", "64")))
V1024 = Variant("cccc", "1024", (("shape", "1024"), ("grid", "16"), ("threads", "64")))


def _pool(trace: Path) -> Settings:
    _forget(trace)
    return _settings(trace, "pool")


def test_a_damaged_kernel_registry_never_remaps_variants(tmp_path):
    trace = tmp_path / "t"
    s = _pool(trace)
    a = _compile(s, "256\n", V256).path
    reg = a.parent / files.REGISTRY_NAME
    first = reg.read_text()  # the index before the 512 variant
    b = _compile(s, "512\n", V512).path
    assert (a.name, b.name) == ("codegen_device.cpp", "codegen_add_512_device.cpp")
    b.write_text("512 EDITED\n")
    # A power loss can take the index's last writes (it is not fsync'd; the owner records are):
    # an empty index, or the one before the 512 variant was added.
    for damage in ("truncate", "rm", "swap", "empty", "stale"):
        if damage == "truncate":
            reg.write_text(reg.read_text()[:20])
        elif damage == "rm":
            reg.unlink()
        elif damage == "empty":
            reg.write_text("")
        elif damage == "stale":
            reg.write_text(first)
        else:  # a registry that swaps the two variants' files
            reg.write_text('{"version": 2, "kernels": {"add|bbbb": "", "add|aaaa": "_add_512"}}')
        s = _pool(trace)
        for v, text in ((V1024, "1024\n"), (V512, "512\n"), (V256, "256\n")):  # another order, a new size
            out = _compile(s, text, v)
            if v is V512:
                assert out.path == b and out.tag == "PATCHED" and out.compile_text == "512 EDITED\n", damage
            elif v is V256:
                assert out.path == a and out.tag is None, (damage, out.tag)
            else:
                assert out.path not in (a, b)
        assert b.read_text() == "512 EDITED\n"


def _edited_256(tmp_path) -> tuple[Path, Path]:
    """The 256 variant compiled in a pool, its working file then edited: (trace dir, the file)."""
    trace = tmp_path / "t"
    a = _compile(_pool(trace), "256\n", V256).path
    a.write_text("256 EDITED\n")
    return trace, a


def test_a_working_file_no_record_claims_is_left_alone_and_said(tmp_path):
    trace, a = _edited_256(tmp_path)
    (
        a.parent / f".{a.parent.joinpath('codegen.cpp').name}.owner"
    ).unlink()  # a file from before owner records
    (a.parent / files.REGISTRY_NAME).write_text("{")
    s = _pool(trace)
    out = _compile(s, "256\n", V256)
    assert out.path != a and out.compile_text == "256\n"
    assert any("damaged" in w and "codegen_device.cpp" in w and "not applied" in w for w in out.warnings), (
        out.warnings
    )
    assert a.read_text() == "256 EDITED\n"


def test_one_kernel_whose_shape_changes_keeps_its_file_and_a_pool_keeps_one_file_per_shape(tmp_path):
    trace, a = _edited_256(tmp_path)
    s = _pool(trace)
    out = _compile(s, "512\n", V512)  # one kernel, changed: the table, in its one file
    assert out.path == a and out.tag == "CONFLICT" and "256 -> 512" in (out.message or "")
    assert a.read_text() == "512\n" and a.with_name(a.name + ".bak").read_text() == "256 EDITED\n"
    s = _pool(trace)
    assert _compile(s, "512\n", V512).path == a
    assert _compile(s, "1024\n", V1024).path != a  # a second shape in one invocation: its own file
    for order in ((V1024, V512), (V512, V1024)):
        s = _pool(trace)
        paths = {v: _compile(s, v.label + "\n", v).path for v in order}
        assert paths[V512] == a and paths[V1024].name == "codegen_add_1024_device.cpp"
    s = _pool(trace)  # a kernel with two known variants: a new one gets its own file
    assert _compile(s, "256\n", V256).path.name == "codegen_add_256_device.cpp"


def test_resolve_conflict_onto_carries_an_edit_to_another_variant(run_cli, tmp_path):
    """The edit of the 512 file, merged onto the 1024 variant's codegen: the 1024 file holds it; 512 keeps its own."""
    trace = tmp_path / "tmp" / "lower_trace_dir"
    base = "".join(f"line {i}\n" for i in range(8))

    def gen(size):
        return base.replace("line 0", f"size {size}")

    s = _pool(trace)
    a = _compile(s, gen(512), V512).path
    b = _compile(s, gen(1024), V1024).path
    a.write_text(gen(512).replace("line 5", "line 5 EDITED"))
    r = run_cli("resolve-conflict", "k", "--onto", "1024")
    assert r.exit_code == 0, r.stderr
    assert b.read_text() == gen(1024).replace("line 5", "line 5 EDITED")
    assert a.read_text() == gen(512).replace("line 5", "line 5 EDITED")
    s = _pool(trace)
    out = _compile(s, gen(1024), V1024)
    assert out.tag == "PATCHED" and out.compile_text == b.read_text()
    r = run_cli("resolve-conflict", "k", "--onto", "1024")  # the target now holds an edit of its own
    assert r.exit_code == 2 and "holds an edit of its own" in r.stderr
    r = run_cli("resolve-conflict", "k", "--onto", "4096")
    assert r.exit_code == 2 and "no working file holds a variant '4096'" in r.stderr
