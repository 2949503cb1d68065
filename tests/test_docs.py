"""The commands the docs show exist: README.md, docs/*.md, CONTRIBUTING.md and every `--help` epilog.

Every `tltrace ...` line in a fenced code block and every example in a command's
epilog is parsed against the real Click command tree that Typer builds (unknown
command, unknown option, missing or bad value: the test fails and names the line).
Inline `tltrace ...` spans and option tables are checked for command and option
names. Nothing is run. watchfiles and sqlite-utils test their docs in the same way.
"""

from __future__ import annotations

import importlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer._click import exceptions as cx

REPO = Path(__file__).resolve().parent.parent
DOCS = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")])

# Options the docs mention that belong to another program, with whose they are.
FOREIGN_OPTIONS = {"--no-deps": "pip"}

RUN_POSITION = re.compile(r"-\d+|-N")  # `show gemm.py -2`: a run position, not an option


def _entry_point() -> Any:
    """The function pyproject's `tltrace` console script names (so the test follows the CLI if it moves)."""
    text = (REPO / "pyproject.toml").read_text()
    m = re.search(r'^\[project\.scripts\]\s*\ntltrace\s*=\s*"([\w.]+):(\w+)"', text, re.M)
    assert m, "pyproject.toml declares no tltrace console script"
    return getattr(importlib.import_module(m.group(1)), m.group(2))


def _root() -> Any:
    main = _entry_point()
    apps = [v for v in main.__globals__.values() if isinstance(v, typer.Typer)]
    assert len(apps) == 1, f"expected one Typer app beside {main.__qualname__}, found {len(apps)}"
    return typer.main.get_command(apps[0])


ROOT = _root()


@dataclass(frozen=True)
class Example:
    where: str  # file:line or `tltrace CMD --help`
    text: str
    full: bool  # a whole command line (parsed), or an inline span / synopsis (names only)

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _options(cmd: Any) -> dict[str, int]:
    """Each option spelling of `cmd` (help included) -> how many values it takes (--at BUF I,J: 2)."""
    table = {name: 0 for name in ROOT.context_settings.get("help_option_names", ["--help"])}
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "option":
            for o in (*p.opts, *p.secondary_opts):
                table[o] = 0 if (p.is_flag or p.count) else max(1, p.nargs)
    return table


def _ctx(cmd: Any) -> Any:
    return cmd.context_class(cmd, info_name=cmd.name)


def _all_options() -> set[str]:
    names = set(_options(ROOT))
    for cmd in ROOT.commands.values():
        names |= set(_options(cmd))
    return names


def _commands_in(line: str) -> list[list[str]]:
    """The tltrace invocations in one shell line (split at &&, ||, ;, |), as token lists after `tltrace`."""
    out = []
    for part in re.split(r"&&|\|\||;|\|", line):
        try:
            tokens = shlex.split(part, comments=True)
        except ValueError:
            tokens = part.split()
        while tokens and (tokens[0] == "$" or "=" in tokens[0] and not tokens[0].startswith("-")):
            tokens = tokens[1:]  # a prompt, or VAR=value before the command
        if tokens[:1] == ["tltrace"]:
            out.append(tokens[1:])
        elif tokens[:3] in (["python", "-m", "tltrace"], ["python3", "-m", "tltrace"]):
            out.append(tokens[3:])
    return out


def _doc_examples() -> list[Example]:
    found = []
    for path in DOCS:
        if not path.exists():
            continue
        fence = None
        for n, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(REPO)}:{n}"
            stripped = line.strip()
            if stripped.startswith("```"):
                fence = None if fence is not None else stripped[3:].strip()
                continue
            if fence is not None:
                output = stripped.startswith("tltrace:")  # an error line tltrace printed
                if fence in ("", "bash", "sh", "console", "shell") and not output and _commands_in(stripped):
                    found.append(Example(where, stripped, True))
                continue
            for span in re.findall(r"`([^`]+)`", line.replace("\\|", "|")):
                if _commands_in(span) or (span.startswith("-") and stripped.startswith("|")):
                    found.append(Example(where, span, False))
    return found


def _epilog_examples() -> list[Example]:
    found = []
    for name, cmd in ROOT.commands.items():
        for line in (cmd.epilog or "").splitlines():
            cmdline = re.split(r"\s{2,}", line.strip())[0]  # drop the description column
            if _commands_in(cmdline):
                found.append(Example(f"tltrace {name} --help", cmdline, True))
    return found


def _check(ex: Example) -> None:
    """Fail with the example's place when it names a missing command or option, or does not parse."""
    for tokens in _commands_in(ex.text) or [ex.text.split()]:
        if not ex.full:
            tokens = [
                t for t in (x.strip("[]") for x in tokens) if t and t != "..." and not t.endswith("...")
            ]
        _check_tokens(ex, tokens)


def _check_tokens(ex: Example, tokens: list[str]) -> None:
    if tokens and tokens[0].startswith("-"):
        name = tokens[0].split("=", 1)[0]
        if ex.full and name not in _options(ROOT):
            pytest.fail(f"{ex}: 'tltrace' has no option {name!r}")
        if name not in _all_options() and name not in FOREIGN_OPTIONS:  # an inline span or table row
            pytest.fail(f"{ex}: no tltrace command has the option {name!r}")
        return
    if not tokens:
        return
    cmd = ROOT.commands.get(tokens[0])
    if cmd is None:
        pytest.fail(f"{ex}: no such command {tokens[0]!r} (commands: {', '.join(ROOT.commands)})")
    table = _options(cmd)
    passthrough = (
        cmd.context_settings.get("allow_interspersed_args") is False
    )  # run, watch: script args follow
    rest = tokens[1:]
    leading: list[str] = []  # tltrace's own options, moved before the positionals as tltrace parses them
    positional: list[str] = []
    i = 0
    while i < len(rest):
        tok = rest[i]
        if tok == "--":
            positional += rest[i:]
            break
        if tok.startswith("-") and tok != "-" and not RUN_POSITION.fullmatch(tok):
            name = tok.split("=", 1)[0]
            if name not in table:
                if passthrough and positional:  # the script's own option
                    positional += rest[i:]
                    break
                pytest.fail(f"{ex}: 'tltrace {cmd.name}' has no option {name!r}")
            takes = table[name] if "=" not in tok else 0
            leading += rest[i : i + 1 + takes]
            i += 1 + takes
            continue
        if passthrough and positional:  # the script's arguments start
            positional += rest[i:]
            break
        positional.append(tok)
        i += 1
    if not ex.full or any(t in ("-h", "--help") for t in leading):
        return
    try:
        cmd.make_context(cmd.name, [*leading, *positional], parent=_ctx(ROOT), resilient_parsing=False)
    except cx.ClickException as exc:
        pytest.fail(f"{ex}: does not parse: {exc.format_message()}")


DOC_EXAMPLES = _doc_examples()
EPILOG_EXAMPLES = _epilog_examples()


def test_docs_and_epilogs_show_examples() -> None:
    """The extraction finds what is there (a broken extractor would check nothing)."""
    assert len([e for e in DOC_EXAMPLES if e.full]) >= 10
    assert {e.where.split(" ")[1] for e in EPILOG_EXAMPLES} == set(ROOT.commands), (
        "every command's --help ends with examples"
    )


@pytest.mark.parametrize("example", DOC_EXAMPLES, ids=lambda e: e.where)
def test_doc_command_exists(example: Example) -> None:
    _check(example)


@pytest.mark.parametrize("example", EPILOG_EXAMPLES, ids=lambda e: e.where)
def test_help_example_parses(example: Example) -> None:
    _check(example)


@pytest.mark.parametrize(
    "bad",
    [
        "tltrace runn gemm.py",
        "tltrace run --mdoe both gemm.py",
        "tltrace show gemm.py --passs LayoutInference",
        "tltrace clean --keep",
        "tltrace clean --keep many",
        "tltrace diff-runs -2 -1 --scrip gemm.py",
        "tltrace --verison",
    ],
)
def test_checker_catches(bad: str) -> None:
    """The checker itself fails on a missing command, a misspelt option and a bad value."""
    with pytest.raises(pytest.fail.Exception):
        _check(Example("test", bad, True))


def test_a_relative_run_is_an_invocation_in_every_help() -> None:
    """RUN -N counts invocations (docs/runs.md): an example with one never calls it a run."""
    said = []
    for name, cmd in ROOT.commands.items():
        for line in (cmd.epilog or "").splitlines():
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            if len(parts) == 2 and re.search(r"(^|\s)-\d+(\s|$)", parts[0]):
                said.append((name, parts[1]))
    assert said  # the extraction finds the examples (show, repro)
    back = [(n, d) for n, d in said if re.search(r"\b(before|back|previous|earlier|older)\b", d)]
    assert back  # the examples that go back (show -2, repro -2)
    wrong = [(n, d) for n, d in back if "invocation" not in d]
    assert not wrong, f"-N is an invocation, not a run: {wrong}"
