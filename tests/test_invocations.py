"""Invocations in show and diff-runs: listing, addressing (-N, signature prefix, --kernel), pairing, bad input.

The compiles are real TileLang CPU compiles of elementwise_add (block 128 and 64);
their manifests are then grouped into invocations the way the capture engine
writes schema 2 (invocation, signature, input_hash, launch), so these tests do not
depend on how the ids are made.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from ._cli import one_line_error
from ._records import copy_tree, read_manifest, recorded_subset, run_dirs


def _clone(src: Path, records: Path, n: int, **fields) -> Path:
    """Copy run `src` to the n-th new run id under `records`, with manifest fields replaced."""
    dest = records / f"run_20260101_0000{n:02d}_000000Z_1_{n:08x}"  # UTC ids: they give the order
    shutil.copytree(src, dest)
    mpath = dest / "manifest.json"
    data = read_manifest(mpath.parent)
    data["run_id"] = dest.name
    if "input_hash" not in fields:
        fields["input_hash"] = data["records"][0]["before_hash"]
    data.update(fields)
    mpath.write_text(json.dumps(data))
    return dest


@pytest.fixture(scope="module")
def traced(recorded: Path, tmp_path_factory) -> Path:
    """Script 'auto': invocation A (add 128, add 64, sub) and B (add 128, add 64 changed, mul)."""
    td = recorded_subset(recorded, tmp_path_factory.mktemp("inv") / "traces", elementwise_add=slice(0, 2))
    sd = td / "elementwise_add"
    r128, r64 = run_dirs(sd)
    auto = td / "auto"
    (auto / ".run_records").mkdir(parents=True)
    shutil.copytree(sd / ".run_records" / ".objects", auto / ".run_records" / ".objects")
    rec = auto / ".run_records"
    g8 = {"grid": [8, 1, 1], "threads": [128, 1, 1]}
    g16 = {"grid": [16, 1, 1], "threads": [64, 1, 1]}
    _clone(r128, rec, 1, invocation="inv-A", signature="add_g8_t128_aaaa", launch=g8)
    _clone(r64, rec, 2, invocation="inv-A", signature="add_g16_t64_bbbb", launch=g16)
    _clone(
        r128,
        rec,
        3,
        invocation="inv-A",
        signature="sub_g8_t128_cccc",
        launch=g8,
        kernel="sub",
        input_hash="sub-in",
    )
    _clone(r128, rec, 4, invocation="inv-B", signature="add_g8_t128_aaaa", launch=g8)
    # The changed variant: same kernel and launch shape, other input IR (the 128 compile's passes).
    _clone(r128, rec, 5, invocation="inv-B", signature="add_g16_t64_dddd", launch=g16, input_hash="changed")
    _clone(
        r128,
        rec,
        6,
        invocation="inv-B",
        signature="mul_g8_t128_eeee",
        launch=g8,
        kernel="mul",
        input_hash="mul-in",
    )
    shutil.rmtree(sd)
    return td


@pytest.fixture
def cli(run_cli, traced: Path):
    def invoke(*args: str, trace_dir: Path | None = None):
        cmd, *rest = args
        return run_cli(cmd, "--trace-dir", str(trace_dir or traced), *rest)

    return invoke


def test_show_lists_invocations_with_their_compiles(cli) -> None:
    res = cli("show", "auto")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "invocation inv-A: 3 compiles" in out and "invocation inv-B: 3 compiles" in out
    assert (
        out.index("inv-A")
        < out.index("add_g8_t128_aaaa")
        < out.index("inv-B")
        < out.index("mul_g8_t128_eeee")
    )
    data = json.loads(cli("show", "auto", "--json").stdout)
    invs = data["invocations"]
    assert [(i["position"], i["invocation"]) for i in invs] == [(-2, "inv-A"), (-1, "inv-B")]
    assert [c["signature"] for c in invs[0]["compiles"]] == [
        "add_g8_t128_aaaa",
        "add_g16_t64_bbbb",
        "sub_g8_t128_cccc",
    ]
    c = invs[1]["compiles"][0]
    assert c["status"] == "complete" and c["passes"] > 20 and c["failed"] == 0 and c["invocation"] == "inv-B"


def test_minus_n_addresses_invocations(cli) -> None:
    res = cli("show", "auto", "-2", "--json")
    assert res.exit_code == 0, res.output
    inv = json.loads(res.stdout)["invocation"]
    assert inv["invocation"] == "inv-A" and len(inv["compiles"]) == 3
    res = cli("show", "auto", "-1")
    assert res.exit_code == 0 and "add_g16_t64_dddd" in res.stdout and "invocation -1" in res.stdout


def test_signature_prefix_and_kernel_narrow_to_one_compile(cli) -> None:
    res = cli("show", "auto", "-2", "add_g16", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["signature"] == "add_g16_t64_bbbb" and data["invocation"] == "inv-A"
    res = cli("show", "auto", "-1", "--kernel", "mul")
    assert res.exit_code == 0, res.output
    assert "mul_g8_t128_eeee" in res.stdout  # the signature names the compile in the header
    res = cli(
        "show", "auto", "mul_g8", "--pass", "LowerTileOp", "--json"
    )  # a prefix alone: newest invocation
    assert res.exit_code == 0 and json.loads(res.stdout)["signature"] == "mul_g8_t128_eeee"


@pytest.mark.parametrize(
    "args, needle",
    [
        (("auto", "-3"), "invocation -3 does not exist: auto has 2 invocation(s)"),
        (
            ("auto", "-1", "add_g"),
            "signature prefix 'add_g' matches 2 compiles (add_g8_t128_aaaa, add_g16_t64_dddd)",
        ),
        (("auto", "-1", "--pass", "LowerTileOp"), "invocation -1 has 3 compiles"),
        (("auto", "-1", "nope"), "no compile with signature 'nope'"),
        (("auto", "-1", "--kernel", "nope"), "no run of kernel 'nope'"),
    ],
)
def test_bad_addresses_are_one_line_exit_2(cli, args, needle) -> None:
    one_line_error(cli("show", *args), 2, needle)


def test_diff_runs_pairs_the_compiles_of_two_invocations(cli) -> None:
    res = cli("diff-runs", "auto:-2", "auto:-1", "--json")
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    rows = {(c["a_signature"], c["b_signature"]): c for c in data["compiles"]}
    assert {k: c["status"] for k, c in rows.items()} == {
        ("add_g8_t128_aaaa", "add_g8_t128_aaaa"): "same",
        ("add_g16_t64_bbbb", "add_g16_t64_dddd"): "different",
        ("sub_g8_t128_cccc", None): "only_a",
        (None, "mul_g8_t128_eeee"): "only_b",
    }
    changed = rows[("add_g16_t64_bbbb", "add_g16_t64_dddd")]
    assert changed["paired_by"] == "shape" and changed["first_difference"]["status"] == "input differs"
    assert rows[("add_g8_t128_aaaa", "add_g8_t128_aaaa")]["paired_by"] == "input"
    assert all(c["a_run_id"] or c["b_run_id"] for c in data["compiles"])
    assert data["a"]["invocation"] == "inv-A" and data["b"]["invocation"] == "inv-B"
    text = cli("diff-runs", "auto:-2", "auto:-1")
    assert text.exit_code == 1
    assert (
        "add_g16_t64_dddd" in text.stdout
        and "different: 1 same, 1 different, 1 only-a, 1 only-b" in text.stdout
    )


def test_diff_runs_of_an_invocation_with_itself_is_same(cli) -> None:
    res = cli("diff-runs", "auto:-1", "auto:-1", "--json")
    assert res.exit_code == 0, res.output
    assert {c["status"] for c in json.loads(res.stdout)["compiles"]} == {"same"}


def test_diff_runs_narrowed_to_one_compile_each_is_pass_by_pass(cli) -> None:
    res = cli("diff-runs", "auto:-2", "auto:-1", "--kernel", "add", "--json")
    assert res.exit_code == 1  # two compiles of 'add' on each side: paired, one differs
    res = cli("diff-runs", "auto:add_g16_t64_b", "auto:add_g16_t64_d", "--json")
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert data["a"]["signature"] == "add_g16_t64_bbbb" and data["b"]["signature"] == "add_g16_t64_dddd"
    assert data["compiles"][0]["status"] == "different" and "passes" in data
    one_line_error(cli("diff-runs", "auto:-2", "auto:-1", "--pass", "LowerTileOp"), 2, "has 3 compiles")


# -- old and odd manifests ------------------------------------------------------------------------
@pytest.fixture
def odd(traced: Path, tmp_path: Path) -> Path:
    return copy_tree(traced, tmp_path / "odd")


def _edit(run: Path, **fields) -> None:
    mpath = run / "manifest.json"
    data = read_manifest(mpath.parent)
    for k, v in fields.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    mpath.write_text(json.dumps(data))


def test_schema_1_runs_are_invocations_of_their_own(cli, odd: Path) -> None:
    for run in run_dirs(odd / "auto")[:3]:
        _edit(run, schema_version=1, invocation=None, signature=None, launch=None, input_hash=None)
    data = json.loads(cli("show", "auto", "--json", trace_dir=odd).stdout)
    assert [len(i["compiles"]) for i in data["invocations"]] == [1, 1, 1, 3]
    assert data["invocations"][0]["legacy"] and data["invocations"][0]["compiles"][0]["label"] == "add"
    res = cli("show", "auto", "-4", trace_dir=odd)
    assert res.exit_code == 0 and "add" in res.stdout
    res = cli("diff-runs", "auto:-4", "auto:-3", "--json", trace_dir=odd)  # one compile each: as before
    assert res.exit_code == 1 and len(json.loads(res.stdout)["compiles"]) == 1


def test_unknown_schema_is_one_line_exit_3(cli, odd: Path) -> None:
    run = run_dirs(odd / "auto")[-1]
    _edit(run, schema_version=99)
    one_line_error(cli("show", str(run), trace_dir=odd), 3, "schema version 99")
    res = cli("show", "auto", trace_dir=odd)
    assert res.exit_code == 0 and "damaged" in res.stdout


def test_markup_in_names_is_shown_verbatim(cli, odd: Path) -> None:
    run = run_dirs(odd / "auto")[-1]
    data = read_manifest(run)
    data["kernel"] = "[/x]gemm[bf16]"
    data["signature"] = "[bold]sig[/]"
    data["records"][3]["name"] = "Pass[/red]"
    data["records"][3]["phase"] = "[/]phase"
    (run / "manifest.json").write_text(json.dumps(data))
    res = cli("show", "auto", trace_dir=odd)
    assert res.exit_code == 0, res.output
    assert "[bold]sig[/]" in res.stdout
    res = cli("show", str(run), trace_dir=odd)
    assert res.exit_code == 0, res.output
    assert "[bold]sig[/]" in res.stdout and "Pass[/red]" in res.stdout and "[/]phase" in res.stdout
    res = cli("diff-runs", str(run_dirs(odd / "auto")[0]), str(run), "--all", trace_dir=odd)
    assert res.exit_code == 1, res.output
    assert "Pass[/red]" in res.stdout and "[bold]sig[/]" in res.stdout
    res = cli("diff-runs", "auto:-2", "auto:-1", trace_dir=odd)
    assert res.exit_code == 1 and "[bold]sig[/]" in res.stdout


@pytest.mark.parametrize("started", [math.nan, 1e300, -1e13, "NaN-string"])
def test_impossible_start_times_show_as_unknown(cli, odd: Path, started) -> None:
    run = run_dirs(odd / "auto")[-1]
    data = read_manifest(run)
    data["started"] = started
    (run / "manifest.json").write_text(json.dumps(data))  # NaN is written as the bare NaN token
    res = cli("show", "auto", trace_dir=odd)
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    res = cli("show", str(run), trace_dir=odd)
    if isinstance(started, str):
        one_line_error(res, 3, "damaged")
    else:
        assert res.exit_code == 0 and "  ?  " in res.stdout

        def strict(token):
            raise AssertionError(f"not JSON: {token}")

        for args in ((str(run), "--json"), ("auto", "--json")):  # strict JSON: no NaN / Infinity tokens
            json.loads(cli("show", *args, trace_dir=odd).stdout, parse_constant=strict)
        assert cli("show", str(run), "--html", trace_dir=odd).exit_code == 0
        from tltrace.render.html import report_head

        page = (run / "report.html").read_bytes()
        assert (
            page.startswith(report_head()) and b"NaN" not in page[len(report_head()) :]
        )  # the data, not the JS


def test_record_paths_never_leave_the_run_dir(cli, odd: Path, tmp_path: Path) -> None:
    secret = tmp_path / "p" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:SECRET:0:0\n")
    run = run_dirs(odd / "auto")[-1]
    data = read_manifest(run)
    rec = data["records"][5]
    rel = "../" * (len(run.relative_to(tmp_path).parts)) + "p/passwd"
    assert (run / rel).resolve() == secret.resolve()
    rec["before_file"] = rel
    rec["after_file"] = str(secret)  # absolute
    rec["before_hash"] = "../../../../p/passwd"  # not a hash: never a path into .objects
    rec["after_hash"] = "0" * 20
    (run / "manifest.json").write_text(json.dumps(data))
    res = cli("show", str(run), "--pass", str(rec["index"]), trace_dir=odd)
    assert "SECRET" not in res.output
    one_line_error(res, 3, "outside its run directory")
    res = cli("show", str(run), "--html", trace_dir=odd)
    assert res.exit_code == 0, res.output
    from tltrace.render.pages import chunk_bodies

    page = (run / "report.html").read_bytes()
    assert b"SECRET" not in page and not [b for b in chunk_bodies(page) if b"SECRET" in b]  # packed too


def test_command_line_is_shell_quoted(cli, odd: Path) -> None:
    run = run_dirs(odd / "auto")[-1]
    _edit(run, command=["tltrace", "run", "my script.py", "--name", "a'b"])
    res = cli("show", str(run), trace_dir=odd)
    assert """$ tltrace run 'my script.py' --name 'a'"'"'b'""" in res.stdout
    assert (
        json.loads(cli("show", str(run), "--json", trace_dir=odd).stdout)["command_line"]
        == """tltrace run 'my script.py' --name 'a'"'"'b'"""
    )


def test_run_dir_with_pass_needs_no_run_argument(cli, traced: Path) -> None:
    run = run_dirs(traced / "auto")[0]
    res = cli("show", str(run), "--pass", "LowerTileOp", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["record"]["name"] == "LowerTileOp"


def test_html_rebuild_reads_the_stored_objects_once_tir_files_are_gone(cli, odd: Path) -> None:
    run = run_dirs(odd / "auto")[0]
    for f in run.rglob("*.tir"):
        f.unlink()
    res = cli("show", str(run), "--html", trace_dir=odd)
    assert res.exit_code == 0, res.output
    from tltrace.render.pages import chunk_values

    chunks = chunk_values((run / "report.html").read_bytes())  # packed ones inflated by zlib
    assert sum(1 for c in chunks if c and c.get("t") == "text") > 10  # the IR texts came from .objects


def test_html_of_an_invocation_rebuilds_its_index(cli, odd: Path) -> None:
    from tltrace.render.html import index_rows

    res = cli("show", "auto", "-1", "--html", "--json", trace_dir=odd)
    assert res.exit_code == 0, res.output
    out = Path(json.loads(res.stdout)["report"])
    assert out == odd / "auto" / "report.html"
    assert [r["signature"] for r in index_rows(out)] == [
        "add_g8_t128_aaaa",
        "add_g16_t64_dddd",
        "mul_g8_t128_eeee",
    ]
    res = cli(
        "show", "auto", "-2", "--html", "--json", trace_dir=odd
    )  # an older one: beside its first compile
    older = Path(json.loads(res.stdout)["report"])
    assert older.parent == run_dirs(odd / "auto")[0] and len(index_rows(older)) == 3
    assert len(index_rows(out)) == 3 and index_rows(out)[0]["signature"] == "add_g8_t128_aaaa"
