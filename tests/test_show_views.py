"""`tltrace show`'s views (cli/views.py): every flag of the command is declared, two views at once
or a flag the picked view does not use is one line naming both, exit 2, before any record is read;
the pairs that go together print both views. Never exit 0 with a flag ignored.

The flags come from the Typer command's own parameters, so a flag added to `show` without a
declaration fails here. What goes together is written out below, apart from the table it checks.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tltrace.errors import EXIT_USAGE

from ._records import EXAMPLES, read_manifest, recorded_subset, run_dirs

JSON = {"--json", "--format json", "--format table"}
# The decision, view by view (docs/usage.md "show's views"): the flags each view uses, and the
# two pairs of views that combine into one output.
USES = {
    None: JSON,  # the listing, an invocation's compiles, a compile's passes
    "--pass": JSON | {"--context", "--ignore-whitespace"},
    "--source-map": JSON,
    "--line": JSON,
    "--cuda-line": JSON,
    "--ptx-line": JSON,
    "--sass-line": JSON,
    "--remarks": JSON,
    "--sanitizer": JSON,
    "--html": JSON,
    "--facts": JSON,
    "--layouts": JSON | {"--at", "--thread"},
    "--profile": JSON | {"--top"},
    "--count": JSON,
    "--launches": JSON | {"--compare"},
    "--hot": JSON | {"--top"},
    "--format markdown": {"--top", "--baseline"},
}
COMBINED = {("--pass", "--remarks"), ("--pass", "--source-map"), ("--profile", "--format markdown")}
EVERY_VIEW = {"--trace-dir", "--kernel"}
NOWHERE = "/nonexistent/tltrace-views"  # reading it would fail: a conflict must be found first


def _command():
    import typer

    from tltrace.cli.app import app

    return typer.main.get_command(app).commands["show"]  # type: ignore[attr-defined]


def _spellings() -> dict[str, list[str]]:
    """Every way to give each option of `show`, with a value: {'--pass': ['--pass', '2'], ...};
    --format once per value its metavar names."""
    out: dict[str, list[str]] = {}
    for p in _command().params:
        if p.param_type_name != "option":
            continue
        name = next(o for o in p.opts if o.startswith("--"))
        if name == "--format":
            for value in p.metavar.split("|"):
                out[f"--format {value}"] = ["--format", value]
        elif p.is_flag:
            out[name] = [name]
        elif p.nargs == 2:
            out[name] = [name, "C", "0,0"] if name == "--at" else [name, "1", "2"]
        else:
            out[name] = [name, "2"]  # a count, a pass index, a name: each takes "2"
    return out


def _clean_usage(res, *names: str) -> str:
    """Exit 2, one error line on stderr naming every one of `names`, nothing on stdout."""
    words = {"--ignore-whitespace": "--ignore-whitespace (-w)"}
    assert res.exit_code == EXIT_USAGE, (names, res.output)
    assert res.stderr.startswith("tltrace: error: ") and res.stderr.count("\n") == 1, (names, res.stderr)
    assert res.stdout == "" and "Traceback" not in res.stderr
    for n in names:
        assert words.get(n, n) in res.stderr, (names, res.stderr)
    return res.stderr


def test_every_option_is_declared() -> None:
    """A flag of the command the table does not know (or one it declares that the command lacks)."""
    from tltrace.cli import views

    options = {s.split(" ")[0] for s in _spellings()}
    assert options == views.declared()
    assert set(USES) - {None} == set(views.VIEW_FLAGS)  # the test's picture is the whole table
    assert {s for s in _spellings() if s not in USES and s not in EVERY_VIEW} <= set().union(
        *USES.values()
    ) | {b for _, b in COMBINED}


def test_every_view_has_one_printer() -> None:
    from tltrace.cli import show, views

    assert set(show._SHOW) | {"profile", "markdown"} == {v.name for v in views.VIEWS}


def test_every_pair_of_views(run_cli) -> None:
    """Two view flags: a pair the table combines gets past the check (and prints both, below); any
    other is one line naming both, exit 2, before the trace dir is looked at."""
    sp = _spellings()
    flags = [s for s in sp if s in USES]
    assert len(flags) == len(USES) - 1
    for a, b in itertools.combinations(flags, 2):
        if a.startswith("--format") and b.startswith("--format"):
            continue
        args = ["show", "--trace-dir", NOWHERE, "gemm", "-1", *sp[a], *sp[b]]
        res = run_cli(*args)
        if (a, b) in COMBINED or (b, a) in COMBINED:
            assert "exclude" not in res.stderr and "views of show" not in res.stderr, (a, b, res.stderr)
            assert "goes with" not in res.stderr, (a, b, res.stderr)
        else:
            _clean_usage(res, a, b)


def test_every_view_with_every_flag(run_cli) -> None:
    """A flag the view does not use names both (exit 2, records unread); one it uses gets past."""
    sp = _spellings()
    modifiers = [s for s in sp if s not in USES and s not in ("--trace-dir", "--remarks")]
    for view, m in itertools.product(USES, modifiers):
        if view and view.split(" ")[0] == m.split(" ")[0]:
            continue
        res = run_cli("show", "--trace-dir", NOWHERE, "gemm", "-1", *(sp[view] if view else []), *sp[m])
        conflict = res.exit_code == EXIT_USAGE and ("goes with" in res.stderr or "exclude" in res.stderr)
        if m in USES[view] or m in EVERY_VIEW:
            assert not conflict, (view, m, res.stderr)
        else:
            _clean_usage(res, *([view] if view else []), m)


def test_flags_that_exclude_each_other(run_cli) -> None:
    for pair in (["--json", "--format", "table"], ["--json", "--format", "markdown"]):
        _clean_usage(run_cli("show", "--trace-dir", NOWHERE, "gemm", *pair), "--json", " ".join(pair[1:]))
    res = run_cli("show", "--trace-dir", NOWHERE, "gemm", "--layouts", "--at", "C", "0,0", "--thread", "1")
    _clean_usage(res, "--at", "--thread")


def test_the_issue_s_three_commands(run_cli, recorded: Path) -> None:
    """`show gemm -1 --facts --remarks`, `--profile --facts`, `--layouts --remarks` each printed
    one view and exited 0; on real records now each names both flags, exit 2."""
    for a, b in (("--facts", "--remarks"), ("--profile", "--facts"), ("--layouts", "--remarks")):
        _clean_usage(run_cli("show", "--trace-dir", recorded, "gemm", "-1", a, b), a, b)


@pytest.fixture(scope="module")
def markdown_traced(recorded: Path, tmp_path_factory) -> Path:
    return recorded_subset(recorded, tmp_path_factory.mktemp("views") / "traces", gemm=None)


def test_profile_with_markdown_is_the_summary_with_the_profile(run_cli, markdown_traced: Path) -> None:
    """`--profile --format markdown`: the CI summary, whose top passes are the profile's."""
    base = ("show", "--trace-dir", markdown_traced, "gemm", "-1")
    res = run_cli(*base, "--profile", "--format", "markdown", "--top", "4")
    assert res.exit_code == 0, res.output
    run_id = run_dirs(markdown_traced / "gemm")[-1].name
    assert run_id in res.stdout  # the summary's compile table
    top = json.loads(run_cli(*base, "--profile", "--json", "--top", "4").stdout)
    names = [row["name"].replace("_", "\\_") for row in top["rows"]]  # markdown escapes _
    assert len(names) == 4 and all(f"\n| {n}" in res.stdout for n in names), res.stdout


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> Path:
    """One traced elementwise_add with remarks kept and a source map (what recorded traces lack)."""
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    td = tmp_path_factory.mktemp("views-live") / "t"
    res = CliRunner().invoke(
        app,
        ["run", "-q", "--trace-dir", str(td), "--remarks=vectorize", str(EXAMPLES / "elementwise_add.py")],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    return td


def test_pass_with_remarks_prints_the_diff_and_the_remark(run_cli, live: Path) -> None:
    m = read_manifest(run_dirs(live / "elementwise_add")[-1])
    assert isinstance(m["remarks"], dict)  # recorded with --remarks
    said = {p["index"]: p for p in m["remarks"].get("passes") or ()}
    rec = next((r for r in m["records"] if r["index"] in said), None) or next(
        r for r in m["records"] if r["name"] == "LowerTileOp"
    )
    res = run_cli(
        "show", "--trace-dir", live, "elementwise_add", "-1", "--pass", str(rec["index"]), "--remarks"
    )
    assert res.exit_code == 0, res.output
    assert f" {rec['name']}  " in res.stdout.splitlines()[0]  # the pass's line
    if rec["index"] in said:
        assert said[rec["index"]]["text"].splitlines()[0] in res.stdout
    else:
        assert f"(#{rec['index']} {rec['name']} wrote nothing to stderr)" in res.stdout
    if rec["status"] == "changed":
        assert "--- before" in res.stdout
    res = run_cli(
        "show",
        "--trace-dir",
        live,
        "elementwise_add",
        "-1",
        "--pass",
        str(rec["index"]),
        "--remarks",
        "--json",
    )
    data = json.loads(res.stdout)
    assert data["record"]["index"] == rec["index"] and data["remarks"] == said.get(rec["index"])


def test_pass_with_source_map_is_that_pass_s_ir_with_python_lines(run_cli, live: Path) -> None:
    import tltrace

    res = run_cli(
        "show",
        "--trace-dir",
        live,
        "elementwise_add",
        "-1",
        "--pass",
        "LowerTileOp",
        "--source-map",
        "--json",
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    after = tltrace.load(live / "elementwise_add").compiles[-1].pass_("LowerTileOp").after
    assert data["record"]["name"] == "LowerTileOp"
    assert [x["text"] for x in data["lines"]] == after.splitlines()
    script = (EXAMPLES / "elementwise_add.py").read_text().splitlines()
    src = [x["src"] for x in data["lines"] if x["src"]]
    assert src and all(0 < s["line"] <= len(script) for s in src)


def test_usage_md_tells_the_table() -> None:
    """docs/usage.md's table of views: each view's row names the flags the code lets it take."""
    import re

    from tltrace.cli import views

    from ._records import REPO

    doc = (REPO / "docs" / "usage.md").read_text().split("### show's views", 1)[1].split("\n\n", 3)[2]
    rows = [r.split(" | ") for r in doc.splitlines() if r.startswith("| ") and "---" not in r][1:]
    picked = {}
    for _what, by, takes in rows:
        flag = None if by == "no view flag" else re.sub(r" [A-Z]+$", "", by.strip("`"))
        picked[flag] = {"--ignore-whitespace" if t == "-w" else t for t in re.findall(r"--[a-z-]+|-w", takes)}
    assert picked == {
        v.flag: {f for f in v.uses if f in ("--json",) or f not in views.JSON} for v in views.VIEWS
    }
