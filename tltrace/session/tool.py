"""The capture engine: one TraceSession per TileLang compilation.

TileLang creates one tool per compile session through the factory registered
with `tilelang.instrumentation.register_pass_instrumentation_tool`; the tool
owns that compilation's records, index counter and run directory, so kernels
compiled concurrently in threads never share state. Every failure inside
tltrace becomes one warning; the user's compile goes on unharmed.
"""

from __future__ import annotations

import itertools
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from .._version import __version__
from ..config import Settings
from ..diff import count_changes
from ..rerun.capture import ReproCapture
from . import codegen as cg
from . import liveness
from . import sourcemap as sm
from . import sourcemap_store as sms
from .events import Event, Notice, PassRecorded, RunFinished, RunStarted, fallback_warning
from .interrupt import interrupted
from .names import pass_display_name
from .records import CHANGED, CODEGEN, COMPLETE, ERROR, FAILED, NOOP, PassRecord, RunManifest
from .signature import input_hash, launch_info, signature
from .store import RunStore, text_hash
from .writer import writer_token

Emit = Callable[[Event], None]

UNSCOPED = "unscoped"
CODEGEN_PHASE = "codegen"


def error_text(error: BaseException | str | None) -> str:
    """Return "ExcType: message" for a failure (a text already in that form is kept as it is).

    TVM errors may hold a C++ backtrace before the message; the message is what a
    person reads, and its type is named once (never "RuntimeError: RuntimeError: ...").
    """
    if interrupted() or isinstance(error, KeyboardInterrupt):
        # Ctrl+C inside a pass callback reaches TileLang as TVM's RuntimeError: say what happened.
        return "KeyboardInterrupt"
    if error is None:
        return "pass raised (no exception was passed to the instrument)"
    if isinstance(error, str):
        return error.strip() or "error"
    name = type(error).__name__
    msg = str(error).strip()
    lines = [ln for ln in msg.splitlines() if ln.strip()]
    if lines and lines[0].startswith("Traceback"):
        tail = [i for i, ln in enumerate(lines) if _ERROR_HEAD.match(ln)]
        msg = "\n".join(lines[tail[-1] :]) if tail else lines[-1]
    if not msg:
        return name
    return msg if msg.startswith(f"{name}:") else f"{name}: {msg}"


_ERROR_HEAD = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Warning): ")


def _parse_context(text: str | None) -> dict[str, str]:
    """Parse TileLang's PassContext description: 'stage=jit-lower, kernel=add, backend=cython'."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _anonymous_pass_name(name: str) -> str:
    """Name an anonymous `pass_fn` after the Python function that ran it."""
    frame: Any
    try:
        frame = sys._getframe(3)
    except ValueError:
        return name
    while frame is not None:
        filename = frame.f_code.co_filename
        if (
            f"{os.sep}tvm{os.sep}" not in filename
            and f"{os.sep}tltrace{os.sep}" not in filename
            and f"{os.sep}instrumentation{os.sep}" not in filename
            and "tvm_ffi" not in filename
        ):
            return f"{name}@{frame.f_code.co_name}"
        frame = frame.f_back
    return name


class TraceSession:
    """Records of one compilation; also a `PassEventObserver` for TileLang's stacked instrument."""

    def __init__(self, settings: Settings, emit: Emit, *, session_name: str | None = None) -> None:
        self.settings = settings
        self._emit_fn = emit
        self._lock = threading.RLock()
        self.t0 = time.perf_counter()  # record start_s is measured from here
        self._counter = itertools.count()
        self.records: list[PassRecord] = []
        self.store: RunStore | None = None
        self.broken = False  # set after a failure inside tltrace: stop tracing, keep compiling
        self.failed_pending: list[int] = []  # records whose error arrives in finish()
        self._last_text: str | None = None
        self._last_head: tuple | None = None  # (attrs, function map, global infos) of the last print
        self._last_items: tuple | None = None  # ((global_var, func), ...) of that map, once walked
        self.last_map: sm.LineMap | None = None  # the source map of the text text_of returned last
        self._source_map = sm.enabled()
        self._maplog: sms.MapLog | None = None
        self.edited = False
        self.pipelines = 0  # backend pipelines entered in this compile session
        self._listener_failed = False
        self.repro = ReproCapture(self.warn)  # frontend IR, context, failed inputs
        self.manifest = RunManifest(
            run_id="",
            script=settings.script_name,
            kernel=session_name,
            tltrace_version=__version__,
            tilelang_version=_tilelang_version(),
            command=list(settings.command),
            cwd=os.getcwd(),
            started=time.time(),
            mode=settings.mode,
            invocation=settings.invocation,
            writer=writer_token(),
            thread=threading.current_thread().name,
            thread_id=threading.get_ident(),
        )

    # -- plumbing ------------------------------------------------------------
    def emit(self, event: Event) -> None:
        try:
            self._emit_fn(event)
        except Exception as exc:  # a listener must never break a compile
            if not self._listener_failed:
                self._listener_failed = True
                fallback_warning(
                    f"tltrace: could not show an event ({type(exc).__name__}: {exc}); "
                    "records are still written"
                )

    def warn(self, message: str) -> None:
        self.emit(Notice("warning", message, kernel=self.manifest.kernel))

    def _guard(self, what: str, exc: BaseException) -> None:
        """Turn a failure inside tltrace into one warning and stop tracing this compile."""
        if not self.broken:
            self.broken = True
            where = f" ({self.store.run_dir})" if self.store is not None else ""
            self.warn(f"tracing stopped for this kernel: {what} failed: {type(exc).__name__}: {exc}{where}")

    def next_index(self) -> int:
        return next(self._counter)

    def note_context(self, text: str | None) -> None:
        ctx = _parse_context(text)
        updates: dict[str, Any] = {}
        if ctx.get("kernel") and not self.manifest.kernel:
            updates["kernel"] = ctx["kernel"]
        if ctx.get("backend") and not self.manifest.backend:
            updates["backend"] = ctx["backend"]
        if updates:
            self.manifest = replace(self.manifest, **updates)
            if "kernel" in updates:
                self._refresh_signature()

    def note_input(self, mod: Any, text: str) -> None:
        """Fill launch, input_hash and signature from the compile's first input IR (once).

        Called at the first pass (or codegen call), in the compiling thread, before the
        run directory is made, so that the very first manifest on disk names the compile.
        """
        if self.manifest.input_hash is not None:
            return
        self.repro.note_frontend(mod)
        try:
            launch = launch_info(mod, self.manifest.kernel)
        except Exception:
            launch = {}
        digest = input_hash(text)
        kernel = self.manifest.kernel
        self.manifest = replace(
            self.manifest,
            input_hash=digest,
            launch=launch or None,
            signature=signature(kernel, launch, digest),
            thread=threading.current_thread().name,
            thread_id=threading.get_ident(),
        )

    def _refresh_signature(self) -> None:
        """The kernel name arrived after the first pass: relabel."""
        m = self.manifest
        if m.input_hash is not None:
            self.manifest = replace(m, signature=signature(m.kernel, m.launch, m.input_hash))

    def _ensure_store(self) -> RunStore:
        if self.store is None:
            store = RunStore(self.settings.claim_script_dir())
            from . import scripts

            for problem in scripts.take_problems(self.settings.trace_dir):
                self.warn(problem)  # a damaged script registry: said, never guessed
            store.open()
            liveness.hold(store.records_root, self.settings.invocation)  # dropped at the invocation's end
            self.store = store
            self.manifest = replace(self.manifest, run_id=store.run_id)
            store.write_manifest(self.manifest)
            self.emit(RunStarted(self.manifest, store.run_dir, store.script_dir))
            # What a rerun needs (repro/): a store failure here stops tracing like any other.
            self.manifest = replace(self.manifest, repro=self.repro.attach(store))
            store.write_manifest(self.manifest)
        return self.store

    def text_of(self, mod: Any) -> str:
        """Return the IR text of `mod`, reusing the last text when nothing in it is a new object.

        Printing is the main cost of tracing. TVM passes that change nothing usually
        return a new IRModule holding the very same function map, or the very same
        function objects. The rule compares the module's *fields* (attributes, function
        map, global infos) with the ones held from the last print, never the module
        object: a pass may update its input module in place (`mod->Update`, as
        tirx.AnnotateEntryFunc and tl.SplitHostDevice do) and return it, and only its
        fields are copy-on-write. Holding the last fields makes any such update build a
        new map (the held one is shared), so identity of the fields means identical
        text. The checks read fields and compare handles, which costs no FFI call (none
        of them gives the GIL away); only a changed map is walked.
        """
        head = _module_head(mod)
        lh = self._last_head
        if head is not None and lh is not None and _same_obj(head[0], lh[0]) and _same_obj(head[2], lh[2]):
            if _same_obj(head[1], lh[1]):
                return self._last_text or ""
            items = _map_items(head[1])
            if self._last_items is None:
                self._last_items = _map_items(lh[1])
            if items is not None and self._last_items is not None and _same_items(items, self._last_items):
                self._last_head, self._last_items = head, items
                return self._last_text or ""
        if self._source_map:
            text, self.last_map = sm.print_module(mod)
        else:
            text = str(mod)
        self._last_text, self._last_head, self._last_items = text, head, None
        return text

    # -- records -------------------------------------------------------------
    def add_record(
        self,
        record: PassRecord,
        before: str,
        after: str,
        ext_after: str = "tir",
        maps: tuple[sm.LineMap | None, sm.LineMap | None] = (None, None),
    ) -> PassRecord:
        """Store both texts (and their source maps), log the record, and tell the listeners."""
        store = self._ensure_store()
        bh = text_hash(before)
        ah = bh if after == before else text_hash(after)
        bfile = store.record_path(record.phase, record.index, record.name, "before")
        afile = None
        store.link_text(bfile, before, bh)
        if record.status != FAILED:
            afile = store.record_path(record.phase, record.index, record.name, "after", ext_after)
            store.link_text(afile, after, ah)
        record = replace(
            record, before_hash=bh, after_hash=ah if afile else None, before_file=bfile, after_file=afile
        )
        with self._lock:
            self.records.append(record)
        store.append_record(record)
        if maps != (None, None):
            self._log_maps(store, record, maps)
        self.emit(PassRecorded(self.manifest, record, before, after, store.run_dir, *maps))
        return record

    def _log_maps(self, store: RunStore, record: PassRecord, maps: tuple) -> None:
        try:
            if self._maplog is None:
                self._maplog = sms.MapLog(store.run_dir)
            self._maplog.record(record.index, maps[0], maps[1] if record.after_file else None)
        except Exception as exc:  # the records stand without their maps
            self._source_map = False
            self.warn(f"source maps stopped for this kernel: {type(exc).__name__}: {exc}")

    def pass_record(
        self,
        name: str,
        index: int,
        depth: int,
        parent: int | None,
        phase: str | None,
        before: str,
        after: str | None,
        duration: float,
        error: BaseException | str | None = None,
        pending_error: bool = False,
        start: float | None = None,
        maps: tuple[sm.LineMap | None, sm.LineMap | None] = (None, None),
    ) -> None:
        if self.broken:
            return
        try:
            name = name or "anonymous"
            display = pass_display_name(name)
            if after is None:
                status, added, removed = FAILED, 0, 0
            else:
                added, removed = count_changes(before, after)
                status = CHANGED if after != before else NOOP
            rec = PassRecord(
                index=index,
                name=display,
                phase=phase or UNSCOPED,
                depth=depth,
                parent=parent,
                status=status,
                added=added,
                removed=removed,
                duration_s=round(duration, 6),
                error=error_text(error) if status == FAILED and not pending_error else None,
                start_s=round(start - self.t0, 6) if start is not None else None,
            )
            rec = self.add_record(rec, before, after if after is not None else before, maps=maps)
            if pending_error:
                self.failed_pending.append(rec.index)
        except Exception as exc:
            self._guard(f"recording pass {name}", exc)

    def mark_edited(self) -> None:
        """An edited source was compiled: keep this kernel out of TileLang's kernel cache."""
        self.edited = True

    # -- finish --------------------------------------------------------------
    def finish(self, error: BaseException | None) -> None:
        if self.edited or self.settings.use_cache:
            # The cache would save this kernel right after the session ends, under the
            # unedited key; turning it off here keeps traced and edited builds out of it.
            _keep_out_of_cache(self)
        if self.store is None:
            return  # no pass ran: nothing to keep (e.g. an empty compile)
        try:
            records = sorted(self.records, key=lambda r: r.index)
            if self.failed_pending:
                msg = error_text(error) if error is not None else "pass did not complete"
                pending = set(self.failed_pending)
                records = [replace(r, error=msg) if r.index in pending else r for r in records]
            self.manifest = replace(
                self.manifest.with_records(records),
                finished=time.time(),
                repro=self.repro.info(),
                status=ERROR if error is not None else COMPLETE,
                error=error_text(error) if error is not None else None,
            )
            self.store.write_manifest(self.manifest)
            self.store.close()
            if self._maplog is not None:
                self._maplog.close()
            self.emit(RunFinished(self.manifest, self.store.run_dir, self.store.script_dir))
        except Exception as exc:
            self._guard("finishing the run", exc)
        finally:
            if self.store is not None:
                self.store.close()


class _Observer:
    """Feeds TileLang's StackedPassInstrument callbacks into a TraceSession."""

    def __init__(self, session: TraceSession) -> None:
        self.session = session

    def enter_pass_context(self) -> None:
        pass

    def exit_pass_context(self) -> None:
        pass

    def pass_started(self, mod: Any, event: Any) -> Any:
        s = self.session
        if s.broken:
            return None
        try:
            name = str(event.name)
            if name == "pass_fn":
                name = _anonymous_pass_name(name)
            text = s.text_of(mod)
            if s.manifest.input_hash is None:
                s.note_input(mod, text)
            s.repro.pass_started(event.sequence, mod)
            return (name, text, time.perf_counter(), s.last_map)
        except Exception as exc:
            s._guard(f"capturing the IR before {event.name}", exc)
            return None

    def pass_finished(self, mod: Any, event: Any, state: Any) -> None:
        s = self.session
        if state is None or s.broken:
            return
        name, before, t0, bmap = state
        duration = time.perf_counter() - t0
        s.repro.pass_finished(event.sequence)
        try:
            after = s.text_of(mod)
        except Exception as exc:
            s._guard(f"capturing the IR after {name}", exc)
            return
        s.pass_record(
            name,
            event.sequence,
            event.depth,
            event.parent_sequence,
            event.phase,
            before,
            after,
            duration,
            start=t0,
            maps=(bmap, s.last_map),
        )

    def passes_incomplete(self, passes: Any, error: BaseException | None) -> None:
        s = self.session
        if interrupted():
            return  # Ctrl+C: the passes did not fail, the run is recorded as interrupted
        if error is None:
            error = sys.exc_info()[1]
        for frame in passes:
            event, state = frame.event, frame.state
            if event is None or state is None:
                continue
            name, before, t0, bmap = state
            s.repro.pass_failed(event.sequence)
            s.pass_record(
                name,
                event.sequence,
                event.depth,
                event.parent_sequence,
                event.phase,
                before,
                None,
                time.perf_counter() - t0,
                error,
                pending_error=error is None,
                start=t0,
                maps=(bmap, None),
            )

    def callback_mismatch(self, actual: str, expected: str | None) -> None:
        self.session.warn(f"unmatched pass callback: got {actual!r}, expected {expected!r}")


def _module_head(mod: Any) -> tuple | None:
    """Return (attrs, function map, global infos) of an IRModule (field reads, no FFI call), or None."""
    try:
        return (mod.attrs, mod.functions, getattr(mod, "global_infos", None))
    except Exception:
        return None


def _map_items(funcs: Any) -> tuple | None:
    """Return ((global_var, func), ...) of a function map, or None when it cannot be walked.

    Walked through tltrace's own handles on tvm_ffi's map functions, set to keep the GIL:
    each call takes microseconds, and giving the GIL away for it would make the compiling
    thread wait for it again behind the autotuner's other threads, a pass at a time.
    """
    try:
        fns = _map_fns()
        if fns is None:
            return tuple(funcs.items())
        size_fn, iter_fn = fns
        n = size_fn(funcs)
        out = []
        if n:
            it = iter_fn(funcs)
            it.release_gil = False
            for _ in range(n):
                out.append((it(0), it(1)))
                if not it(2):
                    break
        return tuple(out)
    except Exception:
        return None


_MAP_FNS: list[tuple[Any, Any] | None] = []


def _map_fns() -> tuple[Any, Any] | None:
    """(MapSize, MapForwardIterFunctor) as tltrace's own GIL-keeping handles, or None where unavailable."""
    if not _MAP_FNS:
        try:
            import tvm_ffi

            size_fn = tvm_ffi.get_global_func("ffi.MapSize")
            iter_fn = tvm_ffi.get_global_func("ffi.MapForwardIterFunctor")
            size_fn.release_gil = False
            iter_fn.release_gil = False
            _MAP_FNS.append((size_fn, iter_fn))
        except Exception:
            _MAP_FNS.append(None)
    return _MAP_FNS[0]


def _same_items(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    return all(_same_obj(g1, g2) and _same_obj(f1, f2) for (g1, f1), (g2, f2) in zip(a, b))


def _same_obj(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    return _same_as(a, b)


def _same_as(a: Any, b: Any) -> bool:
    try:
        return bool(a.same_as(b))
    except Exception:
        return False


def _tilelang_version() -> str | None:
    mod = sys.modules.get("tilelang")
    return getattr(mod, "__version__", None) if mod is not None else None


_cache_notice_lock = threading.Lock()
_cache_notice_given = False


def _keep_out_of_cache(session: TraceSession) -> None:
    global _cache_notice_given
    try:
        import tilelang  # type: ignore[import-not-found]

        if not tilelang.env.is_cache_enabled():
            return
        tilelang.env.disable_cache()
    except Exception:
        return
    with _cache_notice_lock:
        first, _cache_notice_given = not _cache_notice_given, True
    if first:
        session.emit(
            Notice(
                "info",
                "kernel cache turned off for the rest of this process, so that a traced "
                "or edited kernel is never saved into it",
                kernel=session.manifest.kernel,
            )
        )


def make_tool_class() -> type:
    """Build the PassInstrumentationTool subclass (imports TileLang lazily)."""
    from tilelang.instrumentation import (  # type: ignore[import-not-found]
        PassInstrumentationTool,
        StackedPassInstrument,
        current_compile_pass_instrumentation,
        current_pass_instrument_context,
        current_pass_phase,
        pass_phase,
    )

    class TltraceTool(PassInstrumentationTool):
        """One per TileLang compile session: owns a TraceSession."""

        pass_instrument_priority = 1000  # after other tools: see their effects

        def __init__(self, settings: Settings, emit: Emit) -> None:
            name = None
            try:
                cur = current_compile_pass_instrumentation()
                name = getattr(cur, "name", None)
            except Exception:
                pass
            self.session = TraceSession(settings, emit, session_name=None)
            self._session_name = name

        def create_pass_instrument(self) -> object | None:
            s = self.session
            if s.broken:
                return None
            try:
                s.note_context(current_pass_instrument_context())
                if not s.manifest.kernel:
                    cur = current_compile_pass_instrumentation()
                    n = getattr(cur, "name", None)
                    if n and n not in ("lower", "lower-with-context", "lower-to-host-device-ir"):
                        s.manifest = replace(s.manifest, kernel=n)
                        s._refresh_signature()

                def phase() -> str:
                    return current_pass_phase() or UNSCOPED

                return StackedPassInstrument(
                    _Observer(s), sequence_allocator=s.next_index, phase_provider=phase
                )
            except Exception as exc:
                s._guard("creating the pass instrument", exc)
                return None

        def pipeline_scope(self, base_phase: str):
            # The target is known here already; a compile that fails before codegen still records it.
            s = self.session
            if not s.manifest.target and isinstance(base_phase, str) and base_phase.startswith("pipeline_"):
                s.manifest = replace(s.manifest, target=base_phase[len("pipeline_") :] or None)
            # A second pipeline in one compile session is filed as run2_<phase>.
            s.pipelines += 1
            if s.pipelines > 1 and isinstance(base_phase, str):
                return pass_phase(f"run{s.pipelines}_{base_phase}")
            return nullcontext()

        def run_codegen(self, event: Any, next_call: Callable[[], Any]) -> Any:
            # Recording may have stopped (a full disk): the working files are still reconciled,
            # so an edit is compiled, or said not to be, whatever happened to the records.
            s = self.session
            role = before = bmap = None
            try:
                role = cg.classify_role(event)
                if not s.broken:
                    before = s.text_of(event.mod)
                    bmap = s.last_map
                    if s.manifest.input_hash is None:
                        s.note_input(event.mod, before)
                    if not s.manifest.target:
                        s.manifest = replace(s.manifest, target=_target_str(event.target))
            except Exception as exc:
                s._guard("capturing codegen input", exc)
                before = None
            t0 = time.perf_counter()
            try:
                with pass_phase(CODEGEN_PHASE):
                    result = next_call()
            except BaseException as exc:
                if before is not None and not interrupted() and not isinstance(exc, KeyboardInterrupt):
                    index = s.next_index()
                    s.repro.codegen_failed(index, event.mod)
                    s.pass_record(
                        cg.record_name(role),
                        index,
                        0,
                        None,
                        CODEGEN_PHASE,
                        before,
                        None,
                        time.perf_counter() - t0,
                        exc,
                        start=t0,
                        maps=(bmap, None),
                    )
                raise
            duration = time.perf_counter() - t0
            return _record_codegen(s, event, role, before, result, duration, t0, bmap)

        def finish(self, error: BaseException | None) -> None:
            self.session.finish(error)

    return TltraceTool


def _target_str(target: Any) -> str | None:
    try:
        return str(target.kind.name) if target is not None else None
    except Exception:
        return str(target) if target is not None else None


def _record_codegen(
    s: TraceSession,
    event: Any,
    role: str | None,
    before: str | None,
    result: Any,
    duration: float,
    start: float | None = None,
    bmap: sm.LineMap | None = None,
) -> Any:
    """Reconcile the working file, then record the codegen call (unless recording stopped); return the module.

    The two are guarded apart: a failure while recording never undoes the reconcile,
    and a failure while reconciling is said in one warning that names the file.
    """
    ffi = str(getattr(event, "name", ""))
    try:
        generated = cg.module_source(result, on_error=s.warn)
    except Exception:
        generated = ""
    compiled, outcome, out_result = generated, None, result
    if s.settings.working_files_enabled() and generated:
        try:
            outcome = _reconcile(s, event, role, generated, ffi)
            if outcome.compile_text != generated and cg.compiles_source(ffi):
                out_result = cg.source_module(result, outcome.compile_text, origin=outcome.origin)
            if outcome.compile_text != generated:
                compiled = outcome.compile_text  # on a binary backend: kept for the diff view only
                s.mark_edited()
        except Exception as exc:
            out_result, compiled = result, generated
            s.warn(
                f"working files skipped for {_kernel_name(s, event)} ({type(exc).__name__}: {exc}); "
                "an edit there is not applied in this run"
            )
    if s.broken or before is None:
        return out_result
    amap = _codegen_map(s, event, ffi, generated, compiled)
    if amap is not None and outcome is not None and outcome.path:
        try:
            sms.write_working_map(outcome.path, amap, compiled)
        except Exception:
            pass  # the working file and the records stand without it
    try:
        index = s.next_index()
        added, removed = count_changes(before, compiled)
        rec = PassRecord(
            index=index,
            name=cg.record_name(role),
            phase=CODEGEN_PHASE,
            status=CODEGEN,
            added=added,
            removed=removed,
            duration_s=round(duration, 6),
            role=role,
            ffi=ffi,
            reconcile=outcome.tag if outcome else None,
            working_file=str(outcome.path) if outcome and outcome.path else None,
            start_s=round(start - s.t0, 6) if start is not None else None,
        )
        s.add_record(rec, before, compiled, ext_after="cpp", maps=(bmap, amap))
    except Exception as exc:
        s._guard("recording codegen", exc)
    return out_result


def _codegen_map(s: TraceSession, event: Any, ffi: str, generated: str, compiled: str) -> sm.LineMap | None:
    """Return the source map of the recorded source (None: off, no directives, or a failure)."""
    if not s._source_map or not generated:
        return None
    try:
        gmap = sm.codegen_map(ffi, event.mod, event.target, generated)
        if gmap is not None and compiled != generated:
            gmap = sm.carry(gmap, generated, compiled)
        return gmap
    except Exception:
        return None


def _kernel_name(s: TraceSession, event: Any) -> str:
    """The kernel's name: the compile's (from its PassContext), else the lowered function's symbol."""
    if s.manifest.kernel:
        return s.manifest.kernel
    try:
        for gv, func in event.mod.functions.items():
            attrs = getattr(func, "attrs", None)
            name = (
                str(attrs["global_symbol"])
                if attrs is not None and "global_symbol" in attrs
                else gv.name_hint
            )
            return name[: -len("_kernel")] if name.endswith("_kernel") else name
    except Exception:
        pass
    return "kernel"


def _reconcile(s: TraceSession, event: Any, role: str | None, generated: str, ffi: str) -> Any:
    from ..reconcile.variant import variant_from_launch
    from ..reconcile.workflow import reconcile_codegen, settle
    from .invocation import ledger_of

    kernel = _kernel_name(s, event)
    # The launch read from the compile's input IR at its first pass (device and host share it);
    # a compile whose first pass was not seen falls back to the codegen input.
    launch = s.manifest.launch
    if launch is None:
        launch = getattr(s, "_wf_launch", None)
        if launch is None:
            launch = launch_info(event.mod, kernel)
            s._wf_launch = launch  # type: ignore[attr-defined]
    variant = variant_from_launch(kernel, launch)
    outcome = reconcile_codegen(
        s.settings,
        kernel=kernel,
        role=role,
        generated=generated,
        compiles_source=cg.compiles_source(ffi),
        backend=s.manifest.backend,
        variant=variant,
        ledger=ledger_of(s.settings),
    )
    for w in outcome.warnings:
        s.warn(w)
    for kind, message, path in outcome.notices:
        s.emit(Notice(kind, message, kernel=kernel, path=path))
    if outcome.tag:
        s.emit(
            Notice(outcome.tag, outcome.message or "", kernel=kernel, path=outcome.path, diff=outcome.diff)
        )
    settle(outcome)  # the tag was said: a kill from here on does not make the next run repeat it
    return outcome
