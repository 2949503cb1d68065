"""The README stays a first read, and every number the docs quote that tltrace defines is read from the code.

A default (`--keep`'s 20), a cap (a worker count, a bundle member's size), a schema
version or an exit code written in README.md or docs/*.md is checked here against the
constant that sets it, so changing one without the other fails. Measured numbers
(docs/benchmarks.md, step times) are not quoted from code and are not checked.
Links between the docs are checked too: a page or heading that moved fails here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import tomllib

from tltrace import config, errors
from tltrace.cli import bisect as bisect_cli
from tltrace.cli import profile as profile_cli
from tltrace.format import records
from tltrace.render import fold
from tltrace.rerun import archive
from tltrace.session import controller, worker

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PAGES = [README, REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
README_MAX_LINES = 150


def _text(name: str) -> str:
    """The doc's text with every run of whitespace one space, so a quote may wrap."""
    return " ".join((REPO / name).read_text().split())


def _setting_default(name: str) -> object:
    return next(f.default for f in dataclasses.fields(config.Settings) if f.name == name)


def _js_constant(asset: str, name: str) -> int:
    text = (REPO / "tltrace" / "render" / "assets" / asset).read_text()
    m = re.search(rf"\b{name} = (\d+);", text)
    assert m, f"{asset} no longer defines {name}"
    return int(m.group(1))


MIB = archive.MIB
# (doc, a pattern whose groups are the quoted numbers, the values the code defines)
QUOTES = [
    (
        "docs/usage.md",
        r"`--keep N` \| keep the newest N invocations .*? \(default (\d+);",
        [config.DEFAULT_KEEP],
    ),
    ("docs/runs.md", r"`tltrace run --keep N` \(default (\d+)\)", [config.DEFAULT_KEEP]),
    (
        "docs/api.md",
        r"\| `context` \| `--context N` \| (\d+) diff context lines",
        [_setting_default("context")],
    ),
    ("docs/api.md", r"\| `keep` \| `--keep N` \| (\d+) invocations kept per script", [config.DEFAULT_KEEP]),
    (
        "docs/api.md",
        r"`TLTRACE_QUEUE`, else (\d+) pass callbacks .*? \((\d+) or more\)",
        [config.QUEUE_DEFAULT, config.QUEUE_MIN],
    ),
    (
        "docs/api.md",
        r"`TLTRACE_WORKERS`, else (\d+): .*? never more than (\d+)",
        [config.WORKERS_DEFAULT, worker.WORKER_CAP],
    ),
    ("docs/api.md", r"`TLTRACE_EXIT_WAIT`, else (\d+):", [int(config.EXIT_WAIT_DEFAULT)]),
    (
        "docs/usage.md",
        r"`--context N` \| context lines in diffs \(default (\d+)\)",
        [_setting_default("context")],
    ),
    (
        "docs/usage.md",
        r"at most (\d+), then threads share them; at nice \+(\d+)",
        [worker.WORKER_CAP, worker.NICE],
    ),
    ("docs/usage.md", r"at most (\d+) pass callbacks per worker", [worker.MAX_JOBS]),
    ("docs/usage.md", r"every field \(schema (\d+)\)", [records.SCHEMA_VERSION]),
    ("docs/runs.md", r"schema (\d+) writes every field", [records.SCHEMA_VERSION]),
    ("docs/architecture.md", r"schema (\d+) \(what tltrace write", [records.SCHEMA_VERSION]),
    (
        "docs/usage.md",
        r"a line longer than (\d+) rows \((\d+) for a changed line\)",
        [fold.ROWS, fold.CHANGED_ROWS],
    ),
    ("docs/profile.md", r"`--top N` \(default (\d+)\) limits", [profile_cli.DEFAULT_TOP]),
    ("docs/profile.md", r"slowest passes \(`--top N`, default (\d+)\)", [profile_cli.MARKDOWN_TOP]),
    ("docs/rerun.md", r"at most ([\d,]+) members", [archive.MAX_MEMBERS]),
    (
        "docs/rerun.md",
        r"`bundle.json` (\d+) MiB, `manifest.json` (\d+) MiB, `context.json` (\d+) MiB, "
        r"`frontend.json` (\d+) MiB, a text (\d+) MiB; (\d+) GiB in all; a compression ratio over (\d+):1",
        [
            *(archive.MEMBER_CAPS[k] // MIB for k in ("bundle.json", "manifest.json", "context.json")),
            archive.MEMBER_CAPS["frontend.json"] // MIB,
            archive.MEMBER_CAPS["text"] // MIB,
            archive.MAX_TOTAL_BYTES // (1024 * MIB),
            archive.MAX_RATIO,
        ],
    ),
    (
        "docs/usage.md",
        r"reloads itself every (\d+) seconds",
        [_js_constant("report-state.js", "REFRESH_MS") // 1000],
    ),
    (
        "docs/usage.md",
        r"`--trace-dir DIR` \| where traces go; default `TL_LOWER_TRACE_DIR`, else `(\S+)`",
        [config.DEFAULT_TRACE_DIR],
    ),
    ("README.md", r"Everything lands under `(\S+)/<script>/`", [config.DEFAULT_TRACE_DIR]),
    ("README.md", r"a TileLang before (\d+\.\d+\.\d+) \(no seam\)", [controller.MIN_TILELANG]),
    ("README.md", r"every TileLang from (\d+\.\d+\.\d+) to below", [controller.MIN_TILELANG]),
]


@pytest.mark.parametrize("doc,pattern,values", QUOTES, ids=[f"{q[0]}:{q[1][:30]}" for q in QUOTES])
def test_quoted_number_is_the_codes(doc: str, pattern: str, values: list[object]) -> None:
    m = re.search(pattern, _text(doc))
    assert m, f"{doc} no longer quotes /{pattern}/: update the doc or this test"
    quoted = [g.replace(",", "") for g in m.groups()]
    assert quoted == [str(v) for v in values], f"{doc} says {quoted}, the code says {values}"


def test_readme_tilelang_range_is_pyprojects() -> None:
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "tilelang"
    ]
    assert extra == [f"tilelang>={controller.MIN_TILELANG},<0.2"]
    assert "to below 0.2" in _text("README.md")


def _exit_table(text: str) -> dict[int, str]:
    section = text.split("## Exit status", 1)[1].split("\n## ", 1)[0]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.+) \|$", section, re.M)}


def test_every_exit_code_is_in_the_readme_and_the_manual() -> None:
    """The README's table, errors.py's docstring (the man page's source) and the code's constants agree."""
    readme = _exit_table(README.read_text())
    manual = {int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+\S", errors.__doc__ or "", re.M)}
    defined = {v for k, v in vars(errors).items() if k.startswith("EXIT_")} | {
        bisect_cli.EXIT_NOT_WRONG,
        bisect_cli.EXIT_FLAKY,
    }
    assert set(readme) == manual == defined, (sorted(readme), sorted(manual), sorted(defined))
    assert "bisect" in readme[bisect_cli.EXIT_NOT_WRONG] and "Ctrl+C" in readme[errors.EXIT_INTERRUPTED]


def test_readme_is_a_first_read() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, over {README_MAX_LINES}: move the reference to docs/usage.md"
    )


def test_readme_names_every_command() -> None:
    """Each command `tltrace --help` lists has its line in the README's table."""
    from tests.test_docs import ROOT

    text = README.read_text()
    missing = [name for name in ROOT.commands if f"| `tltrace {name}" not in text]
    assert not missing, f"README.md's command table lacks {missing}"


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors for a Markdown page."""
    out = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def _links() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if not re.match(r"[a-z]+:", target):
                found.append((page, target))
    return found


@pytest.mark.parametrize("page,target", _links(), ids=lambda x: x.name if isinstance(x, Path) else x)
def test_relative_link_resolves(page: Path, target: str) -> None:
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    assert dest.exists(), f"{page.relative_to(REPO)} links to {target}, which is not there"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{page.relative_to(REPO)} links to {target}: no such heading"
