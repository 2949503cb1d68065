"""One device codegen call through the working files, as session/codegen_call.py makes it (C backend)."""

from __future__ import annotations

from typing import Any

from tltrace.reconcile.workflow import reconcile_codegen


def codegen(settings: Any, generated: str, variant: Any = None, ledger: Any = None, kernel: str = "k") -> Any:
    """Reconcile `generated` for `kernel`'s device code; return the outcome."""
    return reconcile_codegen(
        settings,
        kernel=kernel,
        role="device",
        generated=generated,
        compiles_source=True,
        backend="cython",
        variant=variant,
        ledger=ledger,
    )
