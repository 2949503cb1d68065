"""tltrace check: the FileCheck matcher on the recorded corpus' texts, the --expect grammar, the command's exits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import tltrace
from tltrace.check import expect, filecheck
from tltrace.errors import UsageError


@pytest.fixture(scope="module")
def texts(recorded: Path) -> list[tuple[str, str]]:
    """Every distinct recorded text of the corpus: (pass reference, after-text), codegen sources included."""
    seen: dict[str, str] = {}
    for c in tltrace.load(recorded).compiles:
        for p in c.passes:
            if p.after is not None and p.after.strip():
                seen.setdefault(p.after, f"{c.label}/{p.ref}")
    out = [(name, text) for text, name in seen.items()]
    assert any("codegen_device" in n for n, _ in out) and len(out) > 20
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    """Return (1-based number, stripped line) of the lines worth a directive: not blank, unique in the text."""
    raw = text.split("\n")
    counts: dict[str, int] = {}
    for ln in raw:
        counts[ln.strip()] = counts.get(ln.strip(), 0) + 1
    return [(i + 1, ln.strip()) for i, ln in enumerate(raw) if ln.strip() and counts[ln.strip()] == 1]


def _safe(line: str) -> str:
    """Return a line as a FileCheck pattern: literal, with {{ and [[ (pattern syntax) matched by regex."""
    return re.sub(r"\{\{|\[\[", lambda m: "{{" + re.escape(m.group(0)) + "}}", line)


def test_every_recorded_text_matches_its_own_lines_in_order_and_next(texts) -> None:
    for name, text in texts:
        lines = _lines(text)
        checks = [f"CHECK: {_safe(ln)}" for _, ln in lines]
        assert filecheck.check(text, checks).ok, name
        # Adjacent unique lines: CHECK-NEXT holds exactly when they are neighbours in the text.
        for (n1, a), (n2, b) in zip(lines, lines[1:]):
            r = filecheck.check(text, [f"CHECK: {_safe(a)}", f"CHECK-NEXT: {_safe(b)}"])
            assert r.ok == (n2 == n1 + 1), (name, a, b)
            if not r.ok:
                assert r.failure is not None and r.failure.line == n2
                assert "not on the line after" in r.failure.message
            break  # one pair a text: the corpus has hundreds of texts


def test_out_of_order_fails_at_the_line_scanning_started(texts) -> None:
    for name, text in texts:
        lines = _lines(text)
        if len(lines) < 2:
            continue
        a, (n2, b) = lines[0][1], lines[-1]
        r = filecheck.check(text, [f"CHECK: {_safe(b)}", f"CHECK: {_safe(a)}"])
        assert not r.ok and r.failure is not None and r.failure.directive.number == 2, name
        assert r.failure.line >= n2  # scanning starts after the first match, on its line or the next
        explained = r.explain(text, name)
        assert explained[0] == f"CHECK: {_safe(a)}"
        assert any(line.startswith(">") for line in explained)  # the failure point, marked


def test_not_count_dag_and_same_on_the_corpus(texts) -> None:
    for name, text in texts:
        lines = _lines(text)
        if len(lines) < 3:
            continue
        (n1, a), (n2, b), (n3, c) = lines[0], lines[len(lines) // 2], lines[-1]
        # A line present between two matches: CHECK-NOT finds it, at its own line.
        r = filecheck.check(text, [f"CHECK: {_safe(a)}", f"CHECK-NOT: {_safe(b)}", f"CHECK: {_safe(c)}"])
        if n1 < n2 < n3:
            assert not r.ok and r.failure is not None and r.failure.line == n2, name
            assert r.failure.message.startswith("CHECK-NOT")
        # ... but not when it is the next positive match itself (LLVM's range ends where that match starts).
        r = filecheck.check(text, [f"CHECK: {_safe(a)}", f"CHECK-NOT: {_safe(c)}", f"CHECK: {_safe(c)}"])
        assert r.ok, name
        # DAG: any order.
        assert filecheck.check(text, [f"CHECK-DAG: {_safe(c)}", f"CHECK-DAG: {_safe(a)}"]).ok, name
        # COUNT: the number of times a word occurs, and not once more.
        word = next((w for w in re.findall(r"[A-Za-z_]\w{3,}", text)), None)
        if word is not None:
            n = len(re.findall(re.escape(word), text))
            assert filecheck.check(text, [f"CHECK-COUNT-{n}: {word}"]).ok, name
            r = filecheck.check(text, [f"CHECK-COUNT-{n + 1}: {word}"])
            assert not r.ok and "match " in r.failure.message, name  # type: ignore[union-attr]
        # SAME: the end of a line after its start.
        if len(a) > 4:
            half = len(a) // 2
            assert filecheck.check(text, [f"CHECK: {_safe(a[:half])}", f"CHECK-SAME: {_safe(a[half:])}"]).ok


def test_absent_string_passes_not_and_fails_check_with_a_hint() -> None:
    text = "int32_t gemm_kernel(float* A, float* B, float* C) {\n  float A_shared[512];\n}\n"
    assert filecheck.check(text, "CHECK-NOT: cp_async").ok
    r = filecheck.check(text, "CHECK: int32_t  gemm_kernel(float* A, float *B")
    assert not r.ok and r.failure is not None and r.failure.near == 1
    out = "\n".join(r.explain(text, "codegen_device"))
    assert "codegen_device:1:1: CHECK: expected string not found" in out
    assert "codegen_device:1: possible intended match here" not in out  # the scan point is that line
    # Whitespace: any run matches any run; leading and trailing spaces are ignored.
    assert filecheck.check(text, "CHECK:    float   A_shared[512];   ").ok


def test_regex_variables_empty_label_and_same_line_next() -> None:
    text = "def f(x):\n  y = f_impl(x)\n\n  return y\n"
    assert filecheck.check(text, ["CHECK: def [[F:[a-z]+]](", "CHECK: [[F]]_impl({{[a-z]}})"]).ok
    assert not filecheck.check(text, ["CHECK: def [[F:[a-z]+]](", "CHECK: [[F]]_other"]).ok
    assert filecheck.check(text, ["CHECK: f_impl(x)", "CHECK-EMPTY:", "CHECK-NEXT: return y"]).ok
    assert not filecheck.check(text, ["CHECK: def f", "CHECK-EMPTY:"]).ok
    r = filecheck.check(text, ["CHECK: def", "CHECK-NEXT: f(x)"])
    assert not r.ok and "same line" in r.failure.message  # type: ignore[union-attr]
    assert filecheck.check(text, ["CHECK-LABEL: def f", "CHECK: return"]).ok
    # No match crosses a line end, even a regex that could.
    assert not filecheck.check(text, "CHECK: {{x\\):\\s+y}}").ok
    # A directive after a comment marker, and lines without one, as in a check file.
    assert filecheck.check(text, "// CHECK: def f\nnot a directive\n# CHECK-NEXT: y =").ok


@pytest.mark.parametrize(
    "checks, needle",
    [
        ("CHECK-NOPE: x", "unknown directive CHECK-NOPE"),
        ("no directive here", "no CHECK directive"),
        ("CHECK-NEXT: x", "cannot be the first"),
        ("CHECK: {{(}}", "bad regex"),
        ("CHECK: [[X]]", "no earlier directive defined"),
        ("CHECK-COUNT-0: x", "the count must be"),
        ("CHECK:", "empty pattern"),
    ],
)
def test_directives_that_do_not_parse(checks: str, needle: str) -> None:
    with pytest.raises(UsageError, match=re.escape(needle)):
        filecheck.check("text", checks)


FACTS = {"wgmma": 1, "tma_load": 0, "warp_specialized": True, "spill_bytes": None, "arch": "sm_90a"}


@pytest.mark.parametrize(
    "text, ok",
    [
        ("wgmma >= 1", True),
        ("wgmma > 1", False),
        ("tma_load == 0 and wgmma != 0", True),
        ("tma_load == 0 and wgmma == 0", False),
        ("warp_specialized == true", True),
        ("warp_specialized >= 1", True),
        ("wgmma == false", False),
        ("arch == 'sm_90a'", True),
        ('arch != "sm_80"', True),
        ("arch == sm_90a", True),
        ("spill_bytes == 0", False),
        ("spill_bytes == none", True),
        ("wgmma <= 0x10", True),
        # Both sides facts, or a literal on the left (#48).
        ("wgmma <= tma_load", False),
        ("tma_load < wgmma", True),
        ("wgmma == warp_specialized", True),  # a flag counts as 1
        ("1 <= wgmma", True),
        ("0x10 < wgmma", False),
        ("arch == arch", True),
        ("'sm_90a' == arch", True),
        ("sm_80 != arch", True),
        # A fact that is none fails its term whatever the other side, != included; only none asks about it.
        ("spill_bytes <= wgmma", False),
        ("wgmma >= spill_bytes", False),
        ("spill_bytes != 3", False),
        ("none == spill_bytes", True),
        ("wgmma != none", True),
        ("wgmma == none", False),
    ],
)
def test_expectations(text: str, ok: bool) -> None:
    held, why = expect.parse(text).evaluate(FACTS)
    assert held is ok, why
    if not ok:
        assert " is " in why  # names the actual value


@pytest.mark.parametrize(
    "text, needle",
    [
        ("wgmma", "incomplete"),
        ("wgmma >= ", "incomplete"),
        ("wgmma => 1", "unexpected '='"),
        ("wgmma >= <= 1", "expected a value"),
        ("wgmma = 1", "unexpected '='"),
        (">= wgmma and", "expected a fact or a value before '>='"),
        pytest.param("wgmma == " + "9" * 5000, "an integer of 5,000 digits; at most 40", id="huge-int"),
        pytest.param(
            "arch == '" + "x" * 5000 + "'", "a text of 5,000 characters; at most 4,096", id="huge-text"
        ),
        pytest.param("arch == " + "x" * 5000, "a word of 5,000 characters", id="huge-word"),
        pytest.param("wgmma >= 1 and " * 800 + "wgmma >= 1", "is over 10,000 characters", id="huge-expr"),
        ("wgmma >= 1 or tma_load == 0", "expected 'and'"),
        ("__import__('os') == 1", "unexpected '('"),
        ("", "empty"),
    ],
)
def test_expressions_that_do_not_parse(text: str, needle: str) -> None:
    with pytest.raises(expect.ExpressionError, match=re.escape(needle)) as info:
        expect.parse(text)
    assert len(str(info.value)) < 400  # the expression quoted in the line is cut, whatever its length


@pytest.mark.parametrize(
    "text, needle",
    [
        ("wgmmaa >= 1", "unknown fact 'wgmmaa'"),
        ("arch < 3", "compare it with a quoted text"),
        ("wgmma == 'x'", "a number or flag"),
        ("arch > 'a'", "== and != only"),
        ("wgmma < arch", "are not both numbers or both texts"),
        ("wgmma < none", "none compares with == and != only"),
        ("1 == 2", "compares no fact"),
        ("wgmmma >= 1", "unknown fact 'wgmmma' in --expect 'wgmmma >= 1' (did you mean 'wgmma'?)"),
        ("wgmma <= tma_lod", "unknown fact 'tma_lod'"),
        ("arch == tma_lod", "(did you mean 'tma_load'?)"),  # a bare word like a fact is a typo, not a text
    ],
)
def test_expressions_of_the_wrong_kind(text: str, needle: str) -> None:
    with pytest.raises(expect.ExpressionError, match=re.escape(needle)):
        expect.parse(text).evaluate(FACTS)


# -- the command, on the recorded traces ------------------------------------------------------------


@pytest.fixture
def check(run_cli, recorded: Path):
    def invoke(*args: str):
        return run_cli("check", "--trace-dir", str(recorded), *args)

    return invoke


def _device_text(recorded: Path, script: str = "gemm") -> str:
    return tltrace.load(recorded / script).compiles[-1].pass_("codegen_device").after


def test_match_passes_and_fails_with_the_lines_around(check, recorded: Path) -> None:
    text = _device_text(recorded)
    lines = _lines(text)
    first, second = next((a, b) for (n1, a), (n2, b) in zip(lines, lines[1:]) if n2 == n1 + 1)
    res = check(
        "gemm", "--match", "codegen_device", f"CHECK: {first}", f"CHECK-NEXT: {second}", "CHECK-NOT: cp_async"
    )
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("ok    --match codegen_device") and "all 1 checks passed" in res.stdout
    # The first line again after the second: not there; the report shows where scanning started.
    res = check("gemm", "--match", "codegen_device", f"CHECK: {second}", f"CHECK: {first}")
    assert res.exit_code == 1, res.output
    assert "FAIL  --match codegen_device" in res.stdout and "expected string not found" in res.stdout
    assert re.search(r"^\s+> +\d+ \| ", res.stdout, re.M)  # the marked line and its neighbours
    assert "1 of 1 checks failed" in res.stdout


def test_several_matches_each_with_their_directives(check, recorded: Path) -> None:
    records = tltrace.load(recorded / "gemm").compiles[-1].manifest.records
    first_pass = records[0].name
    res = check(
        "gemm", "--json", "--match", "codegen_device", "CHECK: gemm_kernel", "--match", first_pass, "CHECK: T.",
        "CHECK-NOT: no such thing",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    checks = data["compiles"][0]["checks"]
    assert [c["stage"] for c in checks] == ["codegen_device", first_pass]
    assert checks[1]["check"] == f"{first_pass}: CHECK: T. | CHECK-NOT: no such thing"


def test_a_matched_pass_is_named_by_the_number_pass_takes(check, run_cli, recorded: Path) -> None:
    """`check --match Simplify#2` printed `Simplify#2: ...` (an occurrence, not show's `#`); now the pass
    reads `#N NAME`, in an ok line and in a failure's `NAME:line:col`, and `--pass N` (or '#N') shows
    that same pass. Oracle: the manifest's records, read as JSON."""
    from ._records import read_manifest, run_dirs

    records = read_manifest(run_dirs(recorded / "gemm")[-1])["records"]
    names = [r["name"] for r in records]
    name = next(n for n in names if names.count(n) > 1)
    second = [r for r in records if r["name"] == name][1]
    ok = check("gemm", "--match", f"{name}#2", "CHECK: T.")
    assert ok.exit_code == 0, ok.output
    bad = check("gemm", "--match", f"{name}#2", "CHECK: no such text anywhere")
    assert bad.exit_code == 1, bad.output
    for out, pattern in (
        (ok.stdout, r"\(#(\d+) (\S+): 1 directive matched\)"),
        (bad.stdout, r"^\s+#(\d+) (\S+):\d+:\d+: "),
    ):
        m = re.search(pattern, out, re.M)
        assert m is not None, out
        assert (int(m.group(1)), m.group(2)) == (second["index"], name)
        for ref in (m.group(1), "#" + m.group(1)):
            shown = run_cli("show", "--trace-dir", str(recorded), "gemm", "--pass", ref, "--json")
            assert shown.exit_code == 0, shown.output
            assert json.loads(shown.stdout)["record"]["index"] == second["index"]


def test_every_compile_of_an_invocation_is_checked(check) -> None:
    res = check("two_kernels", "--json", "--match", "codegen_device", "CHECK: vadd")
    assert res.exit_code == 1, res.output
    data = json.loads(res.stdout)
    assert [c["ok"] for c in data["compiles"]] == [True, False]  # vmul's source has no vadd
    assert data["failed"] == 1


@pytest.mark.parametrize(
    "args, code, needle",
    [
        (("gemm",), 2, "nothing to check"),
        (("gemm", "CHECK: x"), 2, "comes before any --match"),
        (("gemm", "--match", "codegen_device"), 2, "has no directive after it"),
        (("gemm", "--match", "codegen_device", "CHECK-NOPE: x"), 2, "unknown directive"),
        (("gemm", "--match", "NoSuchPass", "CHECK: x"), 7, "no pass named 'NoSuchPass'"),
        (("gemm", "--match", "LowerTileOpp", "CHECK: x"), 7, "(did you mean 'LowerTileOp'?)"),
        (("gemm", "--expect", "wgmmma >= 1"), 2, "(did you mean 'wgmma'?)"),
        (("gemm", "--kernel", "nosuch", "--expect", "wgmma >= 0"), 7, "nothing to check: no run of kernel"),
        (
            ("gemm", "-1", "nosuch", "--expect", "wgmma >= 0"),
            7,
            "nothing to check: no compile with signature",
        ),
        pytest.param(
            ("gemm", "--expect", "wgmma == " + "9" * 5000), 2, "an integer of 5,000 digits", id="huge-int"
        ),
        (("gemm", "--expect", "wgmma =>"), 2, "--expect 'wgmma =>'"),
        (("gemm", "--bogus"), 2, "no such option"),
        (("nosuch", "--match", "codegen_device", "CHECK: x"), 3, "nosuch"),
    ],
)
def test_bad_usage_is_one_line(check, args, code: int, needle: str) -> None:
    res = check(*args)
    assert res.exit_code == code, res.output
    assert res.stderr.startswith("tltrace: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert needle in res.stderr and "Traceback" not in res.output


def test_a_failed_compile_fails_a_match_on_a_stage_it_never_reached(check) -> None:
    res = check("fails", "--match", "codegen_device", "CHECK: x")
    assert res.exit_code == 1, res.output  # a check that fails, not a usage error: the compile failed
    assert "no pass 'codegen_device' in this compile: it did not complete (error)" in res.stdout


def test_expect_on_the_recorded_facts(check, recorded: Path) -> None:
    from tltrace.facts import facts_of

    c = tltrace.load(recorded / "gemm").compiles[-1]
    facts = facts_of(c._run)
    name, value = next(
        (n, v) for n, v in facts.items() if isinstance(v, int) and not isinstance(v, bool) and v
    )
    res = check(
        "gemm", "--expect", f"{name} == {value}", "--expect", f"{name} >= {value} and {name} < {value + 1}"
    )
    assert res.exit_code == 0, res.output
    assert f"({name} = {value})" in res.stdout
    res = check("gemm", "--expect", f"{name} != {value}")
    assert res.exit_code == 1 and f"{name} is {value}" in res.stdout, res.output
    assert c.facts == facts  # Compile.facts: the same reader
    c.expect(f"{name} == {value}")
    with pytest.raises(AssertionError, match=f"{name} is {value}"):
        c.expect(f"{name} > {value}")


def test_an_unknown_fact_is_refused_before_any_run_is_read(check) -> None:
    res = check("no_such_script", "--expect", "wgmmma >= 1")
    assert res.exit_code == 2 and "unknown fact 'wgmmma'" in res.stderr, res.output


def test_a_machine_fact_not_measured_says_how(check, recorded: Path) -> None:
    res = check("gemm", "--expect", "spill_bytes == 0")
    assert res.exit_code == 1, res.output
    assert "not known for this compile" in res.stdout and "tltrace run --ptxas" in res.stdout


def test_run_and_signature_select_as_show_does(check) -> None:
    res = check("two_kernels", "-1", "vmul", "--json", "--match=codegen_device", "CHECK: vmul")
    assert res.exit_code == 0, res.output
    assert [c["signature"].split()[0] for c in json.loads(res.stdout)["compiles"]] == ["vmul"]
    res = check("two_kernels:-2", "--kernel", "vadd", "--match", "codegen_device", "CHECK: vadd")
    assert res.exit_code == 0 and "all 1 checks passed" in res.stdout, res.output
    res = check("two_kernels", "--match", "CHECK: vadd")
    assert res.exit_code == 2 and "--match needs a STAGE" in res.stderr, res.output


def test_a_pass_that_failed_has_no_text_to_match(check, recorded: Path) -> None:
    c = tltrace.load(recorded / "fails").compiles[-1]
    failed = next(p for p in c.passes if p.status == "failed")
    res = check("fails", "--match", str(failed.index), "CHECK: x")
    assert res.exit_code == 1, res.output
    assert "produced no text (the pass failed)" in res.stdout


# -- nothing passes vacuously (#48) ----------------------------------------------------------------


def test_an_invocation_that_compiled_nothing_is_nothing_to_check(run_cli) -> None:
    Path("nothing.py").write_text("print('no kernel here')\n")  # run_cli's cwd
    assert run_cli("run", "-q", "nothing.py", "--trace-dir", "traces").exit_code == 0
    for extra in ((), ("--json",)):
        res = run_cli("check", "--trace-dir", "traces", "nothing", "--expect", "wgmma >= 1", *extra)
        assert res.exit_code == 7, res.output
        assert res.stdout == "" and "all 0 checks passed" not in res.output
        assert res.stderr.startswith("tltrace: error: nothing to check: invocation -1 of nothing traced no")
        assert res.stderr.count("\n") == 1


def _rename_pass(script_dir: Path, run_id: str, old: str, new: str) -> None:
    path = script_dir / ".run_records" / run_id / "manifest.json"
    data = json.loads(path.read_text())
    for rec in data["records"]:
        if rec["name"] == old:
            rec["name"] = new
    path.write_text(json.dumps(data))


def test_a_stage_some_compiles_lack_fails_there_and_one_all_lack_is_nothing_to_check(
    check, recorded: Path, tmp_path: Path
) -> None:
    from ._records import copy_tree

    traces = copy_tree(recorded, tmp_path / "traces")
    inv = tltrace.load(traces / "two_kernels").invocations[-1]
    first, second = inv.compiles
    _rename_pass(traces / "two_kernels", first.run_id, "codegen_device", "OnlyInTheFirst")
    res = check(
        "--trace-dir", str(traces), "two_kernels", "--json", "--match", "OnlyInTheFirst", "CHECK: {{.}}"
    )
    assert res.exit_code == 1, res.output  # the second compile has no such stage: its check fails
    data = json.loads(res.stdout)
    assert [c["ok"] for c in data["compiles"]] == [True, False]
    assert (
        f"no pass named 'OnlyInTheFirst' in run {second.run_id}"
        in data["compiles"][1]["checks"][0]["message"]
    )
    res = check("--trace-dir", str(traces), "two_kernels", "--match", "OnlyInTheSecond", "CHECK: x")
    assert res.exit_code == 7 and "nor in the other compile" in res.stderr, res.output


def test_the_api_says_what_is_not_there(recorded: Path) -> None:
    from tltrace.errors import NothingToCheck

    c = tltrace.load(recorded / "gemm").compiles[-1]
    with pytest.raises(
        NothingToCheck, match=re.escape("no pass named 'LowerTileOpp'") + ".*did you mean 'LowerTileOp'"
    ):
        c.check("LowerTileOpp", "CHECK-NOT: anything")
    with pytest.raises(expect.ExpressionError, match=re.escape("did you mean 'wgmma'")):
        c.expect("wgmmma >= 1")
    c.expect("smem_dynamic <= smem_dynamic and 0 <= smem_dynamic")


# -- hostile input (#49) ----------------------------------------------------------------------------


CATASTROPHIC = "CHECK: {{(.*)*(.*)*(.*)*QQQ}}"


def test_a_regex_that_backtracks_without_end_is_stopped(check) -> None:
    res = check("gemm", "--match-timeout", "1", "--match", "codegen_device", CATASTROPHIC)
    assert res.exit_code == 2, res.output
    assert "ran over 1 s and were stopped" in res.stderr and res.stderr.count("\n") == 1


def test_the_bounded_match_answers_as_the_matcher_does(recorded: Path) -> None:
    """A regex match runs in a child: the same Result, the same syntax error, as in-process."""
    from tltrace.check import checks as checking

    text = _device_text(recorded)
    for checks in (["CHECK: {{gemm_[a-z]+}}", "CHECK-NOT: {{cp_async}}"], ["CHECK: {{no_such_[a-z]+}}"]):
        ds = filecheck.parse(checks)
        assert filecheck.has_regex(ds)
        assert checking.match_bounded(text, ds, 60) == filecheck.match(text, ds)
    ds = filecheck.parse(["CHECK: {{[a-z]+}}", "CHECK: [[M]]"])
    with pytest.raises(UsageError, match=re.escape("uses [[M]], which no earlier directive defined")):
        checking.match_bounded(text, ds, 60)


def _craft_fact(script_dir: Path, name: str, value: object) -> None:
    """Store a fact value in the newest compile's manifest, as a crafted or runaway trace might hold it."""
    path = sorted((script_dir / ".run_records").glob("run_*/manifest.json"))[-1]
    data = json.loads(path.read_text())
    data["facts"] = {"version": 1, "values": {name: value}, "texts": {}}
    path.write_text(json.dumps(data))


def test_a_huge_text_fact_is_cut_in_error_lines_and_tables(run_cli, recorded: Path, tmp_path: Path) -> None:
    from ._records import copy_tree

    traces = copy_tree(recorded, tmp_path / "traces")
    huge = "x" * 1_000_000
    _craft_fact(traces / "gemm", "arch", huge)
    res = run_cli("check", "--trace-dir", str(traces), "gemm", "--expect", "arch < 3")
    assert res.exit_code == 2 and len(res.stderr) < 500, res.stderr[:300]
    assert "(1,000,000 characters)" in res.stderr
    res = run_cli("check", "--trace-dir", str(traces), "gemm", "--expect", "arch == 'sm_90a'")
    assert res.exit_code == 1 and len(res.stdout) < 1000 and "(1,000,000 characters)" in res.stdout
    res = run_cli("show", "--trace-dir", str(traces), "gemm", "-1", "--facts")
    assert res.exit_code == 0, res.output
    assert max(len(line) for line in res.stdout.splitlines()) < 300
    assert "--json prints them whole" in res.stdout
    res = run_cli("show", "--trace-dir", str(traces), "gemm", "-1", "--facts", "--json")
    assert json.loads(res.stdout)["compiles"][0]["values"]["arch"] == huge


def test_a_huge_line_is_cut_around_the_failure_point() -> None:
    """A recorded text with a megabyte line: the lines around a failure stay short, the carets under the match."""
    line = "x" * 500_000 + " cp_async " + "y" * 500_000
    text = f"a\n{line}\nb\n"
    r = filecheck.check(text, ["CHECK: a", "CHECK-NOT: cp_async", "CHECK: b"])
    assert not r.ok and r.failure is not None and r.failure.line == 2
    out = r.explain(text, "codegen_device")
    assert max(len(ln) for ln in out) < 600
    marked = next(i for i, ln in enumerate(out) if ln.startswith(">"))
    bar = out[marked].index("| ") + 2
    carets = out[marked + 1]
    start = carets.index("^")
    assert out[marked][start : start + len("cp_async")] == "cp_async"
    assert carets[start:].strip() == "^" * len("cp_async")
    assert start >= bar and "(1,000,010 characters)" in out[marked]
