"""The Python API: `lower_trace`, `enable`, `disable`, `create_pass_instrument`.

Import is cheap: TVM and TileLang are imported on first use. `lower_trace` and
`create_pass_instrument` need only TVM (TileLang's bundled copy when TileLang is
installed, else PyPI's apache-tvm); `enable` traces TileLang compilations and
needs TileLang.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import (
    DEFAULT,
    DEFAULT_KEEP,
    MODES,
    Settings,
    build_settings,
    env_mode,
    parse_mode,
    script_name_from_argv,
)
from ..errors import TltraceError, UsageError

__all__ = ["create_pass_instrument", "disable", "enable", "lower_trace"]


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()
_lock = threading.Lock()
_closers: list[Any] = []  # HTML listeners to finalize at exit


def _tvm() -> Any:
    """Return the TVM module: TileLang's bundled copy when TileLang is installed, else plain `tvm`."""
    if "tilelang" in sys.modules or importlib.util.find_spec("tilelang") is not None:
        try:
            from tilelang import tvm  # type: ignore[import-not-found]

            return tvm
        except Exception:  # a broken TileLang install: try a plain TVM below
            pass
    try:
        import tvm  # type: ignore[import-not-found]
    except ImportError:
        raise TltraceError(
            "neither tilelang nor apache-tvm is installed; pip install tilelang "
            "(or apache-tvm for plain TVM pipelines)"
        ) from None
    return tvm


def _resolve_mode(mode: Any, *, fallback: str = "terminal") -> str | None:
    if mode is _UNSET:
        return env_mode() or fallback
    if mode is None:
        return None
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string (terminal, html or both) or None, not {type(mode).__name__}")
    return parse_mode(mode, source="mode")


def _settings(mode: str, trace_dir: Any, codegen_output: Any, **extra: Any) -> Settings:
    """Return validated Settings for the API: the same builder, and the same checks, as `tltrace run`."""
    from ..format.scripts import identity_of

    argv0 = sys.argv[0] if sys.argv else ""
    return build_settings(
        script_key=identity_of(argv0) if argv0 and os.path.isfile(argv0) else None,
        mode=mode,
        trace_dir=None if trace_dir is _UNSET else trace_dir,
        script_name=script_name_from_argv(),
        codegen_output=DEFAULT if codegen_output is _UNSET else codegen_output,
        command=tuple(["python", *sys.argv]) if sys.argv and sys.argv[0] else ("python",),
        **extra,
    )


# The open enable()..disable() span: its invocation's lifecycle (tracing/lifecycle.py).
_span: Any = None


def _close_span() -> bool:
    """End the open invocation with the lifecycle's one end sequence; return False when none was open.

    The tool goes (the records of its compiles flushed), the listeners are told, older
    invocations pruned, the reports finished. In an os.fork() child nothing is reported: the
    process that called enable() ends the span.
    """
    global _span
    with _lock:
        span, _span = _span, None
    if span is None:
        return False
    span.end(prune=True)
    return True


@atexit.register
def _close_reports() -> None:
    disable()
    with _lock:
        closers, _closers[:] = list(_closers), []
    for c in closers:
        try:
            c.close()
        except Exception:
            pass


# -- enable / disable ----------------------------------------------------------
def enable(
    mode: Any = _UNSET,
    trace_dir: Any = _UNSET,
    codegen_output: Any = DEFAULT,
    *,
    context: int = 3,
    keep: int = DEFAULT_KEEP,
    only: str | None = None,
    skip: str | None = None,
    kernels: str | None = None,
    quiet: bool = False,
    all_passes: bool = False,
    verbose: bool = False,
    ignore_whitespace: bool = False,
    use_cache: bool = False,
    sync: bool | None = None,
    exact: bool | None = None,
    check_texts: bool | None = None,
    wait: bool | None = None,
    ptxas: bool | None = None,
    line_directives: bool | None = None,
    ptx: bool | None = None,
    sass: bool | None = None,
    remarks: bool | str | Sequence[str] | None = None,
    source_map: bool | None = None,
    queue: int | None = None,
    workers: int | None = None,
    exit_wait: float | None = None,
    explain_timeout: float | None = None,
    launches: bool | None = None,
    launch_limit: int | None = None,
    save_inputs: int | None = None,
    save_inputs_max: int | None = None,
    children: bool = True,
) -> None:
    """Trace every later TileLang compilation in this process and in its children; return None.

    Every setting of `tltrace run` is a keyword here, under the name of its Settings field
    (`--check-texts` is check_texts=); a bad value is a UsageError (one line), as the flag's
    is exit 2. Idempotent; a compilation keeps the settings it started with. The
    compilations from here to disable() are one invocation.

    mode: "terminal", "html" or "both"; omitted: TL_LOWER_TRACE, else "terminal"; None: the
    same as disable(). trace_dir: omitted or None: TL_LOWER_TRACE_DIR, else
    ./tmp/lower_trace_dir; a trace dir that is a file, or whose script directory (or its
    .run_records) is a symbolic link, which tltrace never writes through, is a UsageError.
    codegen_output: omitted: <script_dir>/codegen_device.cpp (and _host) in html/both mode;
    a path: that file (host: path with _host); None: no working files.

    As `tltrace run`'s flags: context, keep (counts of 0 or more; at disable(), or at exit,
    the newest `keep` invocations of the script are kept, 0 keeps all); only, skip (regular
    expressions over pass names, any case: the passes shown); quiet, all_passes, verbose,
    ignore_whitespace (the terminal stream); use_cache (unless True, TileLang's kernel cache
    is turned off, so that every compilation runs its passes: a cache hit traces nothing).

    The knobs below take None (the default) for their environment variable, else their
    default (docs/usage.md): kernels (a regular expression: only kernels whose name matches
    are traced, the others compile untraced; TLTRACE_KERNELS); sync=True prints and records
    each pass on the compiling thread before the next one runs, for a compiler that crashes
    (TLTRACE_SYNC; else a background worker); exact=True prints every text not made of the
    very same fields as the one before (TLTRACE_EXACT); check_texts=True also prints every
    module inline and checks each recorded text against it (TLTRACE_CHECK_TEXTS); wait=True
    makes each compile return with its records on disk (TLTRACE_WAIT); ptxas=True: machine
    facts from nvcc -Xptxas -v (TLTRACE_PTXAS); line_directives=True: the device source
    compiled with scoped #line directives (TLTRACE_LINE_DIRECTIVES); ptx=True, sass=True: the
    PTX and SASS stages (TLTRACE_PTX, TLTRACE_SASS); remarks: True (each top-level pass's
    stderr kept), planner names ("vectorize,reducer", a list, or "all") or False
    (TLTRACE_REMARKS); source_map=False records no source maps (TLTRACE_SOURCE_MAP);
    queue (16 or more: pass callbacks a worker holds before a compile waits; TLTRACE_QUEUE,
    1024), workers (1 or more: the most background workers, at most 8 and one less than the
    CPUs; TLTRACE_WORKERS), exit_wait (the most seconds an os._exit waits for the
    records; TLTRACE_EXIT_WAIT, 30): the workers are the process's, so the last compile to
    start sets these; explain_timeout (the most seconds a compile that failed in
    LayoutInference is explained for, in a child; TLTRACE_EXPLAIN_TIMEOUT, 120; 0 off); launches=True
    records each launch of a compiled kernel (TLTRACE_LAUNCHES; docs/launches.md), the first
    launch_limit of each process (TLTRACE_LAUNCH_LIMIT, 100000), the rest counted; save_inputs=N keeps the tensor arguments of the first N launches before and
    after each (TLTRACE_SAVE_INPUTS; implies launches), at most save_inputs_max bytes
    (TLTRACE_SAVE_INPUTS_MAX, 64 MiB). children: Python processes started while tracing is on
    (multiprocessing, subprocess, torchrun) trace their compiles into this invocation, with
    these settings, from the moment they import TileLang (docs/children.md); False keeps
    tracing to this process.
    """
    resolved = _resolve_mode(mode)
    if resolved is None:
        disable()
        return
    settings = _settings(
        resolved,
        trace_dir,
        codegen_output,
        context=context,
        keep=keep,
        only=only,
        skip=skip,
        kernels=kernels,
        quiet=quiet,
        all_passes=all_passes,
        verbose=verbose,
        ignore_whitespace=ignore_whitespace,
        use_cache=use_cache,
        sync=sync,
        exact=exact,
        check_texts=check_texts,
        wait=wait,
        ptxas=ptxas,
        line_directives=line_directives,
        ptx=ptx,
        sass=sass,
        remarks=tuple(remarks) if isinstance(remarks, (list, tuple)) else remarks,
        source_map=source_map,
        queue=queue,
        workers=workers,
        exit_wait=exit_wait,
        explain_timeout=explain_timeout,
        launches=launches,
        launch_limit=launch_limit,
        save_inputs=save_inputs,
        save_inputs_max=save_inputs_max,
    )
    from ..format.scripts import unusable
    from ..tracing.children import leave_parent_invocation
    from ..tracing.setup import NotInstalled, check

    problem = unusable(settings.trace_dir, settings.script_dir)
    if problem is not None:  # it would record nothing: said now, in one line, not at each compile
        raise UsageError(problem)
    leave_parent_invocation()  # this process traces on its own now, with these settings
    try:
        check(use_cache=use_cache)  # from TileLang's files: no seam is a UsageError (one line)
    except NotInstalled:
        raise TltraceError(
            "enable() traces TileLang compilations and tilelang is not installed; "
            "for a plain TVM pipeline use tltrace.create_pass_instrument()"
        ) from None
    from ..render.listeners import Listeners
    from ..tracing.lifecycle import Lifecycle

    global _span
    with _lock:
        span = _span
    if span is not None and span.settings.script_dir == settings.script_dir:
        # enable() again inside a span: new settings, the same invocation.
        settings = replace(settings, invocation=span.id)
        span.rebind(settings, [Listeners(settings)])
    else:
        _close_span()
        span = Lifecycle(settings, [Listeners(settings)]).open()
    with _lock:
        _span = span
    # The one set-up, lazy: TileLang is set up when the user imports it (now, if it is imported);
    # enable() again: the environment first gets back what it had.
    span.start(children=children)


def disable() -> None:
    """Stop tracing later compilations and end the invocation; return None.

    A compilation in progress finishes in its own session. Older invocations are
    pruned here (enable's `keep`).
    """
    if not _close_span() and "tilelang" in sys.modules:
        from ..session import controller

        controller.uninstall()  # a tool installed otherwise (a traced child's) goes too, as it always did


def flush(timeout: float | None = None) -> bool:
    """Wait until every compile traced so far in this process has its records on disk; return
    False when `timeout` seconds passed first.

    A compile returns before its worker has written all of its records (docs/usage.md);
    `disable()`, the end of `tltrace run` and the pytest plugin's test flush too.
    """
    from ..session.worker import drain

    return drain(timeout)


def enabled() -> Settings | None:
    """Return the settings later compilations will be traced with, or None when tracing is off.

    After enable(), they are returned before TileLang is imported too (it is set up at its import).
    """
    with _lock:
        span = _span
    if span is not None and span.tracing:
        return span.settings
    from ..session import controller

    return controller.installed()


# -- a standalone TVM PassInstrument -------------------------------------------
def create_pass_instrument(mode: Any = _UNSET, trace_dir: Any = _UNSET, *, name: str | None = None) -> Any:
    """Return a TVM PassInstrument that records every pass of a PassContext it is given.

    Each `with PassContext(instruments=[...])` block becomes one run under
    <trace_dir>/<script>/.run_records, as `tltrace run` writes them. Settings come
    from the arguments, else from enable(), else from TL_LOWER_TRACE / TL_LOWER_TRACE_DIR.
    Works with TileLang's TVM and with plain apache-tvm.
    """
    current = enabled()
    if mode is _UNSET and current is not None:
        resolved: str | None = current.mode
    else:
        resolved = _resolve_mode(mode)
    if resolved is None:
        resolved = "terminal"
    if trace_dir is _UNSET and current is not None:
        trace_dir = current.trace_dir
    settings = _settings(resolved, trace_dir, None)
    from ..session.instrument import instrument_class
    from ..tracing.recorders import register_defaults

    cls = instrument_class(_tvm())
    register_defaults()
    from ..render.listeners import Listeners

    listeners = Listeners(settings)
    with _lock:
        _closers.append(listeners)
    return cls(settings, listeners, name)


# -- lower_trace -----------------------------------------------------------------
def _as_module(tvm: Any, func_or_mod: Any) -> Any:
    """Return an IRModule for a PrimFunc or IRModule; raise TypeError for anything else.

    Handing TVM something else (None, a string) can crash the interpreter inside C++.
    """
    if isinstance(func_or_mod, tvm.IRModule):
        return func_or_mod
    prim_func = None
    for ns in ("tirx", "tir"):
        prim_func = getattr(getattr(tvm, ns, None), "PrimFunc", None)
        if prim_func is not None:
            break
    base_func = getattr(getattr(tvm, "ir", None), "BaseFunc", None)
    kinds = tuple(k for k in (prim_func, base_func) if isinstance(k, type))
    if kinds and isinstance(func_or_mod, kinds):
        return tvm.IRModule({"main": func_or_mod})
    raise TypeError(f"lower_trace() needs a PrimFunc or an IRModule, not {type(func_or_mod).__name__}")


def _named_passes(passes: Any) -> list[tuple[str, Any]]:
    from ..format.names import pass_display_name

    if (isinstance(passes, tuple) and len(passes) == 2 and isinstance(passes[0], str)) or not isinstance(
        passes, (list, tuple)
    ):
        passes = [passes]
    out: list[tuple[str, Any]] = []
    for p in passes:
        if isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str):
            if not callable(p[1]):
                raise TypeError(f"lower_trace() step {p[0]!r} is a {type(p[1]).__name__}, not a pass")
            out.append((p[0], p[1]))
        elif not callable(p):
            raise TypeError(
                f"lower_trace() needs passes (a pass, a list of passes, or of (name, pass)), "
                f"not {type(p).__name__}"
            )
        else:
            try:
                name = pass_display_name(str(p.info.name))
            except Exception:
                name = getattr(p, "__name__", None) or type(p).__name__
            out.append((name, p))
    return out


def _script(mod: Any) -> str:
    try:
        return str(mod.script())
    except Exception:
        return str(mod)


def lower_trace(
    func_or_mod: Any,
    passes: Any,
    mode: str = "terminal",
    context: int = 3,
    html_path: str | os.PathLike = "lower_trace_report.html",
) -> list[dict[str, Any]]:
    """Return one dict per pass step (name, before_script, after_script, diff_lines, insertions, deletions,
    changed, rows, note).

    Runs `passes` (a pass, a list of passes, or a list of (name, pass)) on a
    PrimFunc or IRModule in order; installs no hook. mode "terminal" prints a
    coloured diff per step, "html" writes a report to html_path, "both" does both.
    A step that raises is returned with an "error" key, printed, and re-raised.
    """
    from ..diff import diff

    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string (terminal, html or both), not {type(mode).__name__}")
    m = mode.strip().lower()
    if m not in MODES:
        raise UsageError(f"mode must be one of terminal, html, both; got {mode!r}")
    if isinstance(context, bool) or not isinstance(context, int):
        raise TypeError(f"context must be an int, not {type(context).__name__}")
    if context < 0:
        raise UsageError("context must be 0 or more")
    if not isinstance(html_path, (str, os.PathLike)):
        raise TypeError(f"html_path must be a path, not {type(html_path).__name__}")
    tvm = _tvm()
    mod = _as_module(tvm, func_or_mod)
    steps = _named_passes(passes)
    results: list[dict[str, Any]] = []
    console = None
    if m in ("terminal", "both"):
        from ..render.terminal import make_console

        console = make_console()
    failure: BaseException | None = None
    try:
        for i, (name, p) in enumerate(steps, 1):
            before = _script(mod)
            try:
                mod = p(mod)
            except Exception as exc:
                failure = exc
                results.append(
                    {
                        "name": name,
                        "before_script": before,
                        "after_script": "",
                        "diff_lines": [],
                        "insertions": 0,
                        "deletions": 0,
                        "changed": False,
                        "error": _short_error(exc),
                    }
                )
                if console is not None:
                    _print_step(console, i, results[-1], context)
                raise
            after = _script(mod)
            d = diff(before, after)  # the one engine: rows, notes and the unified lines
            lines = (
                [
                    x
                    for _, x in d.unified(
                        context=context, a_name=f"step {i} before", b_name=f"step {i} after", tilde=False
                    )
                ]
                if d.changed
                else []
            )
            results.append(
                {
                    "name": name,
                    "before_script": before,
                    "after_script": after,
                    "diff_lines": lines,
                    "insertions": d.added,
                    "deletions": d.removed,
                    "changed": d.changed,
                    "rows": d.rows_json(),
                    "note": d.note,
                }
            )
            if console is not None:
                _print_step(console, i, results[-1], context)
    finally:
        if m in ("html", "both"):
            try:
                path = _write_html(results, Path(html_path), context)
                if console is not None:
                    console.print(
                        f"HTML report written to: {path}", highlight=False, soft_wrap=True, markup=False
                    )
            except Exception as exc:
                if failure is None:
                    raise
                from ..session.events import fallback_warning

                fallback_warning(f"tltrace: could not write the HTML report: {exc}")
    return results


def _short_error(exc: BaseException) -> str:
    """Return 'ExcType: message' on one line (the formatter the capture records use)."""
    from ..session.capture import error_text

    return error_text(exc).splitlines()[0]


def _print_step(console: Any, i: int, step: dict[str, Any], context: int) -> None:
    from rich.text import Text

    from ..format.records import CHANGED, FAILED, NOOP, PassRecord
    from ..render.terminal import diff_text, pass_line

    status = FAILED if "error" in step else CHANGED if step["changed"] else NOOP
    rec = PassRecord(
        index=i,
        name=step["name"],
        phase="lower_trace",
        status=status,
        added=step["insertions"],
        removed=step["deletions"],
    )
    console.print(pass_line("lower_trace", rec, step.get("note")), soft_wrap=True)
    if status == FAILED:
        console.print(Text(f"    error: {step['error']}", style="red"), soft_wrap=True)
    elif status == CHANGED:
        console.print(diff_text(step["before_script"], step["after_script"], context), soft_wrap=True)


def _write_html(results: list[dict[str, Any]], out: Path, context: int) -> Path:
    """Record the steps as a run in a scratch directory and render it with the HTML report writer."""
    from ..history.report_reads import compile_report
    from ..render.html import write_report
    from ..session.capture import TraceSession

    scratch = Path(tempfile.mkdtemp(prefix="tltrace-lower-trace-"))
    try:
        settings = build_settings(
            mode="html",
            trace_dir=scratch,
            script_name="lower_trace",
            codegen_output=None,
            keep=0,
            context=context,
        )
        session = TraceSession(settings, lambda event: None, session_name="lower_trace")
        for step in results:
            after = None if "error" in step else step["after_script"]
            error = step["error"] if "error" in step else None  # already "ExcType: message"
            session.pass_record(
                name=step["name"],
                index=session.next_index(),
                phase="lower_trace",
                before=step["before_script"],
                after=after,
                error=error,
            )
        session.finish(None)
        if session.store is None:
            raise TltraceError("lower_trace recorded no steps; nothing to report")
        out = Path(out).absolute()
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(write_report(compile_report(session.store.run_dir, linked=False), out=out))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
