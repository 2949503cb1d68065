"""Recorders: the per-compile extras (reproducer data, source maps, and what comes next).

A recorder adds something to a compile's run beside its pass records: files in the run
directory, and at most one manifest field. One instance per compile; the capture
(session/capture.py) calls it at fixed points, always with the one field snapshot it
already took (session/snapshot.py) and never with a second one:

compiling thread (cheap: keep references; return a job for the expensive part)
    `pass_configs(where)`          pass configs to set around each backend pipeline
                                   (`where` "pipeline") or codegen call ("codegen"), in a
                                   PassContext nested in the compile's (session/configscope.py);
                                   asked once, when the compile's tool is made
    `input(snapshot)`              the compile's first input IR, once
    `pass_started(event, before)`  a pass begins; `before` is its input
    `pass_finished(event)`         a pass returned (before its output is looked at)
    `pass_failed(event, before)`   a pass or a codegen call raised; `before` is its input
    `codegen(event, call)`         a codegen call returned (`CodegenCall`): its value travels
                                   with the generated source, as `printer`'s does with the IR;
                                   a `Later` is computed on the worker, in the record's job
                                   (keep references here, do the work there)
    `handback(event, back)`        a codegen call's result is about to go back to TileLang
                                   (`Handback`): return a module to hand back in its place, or
                                   None (opt-in work that changes what is compiled: the compile
                                   waits for it)
worker (session/worker.py: in order with the compile's records; the compiling thread
with --sync)
    the job a hook above returned
    `pass_input(event, before)`    a pass's input, in callback order, before it is printed: the
                                   worker's side of `pass_started` (work that needs nothing of
                                   the compiling thread's moment; the compiling thread builds
                                   no event and hands over no job of its own for it)
    `attach(store)`                the run directory exists: write what was kept (RunStore.write_plain, put_text)
    `refine(record, before, after, extras)`  the printer's recorder only: its two extras
                                   again, now that the record's texts are known (the extras
                                   it returns are what `recorded` and the listeners get)
    `recorded(record, before, after, extras)`  a record and its texts are on disk
    `stages(manifest)`             the compile ended with its records on disk: codegen stages
                                   derived from them (`Stage`: PTX, SASS), recorded after them
                                   as codegen records (the compile waits: opt-in work only)
    `ended(manifest)`              the run's records (stages included) are complete; its manifest is about to be
                                   written (a field computed from the whole run: facts)
    `value()`                      the manifest field `field` as it stands (JSON data or None)
    `finish()`                     the run ended (its manifest is written): close files

`printer`: a recorder may print the IR itself, `printer(module) -> (text, extra)`, the text
byte for byte `str(module)` (source maps print with line tags and strip them). The first
recorder with one prints every snapshot; its extra comes back in `recorded`.

Every call is guarded: a recorder that raises is said once (one warning notice, its own
words: `stopped`) and is called no more in that compile; the compile, its records and the
other recorders go on. What it wrote stays, and so does its manifest field. One exception:
an OSError in `attach` is the store's (the run directory cannot be written), and stops the
compile's tracing with one warning, as a record that cannot be written does.

Registration is the layer above's (tracing/recorders.py registers the defaults when
tracing starts): capture imports no recorder, and no recorder is imported before tracing.
A feature that must answer TVM's `should_run` (bisect's skipped passes: TileLang's stacked
instrument carries no such callback) registers a seam tool of its own beside the tracing
tool (`register_tool`): the controller installs and removes it with the tracing tool.

A hook no recorder overrides costs nothing: the per-pass hooks call only the recorders
that override them (`Recorders.hooked`), `pass_configs` is asked once per compile and
`handback` once per codegen call, each only of those that override it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..format.records import RunManifest
from .snapshot import Side

Job = Callable[[], object]


@dataclass(frozen=True)
class PassEvent:
    """A pass or a codegen call, as a recorder is told of it."""

    index: int | None  # the record's index; None for a codegen call that has none yet
    name: str
    phase: str | None
    depth: int = 0
    parent: int | None = None
    codegen: bool = False  # a codegen call (then `role` is "device", "host" or None)
    role: str | None = None


@dataclass(frozen=True)
class CodegenCall:
    """A codegen call that returned, on the compiling thread."""

    ffi: str  # the codegen's FFI name ("target.build.tilelang_cuda", ...)
    mod: Any  # its input IRModule
    target: Any
    rerun: str | None  # the FFI that may be called again on (mod, target) (session/native.py), else None
    generated: str  # the source the codegen returned
    compiled: str  # the source compiled (an applied edit), else `generated`
    working_file: str | None  # the working file of this source, when one was written


@dataclass(frozen=True)
class Stage:
    """A codegen stage a recorder derived from recorded texts (the PTX of the CUDA source, its SASS)."""

    name: str  # the record's name ("ptx", "sass"): `show --pass ptx`
    before: str  # its input (the device source, the PTX)
    after: str  # the stage's text
    ext: str  # the after file's extension ("ptx", "sass")
    role: str  # the record's role: its name (readers tell stages from the generated source by it)
    ffi: str | None = None  # the tool that made it ("nvcc", "nvdisasm")
    duration_s: float = 0.0
    maps: tuple[Any, Any] = (None, None)  # the Python line of each line of before and after (LineMap)


@dataclass
class Handback:
    """A codegen call's result on its way back to TileLang (`Recorder.handback`), on the compiling thread."""

    call: CodegenCall
    role: str | None  # "device", "host" or None
    compiles: bool  # a TVM module of source, made the way TileLang's own is: a source may be handed back
    result: Any  # the build's own module
    out: Any  # what goes back now: an applied edit's module, else `result` (another recorder's, before it)
    source_map: Callable[
        [], Any
    ]  # the printer's value for `call.compiled`, made now (the worker drained first)
    say: Callable[[str], None]  # one info notice on the stream, for this compile


class Later:
    """A value `codegen` hands back to be computed on the worker: `compute()` runs in the job
    that stores the codegen record, before `recorded` sees it (guarded like any hook)."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[], Any]) -> None:
        self.compute = compute


class Recorder:
    """Base class: every hook does nothing; override those you need."""

    name: ClassVar[str] = "recorder"  # what its notice calls it
    field: ClassVar[str | None] = None  # its manifest field (a RunManifest field, in manifest.schema.json)
    printer: Callable[[Any], tuple[str, Any]] | None = None
    warn: Callable[[str], None] = staticmethod(lambda message: None)  # one warning notice (set by Recorders)

    # -- compiling thread --------------------------------------------------------
    def pass_configs(self, where: str) -> Mapping[str, Any] | None:
        """Pass configs to set around each backend pipeline (`where` "pipeline") or codegen call ("codegen")."""
        return None

    def input(self, snapshot: Side) -> Job | None:
        return None

    def pass_started(self, event: PassEvent, before: Side) -> Job | None:
        return None

    def pass_finished(self, event: PassEvent) -> Job | None:
        return None

    def pass_failed(self, event: PassEvent, before: Side) -> Job | None:
        return None

    def pass_input(self, event: PassEvent, before: Side) -> None:
        """Worker: pass `event` began with input `before` (see the module's docstring)."""

    def codegen(self, event: PassEvent, call: CodegenCall) -> Any:
        return None

    def handback(self, event: PassEvent, back: Handback) -> Any:
        """Return the module to hand TileLang in place of `back.out`, or None to leave it."""
        return None

    # -- worker ------------------------------------------------------------------
    def attach(self, store: Any) -> None:
        pass

    def refine(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> tuple[Any, Any]:
        """Return the printer's extras of a record's two texts, refined (the printer's recorder only)."""
        return extras

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        """`record` (session/records.PassRecord) is stored; `extras`: the printer's (or codegen's) for each side."""

    def stages(self, manifest: RunManifest) -> list[Stage] | None:
        """Codegen stages derived from the records (the compile's worker, after the compile returned)."""
        return None

    def ended(self, manifest: RunManifest) -> None:
        """The run's records are complete (`manifest`, before this recorder's field is read)."""

    def value(self) -> Any:
        return None

    def finish(self) -> None:
        pass

    def stopped(self, what: str, exc: BaseException) -> str:
        """The one notice said when a hook raised."""
        return f"{self.name} stopped for this kernel ({what}: {type(exc).__name__}: {exc}); the trace is unharmed"


@dataclass(frozen=True)
class _Pending:
    recorder: Recorder
    later: Later


Factory = Callable[[Any], "Recorder | None"]  # Settings -> a recorder for one compile, or None (off)

_MANIFEST_FIELDS = frozenset(RunManifest.__dataclass_fields__)
_lock = threading.Lock()
_factories: dict[str, Factory] = {}


def register(key: str, factory: Factory) -> None:
    """Make every compile traced from now on get `factory(settings)`'s recorder (replaces `key`'s)."""
    with _lock:
        _factories[key] = factory


def unregister(key: str) -> None:
    with _lock:
        _factories.pop(key, None)


def registered() -> list[str]:
    with _lock:
        return list(_factories)


ToolFactory = Callable[
    [Any], "Callable[[], object] | None"
]  # Settings -> TileLang's tool factory, or None (off)
_tools: dict[str, ToolFactory] = {}


def register_tool(name: str, factory: ToolFactory) -> None:
    """Install a seam tool of a feature's own beside the tracing tool, under TileLang's name `name`.

    `factory(settings)` is called when tracing is installed: it returns the factory TileLang
    calls once per compile session (a `PassInstrumentationTool`), or None (off). The tool is
    removed with the tracing tool (`controller.uninstall`)."""
    with _lock:
        _tools[name] = factory


def unregister_tool(name: str) -> None:
    with _lock:
        _tools.pop(name, None)


def tools() -> dict[str, ToolFactory]:
    with _lock:
        return dict(_tools)


class Recorders:
    """One compile's recorders, each guarded."""

    def __init__(self, settings: Any, warn: Callable[[str], None]) -> None:
        self._warn = warn
        self.active: list[Recorder] = []
        self._off: list[Recorder] = []
        with _lock:
            factories = list(_factories.items())
        for key, make in factories:
            try:
                r = make(settings)
            except Exception as exc:
                warn(f"recorder {key} not started for this kernel ({type(exc).__name__}: {exc})")
                continue
            if r is None:
                continue
            if r.field is not None and r.field not in _MANIFEST_FIELDS:
                warn(f"recorder {key} not started: its field {r.field!r} is not a manifest field")
                continue
            r.warn = warn
            self.active.append(r)
        self.printer = next((r for r in self.active if r.printer is not None), None)
        self._hooked: dict[str, list[Recorder]] = {}  # hook -> the active recorders that override it
        # The recorders that give a manifest field, running or stopped (fields(): once per record).
        self._fielded = [(r.field, r) for r in self.active if r.field is not None]

    def __bool__(self) -> bool:
        return bool(self.active)

    def hooked(self, hook: str) -> list[Recorder]:
        """The active recorders whose class overrides `hook` (the base's does nothing): the per-pass
        hooks call only these, so a recorder that ignores passes costs the compiling thread nothing."""
        out = self._hooked.get(hook)
        if out is None:
            base = getattr(Recorder, hook)
            out = self._hooked[hook] = [r for r in self.active if getattr(type(r), hook, base) is not base]
        return out

    def halt(self) -> None:
        """The compile's tracing stopped (its guard said why): call no recorder again but `finish`."""
        self._off.extend(self.active)
        self.active.clear()
        self._hooked.clear()
        self.printer = None

    def _fail(self, r: Recorder, what: str, exc: BaseException) -> None:
        if r in self.active:
            self.active.remove(r)
            self._off.append(r)
            self._hooked.clear()
            if self.printer is r:
                self.printer = None
            try:
                self._warn(r.stopped(what, exc))
            except Exception:
                pass

    def _guarded(self, r: Recorder, what: str, job: Job) -> Job:
        def run() -> None:
            if r not in self.active:
                return
            try:
                job()
            except Exception as exc:
                self._fail(r, what, exc)

        return run

    def _each(self, what: str, call: Callable[[Recorder], Any]) -> list[Job]:
        """Call every active recorder that overrides hook `what`; return the jobs they handed back, each guarded."""
        jobs: list[Job] = []
        active = self.active
        for r in list(self.hooked(what)):
            if r not in active:
                continue  # stopped on another thread since the list was made
            try:
                job = call(r)
            except Exception as exc:
                self._fail(r, what, exc)
                continue
            if job is not None:
                jobs.append(self._guarded(r, what, job))
        return jobs

    def _now(self, what: str, *args: Any) -> None:
        """Call hook `what` of every active recorder that overrides it, now, guarded: the worker's
        per-record hooks, which hand back no job (no closure or job list per call, as `_each` makes)."""
        active = self.active
        for r in self.hooked(what):  # a list never changed once made (`_fail` drops the cache instead)
            if r not in active:
                continue  # stopped on another thread since the list was made
            try:
                getattr(r, what)(*args)
            except Exception as exc:
                self._fail(r, what, exc)

    # compiling thread: the jobs to submit
    def input(self, snapshot: Side) -> list[Job]:
        return self._each("input", lambda r: r.input(snapshot))

    def pass_started(self, event: PassEvent, before: Side) -> list[Job]:
        return self._each("pass_started", lambda r: r.pass_started(event, before))

    def pass_finished(self, event: PassEvent) -> list[Job]:
        return self._each("pass_finished", lambda r: r.pass_finished(event))

    def pass_input(self, event: PassEvent, before: Side) -> None:
        """Worker: every recorder that overrides `pass_input`, guarded, now."""
        self._now("pass_input", event, before)

    def pass_failed(self, event: PassEvent, before: Side) -> list[Job]:
        return self._each("pass_failed", lambda r: r.pass_failed(event, before))

    def pass_configs(self, where: str) -> dict[str, Any]:
        """The pass configs every recorder that overrides `pass_configs` sets around `where`, merged in order."""
        out: dict[str, Any] = {}
        for r in list(self.hooked("pass_configs")):
            try:
                out.update(r.pass_configs(where) or {})
            except Exception as exc:
                self._fail(r, "pass_configs", exc)
        return out

    def handback(self, event: PassEvent, back: Handback) -> Any:
        """Return the module to hand back: `back.out`, as each recorder that overrides `handback` replaced it."""
        for r in list(self.hooked("handback")):
            if r not in self.active:
                continue
            try:
                out = r.handback(event, back)
            except Exception as exc:
                self._fail(r, "handback", exc)
                continue
            if out is not None:
                back.out = out
        return back.out

    def codegen(self, event: PassEvent, call: CodegenCall) -> Any:
        """Return the printer's value for the generated source (None: no printer, or none given).

        A `Later` comes back as it is: `resolve` it on the worker."""
        out = None
        for r in list(self.active):
            try:
                value = r.codegen(event, call)
            except Exception as exc:
                self._fail(r, "codegen", exc)
                continue
            if r is self.printer:
                out = _Pending(r, value) if isinstance(value, Later) else value
        return out

    def resolve(self, value: Any) -> Any:
        """Worker: the value `codegen` returned, a `Later` computed (None when its recorder stopped or it raised)."""
        if not isinstance(value, _Pending):
            return value
        r, later = value.recorder, value.later
        if r not in self.active:
            return None
        try:
            return later.compute()
        except Exception as exc:
            self._fail(r, "codegen", exc)
            return None

    def print(self, module: Any) -> tuple[str, Any] | None:
        """Print with the printer: (text, extra); None when there is none or it failed (print plainly)."""
        r = self.printer
        if r is None or r.printer is None:
            return None
        try:
            return r.printer(module)
        except Exception as exc:
            self._fail(r, "printing", exc)
            return None

    # worker
    def attach(self, store: Any) -> None:
        """Hand every recorder the run's store; an OSError is the store's (raised: tracing stops)."""
        for r in list(self.active):
            try:
                r.attach(store)
            except OSError:
                raise  # a store that cannot be written: the session's failure, said once by its guard
            except Exception as exc:
                self._fail(r, "attach", exc)

    def refine(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> tuple[Any, Any]:
        """The printer's `refine` of a record's extras; `extras` unchanged without one, or when it fails."""
        r = self.printer
        if r is None:
            return extras
        try:
            out = r.refine(record, before, after, extras)
        except Exception as exc:
            self._fail(r, "refine", exc)
            return extras
        return out if isinstance(out, tuple) and len(out) == 2 else extras

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        self._now("recorded", record, before, after, extras)

    def stages(self, manifest: RunManifest) -> list[Stage]:
        """Return every recorder's stages, in registration order (a recorder that raises gives none)."""
        out: list[Stage] = []
        for r in list(self.active):
            try:
                out.extend(r.stages(manifest) or ())
            except Exception as exc:
                self._fail(r, "stages", exc)
        return out

    def ended(self, manifest: RunManifest) -> None:
        self._each("ended", lambda r: r.ended(manifest))

    def finish(self) -> None:
        self._each("finish", lambda r: r.finish())
        for r in self._off:
            try:
                r.finish()
            except Exception:
                pass

    def fields(self) -> dict[str, Any]:
        """The manifest fields, {field: value}: a stopped recorder's too (what it wrote stays)."""
        out: dict[str, Any] = {}
        for name, r in self._fielded:
            try:
                out[name] = r.value()
            except Exception as exc:
                out[name] = None
                self._fail(r, "value", exc)
        return out
