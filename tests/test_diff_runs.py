"""diff-runs: alignment by (phase, name, occurrence), first divergence, the CLI and its exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tltrace.format.records import PassRecord, RunManifest
from tltrace.history.compare import INPUT_DIFFERS, ONLY_A, ONLY_B, OUTPUT_DIFFERS, SAME, align, diff_runs

from ._records import read_manifest, recorded_fixture, run_dirs


def rec(index: int, name: str, before: str, after: str, phase: str = "p") -> PassRecord:
    status = "changed" if before != after else "noop"
    return PassRecord(
        index=index, name=name, phase=phase, status=status, before_hash=before, after_hash=after
    )


def manifest(*records: PassRecord) -> RunManifest:
    return RunManifest(run_id="run_x", script="s", records=tuple(records))


# -- the pure core ---------------------------------------------------------------
def test_identical_runs_are_same() -> None:
    a = manifest(rec(0, "A", "h0", "h1"), rec(1, "B", "h1", "h1"))
    d = diff_runs(a, a)
    assert d.same and d.first_difference is None and d.counts[SAME] == 2


def test_alignment_is_by_name_and_occurrence_not_index() -> None:
    a = manifest(rec(0, "S", "h0", "h0"), rec(1, "X", "h0", "h1"), rec(2, "S", "h1", "h2"))
    # B ran an extra pass first: every index shifts, the keys do not.
    b = manifest(
        rec(0, "Extra", "h0", "h0"), rec(1, "S", "h0", "h0"), rec(2, "X", "h0", "h1"), rec(3, "S", "h1", "h2")
    )
    d = diff_runs(a, b)
    assert [(p.label, p.status) for p in d.pairs] == [
        ("p/Extra", ONLY_B),
        ("p/S", SAME),
        ("p/X", SAME),
        ("p/S#2", SAME),
    ]
    assert d.first_output_divergence is None and not d.same


def test_first_output_and_input_divergence() -> None:
    a = manifest(
        rec(0, "A", "h0", "h1"), rec(1, "B", "h1", "h2"), rec(2, "C", "h2", "h3"), rec(3, "D", "h3", "h3")
    )
    b = manifest(
        rec(0, "A", "h0", "h1"), rec(1, "B", "h1", "XX"), rec(2, "C", "XX", "h3"), rec(3, "E", "h3", "h3")
    )
    d = diff_runs(a, b)
    statuses = {p.label: p.status for p in d.pairs}
    assert statuses == {
        "p/A": SAME,
        "p/B": OUTPUT_DIFFERS,
        "p/C": INPUT_DIFFERS,
        "p/D": ONLY_A,
        "p/E": ONLY_B,
    }
    assert d.first_output_divergence.label == "p/B"
    assert d.first_input_divergence.label == "p/C"
    assert d.first_output_change.label == "p/B"
    data = d.to_json()
    assert data["first_output_divergence"]["name"] == "B" and data["counts"][ONLY_A] == 1


def test_only_in_b_placed_after_its_predecessor() -> None:
    a = [rec(0, "A", "1", "1"), rec(1, "C", "1", "1")]
    b = [rec(0, "A", "1", "1"), rec(1, "B", "1", "1"), rec(2, "C", "1", "1"), rec(3, "Z", "1", "1")]
    assert [k[1] for k, _, _ in align(a, b)] == ["A", "B", "C", "Z"]


def test_codegen_compared_per_role() -> None:
    def codegen(index: int, role: str, source: str) -> PassRecord:
        return PassRecord(
            index=index,
            name=f"codegen_{role}",
            phase="codegen",
            status="codegen",
            role=role,
            before_hash="t",
            after_hash=source,
        )

    host = codegen(6, "host", "h")
    d = diff_runs(manifest(codegen(5, "device", "src1"), host), manifest(codegen(5, "device", "src2"), host))
    assert d.codegen == {"device": "differs", "host": SAME}


# -- real runs --------------------------------------------------------------------
traced = recorded_fixture(
    "The recorded traces: elementwise_add block 128, 64, 128 again; gemm once; two_kernels twice.",
    elementwise_add=slice(0, 3),
    gemm=None,
    two_kernels=None,
)


@pytest.fixture
def cli(run_cli, traced: Path):
    def invoke(*args: str):
        return run_cli("diff-runs", "--trace-dir", str(traced), *args)

    return invoke


def test_block_size_change_names_and_shows_the_first_differing_pass(cli) -> None:
    res = cli("elementwise_add:-3", "elementwise_add:-2")
    assert res.exit_code == 1, res.output
    out = res.stdout
    first = re.search(r"first pass whose output differs: (\S+)", out)
    assert first and first.group(1) == "unscoped/pass_fn@PreLowerSemanticCheck"
    assert "the runs started from different IR" in out
    assert re.search(r"^ *-\s+for i in T\.parallel\(128\):$", out, re.M)  # indentation is the printer's
    assert re.search(r"^ *\+\s+for i in T\.parallel\(64\):$", out, re.M)
    assert re.search(r"^codegen device: differs \(\+\d+/-\d+ lines\)$", out, re.M)


def test_a_kernel_change_leads_with_its_effect_in_under_40_lines(cli, traced: Path) -> None:
    """#32 item 6: signature, facts, the passes whose work changed in kind, codegen; -v for every pass."""
    res = cli("elementwise_add:-3", "elementwise_add:-2")
    lines = res.stdout.splitlines()
    passes = len(read_manifest(run_dirs(traced / "elementwise_add")[-3])["records"])
    assert len(lines) < 40 < passes
    heads = [ln.split(":", 1)[0] for ln in lines]
    sig, kinds, cg = heads.index("signature"), heads.index("passes whose work changed in kind"), -1
    cg = next(i for i, ln in enumerate(lines) if ln.startswith("codegen device: differs"))
    assert 1 < sig < heads.index("facts") < kinds < cg
    assert "128" in lines[sig] and "64" in lines[sig]  # the block size, on each side of the arrow
    data = json.loads(cli("elementwise_add:-3", "elementwise_add:-2", "--json").stdout)
    kind = data["changed_in_kind"]
    assert all(p["a_status"] != p["b_status"] or p["status"] != INPUT_DIFFERS for p in kind)
    # the codegen diff is under its line: a changed line of each side
    after = lines[cg + 1 :]
    assert any(ln.lstrip().startswith("-") for ln in after) and any(
        ln.lstrip().startswith("+") for ln in after
    )
    verbose = cli("elementwise_add:-3", "elementwise_add:-2", "-v").stdout
    rows = [ln for ln in verbose.splitlines() if re.match(r"^ *\d+ +\d+ ", ln)]
    assert len(rows) == sum(
        1
        for p in data["passes"]
        if p["status"] != SAME and p["a_index"] is not None and p["b_index"] is not None
    )


def test_block_size_change_json(cli) -> None:
    res = cli("elementwise_add:-3", "elementwise_add:-2", "--json")
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["same"] is False and data["first_input_divergence"]["a_index"] == 0
    assert data["first_output_divergence"] is None  # every pass saw a different input
    assert data["codegen"] == {"device": "differs"}
    assert any(line.startswith("+") and "64" in line for line in data["focus"]["diff"])
    assert {p["status"] for p in data["passes"]} == {INPUT_DIFFERS}


def test_identical_runs_exit_0(cli, traced: Path) -> None:
    res = cli("elementwise_add:-3", "elementwise_add:-1")
    assert res.exit_code == 0, res.output
    passes = len(read_manifest(run_dirs(traced / "elementwise_add")[-1])["records"])
    assert f"same: {passes} passes" in res.stdout


def test_bare_run_specs_with_script(cli) -> None:
    res = cli("-3", "-1", "--script", "elementwise_add", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["same"] is True


def test_two_scripts_align_by_name(cli, traced: Path) -> None:
    # A pass each recorded script ran once, in the same phase, and changed the IR in: read from the manifests.
    def changed_once(script: str) -> set[tuple[str, str]]:
        recs = read_manifest(run_dirs(traced / script)[-1])["records"]
        names = [r["name"] for r in recs]
        return {
            (r["phase"], r["name"]) for r in recs if r["status"] == "changed" and names.count(r["name"]) == 1
        }

    phase, name = min(changed_once("elementwise_add") & changed_once("gemm"))
    res = cli("elementwise_add", "gemm", "--json", "--pass", name)
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["a"]["script"] == "elementwise_add" and data["b"]["script"] == "gemm"
    by_label = {(p["phase"], p["name"], p["occurrence"]): p for p in data["passes"]}
    li = by_label[(phase, name, 1)]
    assert li["a_index"] is not None and li["b_index"] is not None
    assert data["focus"]["name"] == name and data["focus"]["diff"]


def test_pass_option_shows_cross_run_diff(cli) -> None:
    res = cli("elementwise_add:-3", "elementwise_add:-2", "--pass", "codegen_device")
    assert res.exit_code == 1
    assert "codegen/codegen_device: output of A vs output of B" in res.stdout
    assert "--- A codegen/codegen_device output" in res.stdout


def test_html_report(cli, traced: Path, tmp_path: Path) -> None:
    out = tmp_path / "d.html"
    res = cli("elementwise_add:-3", "elementwise_add:-2", "--html", str(out))
    assert res.exit_code == 1 and f"report: {out}" in res.stdout
    page = out.read_text()
    data_block = page.split('id="tltrace-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data_block  # IR text cannot close the tag
    data = json.loads(data_block)
    passes = len(read_manifest(run_dirs(traced / "elementwise_add")[-3])["records"])
    assert data["diffs"][0]["open"] is True and 0 < len(data["diffs"]) < passes
    # Different inputs from the first pass: a diff for each pass that did different work (and the
    # first differences), not for every pass whose input differs.
    by_a = {p["a_index"]: p for p in data["passes"]}
    firsts = {(data[k] or {}).get("a_index") for k in ("first_output_change", "first_input_divergence")}
    for d in data["diffs"]:
        p = by_a[d["a_index"]]
        assert (
            p["a_status"] != p["b_status"]
            or d["a_index"] in firsts
            or p["status"] != "input differs"
            or d["codegen"]
        )
    # "codegen device: differs" has its diff on the page, open (#32 item 6)
    (cg,) = [d for d in data["diffs"] if d["codegen"]]
    assert cg["open"] and any(k == "add" for k, _ in cg["diff"]) and any(k == "del" for k, _ in cg["diff"])
    assert data["a"]["signature"] and data["b"]["signature"]  # the page names them


@pytest.mark.parametrize(
    "args, message",
    [
        (("nope", "-1"), "neither a run"),
        (("-1", "-9", "--script", "elementwise_add"), "does not exist"),
        (("-1", "-2"), "several scripts"),
        (("-1", "-2"), "--script elementwise_add"),  # a diff-runs hint, not a show one
        (("--bogus", "-1"), "no such option"),
    ],
)
def test_trouble_exits_2_with_one_line(cli, args, message) -> None:
    res = cli(*args)
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("tltrace: error: ") and message in res.stderr


def test_damaged_run_exits_2(cli, traced: Path, tmp_path: Path, run_cli) -> None:
    from ._records import copy_tree

    td = copy_tree(traced, tmp_path / "t")
    (run_dirs(td / "elementwise_add")[0] / "manifest.json").write_text('{"schema_version": 1, "run_')
    res = run_cli("diff-runs", "--trace-dir", str(td), "elementwise_add:-3", "elementwise_add:-1")
    assert res.exit_code == 2 and "truncated" in res.stderr and "Traceback" not in res.output


def test_two_invocations_of_two_kernels_pair_their_compiles(cli) -> None:
    res = cli("two_kernels:-2", "two_kernels:-1", "--json")  # each invocation compiled vadd and vmul
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert [c["status"] for c in data["compiles"]] == ["same", "same"]
    assert [c["kernel"] for c in data["compiles"]] == ["vadd", "vmul"]
    assert all(c["a_signature"] == c["b_signature"] and c["paired_by"] == "input" for c in data["compiles"])
    assert data["a"]["invocation"] != data["b"]["invocation"]
    res = cli("two_kernels:-2", "two_kernels:-1")
    assert res.exit_code == 0 and "same: 2 compile(s)" in res.stdout


def test_kernel_option_picks_one_kernels_runs(cli) -> None:
    res = cli("two_kernels:-1", "two_kernels:-1", "--kernel", "vadd")  # one compile each: pass by pass
    assert (
        res.exit_code == 0 and "same:" in res.stdout and "passes, inputs and outputs identical" in res.stdout
    )
    res = cli("two_kernels:-2", "two_kernels:-1", "--kernel", "vmul", "--json")
    data = json.loads(res.stdout)
    assert res.exit_code == 0 and data["a"]["kernel"] == data["b"]["kernel"] == "vmul"
    assert data["compiles"][0]["status"] == "same" and data["a"]["signature"].startswith("vmul")
    res = cli("two_kernels:-1", "two_kernels:-1", "--kernel", "nope")
    assert res.exit_code == 2 and "no run of kernel 'nope'" in res.stderr
