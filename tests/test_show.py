"""tltrace show: the runs table, one run's passes, one pass's diff, --html, --json; damaged trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tltrace.format.records import PassRecord

from ._records import copy_tree, read_manifest, recorded_fixture, run_dirs, summary

traced = recorded_fixture(
    "The recorded traces: three runs of elementwise_add (block 128, 64, 128) and one of gemm.",
    elementwise_add=slice(0, 3),
    gemm=None,
)


@pytest.fixture
def show(run_cli, traced: Path):
    def invoke(*args: str, trace_dir: Path | None = None):
        return run_cli("show", "--trace-dir", str(trace_dir or traced), *args)

    return invoke


def clean_failure(res, code: int, *needles: str) -> None:
    """One line on stderr, no traceback anywhere."""
    assert res.exit_code == code, res.output
    assert res.stderr.startswith("tltrace: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    for n in needles:
        assert n in res.stderr


def test_list_all_scripts(show) -> None:
    res = show()
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split()[:4] == ["#", "script", "run", "time"]
    assert [ln.split()[:2] for ln in lines[1:]] == [
        ["-3", "elementwise_add"],
        ["-2", "elementwise_add"],
        ["-1", "elementwise_add"],
        ["-1", "gemm"],
    ]
    assert all("complete" in ln and " c " in ln and "cython" in ln for ln in lines[1:])


def test_list_json(show, traced: Path) -> None:
    res = show("elementwise_add", "--json")
    rows = json.loads(res.stdout)["runs"]
    assert [r["position"] for r in rows] == [-3, -2, -1]
    r = rows[0]
    m = read_manifest(run_dirs(traced / "elementwise_add")[0])
    statuses = [x["status"] for x in m["records"]]
    assert r["kernel"] == "add" and r["passes"] == len(statuses) and r["changed"] == statuses.count("changed")
    assert r["failed"] == 0 and r["size"] > 0
    assert Path(r["path"]).parent == traced / "elementwise_add" / ".run_records"


def test_one_run_by_relative_spec(show, traced: Path) -> None:
    res = show("elementwise_add", "-2")
    assert res.exit_code == 0, res.output
    out = res.stdout
    m = json.loads(show("elementwise_add", "-2", "--json").stdout)
    assert "elementwise_add  run_" in out and f"{m['signature'] or m['kernel']}  c/cython" in out
    assert "LayoutInference" in out and "CODEGEN" in out
    assert summary(read_manifest(run_dirs(traced / "elementwise_add")[-2])) in out


def test_script_colon_run_as_diff_runs_takes_it(show, run_cli, traced: Path) -> None:
    """'SCRIPT:RUN' (the diff-runs form) names the same compile in show and export."""
    want = show("elementwise_add", "-2", "--json").stdout
    res = show("elementwise_add:-2", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == json.loads(want)
    third = json.loads(want)["records"][3]["name"]
    res = show("elementwise_add.py:-2", "--pass", "3")
    assert res.exit_code == 0 and third in res.stdout, res.output
    res = show("elementwise_add:-2", "--profile", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["runs"] == [json.loads(want)["run_id"]], res.output
    out = traced.parent / "colon.json"
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add:-2", "--chrome-trace", str(out))
    assert res.exit_code == 0 and json.loads(want)["run_id"] in out.read_text(), res.output


def test_bare_run_spec_needs_one_script(show, traced: Path) -> None:
    clean_failure(show("-1"), 2, "several scripts")
    res = show("-1", trace_dir=traced / "gemm")
    assert res.exit_code == 0 and "gemm" in res.stdout


def test_run_dir_directly(show, traced: Path) -> None:
    run = run_dirs(traced / "gemm")[0]
    res = show(str(run), "--json")
    data = json.loads(res.stdout)
    assert data["run_id"] == run.name and data["kernel"] == read_manifest(run)["kernel"]
    assert data["missing_files"] == 0
    assert len(data["records"]) == len(read_manifest(run)["records"]) > 0
    clean_failure(show(str(run), "latest"), 2, "already a run directory")


def test_pass_diff(show, traced: Path) -> None:
    m = read_manifest(run_dirs(traced / "elementwise_add")[-1])
    lto = next(r for r in m["records"] if r["name"] == "LowerTileOp")
    res = show("elementwise_add", "-1", "--pass", "LowerTileOp")
    assert res.exit_code == 0, res.output
    assert (
        f"{lto['phase']}/{lto['index']:02d} LowerTileOp  CHANGED" in res.stdout
        and "    --- before" in res.stdout
    )
    noop = next(r["index"] for r in m["records"] if r["status"] == "noop")
    res = show("elementwise_add", "--pass", str(noop), "--json")
    data = json.loads(res.stdout)
    assert data["record"]["index"] == noop and data["diff"] == []  # a no-op pass
    clean_failure(show("elementwise_add", "--pass", "NoSuchPass"), 2, "no pass 'NoSuchPass'")


def test_html_rewrites_report(show, traced: Path) -> None:
    from tltrace.render.html import write_report  # noqa: F401  # a broken html.py fails here, never skips

    res = show("gemm", "latest", "--html")
    assert res.exit_code == 0, res.output
    path = Path(res.stdout.strip())
    assert path.is_file() and path.read_text().startswith("<!DOCTYPE html>")


def test_unknown_script_and_empty_dir(show, tmp_path: Path) -> None:
    clean_failure(show("softmax"), 3, "neither a run")
    clean_failure(show(trace_dir=tmp_path / "nothing"), 3, "no run records under", "tltrace run")


# -- damaged trees ---------------------------------------------------------------------
@pytest.fixture
def damaged(traced: Path, tmp_path: Path) -> Path:
    td = copy_tree(traced, tmp_path / "traces")
    first, second, third = run_dirs(td / "elementwise_add")
    (first / "manifest.json").unlink()
    text = (second / "manifest.json").read_text()
    (second / "manifest.json").write_text(text[:100])
    for f in (third / "pipeline_c").glob("*.tir"):
        f.unlink()
    return td


def test_list_damaged_tree_marks_rows_and_warns(show, damaged: Path) -> None:
    res = show("elementwise_add", trace_dir=damaged)
    assert res.exit_code == 0, res.output
    rows = res.stdout.splitlines()[1:]
    assert [("damaged" in r) for r in rows] == [True, True, False]
    warnings = res.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("tltrace: warning: ") for w in warnings)
    assert "has no manifest.json" in warnings[0] and "truncated" in warnings[1]
    assert "Traceback" not in res.output


def test_open_damaged_runs_is_one_line(show, damaged: Path) -> None:
    clean_failure(show("elementwise_add", "-3", trace_dir=damaged), 3, "has no manifest.json", "rm -r")
    clean_failure(show("elementwise_add", "-2", "--pass", "3", trace_dir=damaged), 3, "truncated")


def test_deleted_tir_files(show, damaged: Path) -> None:
    res = show("elementwise_add", "-1", trace_dir=damaged)
    assert res.exit_code == 0 and "record file(s) are missing" in res.stderr
    # The stored object still has the text.
    res = show("elementwise_add", "-1", "--pass", "LowerTileOp", trace_dir=damaged)
    assert res.exit_code == 0 and "+" in res.stdout
    run = run_dirs(damaged / "elementwise_add")[-1]
    manifest = read_manifest(run)
    lto = next(r for r in manifest["records"] if r["name"] == "LowerTileOp")
    (damaged / "elementwise_add" / ".run_records" / ".objects" / lto["after_hash"]).unlink()
    clean_failure(show("elementwise_add", "-1", "--pass", "LowerTileOp", trace_dir=damaged), 3, "is missing")


def test_failed_pass_shows_error_and_ir_before(show, traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "failed")
    run = run_dirs(td / "gemm")[-1]
    manifest = read_manifest(run)
    rec = next(r for r in manifest["records"] if r["name"] == "LowerTileOp")
    rec.update(status="failed", error="RuntimeError: boom")
    for k in ("after_hash", "after_file", "added", "removed"):
        rec.pop(k, None)
    (run / "manifest.json").write_text(json.dumps(manifest))
    res = show("gemm", "--pass", "LowerTileOp", trace_dir=td)
    assert res.exit_code == 0, res.output
    before = (run / PassRecord.from_json(rec).before_file).read_text()
    assert "FAILED" in res.stdout and "error: RuntimeError: boom" in res.stdout
    assert before.splitlines()[-1] in res.stdout and "@I.ir_module" in res.stdout
    data = json.loads(show("gemm", "--pass", "LowerTileOp", "--json", trace_dir=td).stdout)
    assert data["before"] == before


def test_long_kernel_name_does_not_squeeze_the_table(show, traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "long")
    run = run_dirs(td / "gemm")[-1]
    manifest = read_manifest(run)
    manifest["kernel"] = "k" * 300
    (run / "manifest.json").write_text(json.dumps(manifest))
    for args in ((), ("gemm",)):
        res = show(*args, trace_dir=td)
        assert res.exit_code == 0, res.output
        row = next(line for line in res.stdout.splitlines() if run.name in line)
        # Piped: nothing is cut (tests/test_terminal_fit.py checks a terminal's width).
        assert "complete" in row and f" {len(manifest['records'])} " in row


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.update(started="yesterday"),
        lambda m: m.update(kernel=7),
        lambda m: m.update(records=5),
        lambda m: m["records"][3].update(index="x"),
        lambda m: m["records"].__setitem__(4, "not a record"),
    ],
)
def test_mistyped_manifest_is_damaged_not_a_traceback(show, traced: Path, tmp_path: Path, edit) -> None:
    td = copy_tree(traced, tmp_path / "typed")
    run = run_dirs(td / "gemm")[-1]
    manifest = read_manifest(run)
    edit(manifest)
    (run / "manifest.json").write_text(json.dumps(manifest))
    res = show("gemm", trace_dir=td)
    assert res.exit_code == 0 and "damaged" in res.stdout and "Traceback" not in res.output
    clean_failure(show("gemm", "-1", trace_dir=td), 3, "is damaged")


def test_run_records_that_is_a_file(show, run_cli, tmp_path: Path) -> None:
    td = tmp_path / "filerr"
    (td / "foo").mkdir(parents=True)
    (td / "foo" / ".run_records").write_text("")
    for args in ((), ("foo",), (str(td / "foo"),), (str(td / "foo" / ".run_records"),)):
        clean_failure(show(*args, trace_dir=td), 3, ".run_records is not a directory")
    res = run_cli("diff-runs", "--trace-dir", str(td), "-2", "-1")
    assert res.exit_code == 2 and ".run_records is not a directory" in res.stderr


def test_no_runs_left_is_one_line_not_a_bare_header(show, run_cli, traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "cleaned")
    assert run_cli("clean", "--trace-dir", str(td), "--all").exit_code == 0
    clean_failure(show(trace_dir=td), 3, "no runs left")
    clean_failure(show("gemm", trace_dir=td), 3, "no runs left")
    assert json.loads(show("--json", trace_dir=td).stdout) == {"invocations": [], "runs": []}
    clean_failure(show("--kernel", "nope"), 2, "no run of kernel 'nope'")


def test_implausible_pass_times_show_as_a_question_mark(show, traced: Path, tmp_path: Path) -> None:
    """A hand-edited Infinity or 1e300 duration: '?' in its row, not a 300-digit number squeezing the table."""
    td = copy_tree(traced, tmp_path / "traces")
    run = run_dirs(td / "gemm")[-1]
    manifest = read_manifest(run)
    manifest["records"][3]["duration_s"] = float("inf")
    manifest["records"][4]["duration_s"] = 1e300
    (run / "manifest.json").write_text(json.dumps(manifest))
    res = show(str(run), trace_dir=td)
    assert res.exit_code == 0, res.output
    rows = res.stdout.splitlines()
    for rec in manifest["records"][3:5]:
        row = next(line for line in rows if f" {rec['name']} " in line)
        assert row.rstrip().endswith("?"), row
    assert "00000000" not in res.stdout


def test_markdown_and_json_exclude_each_other(show) -> None:
    clean_failure(show("elementwise_add", "--format", "markdown", "--json"), 2, "exclude each other")


def test_pass_of_several_says_where_the_others_are(show, traced: Path) -> None:
    m = read_manifest(run_dirs(traced / "gemm")[-1])
    names = [r["name"] for r in m["records"]]
    name = next(n for n in names if names.count(n) >= 3)
    indexes = [r["index"] for r in m["records"] if r["name"] == name]
    short = name.rsplit(".", 1)[-1].lower()  # the end of a dotted name, any case
    res = show("gemm", "--pass", short)
    assert res.exit_code == 0, res.output
    assert f"/{indexes[0]:02d} {name}" in res.stdout.splitlines()[0]
    assert f"{name} ran {len(indexes)} times; this is the first (#{indexes[0]})" in res.stderr
    others = ", ".join(f"#{i}" for i in indexes[1:7])  # the one numbering: show's #, what --pass takes
    assert f"the others: {others}" in res.stderr
    for ref in (f"{short}#2", f"#{indexes[1]}", str(indexes[1])):
        res = show("gemm", "--pass", ref, "--json")
        assert json.loads(res.stdout)["record"]["index"] == indexes[1] and not res.stderr
