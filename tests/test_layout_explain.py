"""Why layout inference failed (layouts/explain.py), on real compile-only CUDA (sm_80) failures.

Three kernels that TileLang 0.1.15 cannot lay out: TileLang #2398 (a (1, 229) fragment, copy in,
T.Parallel scale, copy out), #2399 (T.reduce_sum over a (4, 96) fragment) and a conflict of our
own (a T.Parallel transposing one gemm's accumulator into another's). Traced once each with
`tltrace run`; then what `show --json` says is checked against oracles tltrace did not make:

- the operations' Python lines against the script read with `ast` (the line of each call, of each
  `for ... in T.Parallel(...)`);
- minimality by TileLang itself: the script rewritten with every tile operation but the named
  ones made `pass` still fails in LayoutInference, and with any one of those also made `pass` it
  no longer does, or only says that a fragment was left with no operation to lay it out (lowered in one child process that runs each rewritten script; the pass that
  raised is read off TileLang's own traceback, which passes through the pipeline's
  `LayoutInference()(mod)` call when that pass raised).
"""

from __future__ import annotations

import ast
import json
import textwrap

import pytest

from ._cli import cli_env, cli_proc, py_proc
from ._schema import check

HEAD = """import tilelang
import tilelang.language as T
from tilelang import tvm

"""
TAIL = """

target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
with target:
    tilelang.lower(kernel(), target=target)
"""

KERNELS = {
    # TileLang #2398
    "i2398": """
def kernel(N=229):
    @T.prim_func
    def main(A: T.Tensor((1, N), "float32"), B: T.Tensor((1, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a = T.alloc_fragment((1, N), "float32")
            T.copy(A, a)
            for i, j in T.Parallel(1, N):
                a[i, j] = a[i, j] * 2.0
            T.copy(a, B)

    return main
""",
    # TileLang #2399
    "i2399": """
def kernel(M=4, N=96):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((M, N), "float32")
            s = T.alloc_fragment((M,), "float32")
            T.copy(A, f)
            T.reduce_sum(f, s, dim=1)
            T.copy(s, B)

    return main
""",
    # ours: one gemm's accumulator transposed in a T.Parallel into another gemm's
    "conflict": """
def kernel(M=64, N=64, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            D_l = T.alloc_fragment((N, M), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            T.gemm(A_s, B_s, C_l)
            for i, j in T.Parallel(M, N):
                D_l[j, i] = C_l[i, j]
            T.gemm(A_s, B_s, D_l)
            T.copy(D_l, C)

    return main
""",
    # ours: a T.Parallel that reads C_l[i, j] and writes C_l[j, i]
    "index_order": """
def kernel(M=64, N=64, K=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            C_l = T.alloc_fragment((M, N), "float32")
            m = T.alloc_fragment((M,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_l)
            T.gemm(A_s, B_s, C_l)
            T.reduce_max(C_l, m, dim=1)
            for i, j in T.Parallel(M, N):
                C_l[j, i] = C_l[i, j] - m[j]
            T.copy(m, C)

    return main
""",
}

# What each explanation must name: the tile operations (by TileLang name) of the smallest set.
MINIMAL = {
    "i2398": ["T.copy", "T.Parallel"],
    "i2399": ["T.copy", "T.reduce_sum", "T.copy"],
    "index_order": ["T.Parallel"],
    "conflict": ["T.gemm", "T.Parallel", "T.gemm"],
}


def tile_statements(source: str) -> list[tuple[str, int]]:
    """Return (TileLang name, line) of each tile operation statement of a script, read with `ast`:
    a `T.name(...)` statement, or a `for ... in T.Parallel(...)` loop."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "T":
                out.append((f"T.{f.attr}", node.lineno))
        elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            f = node.iter.func
            if isinstance(f, ast.Attribute) and f.attr == "Parallel":
                out.append(("T.Parallel", node.lineno))
    return sorted(out, key=lambda p: p[1])


def keep_only(source: str, keep: set[int]) -> str:
    """Return the script with every tile operation statement whose line is not in `keep` made `pass`."""
    lines = source.split("\n")
    ops = {ln for _n, ln in tile_statements(source)}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Expr, ast.For)) and node.lineno in ops and node.lineno not in keep:
            lines[node.lineno - 1] = " " * node.col_offset + "pass"
            for k in range(node.lineno, node.end_lineno or node.lineno):
                lines[k] = ""
    return "\n".join(lines)


# Runs each rewritten script (argv: a JSON list of paths); prints, for each, None when it compiled, else
# [whether LayoutInference raised (TileLang's own traceback passes through the pipeline's
# `LayoutInference()(mod)` call then), the error's first line].
LOWER_EACH = textwrap.dedent(
    """
    import json, runpy, sys, traceback
    out = []
    for path in json.loads(sys.argv[1]):
        try:
            runpy.run_path(path, run_name="__main__")
            out.append(None)
        except Exception as exc:
            tb = "".join(traceback.format_exception(exc))
            out.append(["LayoutInference()(mod)" in tb, (str(exc).strip().splitlines() or [""])[0]])
    print(json.dumps(out))
    """
)
# TileLang's words for a fragment that no operation left could lay out: what taking the others out makes.
LEFT_WITHOUT = "can not be inferred correctly"


def _env() -> dict[str, str]:
    env = cli_env(NO_COLOR="1")
    env.pop("TLTRACE_EXPLAIN_TIMEOUT", None)
    return env


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict[str, dict]:
    """Each kernel traced by `tltrace run` (failing), then `show --json` and `show` on its compile."""
    work = tmp_path_factory.mktemp("explain")
    out: dict[str, dict] = {}
    for name, body in KERNELS.items():
        source = HEAD + body.lstrip("\n") + TAIL
        (work / f"{name}.py").write_text(source)
        run = cli_proc("run", f"{name}.py", cwd=work, env=_env(), rc=1, entry_point=True)
        shown = cli_proc("show", name, "-1", "--json", cwd=work, env=_env(), rc=0, entry_point=True)
        text = cli_proc("show", name, "-1", cwd=work, env=_env(), entry_point=True)
        check(json.loads(shown.stdout), "run")  # docs/show.schema.json describes the explanation
        out[name] = {
            "source": source,
            "path": work / f"{name}.py",
            "run_stderr": run.stderr,
            "json": json.loads(shown.stdout),
            "show": text.stdout,
            "work": work,
        }
    return out


@pytest.mark.parametrize("name", list(KERNELS))
def test_the_named_operations_are_the_scripts_own_lines(traced, name) -> None:
    t = traced[name]
    why = t["json"]["layout_explanation"]
    assert why is not None and why["complete"], why
    oracle = tile_statements(t["source"])
    # every operation found has its script line: the ast's statement of that name at that line
    ops = why["ops"]
    assert [(o["name"].replace("T.fill", "T.clear"), o["line"]) for o in ops] == [
        (n, ln) for n, ln in oracle
    ], (ops, oracle)
    named = [ops[i] for i in why["minimal"]]
    assert [o["name"] for o in named] == MINIMAL[name]
    assert why["threads"] == 128
    # the headline names each operation of the smallest set at its line
    for o in named:
        assert f"`{o['name']}` at line {o['line']}" in why["lines"][0]


def test_2399_says_which_operations_cannot_agree(traced) -> None:
    why = traced["i2399"]["json"]["layout_explanation"]
    ops = tile_statements(traced["i2399"]["source"])
    (copy_in, _), (reduce, _), (copy_out, _) = [(ln, n) for n, ln in ops]
    assert why["lines"][0] == (
        f"`T.copy` at line {copy_in}, `T.reduce_sum` at line {reduce} and `T.copy` at line {copy_out} over "
        "`f` (4, 96), `s` (4,) with 128 threads cannot agree on a layout; "
        f"`T.copy` at line {copy_in} alone has one; `T.reduce_sum` at line {reduce} alone leaves `s` without one; "
        f"`T.copy` at line {copy_out} alone has one"
    ), why["lines"]


def test_show_and_run_print_the_first_line(traced) -> None:
    for t in traced.values():
        first = t["json"]["layout_explanation"]["lines"][0]
        assert f"why: {first}" in t["show"], t["show"]
        assert f"] why: {first}" in t["run_stderr"], t["run_stderr"][-1500:]


def test_the_conflicts_two_layouts_are_parsed(traced) -> None:
    t = traced["conflict"]
    conflict = t["json"]["layout_explanation"]["conflict"]
    assert conflict["buffers"] == ["C_l", "D_l"]
    assert len(conflict["layouts"]) == 2
    from tltrace.layouts import model

    for lay in conflict["layouts"]:
        e = dict(lay["entry"], buffer="C_l", dtype="float32", scope="local.fragment")
        e["shape"] = e["input_shape"]
        assert e["input_shape"] == [64, 64]
        g = model.grid(e)
        cells = [x for row in g["thread"][0] for x in row]
        # a (64, 64) fragment over 128 threads, no replication: each thread holds 32 elements
        assert sorted(set(cells)) == list(range(128))
        assert all(cells.count(th) == 32 for th in range(128))
    shown = cli_proc("show", "conflict", "-1", "--layouts", cwd=t["work"], env=_env(), entry_point=True)
    assert "layout conflict between C_l and D_l" in shown.stdout, shown.stdout


def test_the_smallest_set_is_minimal_by_tilelang_itself(traced, tmp_path) -> None:
    """Keeping only the named operations still fails in LayoutInference; leaving out any one of them does not."""
    paths, expect = [], []
    for name, t in traced.items():
        why = t["json"]["layout_explanation"]
        keep = {why["ops"][i]["line"] for i in why["minimal"]}
        variants = [(keep, True)] + [(keep - {ln}, False) for ln in sorted(keep)]
        for k, (lines, fails) in enumerate(variants):
            p = tmp_path / f"{name}_{k}.py"
            p.write_text(keep_only(t["source"], lines))
            paths.append(str(p))
            expect.append((name, sorted(lines), fails))
    res = py_proc("-c", LOWER_EACH, json.dumps(paths), cwd=tmp_path, env=_env(), rc=0, timeout=900)
    got = json.loads(res.stdout.strip().splitlines()[-1])
    for (name, lines, fails), outcome in zip(expect, got):
        in_layout = outcome is not None and outcome[0]
        if (
            fails
        ):  # LayoutInference raises, and not only because a fragment was left with nothing to lay it out
            assert in_layout and LEFT_WITHOUT not in outcome[1], (name, lines, outcome)
        else:  # it passes (a later pass may still refuse what is left: #2398's T.Parallel alone), or says only
            # that a fragment was left with no operation to lay it out (#2399 without its copy in)
            assert not in_layout or LEFT_WITHOUT in outcome[1], (name, lines, outcome)


def test_the_explanation_is_cached_beside_the_run(traced) -> None:
    from tltrace.layouts.explain import CACHE

    run_dir = traced["i2398"]["work"] / traced["i2398"]["json"]["path"]
    cached = json.loads((run_dir / CACHE).read_text())
    assert cached["lines"] == traced["i2398"]["json"]["layout_explanation"]["lines"]


def test_the_report_carries_the_explanation(traced, tmp_path) -> None:
    """The report's header data (its meta chunk, which report-header.js draws in the error box) has its lines."""
    from tltrace.history.report_reads import compile_report
    from tltrace.render.html import write_report
    from tltrace.render.pages import chunk_values

    t = traced["i2399"]
    run_dir = t["work"] / t["json"]["path"]
    page = write_report(compile_report(run_dir), tmp_path / "report.html").read_bytes()
    metas = [c for c in chunk_values(page) if isinstance(c, dict) and c.get("t") == "meta"]
    assert metas and metas[-1]["layout_why"] == t["json"]["layout_explanation"]["lines"]


def test_a_deadline_reached_leaves_the_run_as_it_was(traced) -> None:
    """TLTRACE_EXPLAIN_TIMEOUT=1: the child stops at its deadline; run keeps the script's exit status, says
    there is no explanation, and caches nothing (show computes it again)."""
    t = traced["i2399"]
    env = {**_env(), "TLTRACE_EXPLAIN_TIMEOUT": "1"}
    cli_proc("run", "i2399.py", cwd=t["work"], env=env, rc=1, entry_point=True)
    shown = cli_proc("show", "i2399", "-1", "--json", cwd=t["work"], env=env, entry_point=True)
    why = json.loads(shown.stdout)["layout_explanation"]
    assert why is not None and not why["complete"] and "deadline" in (why["stopped"] or ""), why
    from tltrace.layouts.explain import CACHE

    assert not (t["work"] / json.loads(shown.stdout)["path"] / CACHE).exists()
