"""What the tracing layer hands capture at install: the working-file step and the not-finalised note.

Capture (session/) cannot import reconcile/ or tracing/, which sit above it; `CAPTURE_HOOKS`
is passed down through `controller.install` (session/hooks.py says what capture asks).
"""

from __future__ import annotations

from typing import Any

from ..session.hooks import CaptureHooks, CodegenRequest
from .invocation import ledger_of, note_not_finalised


class WorkingFiles:
    """One codegen call's reconcile of its working file, with the ledger of the compile's invocation."""

    def reconcile(self, request: CodegenRequest) -> Any:
        from ..reconcile.variant import variant_from_launch
        from ..reconcile.workflow import reconcile_codegen

        return reconcile_codegen(
            request.settings,
            kernel=request.kernel,
            role=request.role,
            generated=request.generated,
            compiles_source=request.compiles_source,
            backend=request.backend,
            variant=variant_from_launch(request.kernel, request.launch),
            ledger=ledger_of(request.settings),
            not_compiled=request.not_compiled,
        )

    def not_compiled(self, settings: Any, outcome: Any, why: str) -> Any:
        from ..reconcile.workflow import not_compiled

        return not_compiled(outcome, why, ledger_of(settings))

    def settle(self, outcome: Any) -> None:
        from ..reconcile.workflow import settle

        settle(outcome)


CAPTURE_HOOKS = CaptureHooks(working_files=WorkingFiles(), not_finalised=note_not_finalised)
