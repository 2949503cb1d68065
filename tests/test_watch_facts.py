"""`tltrace watch` says what each save changed: the facts that differ from the previous build (#54).

The values are held against a reading tltrace did not make: the C source each build compiled
(the working file as generated, then as edited), its vector casts' lanes read by a pattern here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests._kernels import ADD
from tltrace.reconcile.buildfacts import BuildCompile, BuildHistory

SCRIPT = (
    ADD
    + '\n\nif __name__ == "__main__":\n    tilelang.compile(make_add(256), target="c", execution_backend="cython")\n'
)


def _vector_bits(c_source: str) -> int:
    """The one vector width of the C source, in bits: `*(float4*)(...)` is 4 lanes of 32 bits."""
    (lanes,) = set(re.findall(r"\*\(float(\d+)\*\)", c_source))
    return 32 * int(lanes)


def _json_lines(proc: subprocess.Popen, count: int) -> list[dict]:
    out = []
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(json.loads(line))  # stdout holds JSON only: the runs' output went to stderr
        if len(out) == count:
            break
    return out


def test_watch_json_names_the_facts_a_save_changed(tmp_path: Path) -> None:
    script = tmp_path / "k.py"
    script.write_text(SCRIPT)
    working = tmp_path / "traces" / "k" / "codegen_device.cpp"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tltrace", "watch", "--json", "--max-runs", "2", "--debounce", "100"]
        + ["--trace-dir", str(tmp_path / "traces"), str(script)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (first,) = _json_lines(proc, 1)
        assert first["run"] == 1 and first["ok"], first
        (c1,) = first["compiles"]
        assert c1["kernel"] == "add" and c1["changed"] is None  # nothing before the first build
        generated = working.read_text()
        before = _vector_bits(generated)
        assert c1["facts"]["vector_load_bits"] == c1["facts"]["vector_store_bits"] == before == 128
        # The save: the same sums, two lanes at a time (i < 16 with float4 becomes i < 32 with float2).
        edit = generated.replace("float4", "float2").replace("i * 4", "i * 2").replace("i < 16", "i < 32")
        assert edit != generated
        working.write_text(edit)
        (second,) = _json_lines(proc, 1)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out == ""  # --max-runs 2: nothing after the second build's object
    assert second["run"] == 2 and second["saved"] == [str(working)] and second["ok"], second
    (c2,) = second["compiles"]
    assert c2["reconcile"] == ["PATCHED"] and second["tags"] == ["add: PATCHED"]
    assert c2["compared_with"] == c1["run_id"] != c2["run_id"]
    after = _vector_bits(working.read_text())
    assert after == 64
    changed = {c["name"]: (c["a"], c["b"]) for c in c2["changed"]}
    assert changed["vector_load_bits"] == changed["vector_store_bits"] == (before, after)
    assert all(a != b for a, b in changed.values())
    unchanged = [n for n, v in c2["facts"].items() if v is not None and n not in changed]
    assert unchanged and all(c1["facts"][n] == c2["facts"][n] for n in unchanged)
    # The human line, under the run's (on stderr under --json): the same changes.
    lines = err.splitlines()
    i = lines.index("── run 2: ok (add: PATCHED) ──")
    assert lines[i + 1].startswith("add: ") and f"vector_load_bits {before} \u2192 {after}" in lines[i + 1], (
        err
    )
    assert f"vector_store_bits {before} \u2192 {after}" in lines[i + 1]


def _compile(run_id: str, status: str = "complete", **facts) -> BuildCompile:
    return BuildCompile("add", run_id, None, status, (), facts, ("add", 0))


def test_a_failed_build_is_skipped_by_the_comparison() -> None:
    h = BuildHistory()
    (a,) = h.compare([_compile("r1", registers=168, spill_bytes=0)])
    assert a.changed is None and a.line() is None
    (b,) = h.compare([_compile("r2", "error", registers=None)])  # a broken edit: no facts to compare
    assert b.changed is None
    (c,) = h.compare([_compile("r3", registers=176, spill_bytes=64)])
    assert c.previous_run_id == "r1"  # compared with the last good build, not the failed one
    assert c.line() == "registers 168 \u2192 176, spill_bytes 0 \u2192 64"
    (d,) = h.compare([_compile("r4", registers=176, spill_bytes=64)])
    assert d.line() == "no fact changed" and d.previous_run_id == "r3"


def test_watch_prints_the_changed_facts_under_the_runs_line(monkeypatch, run_cli, tmp_path) -> None:
    import tltrace.reconcile.watch as W

    p = tmp_path / "k.py"
    p.write_text("")
    two = (
        BuildCompile(
            "add",
            "r2",
            "add 128 #1",
            "complete",
            ("PATCHED",),
            {},
            ("add", 0),
            ({"name": "registers", "a": 168, "b": 176},),
        ),
        BuildCompile("add", "r3", "add 256 #2", "complete", (), {}, ("add", 1), ()),
    )

    def fake_runs(spec, **kw):
        yield W.RunStarting(2, (p,))
        yield W.RunDone(2, 0, ("add: PATCHED",), compiles=two)

    monkeypatch.setattr(W, "watch_runs", fake_runs)
    r = run_cli("watch", p)
    lines = r.stdout.splitlines()
    i = lines.index("── run 2: ok (add: PATCHED) ──")
    assert lines[i + 1 : i + 3] == ["add 128 #1: registers 168 \u2192 176", "add 256 #2: no fact changed"]


def test_watch_q_says_watch_is_already_quiet(run_cli, tmp_path) -> None:
    for flag in ("-q", "--quiet"):
        r = run_cli("watch", flag, tmp_path / "k.py")
        assert r.exit_code == 2
        assert r.stderr.count("\n") == 1 and "already quiet" in r.stderr, r.stderr


def test_watch_ptxas_runs_each_build_with_ptxas(monkeypatch, run_cli, tmp_path) -> None:
    import tltrace.reconcile.watch as W

    p = tmp_path / "k.py"
    p.write_text("")
    seen = []

    def fake_runs(spec, **kw):
        seen.append(spec.command())
        yield W.RunStarting(1, ())
        yield W.RunDone(1, 0, ())

    monkeypatch.setattr(W, "watch_runs", fake_runs)
    for flags, want in (((), False), (("--ptxas",), True)):
        assert run_cli("watch", *flags, p).exit_code == 0
        cmd = seen[-1]
        assert cmd[cmd.index("run") + 1 :].count("--ptxas") == int(want) and "--quiet" in cmd


def test_a_compile_without_a_kernel_name_is_named_as_every_view_names_it(monkeypatch, tmp_path) -> None:
    """`tilelang.lower` compiles have no `kernel`: the run's line names the function the signature
    starts with (manifest.kernel_name), as the stream does, not '?'."""
    import tltrace.reconcile.watch as W
    from tltrace.format.records import PassRecord, RunManifest
    from tltrace.history.loading import Run

    m = RunManifest(
        run_id="run_x",
        script="gemm.py",
        kernel=None,
        signature="gemm 512x512 f16 grid 8x4 thr 128 #abc123",
        status="complete",
        records=(PassRecord(0, "codegen", "codegen", status="codegen", role="device", reconcile="PATCHED"),),
    )
    monkeypatch.setattr(W, "_runs", lambda spec, pid: [Run(tmp_path / "run_x", m)])
    spec = W.WatchSpec(tmp_path / "gemm.py")
    assert W.run_tags(spec, 1) == ("gemm: PATCHED",)
    (c,) = W.build_compiles(W._runs(spec, 1))
    assert c.kernel == "gemm" and c.reconcile == ("PATCHED",)


# The add compiled whole, then again with the process killed (SIGKILL, by itself) inside the second
# compile's 10th pass: a kill -9 at a known point, through TileLang's instrumentation seam.
KILLED = (
    ADD
    + """
import itertools
import os
import signal

from tilelang.instrumentation import PassEventObserver, PassInstrumentationTool, StackedPassInstrument
from tilelang.instrumentation import register_pass_instrumentation_tool

compiles = itertools.count()


class Kill(PassEventObserver):
    def __init__(self, compile_number):
        self.compile_number, self.seen = compile_number, 0

    def pass_started(self, mod, event):
        self.seen += 1
        if self.compile_number == 1 and self.seen == 10:
            os.kill(os.getpid(), signal.SIGKILL)


class Tool(PassInstrumentationTool):
    def __init__(self):
        self.number = next(compiles)

    def create_pass_instrument(self):
        return StackedPassInstrument(Kill(self.number), sequence_allocator=itertools.count().__next__)


if __name__ == "__main__":
    register_pass_instrumentation_tool("test-kill", Tool)
    tilelang.compile(make_add(256), target="c", execution_backend="cython")
    tilelang.compile(make_add(512), target="c", execution_backend="cython")
"""
)


def test_watch_says_which_compile_a_kill_9_cut(tmp_path: Path) -> None:
    """Before, the build's line said `exit -9` and nothing of the compile it cut (its JSON status only)."""
    script = tmp_path / "k.py"
    script.write_text(KILLED)
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "watch", "--json", "--max-runs", "1", "--mode", "terminal"]
        + ["--trace-dir", str(tmp_path / "traces"), str(script)],
        cwd=tmp_path,
        env={
            **os.environ,
            "TLTRACE_SYNC": "1",
        },  # records written as the compile goes: the kill's cut is known
        capture_output=True,
        text=True,
        timeout=300,
    )
    (build,) = [json.loads(line) for line in p.stdout.splitlines()]
    assert build["exit_code"] == -9, build
    # The oracle, on disk: the run whose log was never replaced by a final manifest (format/writer.py).
    cut = [
        d.name
        for d in (tmp_path / "traces" / "k" / ".run_records").glob("run_*")
        if (d / "records.jsonl").exists()
    ]
    assert len(cut) == 1 and len(build["compiles"]) == 2, (cut, build)
    said = {c["run_id"]: c["status"] for c in build["compiles"]}
    assert said[cut[0]] == "interrupted" and list(said.values()).count("complete") == 1, said
    line = f"cut short (interrupted): its records stop where the process died ({cut[0]})"
    assert line in p.stderr, p.stderr[-2000:]
