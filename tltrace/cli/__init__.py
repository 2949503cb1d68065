"""cli: the only package that prints and exits.

app.py holds the Typer app, `main` and `tltrace run`; show.py, diffruns.py, clean.py: `show`, `diff-runs` and
`clean`; edit.py `watch` and `resolve-conflict`; profile.py and export.py `show --profile`
and `export`; shared.py the one `fail` and the shared options; _manpage.py the man page.
"""

from .app import app, main

__all__ = ["app", "main"]
