"""What the store writes per record, made cheaply (issue 51, round 3), is what it wrote before.

The oracle is plain Python over the dataclasses' own fields (`dataclasses.fields`,
`dataclasses.replace`, `json.dumps`), not tltrace's writers: every record and manifest of the
checked-in recorded traces (real compiles, tests/data/traces) is written by the store and
compared byte for byte with what a straightforward encoding of its fields gives, and read back
by the readers. No compile: the quick loop runs it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from tltrace.format.layout import MANIFEST, RECORDS_LOG
from tltrace.format.records import PassRecord, RunManifest
from tltrace.history.loading import load_run
from tltrace.session.store import RunStore

from ._records import RECORDED

MANIFESTS = sorted(RECORDED.glob("*/.run_records/run_*/manifest.json"))


def _manifests() -> list[RunManifest]:
    return [RunManifest.from_json(json.loads(p.read_text())) for p in MANIFESTS]


def _records() -> list[PassRecord]:
    return [r for m in _manifests() for r in m.records]


def _full_by_hand(r: PassRecord) -> dict:
    """A record as manifest.json (schema 4) and records.jsonl hold it: every field, in field order."""
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(PassRecord)}


def _manifest_by_hand(m: RunManifest) -> str:
    head = {f.name: getattr(m, f.name) for f in dataclasses.fields(RunManifest) if f.name != "records"}
    head["command"] = list(m.command)
    head["records"] = [_full_by_hand(r) for r in m.records]
    return json.dumps(head, separators=(",", ":"))


def test_the_recorded_traces_have_records_of_every_kind() -> None:
    records = _records()
    assert len(MANIFESTS) >= 5 and len(records) >= 200
    kinds = {r.status for r in records}
    assert {"changed", "noop", "codegen"} <= kinds, kinds
    assert any(r.error for r in records) and any(r.role for r in records)


def test_a_record_naming_its_texts_is_the_record_replace_gives() -> None:
    for r in _records():
        for hashes in (("a" * 20, "b" * 20, "x/0_a_before.tir", "x/0_a_after.tir"), (None, None, None, None)):
            made = r.with_texts(*hashes)
            want = dataclasses.replace(
                r, before_hash=hashes[0], after_hash=hashes[1], before_file=hashes[2], after_file=hashes[3]
            )
            assert made == want and made.__dict__ == want.__dict__
            assert list(made.__dict__) == [f.name for f in dataclasses.fields(PassRecord)]
            with pytest.raises(dataclasses.FrozenInstanceError):
                made.name = "x"  # type: ignore[misc]


def test_a_record_made_of_its_fields_is_the_record_init_gives() -> None:
    """`PassRecord.of` (the worker's one construction per record, issue 51 round 6) against the
    dataclass's own `__init__`: the same record, its fields in field order, frozen; a name that
    is not a field is refused."""
    names = [f.name for f in dataclasses.fields(PassRecord)]
    for r in _records():
        full = {n: getattr(r, n) for n in names}
        some = {n: v for n, v in full.items() if v is not None and n not in ("depth", "role")}
        for given in (full, some):
            made, want = PassRecord.of(dict(given)), PassRecord(**given)
            assert made == want and made.__dict__ == want.__dict__
            assert list(made.__dict__) == names
            with pytest.raises(dataclasses.FrozenInstanceError):
                made.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        PassRecord.of({"index": 0, "name": "a", "phase": "p", "not_a_field": 1})


def test_a_text_hashed_from_its_utf8_is_named_as_text_hash_names_it() -> None:
    """The worker hashes a text's UTF-8 that it also stores (`utf8_hash`): the name is BLAKE2b's
    (hashlib, 10 bytes) of the UTF-8 with surrogates passed, as `text_hash` gives, for texts of
    every size around the pieces it is fed in."""
    import hashlib

    from tltrace.format.layout import text_hash, utf8_hash

    for text in ("", "a", "x" * 1999, "y" * 2000, "z\n" * 3001, "\u00e9\u4e2d\ud800 end" * 500):
        data = text.encode("utf-8", "surrogatepass")
        want = hashlib.blake2b(data, digest_size=10).hexdigest()
        assert utf8_hash(data) == text_hash(text) == want


def test_records_jsonl_holds_each_record_as_its_fields_encode(tmp_path: Path) -> None:
    records = _records()
    store = RunStore(tmp_path / "s")
    store.open()
    for r in records:
        store.append_record(r)
    store.close()
    lines = (store.run_dir / RECORDS_LOG).read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == len(records) + 1
    for r, line in zip(records, lines):
        assert line == json.dumps(_full_by_hand(r), separators=(",", ":")).encode("ascii")
        assert PassRecord.from_json(json.loads(line)) == r  # and it stands alone


def test_a_records_json_is_the_encoders_for_values_of_every_kind() -> None:
    """The record's JSON is written without the encoder (pre-encoded keys): odd values (escapes,
    non-ASCII, floats in exponent form, a bool, NaN, a str subclass, a missing value) give the
    encoder's text all the same."""

    class Name(str):
        pass

    base = _records()[0]
    odd = [
        {"name": 'say "hi"\\ \n\t\x00 \u00e9\u4e2d \ud83d\ude00', "error": "x\u2028y"},
        {"phase": "\udcff", "working_file": "/tmp/caf\u00e9/a.cu", "role": "device", "ffi": "target.build.c"},
        {"duration_s": 1e-07, "start_s": 123456789.125, "added": None, "removed": None, "parent": 3},
        {"duration_s": 0.1 + 0.2, "start_s": -0.0, "index": 10**20, "depth": -1},
        {"duration_s": float("nan")},
        {"start_s": float("inf")},
        {"added": True, "removed": False},
        {"depth": 2.5, "index": 7},
        {"name": Name("Sub"), "reconcile": "PATCHED"},
    ]
    for fields in odd:
        r = dataclasses.replace(base, **fields)
        assert r.full_json() == json.dumps(_full_by_hand(r), separators=(",", ":")), fields
    for r in _records():
        assert r.full_json() == json.dumps(_full_by_hand(r), separators=(",", ":"))


def test_manifest_json_holds_every_field_of_every_record(tmp_path: Path) -> None:
    for i, m in enumerate(_manifests()):
        store = RunStore(tmp_path / str(i))
        store.open()
        store.write_manifest(m)
        assert (store.run_dir / MANIFEST).read_text() == _manifest_by_hand(m)
        assert load_run(store.run_dir).require() == m


def test_the_final_manifest_reuses_the_logged_lines_only_for_the_very_records_logged(tmp_path: Path) -> None:
    """The store logs each record, then writes the final manifest: sorted, one record's error set at
    the end (a pass whose error came with the compile's), one never logged. Same text as encoded afresh."""
    m = max(_manifests(), key=lambda m: len(m.records))
    store = RunStore(tmp_path / "s")
    store.open()
    for r in reversed(m.records[1:]):
        store.append_record(r)
    records = list(m.records)
    records[-1] = dataclasses.replace(records[-1], error="RuntimeError: set at the end")
    final = dataclasses.replace(m.with_records(records), status="error", error="RuntimeError: set at the end")
    store.write_manifest(final)
    assert (store.run_dir / MANIFEST).read_text() == _manifest_by_hand(final)
    assert not (store.run_dir / RECORDS_LOG).exists()  # the final manifest replaced the log
    assert load_run(store.run_dir).require() == final


def test_records_jsonl_is_never_written_through_a_link(tmp_path: Path) -> None:
    """A link planted where the log goes (the pack's rule): the record is refused, the target untouched."""
    store = RunStore(tmp_path / "s")
    store.open()
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    os.symlink(target, store.run_dir / RECORDS_LOG)
    with pytest.raises(OSError):
        store.append_record(_records()[0])
    store.close()
    assert target.read_text() == "mine\n"
