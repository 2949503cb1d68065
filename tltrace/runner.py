"""Run a script or module as `__main__` under runpy, with tracing installed around it.

The top of the tracing layer (`tltrace run`, `tltrace watch`'s reruns): one invocation's
`tracing.lifecycle.Lifecycle` around the script: its one set-up (TileLang set up when the script
imports it) and its one end sequence, as `enable()`, the pytest plugin and a traced child use them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import runpy
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .config import Settings
from .errors import EXIT_INTERRUPTED, TargetNotFound
from .proc.group import Terminated, on_signals
from .proc.group import exit_code as signal_exit_code
from .session.controller import (
    MIN_TILELANG as MIN_TILELANG,  # re-exported; the set-up lives in the controller
)
from .session.events import Event, Notice, ScriptOutput
from .session.interrupt import clear_interrupted, interrupted, interrupting_signal, mark_interrupted
from .tracing.lifecycle import Lifecycle


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and its arguments."""

    name: str
    args: tuple[str, ...] = ()
    module: bool = False

    @property
    def launched(self) -> str | None:
        """The script a launcher runs (`torchrun [OPTIONS] train.py`, `-m torch.distributed.run`), else None.

        Its ranks are child processes of the launcher; their compiles are filed under
        the script they run, not under the launcher's name.
        """
        launcher = self.name in _LAUNCHER_MODULES if self.module else Path(self.name).name in _LAUNCHERS
        if not launcher:
            return None
        return next((a for a in self.args if a.endswith(".py") and Path(a).is_file()), None)

    @property
    def trace_name(self) -> str:
        """The name runs are filed under: the script's stem, or the module's last part."""
        if self.launched is not None:
            from .config import script_name_from_argv

            return script_name_from_argv(self.launched)
        if self.module:
            last = self.name.rsplit(".", 1)[-1]
            return self.name.rsplit(".", 2)[-2] if last == "__main__" and "." in self.name else last
        from .config import script_name_from_argv

        return script_name_from_argv(self.name)


_LAUNCHERS = ("torchrun",)
_LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")


def check_target(target: Target) -> None:
    """Raise TargetNotFound when the script or module cannot be run."""
    if target.module:
        sys.path.insert(0, os.getcwd())  # as `python -m` would see it
        try:
            spec = importlib.util.find_spec(target.name)
        except (ImportError, ValueError) as exc:
            raise TargetNotFound(f"no module named {target.name!r} ({exc})") from None
        finally:
            sys.path.remove(os.getcwd())
        if spec is None:
            raise TargetNotFound(f"no module named {target.name!r}; check the name and sys.path")
        if spec.submodule_search_locations is not None and not _has_main(spec.submodule_search_locations):
            # Looked up on disk: importing PKG.__main__ here would run PKG's __init__ before tracing starts.
            raise TargetNotFound(
                f"no module named '{target.name}.__main__'; '{target.name}' is a package "
                "and cannot be directly executed"
            )
        return
    path = Path(target.name)
    if not path.exists():
        raise TargetNotFound(f"script {target.name} does not exist")
    if path.is_dir() and not (path / "__main__.py").exists():
        raise TargetNotFound(f"{target.name} is a directory without __main__.py")


def _has_main(locations) -> bool:
    """Return True when a package directory holds a __main__ module (any importable suffix)."""
    from importlib.machinery import all_suffixes

    for loc in locations:
        base = Path(loc) / "__main__"
        if base.is_dir() or any(base.with_name("__main__" + suf).exists() for suf in all_suffixes()):
            return True
    return False


_PROBE_TRIES = 5  # a directory that goes away under the probe is made again this often
_PROBE_NAME = re.compile(r"\.tltrace-probe-(\d+)")


def _remove_dead_probes(d: Path) -> None:
    """Remove the probe files of runs killed between writing and removing theirs (plain files
    named as tltrace names them, whose process is gone); a live run's probe is left alone."""
    try:
        entries = list(os.scandir(d))
    except OSError:
        return
    for e in entries:
        m = _PROBE_NAME.fullmatch(e.name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.unlink(e.path)
        except (OSError, OverflowError):
            continue  # alive (another user's), or no such pid number: left alone


def check_trace_dir(settings: Settings) -> str | None:
    """Return why the trace directory cannot be written, or None when it can.

    The probe makes the script's directory, writes a file in it and removes the file. It
    removes no directory: the run records its invocation there at its end (even one that
    compiled nothing), and other `tltrace run`s starting at the same moment may be making or
    probing directories there. (It used to remove the ones it had made, the trace dir
    included, and a run whose directory went away under it ran untraced: CI's stop 46.) A
    directory that goes away under it all the same (FileNotFoundError, or the FileExistsError
    of a directory gone between mkdir's two looks) is made again.
    """
    from .format.scripts import unusable

    d = settings.script_dir
    problem = unusable(settings.trace_dir, d)  # a file, a linked script dir: said before any probe
    if problem is not None:
        return f"{problem}; running untraced"
    error: OSError | None = None
    for _ in range(_PROBE_TRIES):
        try:
            d.mkdir(parents=True, exist_ok=True)
            probe = d / f".tltrace-probe-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
            _remove_dead_probes(d)
            return None
        except (FileNotFoundError, FileExistsError) as exc:  # a directory went away under us
            error = exc
        except OSError as exc:
            error = exc
            break
    assert error is not None
    return f"cannot write to trace dir {settings.trace_dir} ({error.strerror or error}); running untraced"


def run_target(
    target: Target,
    settings: Settings,
    emit: Callable[[Event], None] | Sequence[Callable[[Event], None]],
    *,
    trace: bool = True,
    finalize: Callable[[], None] | None = None,
) -> int:
    """Run the target as __main__ with tracing installed; return its exit code.

    `emit`: a listener, or several (each is called in turn, a failing one is said once and
    the others go on; those with a `close()` are finished at the end). The run is one
    invocation (`Lifecycle`): its compiles share `settings.invocation`, and at its end
    `InvocationFinished` is emitted and older invocations are pruned (`settings.keep`); then
    `finalize` runs (not in an os.fork() child, which leaves the summary to its parent).
    SystemExit is honoured; an exception from the script returns 1, Ctrl+C returns 130,
    and what Python would print for them (traceback, exit message) leaves as a
    `ScriptOutput` event. Tracing is removed before returning. This function prints nothing.
    """
    from .tracing import children

    listeners = [emit] if callable(emit) else list(emit)
    life = Lifecycle(settings, listeners).open()
    traced = False  # the trace dir is usable: the set-up started (an empty invocation is recorded)
    if trace:
        children.leave_parent_invocation()  # this process traces on its own, not as a child of a job
        reason = check_trace_dir(settings)
        if reason:
            life(Notice("warning", reason))
        else:
            traced = True
            life.start()  # the one set-up: TileLang set up when the script imports it

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    code = 0
    output: str | None = None
    clear_interrupted()
    signalled = False  # SIGINT, SIGTERM or SIGHUP ended the script
    try:
        # Ctrl+C, SIGTERM and SIGHUP (where their default action is in place) raise in the
        # script, so that its `finally` blocks run and the run is recorded as interrupted;
        # the children tltrace started (proc/group) go down with it.
        with on_signals(mark_interrupted):
            try:
                if target.module:
                    sys.argv = [target.name, *target.args]
                    sys.path.insert(0, os.getcwd())
                    runpy.run_module(target.name, run_name="__main__", alter_sys=True)
                else:
                    script = os.path.abspath(target.name)
                    sys.argv = [target.name, *target.args]
                    sys.path.insert(0, script if os.path.isdir(script) else os.path.dirname(script))
                    runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                code, output = _exit_code(exc)
            except KeyboardInterrupt:
                code, output, signalled = EXIT_INTERRUPTED, "KeyboardInterrupt\n", True
            except Terminated as exc:
                code, output, signalled = exc.exit_code, f"{exc} (tltrace run was terminated)\n", True
            except BaseException as exc:  # the script's own error, or a signal turned into one by TVM
                if interrupted():
                    code, output, signalled = _interrupted_by(interrupting_signal())
                else:
                    code, output = 1, _user_traceback(exc)
    except KeyboardInterrupt:  # a second Ctrl+C, between the script's end and here
        code, output, signalled = EXIT_INTERRUPTED, "KeyboardInterrupt\n", True
    except Terminated as exc:
        code, output, signalled = exc.exit_code, f"{exc} (tltrace run was terminated)\n", True
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        # The one end sequence. A compile from here on (a thread that outlived the script, an
        # atexit handler) is said, not traced (`retire`). An os.fork() child that ran on to the
        # script's end reports nothing: the parent summarises, prunes and writes the index
        # (the child's compiles are on disk already).
        finished = life.end(
            retire=True,
            said=[ScriptOutput(output)] if output else [],
            interrupted=signalled or code == EXIT_INTERRUPTED,
            record_empty=traced,
        )
        if finished and finalize is not None:
            try:
                finalize()
            except Exception as exc:
                life(Notice("warning", f"finishing the trace failed ({type(exc).__name__}: {exc})"))
    return code


def _interrupted_by(signum: int) -> tuple[int, str, bool]:
    """Return the exit status, the message and True for a run a signal ended inside a compile."""
    if signum == signal.SIGINT:
        return EXIT_INTERRUPTED, "KeyboardInterrupt\n", True
    return signal_exit_code(signum), f"{signal.Signals(signum).name} (tltrace run was terminated)\n", True


def _exit_code(exc: SystemExit) -> tuple[int, str | None]:
    """Return the exit status of a SystemExit and the message Python would print for it."""
    code = exc.code
    if code is None:
        return 0, None
    if isinstance(code, int):
        return code, None
    return 1, f"{code}\n"


_HIDDEN = (os.path.abspath(runpy.__file__), os.path.abspath(__file__), "<frozen runpy>")


def _user_traceback(exc: BaseException) -> str:
    """Return the traceback as Python would print it, without tltrace's and runpy's own frames."""
    tb = exc.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in _HIDDEN
        or os.path.abspath(tb.tb_frame.f_code.co_filename) in _HIDDEN
    ):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))
