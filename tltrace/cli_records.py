"""CLI commands that read the .run_records tree: show, diff-runs, clean."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
