"""The data tltrace records: one PassRecord per pass, one RunManifest per compilation.

Their JSON codec and its schema version live here: session/store.py writes them
(`RunManifest.dumps`, `PassRecord.to_stored`), history/loading.py reads them
(`RunManifest.from_json`, `PassRecord.from_json`). Everything else (show, diff-runs,
the HTML report) reads these, never file names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .layout import record_file

SCHEMA_VERSION = 4
# Versions this tltrace reads. Version 1 lacks the invocation fields; they read as None.
# Version 3 left out what a reader can restore: a record's before_file / after_file
# where it is the canonical path (record_file), a no-op's after hash, and in the
# manifest's list what the record before implies; from_json restores them. Version 4
# writes every field of every record again (RunManifest.dumps): `jq` and a plain
# json.load read it as it is.
READABLE_SCHEMA_VERSIONS = (1, 2, 3, 4)


# manifest.json's and records.jsonl's JSON: compact (json.dumps with these separators makes an
# encoder per call; the store encodes a line per record with this one).
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode


def readable_schema(data: dict[str, Any]) -> int | None:
    """Return a manifest's `schema_version` when this tltrace reads it, else None (missing, foreign, a bool)."""
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        return None
    return int(version)


# Record statuses.
CHANGED = "changed"
NOOP = "noop"
FAILED = "failed"
CODEGEN = "codegen"
STATUSES = (CHANGED, NOOP, FAILED, CODEGEN)
# The roles of codegen stages derived from the device source (tltrace run --ptx, --sass):
# codegen records too, but not generated source (the working file, facts and source maps skip them).
STAGE_ROLES = ("ptx", "sass")

# Run statuses.
RUNNING = "running"
COMPLETE = "complete"
ERROR = "error"  # the compilation raised
INTERRUPTED = "interrupted"  # Ctrl+C stopped the compilation (or its process is gone: history/runs.py)
# Read, never written: the compile had ended, but its process exited before its records were
# all written (its `inflight` note says "ended"; session/exits.py, history/loading.py).
EXITED = "exited"
EXITED_NOTE = "process exited before its records were written"
# Read, never written: a compile whose process died before its records were complete (a kill -9):
# its records stop where it died, and every reader says so (show, --facts, diff-runs, export).
CUT_SHORT = (INTERRUPTED, EXITED)


@dataclass(frozen=True)
class PassRecord:
    """One pass (or codegen call) as it ran: where it sits, what it did, where its texts are."""

    index: int
    name: str
    phase: str
    depth: int = 0
    parent: int | None = None
    status: str = NOOP
    # Lines added and removed (diff.count_changes of the two texts). None: left to the reader
    # (a compile traced with no live view that shows them): history/derived.py counts them from
    # the stored texts when first read and caches them beside the run (format/derived.py).
    added: int | None = 0
    removed: int | None = 0
    duration_s: float = 0.0
    before_hash: str | None = None
    after_hash: str | None = None
    before_file: str | None = None  # relative to the run directory
    after_file: str | None = None
    role: str | None = None  # codegen records: "device", "host" or None
    ffi: str | None = None  # codegen records: the target.build.* function
    error: str | None = None  # failed records: "ExcType: message"
    reconcile: str | None = None  # codegen records: PATCHED, REGENERATED, ...
    working_file: str | None = None  # codegen records: the working file, absolute
    start_s: float | None = None  # when the pass started, seconds after the compile session began

    @property
    def changed(self) -> bool:
        return self.status in (CHANGED, CODEGEN) and self.before_hash != self.after_hash

    def to_json(self) -> dict[str, Any]:
        """Return the record as JSON data, fields at their defaults left out (from_json restores them)."""
        d = self.__dict__  # read directly: this runs once per record on the worker (records.jsonl)
        return {k: v for k, default in _DEFAULT_ITEMS if (v := d[k]) != default or k in _ALWAYS}

    def with_texts(
        self, before_hash: str | None, after_hash: str | None, before_file: str | None, after_file: str | None
    ) -> PassRecord:
        """Return this record naming its stored texts (the store's, once per record).

        A copy of every field but these four, made without `dataclasses.replace`'s keyword
        `__init__` (a sixth of its cost); the record is frozen all the same.
        """
        new = object.__new__(PassRecord)
        fields = new.__dict__
        fields.update(self.__dict__)
        fields["before_hash"], fields["after_hash"] = before_hash, after_hash
        fields["before_file"], fields["after_file"] = before_file, after_file
        return new

    @staticmethod
    def of(fields: dict[str, Any]) -> PassRecord:
        """Return the record of `fields` (field names, each at most once; the rest at their defaults),
        made as `with_texts` makes its copy: once per record on the worker, without the frozen
        dataclass's keyword `__init__` (a set per field). `fields` must hold only field names."""
        new = object.__new__(PassRecord)
        d = new.__dict__
        d.update(_RECORD_DEFAULTS)
        d.update(fields)
        if len(d) != len(_RECORD_DEFAULTS):
            raise TypeError(f"not PassRecord fields: {sorted(set(d) - set(_RECORD_DEFAULTS))}")
        return new

    def to_full(self) -> dict[str, Any]:
        """Return every field of the record, defaults and nulls included (manifest.json, schema 4)."""
        d = self.__dict__
        return {k: d[k] for k in _RECORD_DEFAULTS}

    def full_json(self) -> str:
        """Return the record as manifest.json and records.jsonl hold it: `to_full`, compact JSON.

        Once per record on the worker: the keys are pre-encoded and each value is written the
        way the encoder writes it (`_full_json_text`); a value of another type (a bool, a float
        subclass, NaN) goes through the encoder itself. The same text either way.
        """
        try:
            return _full_json_text(self.__dict__)
        except (TypeError, ValueError):
            return _COMPACT(self.to_full())

    def to_stored(self) -> dict[str, Any]:
        """Return the record in the schema-3 form (records.jsonl's lines until issue 51's third
        round, which writes `full_json` there); from_json reads it.

        Left out besides the defaults: a file name that is the canonical one
        (record_file) for a side whose hash is kept, and a no-op's after hash (its
        before hash). A side with a hash and no file says so with an explicit null.
        """
        out = self.to_json()
        for side, fkey, hkey in _SIDES:
            if out.get(hkey) is None:
                continue
            if fkey not in out:
                out[fkey] = None
            elif out[fkey] == record_file(self.phase, self.index, self.name, side):
                del out[fkey]
        if self.status == NOOP and "after_hash" in out and out["after_hash"] == out.get("before_hash"):
            del out["after_hash"]  # a no-op's after is its before
        return out

    @classmethod
    def from_json(
        cls, data: dict[str, Any], prev: PassRecord | None = None, position: int | None = None
    ) -> PassRecord:
        """Read a record; in a schema-3 manifest's list, `prev` and `position` give what it leaves out."""
        if not isinstance(data, dict):
            raise TypeError(f"a record is a {type(data).__name__}, not an object")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        _check_types(known, _RECORD_TYPES, "record")
        if position is not None and "index" not in known:
            known["index"] = position
        if prev is not None:
            known.setdefault("phase", prev.phase)
            if "before_hash" not in data:
                known["before_hash"] = prev.after_hash
        # A side with a hash and no file key has the canonical file (schema 3). Earlier
        # schemas always wrote both keys together, so this reads them unchanged.
        if known.get("status", NOOP) == NOOP and "after_hash" not in data and "before_hash" in known:
            known["after_hash"] = known["before_hash"]  # schema 3: a no-op's after is its before
        for side, fkey, hkey in _SIDES:
            if fkey not in data and known.get(hkey) is not None:
                known[fkey] = record_file(known.get("phase"), known.get("index"), known.get("name"), side)
        return cls(**known)


_SIDES = (("before", "before_file", "before_hash"), ("after", "after_file", "after_hash"))


_ALWAYS = {"index", "name", "phase", "status"}
_STR, _INT, _NUM = (str,), (int,), (int, float)
_RECORD_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {  # field: (types, None allowed)
    "index": (_INT, False),
    "name": (_STR, False),
    "phase": (_STR, False),
    "depth": (_INT, False),
    "parent": (_INT, True),
    "status": (_STR, False),
    "added": (_INT, True),
    "removed": (_INT, True),
    "duration_s": (_NUM, False),
    **{
        k: (_STR, True)
        for k in (
            "before_hash",
            "after_hash",
            "before_file",
            "after_file",
            "role",
            "ffi",
            "error",
            "reconcile",
            "working_file",
        )
    },
    "start_s": (_NUM, True),
}


def _check_types(values: dict[str, Any], types: dict[str, tuple[tuple[type, ...], bool]], what: str) -> None:
    """Raise TypeError when a field read from JSON has the wrong type (a hand-edited or foreign file)."""
    for k, v in values.items():
        spec = types.get(k)
        if spec is None or (v is None and spec[1]):
            continue
        if isinstance(v, bool) or not isinstance(v, spec[0]):
            raise TypeError(f"{what} field {k!r} is {v!r}, not a {spec[0][-1].__name__}")


_RECORD_DEFAULTS = {f.name: f.default for f in PassRecord.__dataclass_fields__.values()}
_DEFAULT_ITEMS = tuple(_RECORD_DEFAULTS.items())


# -- a record's JSON, written without the encoder's per-key work (PassRecord.full_json) -----------
_STR_JSON = json.encoder.encode_basestring_ascii  # what the encoder writes for a str (ensure_ascii)
_INT_REPR, _FLOAT_REPR = int.__repr__, float.__repr__
_INF = float("inf")


def _opt_str(v: Any) -> str:
    """A str or None, as the encoder writes it (TypeError for anything else)."""
    return "null" if v is None else _STR_JSON(v)


def _num(v: Any) -> str:
    """An int, a finite float or None, as the encoder writes it (ValueError for anything else)."""
    t = type(v)
    if t is int:
        return _INT_REPR(v)
    if v is None:
        return "null"
    if t is float and v == v and v != _INF and v != -_INF:
        return _FLOAT_REPR(v)
    raise ValueError(f"not written here: {v!r}")


_FULL_ORDER = (
    "index name phase depth parent status added removed duration_s before_hash after_hash "
    "before_file after_file role ffi error reconcile working_file start_s"
).split()
assert tuple(_RECORD_DEFAULTS) == tuple(_FULL_ORDER), "_full_json_text writes the fields in field order"


def _full_json_text(d: dict[str, Any]) -> str:
    """`_COMPACT` of a record's fields (`to_full`), for the types a record's fields have."""
    s, n = _opt_str, _num
    return (
        f'{{"index":{n(d["index"])},"name":{_STR_JSON(d["name"])},"phase":{_STR_JSON(d["phase"])},'
        f'"depth":{n(d["depth"])},"parent":{n(d["parent"])},"status":{_STR_JSON(d["status"])},'
        f'"added":{n(d["added"])},"removed":{n(d["removed"])},"duration_s":{n(d["duration_s"])},'
        f'"before_hash":{s(d["before_hash"])},"after_hash":{s(d["after_hash"])},'
        f'"before_file":{s(d["before_file"])},"after_file":{s(d["after_file"])},"role":{s(d["role"])},'
        f'"ffi":{s(d["ffi"])},"error":{s(d["error"])},"reconcile":{s(d["reconcile"])},'
        f'"working_file":{s(d["working_file"])},"start_s":{n(d["start_s"])}}}'
    )


@dataclass(frozen=True)
class RunManifest:
    """One compilation's run: who compiled what, where, and every record in order."""

    run_id: str
    script: str
    kernel: str | None = None
    target: str | None = None
    target_host: str | None = None
    backend: str | None = None
    tilelang_version: str | None = None
    tltrace_version: str | None = None
    command: list[str] = field(default_factory=list)
    cwd: str | None = None
    started: float = 0.0  # time.time()
    finished: float | None = None
    status: str = RUNNING
    error: str | None = None
    mode: str = "terminal"
    # Schema 2: which invocation (one `tltrace run`, one watch rerun, one enable()..disable() span)
    # this compile belongs to, and what tells it apart from its siblings.
    invocation: str | None = None  # shared by every compile of one invocation, by no other
    signature: str | None = None  # short human label: kernel, launch shape, input-IR hash
    input_hash: str | None = None  # hash of the compile's first input IR text
    launch: dict[str, Any] | None = None  # grid, threads, shared bytes, buffers (as read from the IR)
    params: dict[str, Any] | None = None  # e.g. the autotuner's config, when TileLang exposes it
    writer: dict[str, Any] | None = None  # who writes this run: pid, process start token, host
    thread: str | None = None  # name of the compiling thread
    thread_id: int | None = None  # threading.get_ident() of the compiling thread
    # What a rerun needs (tltrace repro / bundle): run-relative files of the frontend IR
    # ("frontend"), the target and PassContext ("context"), failed passes' inputs ("inputs").
    repro: dict[str, Any] | None = None
    # `tltrace bisect`: the top-level passes this compile skipped ({position, name, phase}), else None.
    skipped: list[dict[str, Any]] | None = None
    # What the compiler made of the kernel (docs/facts.md): {version, values, texts[, machine]},
    # computed by the printing worker when the run ends; None for runs recorded before facts.
    facts: dict[str, Any] | None = None
    # `tltrace run --line-directives` (docs/sourcemap.md): per codegen call compiled with scoped
    # `#line` directives, {role, file, directives, lines, files}; None when the compile got none.
    line_directives: list[dict[str, Any]] | None = None

    # The backend build after codegen (format/build.py): an edit compiled in place of the generated
    # source, a failed build's diagnostics; None when there is nothing to say.
    build: dict[str, Any] | None = None

    # Each block's layout map where a pass fixed or changed it, and a failure's buffers
    # (docs/layouts.md), by the layouts recorder; None when the compile has no layouts.
    layouts: dict[str, Any] | None = None

    # `tltrace run --remarks`: what each top-level pass wrote to stderr (remarks/recorder.py), else None.
    remarks: dict[str, Any] | None = None
    # The user's frames when the compile began, outermost first ({file, line, func}; callsites/stack.py).
    stack: list[dict[str, Any]] | None = None
    records: tuple[PassRecord, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def with_records(self, records: list[PassRecord] | tuple[PassRecord, ...]) -> RunManifest:
        return replace(self, records=tuple(records))

    @property
    def kernel_name(self) -> str | None:
        """The kernel's name as every view names the compile: its own (`kernel`), else, for a compile
        with none (`tilelang.lower`, the compile-only tool), the lowered function the signature starts
        with, as the stream labels it (session/signature.short_label). What `--kernel NAME` selects."""
        if self.kernel:
            return self.kernel
        first = (self.signature or "").split(" ", 1)[0]
        return first or None

    @property
    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.records:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        data = self._head_json()
        data["records"] = [r.to_json() for r in self.records]
        return data

    def _head_json(self) -> dict[str, Any]:
        """Every field but the records, in field order (the callers add `records` last)."""
        data = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "records"}
        data["command"] = list(self.command)
        return data

    def dumps(self, records_json: Sequence[str] | None = None) -> str:
        """Return manifest.json's text (schema 4): compact JSON, every field of every record written.

        `records_json`: each record's `full_json`, made before (the store keeps the lines it
        logged), so the final manifest does not encode its records again; the text is the same.

        Schema 3 left out what a reader could restore; a plain `json.load(...)["records"][i]["index"]`
        then raised KeyError. Writing it all costs about 20 KB more per 62-pass compile (3.8x the
        schema-3 manifest, about 13% of the run directory; docs/runs.md).
        """
        data = self._head_json()  # (not to_json: its short records would be made and dropped)
        if records_json is None:
            data["records"] = [r.to_full() for r in self.records]
            return _COMPACT(data)
        data["records"] = []
        head = _COMPACT(data)  # ends in `"records":[]}`: the records are the last field
        return f"{head[:-2]}{','.join(records_json)}]}}"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunManifest:
        version = readable_schema(data)
        if version is None:
            raise ValueError(
                f"manifest schema version {data.get('schema_version')!r} is not one of {READABLE_SCHEMA_VERSIONS}"
            )
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "records"}
        _check_types(known, _MANIFEST_TYPES, "manifest")
        known["command"] = [str(c) for c in known.get("command") or []]
        if not isinstance(data.get("records") or (), (list, tuple)):
            raise TypeError(f"manifest field 'records' is a {type(data['records']).__name__}, not a list")
        if version == 3:
            decoded: list[PassRecord] = []
            for pos, r in enumerate(data.get("records") or ()):
                decoded.append(PassRecord.from_json(r, decoded[-1] if decoded else None, pos))
            records = tuple(decoded)
        else:
            records = tuple(PassRecord.from_json(r) for r in data.get("records") or ())
        return cls(**known, records=records)


_MANIFEST_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "run_id": (_STR, False),
    "script": (_STR, False),
    "command": ((list,), True),
    "skipped": ((list,), True),
    "line_directives": ((list,), True),
    "stack": ((list,), True),
    "started": (_NUM, False),
    "finished": (_NUM, True),
    "status": (_STR, False),
    "mode": (_STR, False),
    "schema_version": (_INT, False),
    **{
        k: (_STR, True)
        for k in (
            "kernel",
            "target",
            "target_host",
            "backend",
            "tilelang_version",
            "tltrace_version",
            "cwd",
            "error",
            "invocation",
            "signature",
            "input_hash",
            "thread",
        )
    },
    **{
        k: ((dict,), True)
        for k in ("launch", "params", "writer", "repro", "facts", "build", "layouts", "remarks")
    },
    "thread_id": (_INT, True),
}
