"""tltrace bisect: the pure window search, the skip set's variable, and one real bisection on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tltrace.bisect.search import RIGHT, UNTESTABLE, WRONG, WindowSearch
from tltrace.bisect.steps import top_passes
from tltrace.format.records import PassRecord, RunManifest
from tltrace.session.skipping import SkipPlan

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
    for bad in (
        '{"v": 2, "skip": []}',
        '{"v": 1, "skip": ["x"]}',
        '{"v": 1, "skip": [], "kernels": "("}',
        "[]",
    ):
        with pytest.raises(ValueError):
            SkipPlan.from_env(bad)


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
import tltrace.testing
tltrace.testing.miscompile_from_env()
sys.path.insert(0, {examples!r})
import runpy
sys.argv = ["elementwise_add.py", "--n", "256", "--block", "64"]
runpy.run_path({script!r}, run_name="__main__")
"""


@pytest.mark.slow
def test_bisect_names_the_pass_a_miscompile_was_injected_into(tmp_path: Path) -> None:
    """A real bisection on the CPU (about 20 compiles): the pass named in TLTRACE_MISCOMPILE is blamed."""
    examples = REPO / "examples"
    script = tmp_path / "inj_add.py"
    script.write_text(SCRIPT.format(examples=str(examples), script=str(examples / "elementwise_add.py")))
    env = dict(
        os.environ, PYTHONPATH=str(REPO), TILELANG_DISABLE_CACHE="1", TLTRACE_MISCOMPILE="LoopUnswitching"
    )
    td = tmp_path / "td"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "bisect",
            "--json",
            "--no-repro",
            "--trace-dir",
            str(td),
            str(script),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads(p.stdout)
    assert data["kind"] == "found"
    assert data["culprit"]["name"].rsplit(".", 1)[-1] == "LoopUnswitching"
    # every step is a traced invocation; the steps that skipped list it in their manifests
    from tltrace.history.loading import load_run

    skipped = [load_run(Path(r)).manifest.skipped for s in data["steps"][1:] for r in s["runs"]]
    assert any(skipped) and all(isinstance(x, list) for x in skipped)
    # the recorded run holds the pass the result names, at that index
    good = load_run(Path(data["recorded_run"])).manifest
    assert (
        next(r for r in good.records if r.index == data["culprit"]["index"]).name == data["culprit"]["name"]
    )
