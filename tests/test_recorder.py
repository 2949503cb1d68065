"""The recorder interface (session/recorder.py): hooks in order, the guard, the manifest field, registration."""

from __future__ import annotations

import ast
import dataclasses
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tltrace.config import Settings
from tltrace.format.records import RunManifest
from tltrace.history.texts import stored_text
from tltrace.session import recorder as rc
from tltrace.session.capture import OpenPass, TraceSession
from tltrace.session.events import Notice, PassRecorded
from tltrace.session.snapshot import Side
from tltrace.tracing.recorders import DEFAULTS, register_defaults

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "docs" / "manifest.schema.json").read_text())


class Counting(rc.Recorder):
    """Counts what it is told; `field` is the manifest's `repro` (a real field) with its count."""

    name = "counting"
    field = "repro"

    def __init__(self) -> None:
        self.calls: list[str] = []  # on the compiling thread
        self.jobs: list[str] = []  # on the worker (the compiling thread with --sync)
        self.threads: set[str] = set()
        self.store: Any = None

    def input(self, snapshot: Side) -> rc.Job:
        self.calls.append("input")
        return lambda: self.jobs.append("input job")

    def pass_started(self, event: rc.PassEvent, before: Side) -> rc.Job:
        self.calls.append(f"started {event.index}")
        return lambda: self.threads.add(threading.current_thread().name)

    def attach(self, store: Any) -> None:
        self.store = store
        store.write_plain("counting/seen.txt", "attached\n")
        self.jobs.append("attach")

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        self.jobs.append(f"recorded {record.index} {record.status}")

    def value(self) -> Any:
        return {"seen": sum(c.startswith("recorded") for c in self.jobs)}

    def finish(self) -> None:
        self.jobs.append("finish")


class Raising(rc.Recorder):
    name = "raising"

    def __init__(self, where: str) -> None:
        self.where = where
        self.calls = 0

    def pass_started(self, event: rc.PassEvent, before: Side) -> rc.Job | None:
        if self.where == "started":
            raise RuntimeError("boom on the compiling thread")
        return None

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        self.calls += 1
        if self.where == "recorded":
            raise ValueError("boom on the worker")


@pytest.fixture
def registry() -> Iterator[dict[str, rc.Recorder]]:
    """Only this test's recorders are registered; the registry is put back afterwards."""
    made: dict[str, rc.Recorder] = {}
    saved = dict(rc._factories)
    rc._factories.clear()
    try:
        yield made
    finally:
        rc._factories.clear()
        rc._factories.update(saved)


def _compile(tmp_path: Path, *, background: bool, **recorders: rc.Recorder) -> tuple[TraceSession, list[Any]]:
    """One compile of three passes through a TraceSession, `recorders` registered first (in order)."""
    for name, recorder in recorders.items():
        rc.register(name, lambda settings, r=recorder: r)
    events: list[Any] = []
    settings = Settings(trace_dir=tmp_path, script_name="t", quiet=True, sync=not background)
    s = TraceSession(settings, events.append, session_name="k", background=background)
    first = Side.of_text("a\n")
    # What capture() does at the compile's first input (its module check would import TileLang).
    s._submit_all(s.recorders.input(first))
    for i, (before, after) in enumerate([("a\n", "b\n"), ("b\n", "b\n"), ("b\n", "c\n")]):
        s.pass_started(OpenPass(f"P{i}", i, 0, None, "p", 0.0, first if i == 0 else Side.of_text(before)))
        s.pass_record(name=f"P{i}", index=i, phase="p", before=before, after=after)
    s.finish(None)
    assert s.wait(60)  # a compile returns before its worker: its records are complete once drained
    return s, events


def test_a_pass_recorded_header_is_made_when_a_listener_first_reads_it(
    tmp_path: Path, registry: dict
) -> None:
    """Issue 51, round 6: a PassRecorded's `manifest` (the run's header with the recorders' fields)
    is made when a listener first reads it, not per record (with `--quiet` none reads it): reading
    it asks the fielded recorders then, once, and it names the run as the store does."""
    asked: list[int] = []

    class Fielded(rc.Recorder):
        name = "fielded"
        field = "repro"

        def value(self) -> Any:
            asked.append(1)
            return {"asked": len(asked)}

    s, events = _compile(tmp_path, background=False, fielded=Fielded())
    recorded = [e for e in events if isinstance(e, PassRecorded)]
    assert [e.record.index for e in recorded] == [0, 1, 2]
    n = len(asked)
    header = recorded[1].manifest
    assert len(asked) == n + 1  # made now
    assert recorded[1].manifest is header and len(asked) == n + 1  # once
    assert header.run_id == s.store.run_id and header.kernel == "k" and header.repro == {"asked": n + 1}
    assert not header.records  # the header only
    # dataclasses' own tools see the field: a replaced event keeps the header it was given
    again = dataclasses.replace(recorded[1], same_lines=[(0, 0)])
    assert again.manifest is header and again.same_lines == [(0, 0)] and again.record is recorded[1].record
    assert [f.name for f in dataclasses.fields(recorded[0])][0] == "manifest"


def test_a_later_from_codegen_is_computed_when_resolved_and_a_raising_one_stops_its_recorder(
    registry: dict,
) -> None:
    """`codegen` may return a Later: the compiling thread gets it back unrun; the worker's
    `resolve` computes it; one that raises stops its recorder alone, said once."""
    ran: list[str] = []

    class Mapping(rc.Recorder):
        name = "mapping"
        printer = staticmethod(lambda module: (str(module), None))

        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def codegen(self, event: rc.PassEvent, call: rc.CodegenCall) -> Any:
            def compute() -> str:
                ran.append("computed")
                if self.fail:
                    raise RuntimeError("no map")
                return "the map"

            return rc.Later(compute)

    event = rc.PassEvent(None, "codegen_device", "codegen", codegen=True)
    call = rc.CodegenCall("target.build.x", None, None, None, "src", "src", None)
    for fail in (False, True):
        said: list[str] = []
        ran.clear()
        rc.register("mapping", lambda settings, fail=fail: Mapping(fail))
        rs = rc.Recorders(Settings(), said.append)
        value = rs.codegen(event, call)
        assert ran == []  # nothing computed on the compiling thread
        got = rs.resolve(value)
        assert ran == ["computed"]
        if fail:
            assert got is None and not rs.active and len(said) == 1 and "no map" in said[0]
            assert rs.resolve(value) is None and ran == ["computed"]  # a stopped recorder: not again
        else:
            assert got == "the map" and not said


@pytest.mark.parametrize("background", [True, False], ids=["worker", "sync"])
def test_hooks_run_in_order_jobs_on_the_worker_and_the_field_lands_in_the_manifest(
    tmp_path: Path, registry: dict, background: bool
) -> None:
    counting = Counting()
    s, _ = _compile(tmp_path, background=background, counting=counting)
    assert counting.calls == ["input", "started 0", "started 1", "started 2"]
    assert counting.jobs == [
        "input job",
        "attach",
        "recorded 0 changed",
        "recorded 1 noop",
        "recorded 2 changed",
        "finish",
    ]
    assert counting.threads == ({"tltrace-capture"} if background else {threading.current_thread().name})
    assert s.store is not None
    manifest = json.loads((s.store.run_dir / "manifest.json").read_text())
    assert manifest["repro"] == {"seen": 3}
    assert (s.store.run_dir / "counting" / "seen.txt").read_text() == "attached\n"


@pytest.mark.parametrize("where", ["started", "recorded"])
def test_a_recorder_that_raises_is_said_once_and_stops_alone(
    tmp_path: Path, registry: dict, where: str
) -> None:
    counting, raising = Counting(), Raising(where)
    s, events = _compile(tmp_path, background=True, raising=raising, counting=counting)
    said = [e for e in events if isinstance(e, Notice) and "raising stopped" in e.message]
    assert len(said) == 1 and said[0].kind == "warning"
    assert ("boom on the compiling thread" if where == "started" else "boom on the worker") in said[0].message
    assert raising.calls == (1 if where == "recorded" else 0)  # not called again in this compile
    assert [c for c in counting.jobs if c.startswith("recorded")] == [
        "recorded 0 changed",
        "recorded 1 noop",
        "recorded 2 changed",
    ]
    manifest = json.loads((s.store.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["records"]) == 3
    assert not s.broken  # the compile's tracing went on


class Looking(rc.Recorder):
    """Looks at each pass's input on the worker (`pass_input`); raises there at pass `fail`."""

    name = "looking"

    def __init__(self, fail: int | None = None) -> None:
        self.fail = fail
        self.seen: list[tuple[str, str]] = []  # (what, thread)

    def pass_input(self, event: rc.PassEvent, before: Side) -> None:
        self.seen.append(
            (f"input {event.index} {event.name} {before.text!r}", threading.current_thread().name)
        )
        if event.index == self.fail:
            raise RuntimeError("boom while looking")

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        self.seen.append((f"recorded {record.index}", threading.current_thread().name))


@pytest.mark.parametrize("background", [True, False], ids=["worker", "sync"])
def test_pass_input_runs_on_the_worker_in_callback_order_before_the_record(
    tmp_path: Path, registry: dict, background: bool
) -> None:
    looking = Looking()
    _compile(tmp_path, background=background, looking=looking)
    assert [w for w, _ in looking.seen] == [
        "input 0 P0 'a\\n'",
        "recorded 0",
        "input 1 P1 'b\\n'",
        "recorded 1",
        "input 2 P2 'b\\n'",
        "recorded 2",
    ]
    assert {t for _, t in looking.seen} == (
        {"tltrace-capture"} if background else {threading.current_thread().name}
    )


def test_a_pass_input_that_raises_is_said_once_and_stops_its_recorder_alone(
    tmp_path: Path, registry: dict
) -> None:
    looking, counting = Looking(fail=1), Counting()
    s, events = _compile(tmp_path, background=True, looking=looking, counting=counting)
    said = [e for e in events if isinstance(e, Notice) and "looking stopped" in e.message]
    assert len(said) == 1 and "boom while looking" in said[0].message and "pass_input" in said[0].message
    assert [w for w, _ in looking.seen] == ["input 0 P0 'a\\n'", "recorded 0", "input 1 P1 'b\\n'"]
    assert [c for c in counting.jobs if c.startswith("recorded")] == [
        "recorded 0 changed",
        "recorded 1 noop",
        "recorded 2 changed",
    ]
    assert not s.broken


def test_a_recorder_whose_field_is_not_a_manifest_field_is_not_started(
    tmp_path: Path, registry: dict
) -> None:
    class Stray(Counting):
        field = "no_such_field"

    rc.register("stray", lambda settings: Stray())
    s, events = _compile(tmp_path, background=False)
    assert not s.recorders
    assert any(isinstance(e, Notice) and "no_such_field" in e.message for e in events)
    assert json.loads((s.store.run_dir / "manifest.json").read_text())["status"] == "complete"


def test_a_factory_may_say_no_and_registration_replaces(tmp_path: Path, registry: dict) -> None:
    rc.register("x", lambda settings: None)
    assert not TraceSession(Settings(trace_dir=tmp_path, script_name="t"), lambda e: None).recorders
    rc.register("x", lambda settings: Counting())
    assert rc.registered() == ["x"]
    assert (
        len(TraceSession(Settings(trace_dir=tmp_path, script_name="t"), lambda e: None).recorders.active) == 1
    )


def test_every_default_recorder_field_is_a_documented_manifest_field(registry: dict) -> None:
    register_defaults()
    assert set(rc.registered()) == set(DEFAULTS)
    session = TraceSession(Settings(script_name="t"), lambda e: None)
    names = {type(r).__name__ for r in session.recorders.active}
    assert {"ReproRecorder", "SourceMapRecorder"} <= names
    for r in session.recorders.active:
        if r.field is not None:
            assert r.field in RunManifest.__dataclass_fields__
            assert "recorder" in SCHEMA["properties"][r.field]["description"], r.field
    assert session.recorders.printer is not None  # the source maps print the IR


def test_capture_imports_no_recorder() -> None:
    """session/ never imports rerun/ or tltrace.tracing.recorders: the layer above registers recorders."""
    for path in (REPO / "tltrace" / "session").glob("*.py"):
        if path.stem == "runner":  # orchestration, leaving session/ for tltrace/runner.py (#36)
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                assert node.module is None or not node.module.startswith(("rerun", "recorders")), path


def test_an_oserror_in_attach_is_the_stores_and_stops_tracing_once(tmp_path: Path, registry: dict) -> None:
    class FullDisk(rc.Recorder):
        def attach(self, store: Any) -> None:
            raise OSError(28, "No space left on device")

    counting = Counting()
    s, events = _compile(tmp_path, background=True, counting=counting, full=FullDisk())
    warnings = [e for e in events if isinstance(e, Notice) and e.kind == "warning"]
    assert len(warnings) == 1 and warnings[0].message.startswith("tracing stopped for this kernel:")
    assert s.broken
    assert counting.jobs == ["input job", "attach", "finish"]  # stopped with the records, not said again


class Staging(rc.Recorder):
    """Derives one stage from the last text it saw (as stages/recorder.py derives PTX), or raises."""

    name = "staging"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.last: str | None = None

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        self.last = after

    def stages(self, manifest: RunManifest) -> list[rc.Stage] | None:
        if self.fail:
            raise RuntimeError("no toolchain")
        assert self.last is not None and len(manifest.records) == 3  # the compile's records, stored
        return [rc.Stage("ptx", self.last, self.last.upper(), "ptx", "ptx", "tool", 0.5)]


@pytest.mark.parametrize("fail", [False, True], ids=["stage", "raises"])
def test_a_recorders_stages_are_codegen_records_after_the_compiles(
    tmp_path: Path, registry: dict, fail: bool
) -> None:
    counting, staging = Counting(), Staging(fail)
    s, events = _compile(tmp_path, background=True, staging=staging, counting=counting)
    manifest = json.loads((s.store.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    said = [e for e in events if isinstance(e, Notice) and "staging stopped" in e.message]
    if fail:
        assert len(manifest["records"]) == 3 and len(said) == 1 and "no toolchain" in said[0].message
        return
    assert not said
    last, stage = manifest["records"][-2:]
    assert (stage["index"], stage["name"], stage["phase"], stage["status"]) == (
        3,
        "ptx",
        "codegen",
        "codegen",
    )
    assert (stage["role"], stage["ffi"], stage["duration_s"]) == ("ptx", "tool", 0.5)
    assert stage["before_hash"] == last["after_hash"]  # its input: the text stored once
    assert stored_text(s.store.run_dir, stage["after_file"], stage["after_hash"]) == "C\n"
    assert stage["after_file"].endswith(".ptx")
    assert "recorded 3 codegen" in counting.jobs  # the other recorders see it as any record


class _Quiet(rc.Recorder):
    """Overrides no per-pass hook: `hooked` leaves it out of them."""

    name = "quiet"


class _Failing(rc.Recorder):
    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def pass_started(self, event: rc.PassEvent, before: Side) -> rc.Job | None:
        self.calls += 1
        raise RuntimeError("boom")


def test_per_pass_hooks_call_only_the_recorders_that_override_them() -> None:
    counting, quiet, failing = Counting(), _Quiet(), _Failing()
    made = iter([counting, quiet, failing])
    keys = ["t-counting", "t-quiet", "t-failing"]
    saved = dict(rc._factories)
    try:
        rc._factories.clear()
        for k in keys:
            rc.register(k, lambda settings: next(made))
        warnings: list[str] = []
        recs = rc.Recorders(Settings(), warnings.append)
    finally:
        rc._factories.clear()
        rc._factories.update(saved)
    assert recs.hooked("pass_started") == [counting, failing]
    assert recs.hooked("pass_finished") == []  # none overrides it: the compiling thread makes no event
    event = rc.PassEvent(3, "Simplify", "pipeline_c", 0, None)
    jobs = recs.pass_started(event, Side(text="x"))
    assert counting.calls == ["started 3"] and len(jobs) == 1
    assert failing.calls == 1 and len(warnings) == 1  # stopped, said once
    recs.pass_started(event, Side(text="x"))
    assert failing.calls == 1 and recs.hooked("pass_started") == [counting]


class Params(rc.Recorder):
    """Gives the manifest's `params` once attached (as the reproducer gives `repro`), or never."""

    name = "params"
    field = "params"

    def __init__(self, gives: bool) -> None:
        self.gives = gives
        self.attached = False

    def attach(self, store: Any) -> None:
        self.attached = self.gives

    def value(self) -> Any:
        return {"block": 128} if self.attached else None


@pytest.mark.parametrize("gives", [True, False])
def test_the_running_manifest_is_written_again_only_when_an_attached_recorder_gave_fields(
    registry: dict, tmp_path: Path, monkeypatch, gives: bool
) -> None:
    """The run's first manifest marks it running; the recorders then attach, and the manifest is
    rewritten (what a reader of a cut run sees) only when one of them gave a field."""
    from tltrace.fs import atomic

    written: list[dict] = []

    def step(what: str, path: Path) -> None:
        if what == "rename" and path.name == "manifest.json":
            written.append(json.loads(path.read_text()))

    monkeypatch.setattr(atomic, "STEP_HOOK", step)
    _compile(tmp_path, background=False, params=Params(gives))
    monkeypatch.setattr(atomic, "STEP_HOOK", None)
    assert [m["status"] for m in written] == ["running"] * (2 if gives else 1) + ["complete"]
    assert [m["params"] for m in written] == (
        [None, {"block": 128}, {"block": 128}] if gives else [None, None]
    )
    assert all(m["records"] == [] for m in written[:-1]) and len(written[-1]["records"]) == 3


def test_compact_json_of_a_text_seen_last_is_that_texts_own() -> None:
    """The reproducer's compact frontend JSON keeps its last result: a text again gives the
    same bytes as a fresh `json.dumps`, and another text never the kept one."""
    from tltrace.rerun.capture import compact_json

    a = json.dumps({"root": 1, "nodes": [{"type_key": "a/b", "s": "\u00e9"}]}, indent=2)
    b = json.dumps({"root": 2, "nodes": []}, indent=2)
    for text in (a, a, b, a, "not json"):
        fresh = (
            json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
            if text[0] == "{"
            else text
        )
        assert compact_json(text) == fresh
