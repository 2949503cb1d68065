"""What capture calls in the layers above it, handed down when the tool is installed.

Capture sits below reconcile/ and tracing/ and imports neither. Two things a compile
does belong to them: its codegen reconciles the user's working file (reconcile/, with the
ledger of the compile's invocation), and a compile whose final manifest could not be
written tells its invocation so (tracing/). The tracing layer passes a `CaptureHooks` to
`controller.install`, which hands it to every compile's TraceSession. Without hooks (a plain
TVM PassInstrument, `lower_trace`) a compile writes no working file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..config import Settings


@dataclass(frozen=True)
class CodegenRequest:
    """One codegen call's working-file question: the source TileLang generated, and where it came from."""

    settings: Settings
    kernel: str
    role: str | None
    generated: str
    compiles_source: bool  # an edit can be handed back in place of the build's result
    backend: str | None
    launch: Any  # the launch read from the compile's input IR (signature.launch_info)
    not_compiled: str | None  # why an edit cannot be compiled in, when it cannot


class WorkingFiles(Protocol):
    """The working-file step of a codegen call (reconcile/workflow, as tracing/hooks.py wires it)."""

    def reconcile(self, request: CodegenRequest) -> Any:
        """Return the outcome: compile_text, origin, path, tag, message, diff, diff_names, warnings, notices,
        and unsaid (not None: a journal waits for `settle` once the tag is printed)."""

    def not_compiled(self, settings: Settings, outcome: Any, why: str) -> Any:
        """Return the outcome as NOTE (its edit was not handed back after all), its working file's status too."""

    def settle(self, outcome: Any) -> None:
        """The outcome's tag was said: a kill from here on must not make the next run say it again."""


@dataclass(frozen=True)
class CaptureHooks:
    """The callables a compile's capture calls above it; None: that step is not taken."""

    working_files: WorkingFiles | None = None
    not_finalised: Callable[[Settings, str], None] | None = None  # (settings, run id)


NO_HOOKS = CaptureHooks()
