"""CLI commands of the edit-and-recompile workflow: watch, resolve-conflict."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
