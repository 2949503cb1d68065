"""tltrace bisect: the pure window search, the skip set's variable, and one real bisection on the CPU."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.bisect.search import RIGHT, UNTESTABLE, WRONG, WindowSearch
from tltrace.bisect.skipping import SkipPlan
from tltrace.bisect.steps import top_passes
from tltrace.format.records import PassRecord, RunManifest

from ._cli import cli_env

REPO = Path(__file__).resolve().parent.parent


def _simulate(k: int, culprit: int | None, required: set[int], proven: bool) -> tuple[WindowSearch, int]:
    s = WindowSearch(k, proven=proven)
    steps = 0
    while (w := s.next()) is not None:
        steps += 1
        assert steps < 4 * k + 8, "the search does not end"
        if required & set(w):
            s.record(w, UNTESTABLE)
        else:
            s.record(w, RIGHT if culprit in w else WRONG)
    return s, steps


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 17, 47])
def test_every_culprit_is_found_in_log2_steps_when_every_step_compiles(k: int) -> None:
    import math

    for c in range(k):
        s, steps = _simulate(k, c, set(), proven=True)
        assert s.found() == c
        assert steps <= math.ceil(math.log2(k)) if k > 1 else steps == 0


def test_required_passes_are_searched_around() -> None:
    for c in (0, 5, 9, 16):
        s, _ = _simulate(17, c, {1, 4, 10, 15}, proven=False)
        assert s.found() == c
        assert s.required <= {1, 4, 10, 15}


def test_interacting_skips_are_searched_around() -> None:
    """Each candidate can be skipped alone, but some pairs cannot be skipped together (as on the gemm)."""
    import math

    pairs = [{2, 5}, {7, 9}, {0, 12}]
    for c in range(13):
        s = WindowSearch(13, proven=False)
        steps = 0
        while (w := s.next()) is not None:
            steps += 1
            assert steps < 60
            if any(p <= set(w) for p in pairs):
                s.record(w, UNTESTABLE)
            else:
                s.record(w, RIGHT if c in w else WRONG)
        assert s.found() == c, (c, s.suspects)
        assert not s.required, "a pass that compiles alone was called required"
        assert steps <= 3 * math.ceil(math.log2(13)) + 2


def test_a_bug_in_a_required_pass_is_not_blamed_on_another() -> None:
    s, _ = _simulate(12, 4, {4, 7}, proven=False)
    assert s.found() is None
    assert 4 in s.suspects and set(s.suspects) <= s.required == {4, 7}


def test_a_bug_outside_the_candidates_leaves_no_suspect() -> None:
    s, _ = _simulate(9, None, set(), proven=False)
    assert s.found() is None and s.suspects == []
    s, _ = _simulate(9, None, {2}, proven=False)  # only the required one is left: unskippable
    assert s.found() is None and s.suspects == [2] and s.required == {2}


def test_the_skip_set_variable_round_trips_and_refuses_junk() -> None:
    plan = SkipPlan.of([5, 3, 3], "^gemm")
    assert SkipPlan.from_env(plan.to_env()) == SkipPlan(frozenset({3, 5}), "^gemm")
    plan = SkipPlan.of([], None, {"tl.disable_vectorize_256": True, "tirx.noalias": False})
    back = SkipPlan.from_env(plan.to_env())
    assert back == plan and dict(back.configs) == {"tl.disable_vectorize_256": True, "tirx.noalias": False}
    for bad in (
        '{"v": 2, "skip": []}',
        '{"v": 1, "skip": ["x"]}',
        '{"v": 1, "skip": [], "kernels": "("}',
        '{"v": 1, "skip": [], "configs": ["tl.x"]}',
        '{"v": 1, "skip": [], "configs": {"tl.x": "yes"}}',
        "[]",
    ):
        with pytest.raises(ValueError):
            SkipPlan.from_env(bad)


@pytest.mark.parametrize("n", [1, 2, 5, 9, 16])
def test_ddmin_finds_a_one_minimal_set(n: int) -> None:
    from itertools import combinations

    from tltrace.bisect.ddmin import ddmin

    items = [f"c{i}" for i in range(n)]
    for size in (1, 2, 3):
        for wanted in list(combinations(items, size))[:12]:
            calls: list[tuple[str, ...]] = []

            def test(
                s: tuple[str, ...], wanted: tuple[str, ...] = wanted, calls: list[tuple[str, ...]] = calls
            ) -> bool:
                calls.append(s)
                return set(wanted) <= set(s)

            got = ddmin(items, test)
            assert set(got) == set(wanted)
            assert len(calls) == len(set(calls)), "a subset was tested twice"
    # an "or": either of two configs alone is enough; the answer is one of them
    assert ddmin(items, lambda s: "c0" in s or f"c{n - 1}" in s) in (("c0",), (f"c{n - 1}",))


def test_top_passes_put_the_skipped_ones_back_in_place() -> None:
    recs = (
        PassRecord(0, "A", "p"),
        PassRecord(1, "B", "p", status="changed"),
        PassRecord(2, "B.inner", "p", depth=1, parent=1),
        PassRecord(3, "D", "p"),
    )
    m = RunManifest("run_x", "s", records=recs, skipped=[{"position": 2, "name": "C", "phase": "p"}])
    got = [(t.position, t.name, t.status, t.index) for t in top_passes(m)]
    assert got == [
        (0, "A", "noop", 0),
        (1, "B", "changed", 1),
        (2, "C", "skipped", None),
        (3, "D", "noop", 3),
    ]


SCRIPT = """
import sys
from tltrace.bisect import miscompile
miscompile.miscompile_from_env()
sys.path.insert(0, {examples!r})
import runpy
sys.argv = [{name!r}] + sys.argv[1:]
runpy.run_path({script!r}, run_name="__main__")
"""

# Small shapes: every step runs the script once (about 4 s on the CPU, mostly imports).
ADD = ("elementwise_add", ("--n", "256", "--block", "64"))
SOFTMAX = ("softmax", ("--m", "64", "--n", "64"))
GEMM = ("gemm", ("--m", "64", "--n", "64", "--k", "32"))


def _bisect(
    tmp: Path, kernel: tuple[str, tuple[str, ...]], miscompile: str, *flags: str, as_json: bool = True
) -> tuple[subprocess.CompletedProcess[str], dict | None]:
    """Run `tltrace bisect` on an example with a miscompile injected; return the process and its --json."""
    name, args = kernel
    examples = REPO / "examples"
    script = tmp / f"inj_{name}.py"
    script.write_text(
        SCRIPT.format(examples=str(examples), name=f"{name}.py", script=str(examples / f"{name}.py"))
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), TILELANG_DISABLE_CACHE="1", TLTRACE_MISCOMPILE=miscompile)
    cmd = [sys.executable, "-m", "tltrace", "bisect", *(["--json"] if as_json else []), "--no-repro"]
    cmd += [*flags, "--trace-dir", str(tmp / "td"), str(script), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    return p, (json.loads(p.stdout) if as_json and p.stdout.strip() else None)


@functools.cache
def _pipeline(kernel: tuple[str, tuple[str, ...]]) -> tuple[tuple[str, bool, bool, bool], ...]:
    """The example compiled once in this process under TileLang's own pass instrument (tests/_observer.py):
    each top-level pass of its pipeline as (name, changed the module, T.vectorized loops before, after)."""
    import importlib

    from ._observer import observe

    rows: list[tuple[str, bool, bool, bool]] = []

    def started(mod, event):
        return mod.script() if event.depth == 0 and event.phase not in (None, "codegen") else None

    def finished(mod, event, before):
        if before is not None:
            after = mod.script()
            rows.append((str(event.name), after != before, "T.vectorized" in before, "T.vectorized" in after))

    name, args = kernel
    sys.path.insert(0, str(REPO / "examples"))
    try:
        with observe(started=started, finished=finished):
            assert importlib.import_module(name).main(list(args)) == 0
    finally:
        sys.path.remove(str(REPO / "examples"))
    return tuple(rows)


def _vectorizer(kernel) -> str:
    """The pass that lowered the kernel's vectorized loops (T.vectorized before it, none after): the CPU's C
    codegen cannot emit those loops, so no compile can skip it."""
    (name,) = [n for n, _, before, after in _pipeline(kernel) if before and not after]
    return name


def _idle_pass(kernel) -> str:
    """The first pass after `_vectorizer` that TileLang saw leave the module as it was and that runs once in
    the pipeline: skipping it changes nothing, so a bisection can, and a corruption of its output (a float
    `+` made `-`) reaches the generated code. Chosen from what TileLang ran, not named here."""
    rows = _pipeline(kernel)
    names = [r[0] for r in rows]
    after = rows[names.index(_vectorizer(kernel)) + 1 :]
    return next(n for n, changed, _, _ in after if not changed and names.count(n) == 1)


def _short(name: str) -> str:
    """A pass name without its namespace (`tl.LoopUnswitching` -> `LoopUnswitching`), as bisect names it."""
    return name.rsplit(".", 1)[-1]


def _bound(data: dict) -> int:
    """The issue's budget: ceil(log2(skippable candidates)) + 3 steps (script runs)."""
    import math

    return math.ceil(math.log2(max(2, len(data["candidates"])))) + 3


def _assert_found(data: dict, name: str) -> None:
    from tltrace.history.loading import load_run

    assert data["kind"] == "found", data
    assert _short(data["culprit"]["name"]) == _short(name)
    # the recorded run holds the pass the result names, at that index
    good = load_run(Path(data["recorded_run"])).manifest
    assert (
        next(r for r in good.records if r.index == data["culprit"]["index"]).name == data["culprit"]["name"]
    )
    searched = [s for s in data["steps"] if s["recheck_of"] is None]
    assert len(searched) <= _bound(data), [s["purpose"] for s in data["steps"]]
    # the deciding steps were run again, and agreed: the last right one that skipped the pass, the last wrong
    assert [r["agrees"] for r in data["rechecks"]] == [True, True], data["rechecks"]
    by_number = {s["number"]: s for s in data["steps"]}
    right, wrong = (by_number[r["step"]] for r in data["rechecks"])
    assert right["outcome"] == "right" and data["culprit"]["position"] in right["skipped"]
    assert wrong["outcome"] == "wrong" and data["culprit"]["position"] not in wrong["skipped"]


@pytest.fixture(scope="module")
def add_bisected(tmp_path_factory: pytest.TempPathFactory):
    """elementwise add with `_idle_pass` miscompiled, bisected: (process, --json, the pass)."""
    culprit = _idle_pass(ADD)
    return (*_bisect(tmp_path_factory.mktemp("add"), ADD, culprit), culprit)


@pytest.mark.slow
@pytest.mark.compile
def test_bisect_names_the_pass_a_miscompile_was_injected_into(add_bisected) -> None:
    """elementwise add, a pass TileLang ran idle: found within the budget; the probe learned the required passes."""
    from tltrace.history.loading import load_run

    p, data, culprit = add_bisected
    assert p.returncode == 0, p.stderr[-2000:]
    _assert_found(data, culprit)
    assert data["probe"]["compiles"] > 0 and data["probe"]["off"] is None
    assert data["required"], "the probe found no required pass"
    # every step is a traced invocation; the steps that skipped list it in their manifests
    skipped = [load_run(Path(r)).manifest.skipped for s in data["steps"][1:] for r in s["runs"]]
    assert any(skipped) and all(isinstance(x, list) for x in skipped)


@pytest.mark.slow
@pytest.mark.compile
def test_each_steps_records_read_with_show(add_bisected) -> None:
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    _p, data, _ = add_bisected
    runs = [(s, r) for s in data["steps"] for r in s["runs"]]
    assert runs
    for s, r in runs:
        res = CliRunner().invoke(app, ["show", r])
        assert res.exit_code == 0, res.output
        if s["skipped"] and s["outcome"] != "untestable":
            assert "bisect step: skipped" in res.stdout


@pytest.mark.slow
@pytest.mark.compile
def test_a_second_kernel_softmax(tmp_path: Path) -> None:
    culprit = _idle_pass(SOFTMAX)
    p, data = _bisect(tmp_path, SOFTMAX, culprit)
    assert p.returncode == 0, p.stderr[-2000:]
    _assert_found(data, culprit)


@pytest.mark.slow
@pytest.mark.compile
def test_a_miscompile_in_a_required_pass_cannot_be_skipped(tmp_path: Path) -> None:
    """The pass that lowers the add's vectorized loops cannot be skipped: the bisection says so, lists it,
    and exits 1."""
    culprit = _vectorizer(ADD)
    p, _ = _bisect(tmp_path, ADD, culprit, as_json=False)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert "the bug is in a pass that cannot be skipped, or before the pipeline" in p.stdout
    listed = p.stdout.split("passes that were not skipped", 1)[1]
    assert _short(culprit) in listed


@pytest.mark.slow
@pytest.mark.compile
def test_a_gemm_where_skips_interact_still_finds_the_pass(tmp_path: Path) -> None:
    """The gemm (where skipping many passes together does not compile): found within the budget, and the
    passes the probe found required are not candidates. The search around interacting windows is
    test_interacting_skips_are_searched_around's."""
    culprit = _idle_pass(GEMM)
    p, data = _bisect(tmp_path, GEMM, culprit)
    assert p.returncode == 0, p.stderr[-2000:]
    _assert_found(data, culprit)
    required = {t["position"] for t in data["required"]}
    assert required and not required & {t["position"] for t in data["candidates"]}


@pytest.mark.slow
@pytest.mark.compile
def test_configs_names_the_config_that_turns_the_kernel_wrong(tmp_path: Path) -> None:
    """A kernel wrong only when tl.disable_safe_memory_legalize is on: --configs names that config."""
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    flags = ("--configs", "--configs-matching", r"disable_(safe_memory|vectorize_256|loop_unswitching)")
    p, data = _bisect(tmp_path, ADD, f"{_idle_pass(ADD)}?tl.disable_safe_memory_legalize", *flags)
    assert p.returncode == 0, p.stderr[-2000:]
    assert data["mode"] == "configs" and data["recorded"] == "right" and data["turns_to"] == "wrong"
    assert data["culprits"] == {"tl.disable_safe_memory_legalize": True}
    assert set(data["flips"]) == {
        "tl.disable_safe_memory_legalize",
        "tl.disable_vectorize_256",
        "tl.disable_loop_unswitching",
    }
    flip = data["flips"]["tl.disable_vectorize_256"]
    assert (flip["value"], flip["outcome"]) == (True, "right")
    step = next(s for s in data["steps"] if s["configs"] == {"tl.disable_vectorize_256": True})
    assert flip["facts"] == step["facts"] and len(step["facts"]) == len(step["runs"])  # what the flip did
    assert "flip tl.disable_safe_memory_legalize=True] wrong" in p.stderr  # each flip's outcome, printed
    for s in data["steps"]:
        for r in s["runs"]:
            assert CliRunner().invoke(app, ["show", r]).exit_code == 0


@pytest.mark.compile
def test_the_flippable_configs_are_read_from_the_installed_tilelang() -> None:
    from tilelang import tvm
    from tilelang.transform import PassConfigKey

    from tltrace.bisect.configs import flippable
    from tltrace.rerun.trust import BOOL, PASS_CONFIGS, WRITES_FILES

    names = flippable()
    keys = {str(k.value) for k in PassConfigKey}
    assert names and set(names) <= keys
    assert set(names) <= {str(k) for k in tvm.transform.PassContext.list_configs()}
    assert all(PASS_CONFIGS[n] == BOOL for n in names) and not set(names) & WRITES_FILES
    assert flippable("disable_vectorize") == sorted(n for n in names if "disable_vectorize" in n)


def test_the_answer_names_the_pass_in_the_numbering_its_command_accepts(recorded, capsys) -> None:
    """bisect printed `#23 Simplify (tl, record 25)` then `--pass 25`: two numberings (then `Simplify#3`,
    whose `#3` is an occurrence, not show's `#`). Now the pass reads `#25 Simplify`, its record's
    number, which `--pass 25` and `--pass '#25'` take, and the printed command shows that very record
    (the manifest is the oracle)."""
    import re
    import shlex

    from typer.testing import CliRunner

    from tltrace import bisect as core
    from tltrace.bisect.steps import top_passes
    from tltrace.cli.app import app
    from tltrace.cli.bisect import _report
    from tltrace.history.loading import load_run

    from ._records import recorded_runs

    run = recorded_runs(recorded, "elementwise_add")[-1]
    m = load_run(run).require()
    pipeline = top_passes(m)
    names = [t.name for t in pipeline]
    # a pass whose name came before, so that its record index, its position and its k all differ
    t = next(
        t
        for i, t in enumerate(pipeline)
        if t.name in names[:i] and t.index is not None and t.index != t.position and t.status == "changed"
    )
    _report(core.Result(core.FOUND, [], good_run=run, kernel=m.kernel, culprit=t), 0, None)
    out = capsys.readouterr().out
    head = out.split("\n", 1)[0]
    assert (
        head.startswith(f"first bad pass: #{t.index} {t.name} ({t.phase}) in kernel")
        and "#" + str(t.position) not in head
    )
    assert "record" not in head and t.ref not in head  # no occurrence number (`Simplify#3`) beside it
    printed = re.match(r"first bad pass: #(\d+) ", head).group(1)
    again = re.search(r"^  again: (.*)$", out, re.M).group(1)
    words = shlex.split(again)
    assert words[:3] == ["tltrace", "show", str(run)] and words[3:] == ["--pass", printed]
    want = (t.index, next(x.name for x in m.records if x.index == t.index))
    for cmd in (words[1:], [*words[1:4], "#" + printed]):  # the command as printed, and `--pass '#N'`
        r = CliRunner().invoke(app, [*cmd, "--json"])
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        got = got.get("record", got)
        assert (got["index"], got["name"]) == want


# Wrong on its first run only (a cold cache, a race): the kernel itself is right. Run COUNTER holds how
# many runs there were; the script exits 1 on the first.
FLAKY = """
import os, runpy, sys
sys.path.insert(0, {examples!r})
sys.argv = ["elementwise_add.py", "--n", "256", "--block", "64"]
try:
    runpy.run_path({script!r}, run_name="__main__")
except SystemExit as exc:
    if exc.code:
        raise
n = int(open({counter!r}).read()) if os.path.exists({counter!r}) else 0
open({counter!r}, "w").write(str(n + 1))
sys.exit(1 if n == 0 else 0)
"""


def _flaky(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """FLAKY written for the elementwise add: (the script, the file counting its runs, the steps' env)."""
    examples = REPO / "examples"
    script = tmp_path / "flaky.py"
    counter = tmp_path / "runs"
    script.write_text(
        FLAKY.format(
            examples=str(examples), script=str(examples / "elementwise_add.py"), counter=str(counter)
        )
    )
    return script, counter, cli_env(NO_COLOR="1")


@pytest.mark.slow
@pytest.mark.compile
def test_a_flaky_script_is_called_flaky_not_blamed_on_a_pass(tmp_path: Path) -> None:
    """Before the deciding steps were run again, this named the first candidate pass with exit 0."""
    script, counter, env = _flaky(tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "tltrace",
        "bisect",
        "--json",
        "--no-repro",
        "--trace-dir",
        "td",
        str(script),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert p.returncode == 8, p.stdout[-2000:] + p.stderr[-2000:]
    data = json.loads(p.stdout)
    assert data["kind"] == "flaky" and data["culprit"] is None
    assert data["answer_before_recheck"] is not None  # what the search alone would have blamed
    runs = int(counter.read_text())
    assert runs == len(data["steps"])  # every step ran the script once; the oracle is the script's own count
    *_agreed, last = data["rechecks"]
    assert (
        not last["agrees"]
        and last["step"] == 1
        and (last["outcome"], last["again_outcome"])
        == (
            "wrong",
            "right",
        )
    )
    assert data["steps"][-1]["recheck_of"] == 1 and data["steps"][-1]["skipped"] == []
    counter.unlink()  # the same flaky script from its first run, printed for a person
    plain = subprocess.run(
        [c for c in cmd if c != "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900
    )
    assert plain.returncode == 8
    assert plain.stdout.startswith("the script is flaky: step 1 was wrong, and run again (step ")


@pytest.mark.slow
@pytest.mark.compile
def test_a_flaky_script_under_configs_is_called_flaky(tmp_path: Path) -> None:
    """Wrong on its first run only: every flip 'turned' it, and before the re-checks each was named, exit 0."""
    script, counter, env = _flaky(tmp_path)
    cmd = [sys.executable, "-m", "tltrace", "bisect", "--json", "--configs", "--configs-matching"]
    cmd += [r"disable_(vectorize_256|loop_unswitching)", "--trace-dir", "td", str(script)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert p.returncode == 8, p.stdout[-2000:] + p.stderr[-2000:]
    data = json.loads(p.stdout)
    assert data["kind"] == "flaky" and data["culprits"] == {}
    assert data["recorded"] == "wrong" and {f["outcome"] for f in data["flips"].values()} == {"right"}
    (r,) = data["rechecks"]
    assert (r["step"], r["outcome"], r["again_outcome"], r["agrees"]) == (1, "wrong", "right", False)
    assert int(counter.read_text()) == len(data["steps"])  # the script's own count of its runs


def test_a_steps_show_names_what_it_skipped_without_a_second_numbering(recorded, tmp_path: Path) -> None:
    """`show` of a bisect step printed `#43 tirx.AnnotateEntryFunc, #14 tl.LayoutInference`: a top-level
    position under a table whose `#` is the record index (46 for that pass in the recorded run), and
    the passes spelt as TVM names them (`tl.`), not as the table and `--pass` do. Now: the names as
    the run that ran them spells them, in order, and no number. Oracle: a recorded run's manifest."""
    import re
    import shutil

    from typer.testing import CliRunner

    from tltrace.bisect.steps import top_passes
    from tltrace.cli.app import app
    from tltrace.history.loading import load_run

    from ._records import recorded_subset

    trace = recorded_subset(recorded, tmp_path / "t", elementwise_add=None)
    full = run_dirs_of(trace / "elementwise_add")[-1]
    m = load_run(full).require()
    top = [t for t in top_passes(m) if t.index is not None]
    # two top-level passes of TileLang's own (named `tl.X` by TVM) whose position is not their index
    picked = [t for t in top if t.index != t.position and t.name in top_names(m)][:2]
    assert len(picked) == 2, [(t.position, t.index, t.name) for t in top]
    step = full.with_name(full.name[:-8] + "5ca1ab1e")
    shutil.copytree(full, step)
    raw = json.loads((step / "manifest.json").read_text())
    raw["run_id"] = step.name
    raw["skipped"] = [{"position": t.position, "name": f"tl.{t.name}", "phase": t.phase} for t in picked]
    gone = {t.index for t in picked}
    raw["records"] = [r for r in raw["records"] if r["index"] not in gone]
    (step / "manifest.json").write_text(json.dumps(raw))
    res = CliRunner().invoke(app, ["show", str(step)])
    assert res.exit_code == 0, res.output
    (head,) = [x for x in res.stdout.splitlines() if x.startswith("bisect step: skipped")]
    assert not re.search(r"#\d", head), head
    listed = head.rsplit(": ", 1)[1].split(", ")
    assert listed == [t.name for t in picked], head
    for t, name in zip(picked, listed, strict=True):  # `--pass NAME` in the run that ran it: that pass
        got = CliRunner().invoke(app, ["show", str(full), "--pass", t.ref or name, "--json"])
        assert got.exit_code == 0, got.output
        data = json.loads(got.stdout)
        assert data.get("record", data)["name"] == name


def run_dirs_of(script_dir: Path) -> list[Path]:
    from ._records import recorded_runs

    return recorded_runs(script_dir.parent, script_dir.name)


def top_names(m: RunManifest) -> set[str]:
    """The top-level records' names that TVM spells with TileLang's `tl.` namespace: none has a dot."""
    return {r.name for r in m.records if r.depth == 0 and "." not in r.name}
