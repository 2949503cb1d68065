"""The capture filter (`--kernels REGEX`, `TLTRACE_KERNELS`): only matching kernels are traced.

TileLang makes one tool per compile session. With a filter, that tool is a
`KernelFilter`: it learns the kernel's name when TileLang first asks it for a pass
instrument (`tilelang.compile`, `@jit` and the autotuner name the kernel there) and
only then makes the tracing tool. A kernel that does not match gets no pass
instrument and no codegen middleware: its compile runs as it would untraced. The
first such kernel of a process is said once. A compile whose kernel is not named
there (a bare `tilelang.lower`) is traced, so that nothing is dropped unsaid; when the name it
turns out to have does not match, a warning says the filter did not apply to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from ..config import Settings
from .events import Event, Notice

_GENERIC = ("lower", "lower-with-context", "lower-to-host-device-ir", "grouped-tvm-ffi")
_said_lock = threading.Lock()
_said: set[str] = set()  # the patterns this process has said its notice for
_skipped: dict[str, list[str]] = {}  # invocation id -> kernels compiled untraced, in order


def skipped(invocation: str) -> tuple[str, ...]:
    """Return the kernels this process compiled untraced in `invocation` because --kernels did not match."""
    with _said_lock:
        return tuple(_skipped.get(invocation, ()))


def kernel_name() -> str | None:
    """Return the name of the kernel the current TileLang compile session compiles, if it is known yet."""
    from tilelang.instrumentation import (  # type: ignore[import-not-found]
        current_compile_pass_instrumentation,
        current_pass_instrument_context,
    )

    for part in (current_pass_instrument_context() or "").split(","):
        key, sep, value = part.strip().partition("=")
        if sep and key.strip() == "kernel" and value.strip():
            return value.strip()
    session = current_compile_pass_instrumentation()
    name = getattr(session, "name", None)
    if isinstance(name, str) and name and name not in _GENERIC and name != "<unknown>":
        return name
    return None


def make_filter_class(base: type) -> type:
    """Return the filtering tool class, a subclass of TileLang's PassInstrumentationTool `base`."""

    class KernelFilter(base):  # type: ignore[misc, valid-type]
        """One per compile session: traces it through `make()`'s tool when its kernel matches."""

        pass_instrument_priority = 1000

        def __init__(
            self, settings: Settings, emit: Callable[[Event], None], make: Callable[[], Any]
        ) -> None:
            self._settings = settings
            self._emit = emit
            self._make = make
            self._inner: Any = None
            self._skip: bool | None = None  # None: not decided yet

        def _decide(self) -> None:
            if self._skip is not None or self._inner is not None:
                return  # decided, or tracing began before the name was known: it goes on
            pattern = self._settings.kernels
            try:
                name = kernel_name()
            except Exception:
                name = None
            if name is None or pattern is None:
                return  # traced until a name says otherwise
            self._skip = pattern.search(name) is None
            if self._skip:
                with _said_lock:
                    first = pattern.pattern not in _said
                    _said.add(pattern.pattern)
                    names = _skipped.setdefault(self._settings.invocation, [])
                    if name not in names:
                        names.append(name)
                if first:
                    try:
                        self._emit(
                            Notice(
                                "info",
                                f"--kernels {pattern.pattern!r}: {name} and every other kernel that does "
                                "not match compile untraced (no pass instrument, nothing recorded)",
                                kernel=name,
                            )
                        )
                    except Exception:
                        pass

        def _tool(self) -> Any:
            if self._skip:
                return None
            if self._inner is None:
                self._inner = self._make()
            return self._inner

        def create_pass_instrument(self) -> object | None:
            self._decide()
            tool = self._tool()
            return tool.create_pass_instrument() if tool is not None else None

        def pipeline_scope(self, base_phase: str) -> Any:
            self._decide()
            tool = self._tool()
            return tool.pipeline_scope(base_phase) if tool is not None else nullcontext()

        def run_codegen(self, event: Any, next_call: Callable[[], Any]) -> Any:
            self._decide()
            tool = self._tool()
            return tool.run_codegen(event, next_call) if tool is not None else next_call()

        def finish(self, error: BaseException | None) -> None:
            if self._inner is not None:
                self._unnamed_traced()
                self._inner.finish(error)

        def _unnamed_traced(self) -> None:
            """A compile TileLang named no kernel for (`tilelang.lower`) was traced before its name was
            known; when the name it turned out to have does not match, say so: the filter did not apply."""
            pattern = self._settings.kernels
            if self._skip is not None or pattern is None:
                return
            try:
                m = self._inner.session.manifest
                launch = m.launch if isinstance(m.launch, dict) else {}
                name = m.kernel or launch.get("function")  # as the signature names it (signature.py)
                if not name or pattern.search(name) is not None:
                    return
                self._emit(
                    Notice(
                        "warning",
                        f"--kernels {pattern.pattern!r} does not match {name}, traced anyway: this compile "
                        "(a tilelang.lower or the compile-only tool) names its kernel only after tracing began",
                        kernel=name,
                    )
                )
            except Exception:
                pass  # a notice never breaks the compile

    return KernelFilter
