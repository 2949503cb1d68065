"""The run's texts pack (format/pack.py, session/store.py): every text once, a torn tail read around.

Real compiles (a script lowering two CPU kernels, `tltrace run -q`). The oracle for each
text is TileLang's own print, taken inline by tests/test_capture_texts.py; here the pack's
texts are checked against the hashes the records carry (BLAKE2b of the text, computed by
hashlib, not by tltrace's reader), and a pack cut at every byte boundary of its last entry
reads every entry before it and says what was cut. An older run (per-pass files hard
linked into `.objects`, no pack), made from the same texts, still reads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import textwrap
import zlib
from pathlib import Path

import pytest

from tltrace.errors import RecordsError
from tltrace.format import pack
from tltrace.history.loading import load_run
from tltrace.history.texts import missing_files, read_text, text_of
from tltrace.session.store import RunStore

from ._cli import one_line_error
from ._records import pack_entries, pack_texts
from .conftest import EXAMPLES

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {examples!r})
    import tilelang
    from tilelang import tvm
    from elementwise_add import make_add

    with tvm.target.Target("c"):
        for n in (256, 512):
            tilelang.lower(make_add(n, 128), target="c")
    """
)


def _blake(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=10).hexdigest()


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    """One invocation of the script, `tltrace run -q`; returns the script dir."""
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    tmp = tmp_path_factory.mktemp("pack")
    script = tmp / "two_adds.py"
    script.write_text(SCRIPT.format(examples=str(EXAMPLES)))
    td = tmp / "traces"
    res = CliRunner().invoke(app, ["run", "-q", "--trace-dir", str(td), str(script)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return td / "two_adds"


def _runs(script_dir: Path) -> list[Path]:
    return sorted(p for p in (script_dir / ".run_records").iterdir() if p.name.startswith("run_"))


def test_a_run_keeps_its_texts_in_one_pack_and_no_file_per_text(traced: Path) -> None:
    for run_dir in _runs(traced):
        names = {p.name for p in run_dir.iterdir()}
        assert pack.PACK in names, names
        assert not [p for p in run_dir.rglob("*.tir")], "no per-pass file"
        data = (run_dir / pack.PACK).read_bytes()
        found = pack.parse(data)
        assert found.torn == 0
        stored = pack_texts(run_dir)  # read by the documented layout, deflated entries inflated by zlib
        assert list(stored) == found.entries
        for digest in found.entries:  # each entry is the text its hash names
            assert _blake(stored[digest].encode("utf-8", "surrogatepass")) == digest
            assert found.text(digest) == stored[digest]
        deflated = [d for d in found.entries if b"\nZ " + d.encode() + b" " in data]
        assert deflated, "a run's IR texts are stored deflated"
        leaning = [d for d, (base, _) in pack_entries(run_dir).items() if base is not None]
        assert leaning, "a pass's output is deflated with the text stored before it"
        manifest = load_run(run_dir).require()
        assert manifest.records
        for rec in manifest.records:
            for side, digest in (("before", rec.before_hash), ("after", rec.after_hash)):
                if digest is None:
                    continue
                text = text_of(run_dir, rec, side)
                assert text is not None and _blake(text.encode("utf-8", "surrogatepass")) == digest
        assert missing_files(load_run(run_dir)) == 0
    assert not (traced / ".run_records" / ".objects").exists()


def test_the_store_writes_each_distinct_text_once(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s")
    store.open()
    texts = ["a\n", "b\u00e9\n", "a\n", "\ud800 lone surrogate\n", ""]
    digests = [store.put_text(t) for t in texts]
    store.close()
    data = (store.run_dir / pack.PACK).read_bytes()
    found = pack.parse(data)
    assert found.entries == list(dict.fromkeys(digests))  # once each, in order
    for t, d in zip(texts, digests):
        assert d == _blake(t.encode("utf-8", "surrogatepass"))
        assert found.text(d) == t


def _cut_cases(run_dir: Path):
    data = (run_dir / pack.PACK).read_bytes()
    found = pack.parse(data)
    last = found.entries[-1]
    off, _ = found.index[last]
    start = data.rindex(b" " + last.encode() + b" ", 0, off) - 1  # the last entry's first byte (T or Z)
    return data, found, last, start


def test_a_pack_cut_at_every_byte_of_its_last_entry_reads_the_entries_before_it(
    traced: Path, tmp_path
) -> None:
    src = _runs(traced)[-1]
    run_dir = tmp_path / "k" / ".run_records" / src.name
    shutil.copytree(src, run_dir)
    data, whole, last, start = _cut_cases(run_dir)
    manifest = load_run(run_dir).require()
    naming_last = [
        (r, s) for r in manifest.records for s in ("before", "after") if getattr(r, f"{s}_hash") == last
    ]
    assert naming_last, "the last entry is a text a record names"
    path = run_dir / pack.PACK
    for cut in range(start, len(data)):
        path.write_bytes(data[:cut])
        os.utime(path, ns=(cut, cut))  # a new key for the readers' cache, as a growing file has
        found = pack.parse(data[:cut])
        assert found.entries == whole.entries[:-1], cut
        assert found.torn == cut - start, cut
        for digest in found.entries:
            assert found.text(digest) == whole.text(digest)
        run = load_run(run_dir)
        rec, side = naming_last[0]
        assert text_of(run_dir, rec, side) is None, cut
        said = f"lost {cut - start} bytes at its end" if cut > start else f"holds no {side} text"
        with pytest.raises(RecordsError, match=said):
            read_text(run, rec, side)
        assert missing_files(run) == len([1 for r, s in naming_last if getattr(r, f"{s}_file")])
    path.write_bytes(data)
    assert pack.parse(data).torn == 0


def test_a_deflated_entry_damaged_inside_is_one_line_naming_the_damage(
    traced: Path, tmp_path, run_cli
) -> None:
    """A whole entry whose deflated bytes were changed (not a kill: the framing is intact) does not
    inflate: the entries around it still read, and its record's text is one error line, exit 3."""
    src = _runs(traced)[-1]
    run_dir = tmp_path / "d" / ".run_records" / src.name
    shutil.copytree(src, run_dir)
    data = (run_dir / pack.PACK).read_bytes()
    whole = pack.parse(data)
    manifest = load_run(run_dir).require()
    rec = next(r for r in manifest.records if r.after_hash and b"\nZ " + r.after_hash.encode() + b" " in data)
    off, n = whole.index[rec.after_hash]
    lost = _leaning_on(run_dir, rec.after_hash)  # the entries deflated with it, by the documented layout
    bad = bytearray(data)
    bad[off : off + n] = bytes(n)  # zeros in place of the deflated bytes: same length, same framing
    (run_dir / pack.PACK).write_bytes(bytes(bad))
    found = pack.parse(bytes(bad))
    assert found.entries == whole.entries and found.torn == 0
    assert all(found.text(d) is None for d in lost) and len(lost) <= pack.CHAIN
    assert all(found.text(d) == whole.text(d) for d in whole.entries if d not in lost)
    with pytest.raises(RecordsError, match="is damaged"):
        read_text(load_run(run_dir), rec, "after")
    res = run_cli("show", run_dir, "--pass", str(rec.index))
    one_line_error(res, 3, "is damaged", rec.name)


def test_readers_answer_the_same_from_chained_entries_as_from_plain_ones(
    traced: Path, tmp_path, run_cli
) -> None:
    """A real run's pack (its `D` entries) against the same texts stored as plain `Z` entries (the
    documented layout, written here with zlib): the report model and `tltrace show` say the same."""
    from tltrace.history.report_reads import compile_report

    src = _runs(traced)[-1]
    chained, plain = (tmp_path / k / ".run_records" / src.name for k in ("a", "b"))
    shutil.copytree(src, chained)
    shutil.copytree(src, plain)
    entries = pack_entries(src)
    assert any(base for base, _ in entries.values())
    (plain / pack.PACK).write_bytes(
        pack.MAGIC + b"".join(pack.entry(d, zlib.compress(b, 1), b"Z") for d, (_, b) in entries.items())
    )
    assert pack_texts(plain) == pack_texts(chained)
    a, b = compile_report(chained, linked=False), compile_report(plain, linked=False)
    assert a.records == b.records and all(
        r.after is not None or r.record.after_hash is None for r in a.records
    )
    for r in load_run(chained).require().records:
        outs = [run_cli("show", d, "--pass", str(r.index)) for d in (chained, plain)]
        assert outs[0].exit_code == outs[1].exit_code == 0
        assert outs[0].output.replace(str(chained), "RUN") == outs[1].output.replace(str(plain), "RUN")


def _leaning_on(run_dir: Path, digest: str) -> set[str]:
    """`digest` and every entry deflated with it, directly or through another (the pack's chain)."""
    out = {digest}
    for d, (base, _) in pack_entries(run_dir).items():
        if base in out:
            out.add(d)
    return out


def _similar_texts(n: int) -> list[str]:
    """Texts as a pipeline's passes give them: each the one before with a line changed."""
    body = [f"    x_{i} = T.alloc({i}, 128)  # {'w' * (i % 7)}" for i in range(300)]
    out = []
    for k in range(n):
        body[(k * 37) % 300] = f"    changed_{k} = T.op({k})"
        out.append("\n".join(body) + "\n")
    return out


def test_the_store_deflates_each_text_with_the_one_before_in_bounded_chains(tmp_path: Path) -> None:
    texts = _similar_texts(2 * pack.CHAIN + 3)
    store = RunStore(tmp_path / "s")
    store.open()
    digests = [store.put_text(t) for t in texts]
    store.close()
    stored = pack_entries(store.run_dir)  # inflated by zlib with each base's text (documented layout)
    assert list(stored) == digests
    bases = [base for base, _ in stored.values()]
    standalone = [i for i, b in enumerate(bases) if b is None]
    assert standalone == list(range(0, len(texts), pack.CHAIN))  # a chain is CHAIN entries at most
    for i, b in enumerate(bases):
        assert b is None or b == digests[i - 1]
    found = pack.read(store.run_dir / pack.PACK)
    assert found is not None
    for t, d in zip(texts, digests):
        assert stored[d][1] == t.encode() and _blake(t.encode()) == d
        assert found.text(d) == t
    plain = sum(len(pack.packed_entry(d, t.encode())) for d, t in zip(digests, texts))
    assert (store.run_dir / pack.PACK).stat().st_size < plain / 2  # what the dictionary saves


def test_a_damaged_entry_loses_its_chain_and_no_other_entry(tmp_path: Path) -> None:
    texts = _similar_texts(3 * pack.CHAIN)
    store = RunStore(tmp_path / "s")
    store.open()
    digests = [store.put_text(t) for t in texts]
    store.close()
    data = (store.run_dir / pack.PACK).read_bytes()
    whole = pack.parse(data)
    hit = digests[pack.CHAIN + 2]  # inside the second chain
    off, n = whole.index[hit]
    bad = bytearray(data)
    bad[off : off + n] = bytes(n)
    found = pack.parse(bytes(bad))
    assert found.entries == digests and found.torn == 0
    lost = set(digests[pack.CHAIN + 2 : 2 * pack.CHAIN])
    for t, d in zip(texts, digests):
        assert found.text(d) == (None if d in lost else t), digests.index(d)


def test_a_chained_entry_reads_only_with_an_earlier_base() -> None:
    a, b = "first text\n" * 40, "first text\n" * 39 + "second\n"
    ha, hb, hc = (_blake(t.encode()) for t in (a, b, "c"))
    e_a = pack.packed_entry(ha, a.encode())
    e_b = pack.packed_entry(hb, b.encode(), (ha, a.encode()))
    assert e_b.startswith(b"D " + hb.encode() + b" ") and e_b.split(b"\n", 1)[0].endswith(ha.encode())
    assert pack.parse(pack.MAGIC + e_a + e_b).text(hb) == b
    ahead = pack.parse(pack.MAGIC + e_b + e_a)  # its base after it: not held, the base still reads
    assert ahead.text(hb) is None and ahead.text(ha) == a and ahead.entries == [ha] and ahead.torn == 0
    absent = pack.parse(pack.MAGIC + pack.packed_entry(hb, b.encode(), (hc, b"c")) + e_a)
    assert absent.entries == [ha] and absent.torn == 0
    no_base = pack.MAGIC + e_a + b"D " + hb.encode() + b" 1\nx\n"  # a D header without its base: torn
    assert pack.parse(no_base).entries == [ha] and pack.parse(no_base).torn == len(no_base) - len(
        pack.MAGIC + e_a
    )
    assert pack.parse(pack.MAGIC + e_a + e_b.replace(b"D ", b"Z ", 1)).entries == [ha]  # a base on a Z: torn
    long_base = ("x" * (pack.DICT_MAX + 1)).encode()  # beyond deflate's reach: no dictionary
    assert pack.packed_entry(hb, b.encode(), (ha, long_base)) == pack.packed_entry(hb, b.encode())


def test_a_pack_without_its_magic_reads_as_nothing() -> None:
    assert pack.parse(b"T 0123456789abcdef0123 1\nx\n").entries == []
    assert pack.parse(b"").torn == 0


def _to_old_format(run_dir: Path) -> None:
    """Rewrite a run as tltrace wrote it before the pack: per-pass files hard linked into `.objects`."""
    found = pack.read(run_dir / pack.PACK)
    assert found is not None
    objects = run_dir.parent / ".objects"
    objects.mkdir(exist_ok=True)
    for digest in found.entries:
        obj = objects / digest
        if not obj.exists():
            obj.write_bytes(pack_texts(run_dir)[digest].encode("utf-8", "surrogatepass"))
            obj.chmod(0o444)
    for rec in load_run(run_dir).require().records:
        for rel, digest in ((rec.before_file, rec.before_hash), (rec.after_file, rec.after_hash)):
            if rel and digest:
                dest = run_dir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.link(objects / digest, dest)
    (run_dir / pack.PACK).unlink()


def test_an_old_format_run_still_reads(traced: Path, tmp_path, run_cli) -> None:
    script_dir = tmp_path / "old"
    shutil.copytree(traced, script_dir, symlinks=True)
    new = {}
    for run_dir in _runs(script_dir):
        m = load_run(run_dir).require()
        new[run_dir.name] = [text_of(run_dir, r, s) for r in m.records for s in ("before", "after")]
        _to_old_format(run_dir)
    for run_dir in _runs(script_dir):
        assert not (run_dir / pack.PACK).exists()
        m = load_run(run_dir).require()
        assert [text_of(run_dir, r, s) for r in m.records for s in ("before", "after")] == new[run_dir.name]
        assert missing_files(load_run(run_dir)) == 0
    res = run_cli("show", str(script_dir), "-1")
    assert res.exit_code == 0, res.output


def test_export_tir_writes_the_seed_layout_from_the_pack(traced: Path, tmp_path, run_cli) -> None:
    out = tmp_path / "tir"
    res = run_cli("export", str(traced), "-1", "--tir", str(out))
    assert res.exit_code == 0, res.output
    n = 0
    for run_dir in _runs(traced):
        for rec in load_run(run_dir).require().records:
            for rel, digest in ((rec.before_file, rec.before_hash), (rec.after_file, rec.after_hash)):
                if rel:
                    f = out / run_dir.name / rel
                    assert _blake(f.read_bytes()) == digest, f
                    n += 1
    assert n and len([p for p in out.rglob("*") if p.is_file()]) == n
    assert f"({n} file(s) of 2 compile(s))" in res.output
    again = run_cli("export", str(traced), "-1", "--tir", str(out))
    assert again.exit_code == 2 and "not empty" in again.output
