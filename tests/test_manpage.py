"""man/tltrace.1 is generated from the CLI; this fails when it is stale (TLTRACE_REGEN=1 rewrites it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import typer.main

from tltrace.cli import _manpage
from tltrace.cli.app import app

MAN = Path(__file__).resolve().parent.parent / "man" / "tltrace.1"


def test_man_page_is_current() -> None:
    text = _manpage.generate()
    if os.environ.get("TLTRACE_REGEN"):
        MAN.parent.mkdir(exist_ok=True)
        MAN.write_text(text)
    assert MAN.is_file(), "man/tltrace.1 is missing; run: TLTRACE_REGEN=1 pytest tests/test_manpage.py"
    assert MAN.read_text() == text, (
        "man/tltrace.1 is stale; run: TLTRACE_REGEN=1 pytest tests/test_manpage.py"
    )


def commands() -> dict:
    return typer.main.get_command(app).commands


def test_every_command_option_and_example_is_in_the_page() -> None:
    text = _manpage.generate()
    for name, cmd in commands().items():
        assert f".SS tltrace {_manpage.esc(name)}" in text
        for p in cmd.params:
            if getattr(p, "hidden", False):
                continue
            for opt in getattr(p, "opts", []):
                if opt.startswith("-"):
                    assert _manpage.esc(opt) in text, (name, opt)
    for section in (
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "COMMANDS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
        "SHELL COMPLETION",
    ):
        assert f".SH {section}" in text
    for code in ("0", "1", "2", "3", "4"):
        assert f".TP\n\\fB{code}\\fR" in text
    assert "TL_LOWER_TRACE_DIR" in text and "\\-\\-install\\-completion" in text


def test_roff_is_safe() -> None:
    text = _manpage.generate()
    body = [ln for ln in text.splitlines() if not ln.startswith((".", "'"))]
    assert all(not re.match(r"^[.']", ln) for ln in body)
    assert "\b" not in text


@pytest.mark.parametrize("name", sorted(commands()))
def test_help_has_examples(run_cli, name: str) -> None:
    res = run_cli(name, "--help")
    assert res.exit_code == 0
    assert "Examples:" in res.stdout and f"tltrace {name}" in res.stdout


def test_the_python_api_section_names_every_public_name() -> None:
    """Every name `import tltrace` offers (its __all__) has an entry, and so does %%tltrace (#32)."""
    import inspect

    import tltrace

    text = _manpage.generate()
    section = text.split(".SH PYTHON API", 1)[1].split(".SH ", 1)[0]
    calls = [call for call, _ in _manpage.PYTHON_API]
    for name in tltrace.__all__:
        if name == "__version__":
            continue
        entry = next((c for c in calls if c.split("(")[0] == name), None)
        assert entry is not None, name
        assert _manpage.esc(entry) in section
        params = [p for p in inspect.signature(getattr(tltrace, name)).parameters if p != "self"]
        shown = entry.split("(", 1)[1].rstrip(")")
        for p in params[:2]:  # the leading arguments are spelled as the function names them
            assert p in shown, (name, p)
    assert "%%tltrace" in section and "\\-\\-trace\\-dir" in section
