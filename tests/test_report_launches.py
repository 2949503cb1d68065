"""Two compiles of one invocation define a kernel of the same name: each compile's report
(history/report_reads.launch_rows) and `show SCRIPT RUN --launches` list its own launches only.

The oracle: the script's own torch tensors, written per kernel object as it launched them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tltrace.history.report_reads import compile_report

from ._cli import cli_proc
from ._kernels import DYNAMIC_SCALE

TWO_BLOCKS = (
    DYNAMIC_SCALE.split("if __name__")[0]
    + """if __name__ == "__main__":
    kernels = [tilelang.compile(make_scale(b), target="c", execution_backend="cython") for b in (64, 32)]
    seen = [[], []]
    for which, size in ((0, 64), (1, 200), (0, 1000), (1, 8)):
        a = torch.arange(size, dtype=torch.float32)
        b = torch.empty_like(a)
        kernels[which](a, b)
        seen[which].append([tensors(a)[:2], tensors(b)[:2]])
    with open(sys.argv[1], "w") as f:
        json.dump(seen, f)
"""
)


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> tuple[Path, list[Path], list]:
    """The script run once under `tltrace run --launches`: (its dir, its two compiles in start order
    (block 64, then 32), what the script launched with each)."""
    d = tmp_path_factory.mktemp("two")
    (d / "two.py").write_text(TWO_BLOCKS)
    cli_proc("run", "-q", "--launches", "--trace-dir", d / "td", "two.py", d / "seen.json", cwd=d, rc=0)
    runs = sorted((d / "td" / "two" / ".run_records").glob("run_*"))
    assert len(runs) == 2
    return d, runs, json.loads((d / "seen.json").read_text())


def _shapes(args: list[dict]) -> list[list]:
    return [[a["shape"], a["dtype"]] for a in args]


def test_each_compile_s_report_lists_its_own_launches(two) -> None:
    _, runs, seen = two
    for run_dir, want in zip(runs, seen):
        report = compile_report(run_dir)
        got = [_shapes(r["args"]) for r in report.launches]
        print(f"report of {run_dir.name}: {len(got)} launches {got}")
        assert got == want
        assert [r["n"] for r in report.launches] == list(range(1, len(want) + 1))
        assert report.launches_more == 0


def test_show_run_launches_lists_that_compile_s_only(two) -> None:
    """`show SCRIPT RUN --launches`: the named compile's launches, not those of another compile's
    kernel of the same name (their grid and block are that compile's: ceil(n / block), block)."""
    d, runs, seen = two
    for run_dir, want, block in zip(runs, seen, (64, 32)):
        res = cli_proc(
            "show", "--trace-dir", d / "td", "two", run_dir.name, "--launches", "--json", cwd=d, rc=0
        )
        got = json.loads(res.stdout)["launches"]
        assert [_shapes(x["args"]) for x in got] == want
        assert [(x["grid"], x["block"]) for x in got] == [([-(-w[0][0][0] // block)], [block]) for w in want]
