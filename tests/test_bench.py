"""The benchmark scripts: the GPU entry points parse and refuse cleanly here, and bench/run.py keeps sections.

Nothing here compiles or times anything (the benchmarks themselves run by hand: bench/run.py,
bench/gpu.sh); these tests keep the scripts runnable between those runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import autotune  # noqa: E402
import run as bench_run  # noqa: E402


def test_gpu_sh_parses_and_wants_a_part(tmp_path):
    assert subprocess.run(["bash", "-n", str(BENCH / "gpu.sh")]).returncode == 0
    p = subprocess.run(
        ["bash", str(BENCH / "gpu.sh")],
        capture_output=True,
        text=True,
        env={"OUT": str(tmp_path), "PATH": os.environ["PATH"]},
    )
    assert p.returncode == 2
    assert p.stderr.strip().splitlines()[-1].startswith("gpu.sh: error: say which part")
    assert "autotune" in p.stderr and "builtin" in p.stderr  # the usage names the parts


def test_gpu_py_dry_run_names_the_upstream_autotuner():
    p = subprocess.run(
        [
            sys.executable,
            str(BENCH / "gpu.py"),
            "autotune",
            "--dry-run",
            "--modes",
            "untraced,quiet,html,builtin-terminal,builtin-html",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    lines = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert set(lines) == set(autotune.MODES)
    for mode, rest in lines.items():
        assert rest.rstrip().endswith("examples/gemm/example_gemm_autotune.py --use_autotune")
        assert ("-m tltrace run --quiet" in rest) == (mode in ("quiet", "html"))
        assert ("'TL_LOWER_TRACE'" in rest) == mode.startswith("builtin")
    assert "--mode html" in lines["html"] and "'TL_LOWER_TRACE': 'html'" in lines["builtin-html"]


def test_gpu_py_summarize_without_results_is_one_error_line(tmp_path):
    p = subprocess.run(
        [sys.executable, str(BENCH / "gpu.py"), "summarize", str(tmp_path)], capture_output=True, text=True
    )
    assert p.returncode == 2 and p.stderr.strip() == "bench/gpu.py: error: no autotune-*.json given"


def _inv(mode: str, seconds: float, compiles: int = 0, **kw) -> autotune.Invocation:
    return autotune.Invocation(mode=mode, seconds=seconds, returncode=0, compiles=compiles, **kw)


def _result(*invocations: autotune.Invocation) -> autotune.Result:
    return autotune.Result(label="t", script="s.py", args=[], reps=1, invocations=list(invocations))


def test_budgets_flag_lost_compiles_and_time_over():
    res = _result(
        _inv("untraced", 100.0),
        _inv("quiet", 104.0, 288, invocations=1, signatures=288, du_bytes=20),
        _inv("html", 112.0, 280, invocations=1, signatures=280, du_bytes=30),
        _inv("builtin-terminal", 120.0, 288, du_bytes=100),
        _inv("builtin-html", 140.0, 288, du_bytes=100),
    )
    rows = {r[0].split(": ", 1)[1]: r for r in autotune.budgets(res, time_is_target=True)}
    assert rows["288-compile invocation, tltrace --quiet (records only), wall time vs untraced"][3] == "ok"
    assert rows["288-compile invocation, tltrace html, wall time vs untraced"][3] == "OVER"
    assert rows["bytes on disk per invocation, tltrace html vs built-in html (du)"][2:] == ("0.300x", "OVER")
    assert rows["tltrace html keeps every compile (default --keep)"][1:] == ("288", "280", "LOST")
    table = autotune.table(res)
    assert "| tltrace html | 112.0 | 1.120x |" in table


def test_parts_are_timed_against_their_own_untraced():
    res = _result(
        _inv("untraced", 100.0, part="a"),
        _inv("quiet", 105.0, 1, part="a"),
        _inv("untraced", 200.0, part="b"),
        _inv("builtin-html", 220.0, 1, part="b"),
    )
    table = autotune.table(res)
    assert "| tltrace --quiet (records only) [part a] | 105.0 | 1.050x |" in table
    assert "| built-in html [part b] | 220.0 | 1.100x |" in table


def test_runs_slice_one_interleaved_schedule(tmp_path):
    """gpu.sh's RUNS: calls that each run a slice of one schedule still alternate the modes (issue 51)."""
    script = tmp_path / "s.py"
    script.write_text("print('compile calls: 0.25 s')\n")
    modes = ["untraced", "untraced@switch", "untraced@nomap"]
    res = autotune.measure(script, reps=3, modes=modes, browser=False, work=tmp_path / "w", runs=(3, 7))
    # Rep 1: the modes as given; rep 2 starts one further; rep 3 two further. Runs 3 to 7 of that.
    assert [(i.rep, i.mode) for i in res.invocations] == [
        (1, "untraced@nomap"),
        (2, "untraced@switch"),
        (2, "untraced@nomap"),
        (2, "untraced"),
        (3, "untraced@nomap"),
    ]
    assert {i.compile_seconds for i in res.invocations} == {0.25}
    table = autotune.table(res)
    assert "| best-of vs untraced | compile calls s | vs untraced | CPU s |" in table
    assert re.search(
        r"\| untraced \| [\d.]+ \| 1\.000x \| 1\.000x \| 0\.2 \| 1\.000x \| [\d.]+ \| 1\.000x \|", table
    )


def test_gpu_py_refuses_a_bad_run_range():
    p = subprocess.run(
        [sys.executable, str(BENCH / "gpu.py"), "autotune", "--dry-run", "--runs", "4-2"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "expected 1 <= FIRST <= LAST" in p.stderr.strip().splitlines()[-1]


def test_summarize_pool_joins_parts_into_one_measurement(tmp_path):
    """Two device calls of one interleaved rotation: medians over both, ratios against both untraced."""
    import json

    for part, (u, q, cu, cq) in {
        "r1": (100.0, 110.0, 400.0, 440.0),
        "r3": (120.0, 118.0, 420.0, 430.0),
    }.items():
        res = autotune.Result(
            label="t",
            script="s.py",
            args=[],
            reps=1,
            invocations=[
                _inv("untraced", u, part=part, cpu_seconds=cu),
                _inv("quiet", q, 96, part=part, cpu_seconds=cq, invocations=1, signatures=96),
            ],
        )
        (tmp_path / f"autotune-{part}.json").write_text(json.dumps(res.to_json()))
    gpu = [sys.executable, str(BENCH / "gpu.py"), "summarize"]
    pooled = subprocess.run(
        [*gpu, "--pool", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    # quiet: median of 110 and 118 = 114 against untraced's 110; CPU 435 against 410.
    assert "| tltrace --quiet (records only) | 114.0 | 1.036x |" in pooled
    assert "| 435.0 | 1.061x |" in pooled
    assert "2 rep(s) per configuration" in pooled
    apart = subprocess.run([*gpu, str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "| tltrace --quiet (records only) [part r1] | 110.0 | 1.100x |" in apart


def test_run_py_keeps_sections_it_does_not_measure(tmp_path):
    out = tmp_path / "benchmarks.md"
    out.write_text(
        "# Benchmarks\n\nold head\n\n## HTML report (x)\n\nkept text\n\n| target | limit | measured | "
        "verdict |\n|---|---:|---:|---|\n| first diff | < 1000 ms | 150 ms | ok |\n\n"
        "## Scale: autotune-shaped invocation (CPU, 24 configs)\n\nalso kept\n\n"
        "| target | limit | measured | verdict |\n|---|---:|---:|---|\n| bytes | <= 0.25x | 0.30x | OVER |\n"
    )
    results = tmp_path / "results"
    results.mkdir()
    (results / "gpu.md").write_text("## H200 section\n\ngpu text\n")
    assert bench_run.main(["--only", "results", "--out", str(out), "--results", str(results)]) == 0
    text = out.read_text()
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads == [
        "## Targets",
        "## HTML report (x)",
        "## Scale: autotune-shaped invocation (CPU, 24 configs)",
        "## H200 section",
    ]
    assert "kept text" in text and "also kept" in text and "old head" not in text
    assert "1 of 2 met" in text


def test_run_py_refuses_an_unknown_section(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        bench_run.main(["--only", "nosuch", "--out", str(tmp_path / "b.md")])
    assert e.value.code == 2


def test_align_finds_the_largest_changed_pass_in_a_real_trace(recorded, tmp_path):
    """bench/gpu.sh's check part hands bench/align.py its traces: it must read them as they are written."""
    import align

    from ._records import read_manifest, recorded_subset, run_dirs

    td = recorded_subset(recorded, tmp_path / "t", gemm=None)
    found = align.find_largest(td)
    assert found is not None
    records = read_manifest(run_dirs(td / "gemm")[-1])["records"]
    changed = [r for r in records if r["status"] == "changed" and r["after_file"].endswith(".tir")]
    index = int(found["label"].split(": ", 1)[1].split()[0])
    assert index in {r["index"] for r in changed}
    assert found["before"] != found["after"]


def test_timeline_splits_the_wall_and_variants_set_their_environment(tmp_path):
    import json

    import timeline

    def rec(kind, t, cpu, bars=None, queued=None, **extra):
        return {
            "run": "quiet-1",
            "mode": "quiet",
            "kind": kind,
            "t": t,
            "cpu": cpu,
            "bars": bars or {},
            "queued": queued,
            **extra,
        }

    lines = [
        rec("main-start", 5.0, {"main": 5.0, "compiling": 0.0, "workers": 0.0}),
        rec("sample", 10.0, {"main": 5.1, "compiling": 20.0, "workers": 5.0}, queued=300),
        rec("compile-done", 30.0, {"main": 5.2, "compiling": 50.0, "workers": 20.0}, queued=0),
        rec("bench-done", 70.0, {"main": 5.6, "compiling": 50.0, "workers": 21.0}),
        rec("main-end", 70.5, {"main": 5.7, "compiling": 50.0, "workers": 21.0}),
        rec("exit", 71.0, {"main": 6.0, "compiling": 50.0, "workers": 21.5}, maxrss_mb=900),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + "not json\n")
    row = timeline.summarize(path).splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    # run, wall, start-up, compiling, benchmarking, rest of main, tail, compiling CPU, workers, main, queued, RSS
    assert cells[:7] == ["quiet-1", "71.0", "5.0", "25.0", "40.0", "0.5", "0.5"]
    assert cells[7] == "50" and cells[8] == "20 / 1 / 0" and cells[10] == "0, 300" and cells[11] == "900"

    argv, env = autotune.command("quiet@switch", Path("s.py"), [], tmp_path)
    assert "--quiet" in argv and env["BENCH_SWITCH_INTERVAL"] == "0.0005"
    assert autotune.base_mode("quiet@w2") == "quiet" and autotune.mode_label("html@w2").endswith("@w2")
    with pytest.raises(ValueError):
        autotune.command("quiet@nope", Path("s.py"), [], tmp_path)


def test_gil_cost_counts_the_loop_and_the_workers_only():
    """bench/gil_cost.py: samples outside the traced loop (imports, set-up) are not counted;
    a worker's samples are, and tltrace's are those with a tltrace frame on the stack."""
    import gil_cost

    raw = "\n".join(
        [
            "thread (1): MainThread;<module> (x.py:1);_find_and_load (<frozen>:1) 40",
            "thread (1): MainThread;_traced_loop (/b/gil_cost.py:60);lower (/s/tilelang/engine/lower.py:9) 30",
            "thread (1): MainThread;_traced_loop (/b/gil_cost.py:60);pass_started (/s/tltrace/session/tool.py:9) 5",
            "thread (2): tltrace-capture;Worker._run (/s/tltrace/session/worker.py:98);job (/s/tltrace/x.py:1) 20",
            "garbage line",
        ]
    )
    assert gil_cost.count(raw) == (55, 25)
    text = gil_cost.table(
        {
            "untraced": {"gil": [50.0], "tilelang": [50.0], "tltrace": [0.0], "cpu": [340.0]},
            "records": {"gil": [150.0], "tilelang": [55.0], "tltrace": [95.0], "cpu": [500.0]},
        },
        1,
        10,
    )
    assert "| records | 150.0 | 55.0 | 95.0 | 1.90x | 500 | 9.1 |" in text


def test_gpu_sh_lists_the_gil_part():
    p = subprocess.run(["bash", str(BENCH / "gpu.sh"), "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "gil " in p.stdout and "compile_wall.md" in p.stdout


def test_the_upstream_autotuner_s_run_says_its_own_wall_for_the_compile_calls_column(tmp_path):
    """Issue 51 item 6: the H200's autotune table has the tuner's own wall beside the wall to complete
    records; bench/upstream_autotune.py prints it as autotune_cpu.py does (an example stands in for
    .upstream's, which is not in the checkout; it takes the arguments the real one's main takes)."""
    example = tmp_path / "up" / "examples" / "gemm" / "example_gemm_autotune.py"
    example.parent.mkdir(parents=True)
    example.write_text(
        "def get_configs(*a, **k):\n    return list(range(9))\n\n"
        "def main(m, n, k, use_autotune, with_roller, profile_backend):\n"
        "    import time\n"
        "    time.sleep(0.01)  # a wall the print's 3 decimals show\n"
        "    print('configs', len(get_configs()), m, use_autotune)\n"
    )
    p = subprocess.run(
        [sys.executable, str(BENCH / "upstream_autotune.py"), "--configs", "3", "--m", "64"],
        capture_output=True,
        text=True,
        env={**os.environ, "TLTRACE_UPSTREAM": str(tmp_path / "up")},
    )
    assert p.returncode == 0, p.stderr
    assert "configs 3 64 True" in p.stdout  # the example's main ran, over the subset
    log = tmp_path / "log.txt"
    log.write_text(p.stdout)
    assert autotune._compile_calls(log) > 0  # what bench/autotune.py puts in `compile calls s`


def test_lowering_outside_counts_per_lowering_from_the_two_processes_of_each_rep():
    """bench/lowering_outside.py: per lowering is (N-lowering process - its rep's start-up process) / N;
    added is traced minus untraced of the same rep, over the untraced compiling thread's per lowering."""
    import lowering_outside

    def proc(main: float, process: float) -> dict:
        return {
            "main": main,
            "others": process - main,
            "process": process,
            "rusage": process,
            "laps": [0.4, 0.3],
            "end": 0.05,
        }

    res = {  # one rep, 4 lowerings: untraced 0.3 s a lowering on its thread; records adds 0.1 s, html 0.2 s
        "untraced": [(proc(2.0, 2.1), proc(3.2, 3.3))],
        "records": [(proc(2.2, 2.4), proc(3.6, 4.0))],
        "html": [(proc(2.3, 2.5), proc(3.8, 4.5))],
    }
    text = lowering_outside.table(res, 1, 4)
    per_lowering, start_up = text.split("Start-up")
    rows = {
        line.split(" | ")[0].lstrip("| "): line for line in per_lowering.splitlines() if line.startswith("| ")
    }
    assert "| 300 (300..300) | 0 (0..0) | 300 (300..300) |" in rows["untraced"]
    assert "| 100 (100..100) | 0.333x (0.333..0.333) |" in rows["records"]
    assert "| 200 (200..200) | 0.667x (0.667..0.667) |" in rows["html"]
    assert "| 0.333x | OVER |" in text
    assert "| records | 2200 (2200..2200) | 200 (200..200) | 2400 (2400..2400) | 300 (300..300) |" in start_up
    assert "| html | 400 (400..400) | 300 (300..300) | 50 (50..50) |" in start_up  # inside: first, later, end
    with pytest.raises(SystemExit) as e:
        lowering_outside.main(["--configs", "untraced,nosuch"])
    assert e.value.code == 2


def test_upstream_kernel_options_and_trace_dump_comparison():
    """bench/capture_cost.py's `--config` names the autotuner's keys (an unknown one is refused);
    bench/trace_dump.py keeps an upstream config whole among the kernels, and its comparison
    names the path where two dumps differ."""
    import trace_dump

    p = subprocess.run(
        [sys.executable, str(BENCH / "capture_steps.py"), "--kernel", "upstream", "--config", "block_Q=1"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1 and "unknown config key 'block_Q'" in p.stderr, p.stderr[-500:]
    assert trace_dump._kernels("default,upstream:block_M=64,num_stages=0,cpu-add") == [
        "default",
        "upstream:block_M=64,num_stages=0",
        "cpu-add",
    ]
    a = {"k": {"manifest": {"records": [{"after_hash": "a"}, {"after_hash": "b"}]}}}
    b = {"k": {"manifest": {"records": [{"after_hash": "a"}, {"after_hash": "c"}]}}}
    assert trace_dump.differences(a, a) == []
    assert trace_dump.differences(a, b) == ["/k/manifest/records[1]/after_hash: 'b' | 'c'"]
    assert trace_dump.differences(a, {}) == ["/k: only one side"]


def test_printer_native_puts_each_perf_sample_in_its_innermost_named_phase():
    """bench/printer_native.py's reading of `perf script`: a sample goes to the first phase found
    on its stack in PHASES' order (the var-definition scan inside the docsifier is the scan's, not
    the docsifier's), a Python-only stack to Python, an empty one to none; the allocator share
    counts the samples whose own function is malloc or free, whatever their phase."""
    import printer_native as pn

    script = "\n\n".join(
        [
            "1 _int_malloc\n2 tvm::script::printer::IRDocsifierNode::SetCommonPrefix\n3 tvm::script::printer::Docsify",
            "1 tvm::script::printer::DocPrinter::PrintDoc\n2 tvm::script::printer::DocToPythonScript",
            "1 tvm::script::printer::IRDocsifierNode::AsDoc<Doc>\n2 tvm::script::printer::Docsify",
            "1 malloc_consolidate\n2 PyBytes_FromStringAndSize\n3 _PyEval_EvalFrameDefault",
            "1 list_append\n2 _PyEval_EvalFrameDefault",
            "1 [unknown]",
        ]
    )
    per, total, alloc = pn.classify(script + "\n\n")
    assert total == 6 and alloc == 2
    assert per == {
        "IR -> Doc: the var-definition scan (SetCommonPrefix)": 1,
        "Doc -> text (DocToPythonScript)": 1,
        "IR -> Doc: dispatch per node, frames, names (IRDocsifier)": 1,
        "the text handed to Python (bytes, str)": 1,
        pn.PYTHON: 1,
        pn.CUT: 1,
    }


def _callgrind_file(path: Path, costs: dict[tuple[str, str], int]) -> Path:
    """A callgrind output file of one thread: (object, function) -> instructions."""
    lines = ["version: 1", "creator: tltrace-test", "pid: 1", "cmd: python", "part: 1", "", "positions: line"]
    lines += ["events: Ir", ""]
    for (obj, fn), ir in costs.items():
        lines += [f"ob=/lib/{obj}", "fl=x.c", f"fn={fn}", f"0 {ir}"]
    path.write_text("\n".join(lines + ["", f"totals: {sum(costs.values())}", ""]))
    return path


@pytest.mark.skipif(not __import__("shutil").which("callgrind_annotate"), reason="no callgrind_annotate")
def test_compiling_thread_ir_diff_puts_the_collector_apart(tmp_path):
    """bench/compiling_thread.py --ir-diff: the compiling thread's instructions per lowering, B minus
    A, with the garbage collector's functions counted apart from the rest (by shared object)."""
    import compiling_thread

    eval_, gc_, z3 = (
        ("libpython3.11.so.1.0", "_PyEval_EvalFrameDefault"),
        ("libpython3.11.so.1.0", "gc_collect_main"),
        (
            "libz3.so",
            "smt::get_color",
        ),
    )
    a = _callgrind_file(tmp_path / "a", {eval_: 1_000_000, gc_: 2_000_000, z3: 50_000_000})
    b = _callgrind_file(tmp_path / "b", {eval_: 5_000_000, gc_: 8_000_000, z3: 50_000_000})
    text = compiling_thread.ir_diff(str(a), str(b), 2)
    assert "all: 26.5 -> 31.5 (+5.00)" in text
    assert "the garbage collector: +3.00; the rest: +2.00" in text
    assert "+2.00 libpython3.11.so.1.0" in text and "libz3.so" in text  # z3 unchanged: +0.00
    assert re.search(r"\+2\.000 x\.c:_PyEval_EvalFrameDefault", text), text
