"""The capture engine: one TraceSession per compilation.

A session owns one compilation's records, index counter, manifest and run
directory, so kernels compiled concurrently in threads never share state. The
compiling thread only snapshots the IR (`capture`) and hands jobs to the
background worker (session/worker.py), which prints, hashes, counts, stores and
tells the listeners; with `sync` the same jobs run at once on the compiling
thread. Every failure inside tltrace becomes one warning; the user's compile
goes on unharmed.

Who writes what: the compiling thread owns the manifest's header (kernel,
backend, target, launch, thread); the job side owns the run id, the input hash,
the records and the end state, and writes the manifest composed of both.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .._version import __version__
from ..config import Settings
from ..diff import line_changes
from ..format import liveness
from ..format.layout import utf8_hash
from ..format.names import pass_display_name
from ..format.records import (
    CHANGED,
    CODEGEN,
    COMPLETE,
    ERROR,
    FAILED,
    INTERRUPTED,
    NOOP,
    PassRecord,
    RunManifest,
)
from ..format.writer import writer_token
from . import fatal
from .events import Event, Notice, RunFinished, RunStarted, fallback_warning, pass_recorded
from .hooks import NO_HOOKS, CaptureHooks
from .interrupt import interrupted, interrupting_signal
from .recorder import PassEvent, Recorders
from .signature import input_hash, launch_info, signature
from .snapshot import Side, TextCache
from .store import RunStore
from .worker import Call, on_worker, run_job, worker

Emit = Callable[[Event], None]

UNSCOPED = "unscoped"
CODEGEN_PHASE = "codegen"  # the phase of codegen records (session/codegen_call.py) and stages


@dataclass(slots=True)
class OpenPass:
    """A pass that started: where it sits, and the snapshot of its input (one object with
    slots: it waits in the worker's queue with the pass's jobs, see session/worker.py)."""

    name: str
    index: int
    depth: int
    parent: int | None
    phase: str | None
    start: float
    before: Side

    def event(self) -> PassEvent:
        """The recorders' event of this pass."""
        return PassEvent(self.index, self.name, self.phase, self.depth, self.parent)


class TraceSession:
    """Records of one compilation; the TileLang observer and the TVM instrument feed it."""

    def __init__(
        self,
        settings: Settings,
        emit: Emit,
        *,
        session_name: str | None = None,
        background: bool = False,
        hooks: CaptureHooks = NO_HOOKS,
    ) -> None:
        self.settings = settings
        self.hooks = hooks  # what this compile calls above capture (session/hooks.py)
        self._emit_fn = emit
        self.background = background and not settings.sync
        # The compiling thread's worker, sized by the settings (session/worker.py).
        self._worker = worker(settings.workers, settings.queue) if self.background else None
        self.t0 = time.perf_counter()  # record start_s is measured from here
        self._counter = itertools.count()
        self.records: list[PassRecord] = []
        self.store: RunStore | None = None
        self.broken = False  # set after a failure inside tltrace: stop tracing, keep compiling
        self.failed_pending: list[int] = []  # records whose error arrives in finish()
        self._input_seen = False  # compiling thread: the first input was looked at
        self._input_hash: str | None = None  # job side: hash of the first input text
        self._first: Side | None = None  # the first input's snapshot, until its hash is taken
        self.edited = False
        self.pipelines = 0  # backend pipelines entered in this compile session
        self._listener_failed = False
        self._header_cache: tuple[RunManifest, tuple, RunManifest] | None = None  # (manifest, key, header)
        self._last_hash: tuple[str, str] | None = None  # (the last text stored as an output, its hash)
        self._check_texts = settings.check_texts
        # The +/- counts are a pure function of the stored texts: counted here only for a live view
        # that shows them (the stream's pass lines, the HTML report); else left to the first reader
        # (history/derived.py), which caches them beside the run.
        self.live_counts = bool(settings.html or not settings.quiet)
        self._differed: list[str] = []  # --check-texts: where a text differed from the inline print
        # Settings.wait (TLTRACE_WAIT=1, a traced child, the pytest plugin): return once on disk.
        self._wait_at_end = settings.wait
        self.inflight = fatal.Inflight()  # the pass in flight, for a process that dies in it
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
        # The per-compile extras (session/recorder.py): reproducer data, source maps, ...
        self.recorders = Recorders(settings, self.warn)
        self._texts = TextCache(
            self.recorders.print if self.recorders.printer is not None else None,
            exact=settings.exact,
        )

    # -- jobs --------------------------------------------------------------------------
    def submit(self, job: Callable[[], object] | Call) -> None:
        """Run `job` (a callable, or a `Call` tuple: session/worker.py) on the worker (in order
        with this compile's other jobs), or now with sync."""
        if self._worker is not None:
            self._worker.submit(job)
        else:
            run_job(job)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until this session's jobs so far have run; return False on timeout."""
        if self._worker is None:
            return True
        return self._worker.drain(timeout)

    # -- plumbing ------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Tell the listeners, in order with this compile's records."""
        if self.background and not on_worker():
            self.submit((TraceSession._emit_now, self, event))
        else:
            self._emit_now(event)

    def _emit_now(self, event: Event) -> None:
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
            self.recorders.halt()  # said once, here: the recorders stop with the records
            where = f" ({self.store.run_dir})" if self.store is not None else ""
            self.warn(f"tracing stopped for this kernel: {what} failed: {type(exc).__name__}: {exc}{where}")

    def next_index(self) -> int:
        return next(self._counter)

    # -- the manifest header (compiling thread) ---------------------------------------
    def note_context(self, text: str | None) -> None:
        ctx = _parse_context(text)
        updates: dict[str, Any] = {}
        if ctx.get("kernel") and not self.manifest.kernel:
            updates["kernel"] = ctx["kernel"]
        if ctx.get("backend") and not self.manifest.backend:
            updates["backend"] = ctx["backend"]
        if updates:
            self.manifest = replace(self.manifest, **updates)

    def note(self, **fields: Any) -> None:
        """Set header fields of the manifest (kernel, target, ...)."""
        self.manifest = replace(self.manifest, **fields)

    def capture(self, mod: Any) -> Side:
        """Return a snapshot of `mod` to record later (the first one also fills the launch)."""
        side = Side.of(mod)
        if self._check_texts and side.head is not None:
            side.truth = _inline_print(mod)
        if not self._input_seen:
            self._note_input(mod, side)
        return side

    def _note_input(self, mod: Any, side: Side) -> None:
        """Launch and thread from the compile's first input IR (once), before any manifest is written."""
        self._input_seen = True
        self._first = side
        self._submit_all(self.recorders.input(side))
        try:
            launch = launch_info(mod, self.manifest.kernel)
        except Exception:
            launch = {}
        self.manifest = replace(
            self.manifest,
            launch=launch or None,
            thread=threading.current_thread().name,
            thread_id=threading.get_ident(),
        )

    def _submit_all(self, jobs: list[Callable[[], object]]) -> None:
        for job in jobs:
            self.submit(job)

    def pass_started(self, p: OpenPass) -> None:
        """Pass `p` began: tell the recorders that hook `pass_started` (here, on the compiling
        thread), then hand over one job (a `Call` tuple) that tells those that hook `pass_input`
        and prints the input in callback order (`resolve`)."""
        r = self.recorders
        if r.hooked("pass_started"):
            self._submit_all(r.pass_started(p.event(), p.before))
        if p.before.text is None or r.hooked("pass_input"):
            self.submit((TraceSession._started, self, p))

    def _started(self, p: OpenPass) -> None:
        """The worker's side of `pass_started` (job side)."""
        before = p.before
        if self.recorders.hooked("pass_input"):
            self.recorders.pass_input(p.event(), before)
        if before.text is None:
            self._resolve(before)

    def pass_finished(self, p: OpenPass) -> None:
        """Tell the recorders that pass `p` returned (first thing in its after-callback)."""
        self._submit_all(self.recorders.pass_finished(p.event()))

    def pass_failed(self, p: OpenPass, *, codegen: bool = False, role: str | None = None) -> None:
        """Tell the recorders that pass (or codegen call) `p` raised."""
        if self.recorders:
            event = PassEvent(p.index, p.name, p.phase, p.depth, p.parent, codegen=codegen, role=role)
            self._submit_all(self.recorders.pass_failed(event, p.before))

    def text_of(self, mod: Any) -> str:
        """Return the IR text of `mod` now (the reuse rule of session/snapshot.py applies)."""
        return self._texts.resolve(Side.of(mod))

    # -- records ------------------------------------------------------------------------
    def record_pass(
        self,
        p: OpenPass,
        after: Side | None,
        duration: float,
        *,
        error: BaseException | str | None = None,
        pending_error: bool = False,
    ) -> None:
        """Record a pass that finished (`after`) or failed (after None); the work runs as a job."""
        if self.broken:
            return
        err = None
        if after is None and not pending_error:
            err = error_text(error)  # now: the exception's state is the caller's
        self.submit((TraceSession._record_pass, self, p, after, duration, err, pending_error))

    def pass_record(
        self,
        *,
        name: str,
        index: int,
        phase: str | None,
        before: str,
        after: str | None,
        duration: float = 0.0,
        depth: int = 0,
        parent: int | None = None,
        error: BaseException | str | None = None,
        pending_error: bool = False,
        start: float | None = None,
    ) -> None:
        """Record a pass from its texts (callers that hold text, not IR: lower_trace's report)."""
        when = start if start is not None else -1.0  # -1: no start time (start_s left out)
        p = OpenPass(name, index, depth, parent, phase, when, Side.of_text(before))
        self.record_pass(
            p,
            Side.of_text(after) if after is not None else None,
            duration,
            error=error,
            pending_error=pending_error,
        )

    def resolve(self, side: Side) -> None:
        """Print `side` in callback order (a job), so that the reuse rule sees texts as they came."""
        if side.text is None:
            self.submit((TraceSession._resolve, self, side))

    def _resolve(self, side: Side) -> str:
        first = self._first is side
        text = self._texts.resolve(side)
        if first:
            self._first = None
            if self._input_hash is None:
                self._input_hash = input_hash(text)
        return text

    def _record_pass(
        self, p: OpenPass, after: Side | None, duration: float, err: str | None, pending_error: bool
    ) -> None:
        if self.broken:
            return
        name = p.name or "anonymous"
        try:
            differed = self._texts.differed
            before = self._resolve(p.before)
            after_text = self._resolve(after) if after is not None else None
            display = pass_display_name(name)
            if self._texts.differed != differed:
                self._differed.append(display)
            extras = (p.before.extra, after.extra if after is not None else None)
            same = None
            added: int | None
            removed: int | None
            if after_text is None:
                status, added, removed = FAILED, 0, 0
            elif after_text == before:
                status, added, removed = NOOP, 0, 0
            elif self.live_counts:
                added, removed, same = line_changes(before, after_text)
                status = CHANGED
            else:
                status, added, removed = CHANGED, None, None
            # The record's fields, made into the record once its texts are stored (`_store_record`).
            fields = {
                "index": p.index,
                "name": display,
                "phase": p.phase or UNSCOPED,
                "depth": p.depth,
                "parent": p.parent,
                "status": status,
                "added": added,
                "removed": removed,
                "duration_s": round(duration, 6),
                "error": err if status == FAILED else None,
                "start_s": round(p.start - self.t0, 6) if p.start >= 0 else None,
            }
            index = self._store_record(
                fields, before, after_text if after_text is not None else before, "tir", extras, same
            ).index
            if pending_error:
                self.failed_pending.append(index)
        except Exception as exc:
            self._guard(f"recording pass {name}", exc)

    def add_record(
        self,
        record: PassRecord,
        before: str,
        after: str,
        ext_after: str = "tir",
        extras: tuple[Any, Any] = (None, None),
        same: list[tuple[int, int]] | None = None,
    ) -> PassRecord:
        """Store both texts, log the record, hand it to the recorders, tell the listeners (job side).

        `extras`: what the recorders' printer gave with each text (source maps: PassRecorded's maps).
        Returns the record as stored (naming its texts).
        """
        return self._store_record(dict(record.__dict__), before, after, ext_after, extras, same)

    def _store_record(
        self,
        fields: dict[str, Any],
        before: str,
        after: str,
        ext_after: str,
        extras: tuple[Any, Any],
        same: list[tuple[int, int]] | None,
    ) -> PassRecord:
        """`add_record` of a record's `fields` (PassRecord field names), made into the record once
        with its texts' hashes and names (each text encoded once, for its hash and the pack)."""
        store = self.store if self.store is not None else self._ensure_store()
        last = self._last_hash  # a pass's input is most often the text the pass before it returned
        bdata: bytes | None = None
        if last is not None and last[0] is before:
            bh = last[1]
        else:
            bdata = before.encode("utf-8", "surrogatepass")
            bh = utf8_hash(bdata)
        if after is before or after == before:
            ah, adata = bh, bdata
        else:
            adata = after.encode("utf-8", "surrogatepass")
            ah = utf8_hash(adata)
        self._last_hash = (after, ah)
        phase, index, name = fields["phase"], fields["index"], fields["name"]
        fields["before_hash"] = bh
        fields["before_file"] = store.record_path(phase, index, name, "before")
        store.put_text(before, bh, bdata)
        if fields["status"] != FAILED:
            fields["after_hash"] = ah
            fields["after_file"] = store.record_path(phase, index, name, "after", ext_after)
            store.put_text(after, ah, adata)
        else:
            fields["after_hash"] = fields["after_file"] = None
        record = PassRecord.of(fields)
        self.records.append(record)
        store.append_record(record)
        recorders = self.recorders
        if recorders:
            extras = recorders.refine(record, before, after, extras)
            recorders.recorded(record, before, after, extras)
        self._emit_now(pass_recorded(self._header, record, before, after, store.run_dir, *extras, same))
        return record

    def _check_notice(self) -> Notice:
        """--check-texts: what the check found in this compile (job side, at its end)."""
        t = self._texts
        rule = f"{t.printed} printed, {t.checked - t.differed} checked equal"
        if not t.differed:
            return Notice(
                "info",
                f"{t.checked} IR texts checked against an inline print: all equal ({t.printed} printed, "
                f"the rest reused; {t.equal_skips} by the equality rule)",
                kernel=self.manifest.kernel,
            )
        where = ", ".join(dict.fromkeys(self._differed[:5]))
        hint = "" if getattr(self.settings, "exact", False) else "; --exact turns the equality rule off"
        return Notice(
            "warning",
            f"{t.differed} of {t.checked} IR texts differed from an inline print ({rule}; passes: {where}); "
            f"the records hold the inline print. Please report it to tltrace{hint}",
            kernel=self.manifest.kernel,
        )

    def _header(self) -> RunManifest:
        """The manifest as the job side writes it: the compiling thread's header plus its own fields."""
        m = self.manifest
        run_id = self.store.run_id if self.store is not None else ""
        if self._input_hash is None and self._first is not None:
            self._resolve(self._first)
        digest = self._input_hash
        fields = self.recorders.fields()
        key = (run_id, digest, fields)
        cached = self._header_cache
        if cached is not None and cached[0] is m and cached[1] == key:
            return cached[2]  # built once per change, not once per record
        sig = signature(m.kernel, m.launch, digest) if digest is not None else None
        header = replace(m, run_id=run_id, input_hash=digest, signature=sig, **fields)
        self._header_cache = (m, key, header)
        return header

    def _ensure_store(self) -> RunStore:
        if self.store is None:
            store = RunStore(self.settings.claim_script_dir())
            from ..format import scripts

            for problem in scripts.take_problems(self.settings.trace_dir):
                self.warn(problem)  # a damaged script registry: said, never guessed
            store.open()
            liveness.hold(store.records_root, self.settings.invocation)  # dropped at the invocation's end
            self.store = store
            header = self._header()
            # The manifest first: a kill before it leaves an empty directory (read as a compile
            # killed as it began), never the notes below without a manifest.
            store.write_manifest(header)
            self.inflight.attach(store.run_dir)  # where a fatal signal found the compile
            fatal.link(store.run_dir)  # and the stacks faulthandler writes then
            self._emit_now(RunStarted(header, store.run_dir, store.script_dir))
            # The recorders write what they kept (repro/: what a rerun needs), then their fields:
            # the manifest again only when they gave any (the header is rebuilt only on a change).
            self.recorders.attach(store)
            fielded = self._header()
            if fielded is not header:
                store.write_manifest(fielded)
        return self.store

    def mark_edited(self) -> None:
        """An edited source was compiled: keep this kernel out of TileLang's kernel cache."""
        self.edited = True

    # -- finish ---------------------------------------------------------------------------
    def finish(self, error: BaseException | None) -> None:
        """End the run. A compile that succeeded returns at once: its worker writes the rest, and
        the records are complete at `tltrace.flush()`, `disable()`, the end of `tltrace run`, the
        pytest plugin's test and interpreter exit (worker.drain). A failed compile, and every compile
        under Settings.wait (TLTRACE_WAIT=1, a traced child, the pytest plugin), returns once its
        records are on disk."""
        if self.edited or self.settings.use_cache:
            # The cache would save this kernel right after the session ends, under the
            # unedited key; turning it off here keeps traced and edited builds out of it.
            _keep_out_of_cache(self)
        msg = error_text(error) if error is not None else None
        finished = time.time()
        # On disk at once (or when the run directory is made): a process that exits before the
        # worker writes the rest reads as "exited", not as a compile cut short (session/exits.py).
        self.inflight.mark("ended", "raised" if error is not None else "returned")
        self.submit(lambda: self._finish(msg, error is not None, finished))
        if error is not None or self._wait_at_end:
            self.wait()  # a failed compile's records are on disk before its error reaches the caller

    def _add_stages(self) -> None:
        """Record the recorders' stages (session/recorder.Stage) as codegen records (job side)."""
        so_far = self._header().with_records(sorted(self.records, key=lambda r: r.index))
        for st in self.recorders.stages(so_far):
            if self.broken:
                return
            # After every record, whichever numbered it (a caller holding texts gives its own indexes).
            index = max(self.next_index(), max((r.index for r in self.records), default=-1) + 1)
            rec = PassRecord(
                index=index,
                name=st.name,
                phase=CODEGEN_PHASE,
                status=CODEGEN,
                added=st.after.count("\n") + 1,  # a whole new text: its lines, not a diff of two languages
                removed=st.before.count("\n") + 1,
                duration_s=round(st.duration_s, 6),
                role=st.role,
                ffi=st.ffi,
                start_s=round(time.perf_counter() - self.t0 - st.duration_s, 6),
            )
            self.add_record(rec, st.before, st.after, st.ext, extras=st.maps)

    def _finish(self, error: str | None, failed: bool, finished: float) -> None:
        if self.store is None:
            return  # no pass ran: nothing to keep (e.g. an empty compile)
        written = False
        try:
            if not failed and self.recorders:
                try:
                    self._add_stages()  # derived codegen stages (run --ptx, --sass), after the compile's records
                except Exception as exc:  # the compile's own records stand: the manifest is written below
                    self.warn(
                        f"codegen stages not recorded ({type(exc).__name__}: {exc}); the records are complete"
                    )
            records = sorted(self.records, key=lambda r: r.index)
            if self.failed_pending:
                msg = error if error is not None else "pass did not complete"
                pending = set(self.failed_pending)
                records = [replace(r, error=msg) if r.index in pending else r for r in records]
            final = replace(
                self._header().with_records(records),
                finished=finished,
                status=(INTERRUPTED if (error or "").startswith("KeyboardInterrupt") else ERROR)
                if failed
                else COMPLETE,
                error=error,
            )
            self.recorders.ended(final)  # fields computed from the whole run (facts: docs/facts.md)
            final = replace(final, **self.recorders.fields())
            self.store.write_manifest(final)
            written = True
            self.store.close()
            self.recorders.finish()
            if self._check_texts:
                self._emit_now(self._check_notice())
            self._emit_now(RunFinished(final, self.store.run_dir, self.store.script_dir))
        except Exception as exc:
            self._guard("finishing the run", exc)
            if not written and self.hooks.not_finalised is not None:
                # The compile ended; on disk its run still says running: its invocation says which.
                self.hooks.not_finalised(self.settings, self.store.run_dir.name)
        finally:
            if self.store is not None:
                self.store.close()
                self.inflight.close()  # ended in an ordinary way: no fatal note
                fatal.unlink(self.store.run_dir)


def _inline_print(mod: Any) -> str | None:
    """--check-texts: the module printed now, on the compiling thread (what the record must hold)."""
    try:
        return str(mod)
    except Exception:
        return None  # nothing to check against: the record's own print says what it can


def error_text(error: BaseException | str | None) -> str:
    """Return "ExcType: message" for a failure (a text already in that form is kept as it is).

    TVM errors may hold a C++ backtrace before the message; the message is what a
    person reads, and its type is named once (never "RuntimeError: RuntimeError: ...").
    """
    if interrupted() or isinstance(error, KeyboardInterrupt):
        # Ctrl+C inside a pass callback reaches TileLang as TVM's RuntimeError: say what happened.
        # SIGTERM and SIGHUP (under `tltrace run`) interrupt alike; the readers key on the prefix.
        sig = interrupting_signal() if interrupted() else signal.SIGINT
        return (
            "KeyboardInterrupt" if sig == signal.SIGINT else f"KeyboardInterrupt ({signal.Signals(sig).name})"
        )
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
