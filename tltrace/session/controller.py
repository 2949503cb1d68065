"""TileLang and tltrace: the one set-up (set_up_tilelang), and installing and removing the tool at the seam."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from ..config import Settings
from ..errors import TltraceError, UsageError
from . import exits
from .events import Event
from .hooks import NO_HOOKS, CaptureHooks

__all__ = [
    "MIN_TILELANG",
    "check_seam",
    "install",
    "installed",
    "set_up_tilelang",
    "silence_builtin_tracer",
    "uninstall",
]

TOOL_NAME = "tltrace"
BUILTIN_TOOL_NAME = "lower_trace"

_lock = threading.Lock()
_installed: tuple[Settings, Callable[[Event], None], CaptureHooks] | None = None


def silence_builtin_tracer() -> bool:
    """Keep TileLang's own tracer off while tltrace traces; return True if it was asked for.

    Call before `import tilelang` (it reads TL_LOWER_TRACE at import) and again after.
    """
    asked = bool(os.environ.pop("TL_LOWER_TRACE", None))
    try:
        import sys

        if "tilelang" in sys.modules:
            from tilelang.instrumentation import unregister_pass_instrumentation_tool  # type: ignore

            unregister_pass_instrumentation_tool(BUILTIN_TOOL_NAME)
    except Exception:
        pass
    return asked


MIN_TILELANG = "0.1.14"  # the first release with the seam; pyproject's tilelang extra says the same


def check_seam() -> None:
    """Raise UsageError (one line) when the installed TileLang lacks the public pass-instrumentation seam."""
    try:
        from tilelang.instrumentation import register_pass_instrumentation_tool  # type: ignore  # noqa: F401
    except ImportError:
        try:
            from importlib.metadata import version

            have = version("tilelang")
        except Exception:
            have = "?"
        raise UsageError(
            f"TileLang {have} has no tilelang.instrumentation.register_pass_instrumentation_tool; "
            f"tltrace needs TileLang >= {MIN_TILELANG} (pip install 'tilelang>={MIN_TILELANG},<0.2')"
        ) from None


_builtin_asked = False


def prepare_environment(*, use_cache: bool = False) -> None:
    """The part of the set-up that must come before `import tilelang`, which reads both variables.

    TileLang's own tracer off (TL_LOWER_TRACE), and its kernel cache off unless `use_cache`.
    Imports nothing.
    """
    global _builtin_asked
    if silence_builtin_tracer():
        _builtin_asked = True
    if not use_cache:
        os.environ["TILELANG_DISABLE_CACHE"] = "1"


def environment_notes() -> list[str]:
    """What to tell the user about `prepare_environment` (once per process)."""
    global _builtin_asked
    asked, _builtin_asked = _builtin_asked, False
    if asked:
        return ["TL_LOWER_TRACE is set: TileLang's built-in tracer stays off while tltrace traces"]
    return []


def set_up_tilelang(*, use_cache: bool = False) -> list[str]:
    """Make TileLang ready to be traced; return what to tell the user (info lines).

    The one set-up behind `tltrace run`, `enable()` and `pytest --tltrace`: TileLang's
    own tracer off (two tracers would trace every pass twice), its kernel cache off
    unless `use_cache` (a cache hit runs no pass), TileLang imported, and its seam
    checked. Raises TltraceError when TileLang cannot be imported, UsageError (exit 2,
    one line) when it has no seam.
    """
    prepare_environment(use_cache=use_cache)
    notes = environment_notes()
    try:
        import tilelang  # type: ignore[import-not-found]
    except Exception as exc:
        raise TltraceError(f"cannot import tilelang ({type(exc).__name__}: {exc})") from None
    check_seam()
    if not use_cache:
        try:
            tilelang.env.disable_cache()  # TileLang imported before the variable was set
        except Exception:
            pass
    silence_builtin_tracer()
    return notes


def install(settings: Settings, emit: Callable[[Event], None], hooks: CaptureHooks = NO_HOOKS) -> None:
    """Register (or replace) the factory: every later TileLang compilation is traced with `settings`.

    `hooks`: what each compile calls above capture (the working files; tracing/hooks.py).
    """
    global _installed
    from tilelang.instrumentation import register_pass_instrumentation_tool  # type: ignore

    from .tool import make_tool_class

    tool_cls = make_tool_class()
    filter_cls = None
    if settings.kernels is not None:
        from tilelang.instrumentation import PassInstrumentationTool  # type: ignore

        from .kernelfilter import make_filter_class

        filter_cls = make_filter_class(PassInstrumentationTool)
    installed_pid = os.getpid()
    with _lock:
        _installed = (settings, emit, hooks)

        def factory() -> object:
            # Snapshot: a compilation keeps the settings it started with.
            with _lock:
                current = _installed
            if current is not None and os.getpid() != installed_pid:
                # A forked child (os.fork, multiprocessing's fork): its compiles wait for their records.
                current = (exits.forked_settings(current[0], installed_pid), current[1], current[2])
            if current is None:  # disabled between registration and this compile
                from tilelang.instrumentation import PassInstrumentationTool  # type: ignore

                return PassInstrumentationTool()
            if filter_cls is not None and current[0].kernels is not None:
                # The tracing tool is made only once the kernel is known to match.
                return filter_cls(current[0], current[1], lambda: tool_cls(*current))
            return tool_cls(*current)

        register_pass_instrumentation_tool(TOOL_NAME, factory)
    exits.install(settings.exit_wait)  # os._exit waits (bounded) for the records of the compiles before it
    _install_tools(settings)


_tools_installed: set[str] = set()  # the seam tools of features installed beside the tracing tool


def _install_tools(settings: Settings) -> None:
    """Install the features' own seam tools (session/recorder.register_tool), as their factories give them."""
    from tilelang.instrumentation import register_pass_instrumentation_tool  # type: ignore

    from .recorder import tools

    for name, make in tools().items():
        tool_factory = make(settings)
        if tool_factory is not None:
            register_pass_instrumentation_tool(name, tool_factory)
            _tools_installed.add(name)


def uninstall() -> None:
    """Unregister the factory, then wait for the records of the compiles so far (the worker's queue).

    A compilation already running finishes in its own session. TileLang is never imported
    here: nothing is registered with a TileLang that is not imported.
    """
    global _installed
    import sys

    from .worker import drain

    with _lock:
        _installed = None
    exits.uninstall()
    names = [TOOL_NAME, *sorted(_tools_installed)]
    _tools_installed.clear()
    if "tilelang" in sys.modules:
        for name in names:
            try:
                from tilelang.instrumentation import unregister_pass_instrumentation_tool  # type: ignore

                unregister_pass_instrumentation_tool(name)
            except Exception:
                pass
    drain()


def retire(emit: Callable[[Event], None]) -> None:
    """Stop tracing, but say (once) when a compile starts later: its thread outlived the script, or atexit ran it.

    `tltrace run` calls this when the script ends; the next install() (a watch rerun) replaces it.
    """
    global _installed
    from tilelang.instrumentation import (  # type: ignore
        PassInstrumentationTool,
        register_pass_instrumentation_tool,
    )

    from .events import Notice

    said = threading.Event()

    class LateCompile(PassInstrumentationTool):
        def create_pass_instrument(self) -> object | None:
            if not said.is_set():
                said.set()
                try:
                    from .kernelfilter import kernel_name

                    name = kernel_name()
                except Exception:
                    name = None
                thread = threading.current_thread()
                where = (
                    "the main thread (an atexit handler)"
                    if thread is threading.main_thread()
                    else f"thread {thread.name!r}, which outlived it"
                )
                try:
                    emit(
                        Notice(
                            "warning",
                            f"a TileLang compile ({name or 'kernel not named yet'}) began after the traced "
                            f"script ended, in {where}; it is not traced (nor is any later one)",
                            kernel=name,
                        )
                    )
                except Exception:
                    pass
            return None

    with _lock:
        _installed = None
        register_pass_instrumentation_tool(TOOL_NAME, LateCompile)
    exits.uninstall()  # the caller drains next (the end of the run)


def installed() -> Settings | None:
    with _lock:
        return _installed[0] if _installed else None
