"""One codegen call of a traced compile: snapshot its input, reconcile the working file, record it.

The working-file step is the hooks' (session/hooks.py): reconcile/ lives above capture.

The reconcile is synchronous (the compile must build the edited source, or be told
it is not applied); the record (print, counts, store, listeners) is a job like a
pass's. The two are guarded apart: a failure while recording never undoes the
reconcile, and a failure while reconciling is said in one warning that names the file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

from ..diff import count_changes
from ..format.records import CODEGEN, PassRecord
from . import codegen as cg
from . import codegen_nvrtc as cgn
from . import native
from .capture import CODEGEN_PHASE, OpenPass, TraceSession
from .events import Notice
from .hooks import CodegenRequest
from .interrupt import interrupted
from .recorder import CodegenCall, Handback, PassEvent
from .signature import launch_info, short_label, signature
from .snapshot import Side

__all__ = ["CODEGEN_PHASE", "record_codegen", "say_failed_edit"]


def record_codegen(
    s: TraceSession,
    event: Any,
    next_call: Callable[[], Any],
    phase: Callable[[], AbstractContextManager[Any]],
) -> Any:
    """Run `next_call` (the codegen) inside `phase()`, reconcile its source, record it; return the module."""
    # Recording may have stopped (a full disk): the working files are still reconciled,
    # so an edit is compiled, or said not to be, whatever happened to the records.
    role = None
    before: Side | None = None
    rerun: str | None = None  # the source-only codegen a recorder may call again (source maps), if any
    try:
        role = cg.classify_role(event)
        rerun = native.may_rerun_codegen(event, next_call)
        if not s.broken:
            before = s.capture(event.mod)
            s.resolve(before)
            if not s.manifest.target:
                s.note(target=_target_str(event.target))
    except Exception as exc:
        s._guard("capturing codegen input", exc)
        before = None
    where = f"{cg.record_name(role)} ({getattr(event, 'name', '?')})"
    s.inflight.mark("in", where, phase=CODEGEN_PHASE)
    t0 = time.perf_counter()
    try:
        with phase():
            result = next_call()
        s.inflight.mark("after", where, phase=CODEGEN_PHASE)
    except BaseException as exc:
        if before is not None and not interrupted() and not isinstance(exc, KeyboardInterrupt):
            index = s.next_index()
            p = OpenPass(cg.record_name(role), index, 0, None, CODEGEN_PHASE, t0, before)
            s.pass_failed(p, codegen=True, role=role)  # the reproducer saves its input (a real IRModule)
            s.record_pass(p, None, time.perf_counter() - t0, error=exc)
        raise
    duration = time.perf_counter() - t0
    return _reconcile_and_record(s, event, role, before, result, duration, t0, rerun)


def _reconcile_and_record(
    s: TraceSession,
    event: Any,
    role: str | None,
    before: Side | None,
    result: Any,
    duration: float,
    start: float,
    rerun: str | None,
) -> Any:
    ffi = str(getattr(event, "name", ""))
    try:
        generated = cg.module_source(result, on_error=s.warn)
    except Exception:
        generated = ""
    # An edit is handed back only in place of a real TVM module of source, made the same way;
    # whatever else a custom build returned goes back to its caller as it is.
    compiles = cg.compiles_source(ffi) and native.is_runtime_module(result)
    compiled, outcome, out_result = generated, None, result
    working_files = s.hooks.working_files
    if s.settings.working_files_enabled() and generated and working_files is not None:
        try:
            why = None
            if cg.compiles_source(ffi) and not compiles:
                why = (
                    f"its build returned {type(result).__name__}, not a TVM module, so tltrace "
                    "cannot hand an edit back in its place"
                )
            outcome = _reconcile(s, event, role, generated, compiles, why)
            if outcome.compile_text != generated and compiles:
                out_result = cg.source_module(result, outcome.compile_text, origin=outcome.origin)
            if outcome.compile_text != generated:
                compiled = outcome.compile_text  # on a binary backend: kept for the diff view only
        except Exception as exc:
            out_result, compiled = result, generated
            said = False
            if outcome is not None:  # decided, then not handed back: the build's own result goes on
                try:
                    outcome = working_files.not_compiled(
                        s.settings, outcome, f"handing it back failed ({type(exc).__name__}: {exc})"
                    )
                    said = outcome.tag == "NOTE"
                except Exception:
                    outcome = None
            if not said:
                s.warn(
                    f"working files skipped for {_kernel_name(s, event)} ({type(exc).__name__}: {exc}); "
                    "an edit there is not applied in this run"
                )
        if outcome is not None:
            try:
                if out_result is not result and outcome.origin is not None:
                    cgn.note_patched(s, outcome.origin, _kernel_name(s, event))
                if outcome.compile_text != generated:
                    s.mark_edited()
                _say(s, event, outcome)  # after the hand-back: its tag is what was compiled
            except Exception as exc:
                s.warn(f"could not say what the working file of {_kernel_name(s, event)} holds ({exc})")
    if s.broken or before is None:
        return out_result
    amap = None  # the recorders' printer's value for the source (a source map)
    call: CodegenCall | None = None
    event_of_call = PassEvent(None, cg.record_name(role), CODEGEN_PHASE, codegen=True, role=role)
    if s.recorders:
        call = CodegenCall(
            ffi=ffi,
            mod=event.mod,
            target=event.target,
            rerun=rerun,
            generated=generated,
            compiled=compiled,
            working_file=str(outcome.path) if outcome is not None and outcome.path else None,
        )
        amap = s.recorders.codegen(event_of_call, call)
    index = s.next_index()
    rec = PassRecord(
        index=index,
        name=cg.record_name(role),
        phase=CODEGEN_PHASE,
        status=CODEGEN,
        duration_s=round(duration, 6),
        role=role,
        ffi=ffi,
        reconcile=outcome.tag if outcome else None,
        working_file=str(outcome.path) if outcome and outcome.path else None,
        start_s=round(start - s.t0, 6),
    )
    if call is not None and s.recorders.hooked("handback") and not s.broken:
        # A recorder that changes what is compiled (--line-directives): opt-in, this compile waits.
        made: list[Any] = []

        def source_map() -> Any:
            # The map is needed now, not on the worker: computed here once, refined once every
            # IR text before this codegen is recorded (the worker drained).
            if not made:
                made.append(s.recorders.resolve(amap))
                s.wait()
            return s.recorders.refine(rec, "", compiled, (None, made[0]))[1]

        def say(message: str) -> None:
            s.emit(Notice("info", message, kernel=s.manifest.kernel))

        back = Handback(call, role, compiles, result, out_result, source_map, say)
        out_result = s.recorders.handback(event_of_call, back)
        if made:
            amap = made[0]
    side = before

    def job() -> None:
        if s.broken:
            return
        try:
            text = s._resolve(side)
            added, removed = count_changes(text, compiled) if s.live_counts else (None, None)
            extras = (side.extra, s.recorders.resolve(amap))  # a source map computed here, off the compile
            s.add_record(replace(rec, added=added, removed=removed), text, compiled, "cpp", extras=extras)
        except Exception as exc:
            s._guard("recording codegen", exc)

    s.submit(job)
    return out_result


def say_failed_edit(s: TraceSession, error: BaseException | None) -> None:
    """A compile that injected an edit failed in NVRTC: say the error at the working file's line, and the log.

    TileLang's nvrtc adapter shows NVRTC's log only when verbose (session/codegen_nvrtc.py
    fetches it). Called before the session finishes; never raises, never holds the error up
    longer than the child compile's limit.
    """
    if error is None or interrupted():
        return
    try:
        found = cgn.explain_failed_edit(s, error)
        if found is None:
            return
        s.emit(Notice("COMPILE-ERROR", found.text(), kernel=found.kernel, path=found.path))
    except Exception as exc:
        s.warn(f"could not say where the edit failed to compile ({type(exc).__name__}: {exc})")


def _target_str(target: Any) -> str | None:
    """The target's kind ("c", "cuda"); a custom caller's text target as it is; else None."""
    if isinstance(target, str):
        return target or None
    if not native.is_target(target):
        return None
    try:
        return str(target.kind.name)
    except Exception:
        return None


def _kernel_name(s: TraceSession, event: Any) -> str:
    """The kernel's name: the compile's (from its PassContext), else the lowered function's symbol."""
    if s.manifest.kernel:
        return s.manifest.kernel
    if not native.is_module(event.mod):
        return "kernel"
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


def _reconcile(
    s: TraceSession, event: Any, role: str | None, generated: str, compiles: bool, why: str | None
) -> Any:
    working_files = s.hooks.working_files
    assert working_files is not None  # the caller checked
    kernel = _kernel_name(s, event)
    # The launch read from the compile's input IR at its first pass (device and host share it);
    # a compile whose first pass was not seen falls back to the codegen input.
    launch = s.manifest.launch
    if launch is None:
        launch = getattr(s, "_wf_launch", None)
        if launch is None:
            launch = launch_info(event.mod, kernel)
            s._wf_launch = launch  # type: ignore[attr-defined]
    outcome = working_files.reconcile(
        CodegenRequest(
            s.settings,
            kernel=kernel,
            role=role,
            generated=generated,
            compiles_source=compiles,
            backend=s.manifest.backend,
            launch=launch,
            not_compiled=why,
        )
    )
    for w in outcome.warnings:
        s.warn(w)
    return outcome


def _say(s: TraceSession, event: Any, outcome: Any) -> None:
    """Emit the outcome's notices and tag, and settle its journal once said."""
    working_files = s.hooks.working_files
    assert working_files is not None  # the caller checked
    kernel = _kernel_name(s, event)
    launch = s.manifest.launch if s.manifest.launch is not None else getattr(s, "_wf_launch", None)
    # The stream's name for this compile (`add 512`); the signature is set as the compile ends.
    label = short_label(kernel, s.manifest.signature or signature(kernel, launch, None))
    for kind, message, path in outcome.notices:
        s.emit(Notice(kind, message, kernel=kernel, path=path, label=label))
    if outcome.tag:
        s.emit(
            Notice(
                outcome.tag,
                outcome.message or "",
                kernel=kernel,
                path=outcome.path,
                diff=outcome.diff,
                diff_names=outcome.diff_names,
                label=label,
            )
        )
    if getattr(outcome, "unsaid", None) is not None:
        # A CONFLICT or INIT-BACKUP keeps its journal until its tag is printed (not only queued):
        # a kill before that has the next run say it again. Only these wait for the worker; a
        # NEW or REGENERATED tag (an autotuner's every config) leaves no journal and goes on.
        s.wait(30)
        working_files.settle(outcome)  # said: a kill from here on does not make the next run repeat it
