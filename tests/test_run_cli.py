"""`tltrace run`: arguments, exit codes, errors, the terminal stream, settings from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format.records import PassRecord

from ._observer import observe
from ._records import newest_manifest, read_manifest, rec_text, require_tltrace_executable, summary

BAD_KERNEL = textwrap.dedent(
    """
    import tilelang, tilelang.language as T
    N = 256

    @T.prim_func
    def badk(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N // 128, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")  # the CPU backend cannot lay out fragments
            T.copy(A[bx * 128], f)
            T.copy(f, B[bx * 128])

    tilelang.compile(badk, target="c", execution_backend="cython")
    """
)


def _script(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def _one_error_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("tltrace: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_argv_and_options_after_script(run_cli, tmp_path):
    s = _script(
        tmp_path,
        "argv.py",
        "import sys, json; print('ARGV=' + json.dumps(sys.argv)); print('PATH0=' + sys.path[0])",
    )
    r = run_cli("run", s, "--quiet", "a", "--mode", "x", "--", "y")
    assert r.exit_code == 0, r.stderr
    argv = json.loads(r.stdout.split("ARGV=")[1].splitlines()[0])
    assert argv == [str(s), "a", "--mode", "x", "--", "y"]
    assert f"PATH0={tmp_path}" in r.stdout
    r = run_cli("run", "--quiet", s, "--", "--mode", "both")
    argv = json.loads(r.stdout.split("ARGV=")[1].splitlines()[0])
    assert argv == [str(s), "--mode", "both"]


def test_module_mode(run_cli, tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tool.py").write_text("import sys\nprint('MOD', __name__, sys.argv[1:])\nsys.exit(5)\n")
    r = run_cli("run", "-m", "mypkg.tool", "p", "q")
    assert "MOD __main__ ['p', 'q']" in r.stdout
    assert r.exit_code == 5


def test_script_exit_code_and_exception(run_cli, tmp_path):
    r = run_cli("run", _script(tmp_path, "three.py", "import sys; sys.exit(3)"))
    assert r.exit_code == 3
    r = run_cli("run", _script(tmp_path, "boom.py", "def f():\n    raise ValueError('boom')\nf()\n"))
    assert r.exit_code == 1
    assert r.stderr.startswith("Traceback (most recent call last):")
    assert 'boom.py", line 3, in <module>' in r.stderr
    assert r.stderr.rstrip().endswith("ValueError: boom")
    assert "tltrace" not in r.stderr and "runpy" not in r.stderr


@pytest.mark.parametrize(
    "args, env, needle",
    [
        (["run", "missing_script.py"], {}, "does not exist"),
        (["run", "-m", "no_such_module_xyz"], {}, "no module named"),
        (["run", "--mode", "nonsense", "x.py"], {}, "--mode='nonsense' is not a trace mode"),
        (["run", "x.py"], {"TL_LOWER_TRACE": "bogus"}, "TL_LOWER_TRACE='bogus' is not a trace mode"),
        (["run"], {}, "missing SCRIPT"),
        (["run", "x.py", "--only", "("], {}, "not a valid regular expression"),
        (["run", "--keep", "-1", "x.py"], {}, "invalid value for '--keep'"),
        (["run", "--context", "x", "x.py"], {}, "try 'tltrace run --help'"),
        (["run", "--bogus", "x.py"], {}, "no such option: --bogus"),
        (["frob"], {}, "no such command 'frob'"),
        (["diff-runs"], {}, "missing argument"),
    ],
)
def test_bad_input_is_one_line(run_cli, tmp_path, args, env, needle):
    (tmp_path / "x.py").write_text("print('ran')\n")
    r = run_cli(*args, env=env)
    assert r.exit_code == 2
    assert needle in _one_error_line(r.stderr)
    assert "ran" not in r.stdout


def test_unwritable_trace_dir_runs_untraced(run_cli, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the trace dir should be")
    s = _script(tmp_path, "ok.py", "print('script ran')")
    r = run_cli("run", "--trace-dir", blocker, s)
    assert r.exit_code == 0
    assert "script ran" in r.stdout
    warn = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(warn) == 1 and warn[0].startswith("tltrace: warning: cannot write to trace dir")
    assert blocker.read_text() == "a file where the trace dir should be"


def test_failed_pass_is_recorded(run_cli, tmp_path):
    import tilelang  # noqa: F401  (the observer registers with TileLang before the run)

    s = _script(tmp_path, "bad.py", BAD_KERNEL)
    with observe() as ref:
        r = run_cli("run", s, "--trace-dir", tmp_path / "tr")
    name = ref.failed  # the pass TileLang's own instrument saw start and never finish
    phase = next(ph for n, _, ph in reversed(ref.passes) if n.endswith(name))
    name = name.removeprefix("tl.")
    assert r.exit_code == 1
    assert "InternalError" in r.stderr and "Traceback" in r.stderr  # the compile error, unchanged
    assert f"{name}  FAILED" in r.stdout
    assert f"compile failed at {name}:" in r.stdout  # the pass it failed at
    (run,) = (tmp_path / "tr" / "bad" / ".run_records").glob("run_*")
    m = read_manifest(run)
    assert m["status"] == "error" and "layout" in m["error"].lower()
    assert m["target"] == "c"  # known from the pipeline even though codegen never ran
    (failed,) = [x for x in m["records"] if x["status"] == "failed"]
    assert failed["name"] == name and failed["phase"] == phase
    assert "can not be inferred" in failed["error"]
    assert failed.get("after_file") is None
    before_file = PassRecord.from_json(failed).before_file
    assert before_file == f"{phase}/{failed['index']:02d}_{name}_before.tir"
    assert "fragment" in rec_text(run, failed, "before")
    assert not any(x["index"] > failed["index"] for x in m["records"])


def test_stream_filters_and_quiet(run_cli, examples_dir, tmp_path):
    script = examples_dir / "elementwise_add.py"
    r = run_cli(
        "run", script, "--only", "LowerTileOp|codegen", "--context", "0", "--trace-dir", tmp_path / "t"
    )
    assert r.exit_code == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("[add")]
    assert any("LowerTileOp  CHANGED" in ln for ln in lines)
    assert any("codegen_device  CODEGEN" in ln for ln in lines)
    assert not any("Simplify" in ln for ln in lines)
    # LowerTileOp's diff is long: its first changed lines, then how many more and the command
    body = r.stdout.split("LowerTileOp  CHANGED", 1)[1].splitlines()[1:]
    assert body[0].startswith(("    -", "    +")) and any(ln.startswith("    \u2026 ") for ln in body[:6])
    assert "\x1b[" not in r.stdout  # not a tty: no colour
    assert f"done: {summary(newest_manifest(tmp_path / 't' / 'elementwise_add'))}" in r.stdout
    r = run_cli("run", script, "--quiet", "--trace-dir", tmp_path / "t")
    pass_lines = [ln for ln in r.stdout.splitlines() if ln.startswith("[add") and "done:" not in ln]
    assert pass_lines == []
    r = run_cli("run", script, "--skip", ".", "--trace-dir", tmp_path / "t")
    assert not [ln for ln in r.stdout.splitlines() if "CHANGED" in ln]


def test_env_settings_and_builtin_tracer_off(run_cli, examples_dir, tmp_path):
    env = {"TL_LOWER_TRACE": "terminal", "TL_LOWER_TRACE_DIR": str(tmp_path / "envdir")}
    r = run_cli("run", examples_dir / "elementwise_add.py", "--quiet", env=env)
    assert r.exit_code == 0, r.stderr
    assert "built-in tracer stays off" in r.stdout
    assert "[lower_trace]" not in r.stdout
    runs = list((tmp_path / "envdir" / "elementwise_add" / ".run_records").glob("run_*"))
    assert len(runs) == 1
    # TileLang's own tracer would have written run dirs of its own beside ours.
    assert not (tmp_path / "tmp").exists()


def test_use_cache_never_writes_a_traced_kernel(run_cli, examples_dir, tmp_path):
    cache = tmp_path / "cache"
    env = {"TILELANG_CACHE_DIR": str(cache), "TILELANG_DISABLE_CACHE": "0"}
    import tilelang

    tilelang.env.enable_cache()
    try:
        r = run_cli(
            "run",
            "--use-cache",
            "--quiet",
            "--trace-dir",
            tmp_path / "t",
            examples_dir / "elementwise_add.py",
            "--n",
            "512",
            env=env,
        )
        assert r.exit_code == 0, r.stderr
        assert "done:" in r.stdout
        assert "kernel cache turned off for the rest of this process" in r.stdout
    finally:
        tilelang.env.disable_cache()
    saved = [p for p in cache.rglob("*") if p.is_file()]
    assert saved == []


def test_installed_entry_point_subprocess(tmp_path):
    """The `tltrace` console script pip installed (not `python -m tltrace`): a failed compile, exit 1."""
    exe = require_tltrace_executable()
    s = _script(tmp_path, "bad.py", BAD_KERNEL)
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1"}
    p = subprocess.run(
        [exe, "run", "--quiet", "--trace-dir", str(tmp_path / "t"), str(s)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert p.returncode == 1
    passes = len(newest_manifest(tmp_path / "t" / "bad")["records"])
    failed = next(
        r["name"] for r in newest_manifest(tmp_path / "t" / "bad")["records"] if r["status"] == "failed"
    )
    assert f"compile failed at {failed}: {passes} passes" in p.stdout
    assert p.stderr.splitlines()[0] == "Traceback (most recent call last):"


def test_use_cache_reports_hits(run_cli, examples_dir, tmp_path):
    """A kernel an untraced run put in the cache is reported, not silently untraced."""
    cache = tmp_path / "cache"
    env = {**os.environ, "TILELANG_CACHE_DIR": str(cache), "TILELANG_DISABLE_CACHE": "0"}
    script = examples_dir / "elementwise_add.py"
    subprocess.run(
        [sys.executable, str(script), "--n", "384"], env=env, check=True, capture_output=True, timeout=120
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "run",
            "--use-cache",
            "--trace-dir",
            str(tmp_path / "t"),
            str(script),
            "--n",
            "384",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "[add] cached: not traced" in p.stdout
    assert "done:" not in p.stdout


def test_script_without_kernels_leaves_only_its_record(run_cli, tmp_path):
    """No run directory, no working files: only the record that says it traced nothing (#32)."""
    s = _script(tmp_path, "plain.py", "print('no kernels')")
    r = run_cli("run", "--trace-dir", tmp_path / "tr" / "deep", s)
    assert r.exit_code == 0 and "no kernels" in r.stdout
    assert "no TileLang compile was traced" in r.stdout
    left = sorted(p.relative_to(tmp_path / "tr") for p in (tmp_path / "tr").rglob("*") if p.is_file())
    assert [p.parts[:3] for p in left if p.suffix == ".json" and p.name.startswith("inv_")] == [
        ("deep", "plain", ".run_records")
    ]
    assert not any(p.name.startswith("run_") for p in (tmp_path / "tr").rglob("*"))


def test_module_that_is_a_package_without_main(run_cli, tmp_path):
    pkg = tmp_path / "kpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("print('init ran')\n")
    r = run_cli("run", "-m", "kpkg")
    assert r.exit_code == 2
    assert "'kpkg' is a package and cannot be directly executed" in _one_error_line(r.stderr)
    assert "init ran" not in r.stdout  # looked up on disk, not imported
    (pkg / "__main__.py").write_text("print('main ran')\n")
    r = run_cli("run", "-m", "kpkg")
    assert r.exit_code == 0 and "main ran" in r.stdout


def test_a_script_that_never_imports_tilelang_runs_without_it(tmp_path):
    """`tltrace run` imports TileLang only when the script does (it costs seconds); tracing starts then."""
    s = _script(
        tmp_path,
        "plain.py",
        """
        import sys
        from tltrace.session import controller
        print("BEFORE", "tilelang" in sys.modules, controller.installed() is not None)
        if sys.argv[1:] == ["import"]:
            import tilelang
            print("AFTER", controller.installed() is not None)
        """,
    )
    env = {**os.environ, "TLTRACE_DIR": str(tmp_path / "traces")}
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", str(s)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "BEFORE False False" in r.stdout
    assert "warning" not in r.stderr, r.stderr
    r = subprocess.run([*cmd, "import"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "BEFORE False False" in r.stdout and "AFTER True" in r.stdout, r.stdout + r.stderr


def test_first_gemm_stream_is_short_and_says_how_to_see_the_rest(run_cli, examples_dir, tmp_path):
    """The gemm example's default stream: under 200 lines; a long diff is cut with the command that shows it
    whole (which does), the codegen says its size and where it went, and -v streams every diff whole."""
    import shlex

    script = examples_dir / "gemm.py"
    r = run_cli("run", script)
    assert r.exit_code == 0, r.stderr
    out = r.stdout.splitlines()
    assert len(out) < 200, len(out)
    m = newest_manifest(tmp_path / "tmp" / "lower_trace_dir" / "gemm")
    changed = [x for x in m["records"] if x["status"] == "changed"]
    # every changed pass has its line
    assert sum(f"{x['name']}  CHANGED" in r.stdout for x in changed) == len(changed)
    cuts = [ln for ln in out if ln.startswith("    \u2026 ")]
    assert cuts and sum("run -v" in ln for ln in cuts) == 1  # -v is named once
    for ln in cuts[:3]:  # `… N more lines: CMD`: CMD prints the whole diff, N lines more than the excerpt
        more, cmd = ln.split(": ", 1)
        cmd = cmd.split("  (run -v")[0]
        at = out.index(ln)
        shown = next(i for i in range(at - 1, -1, -1) if out[i].startswith("["))
        shown_lines = at - shown - 1
        words = shlex.split(cmd)
        assert words[:2] == ["tltrace", "show"]
        whole = run_cli(*words[1:])
        assert whole.exit_code == 0, whole.stderr
        assert whole.stdout.splitlines()[0].split("] ", 1)[1] == out[shown].split("] ", 1)[1]  # that pass
        body = [x for x in whole.stdout.splitlines()[1:] if x not in ("    --- before", "    +++ after")]
        assert len(body) == shown_lines + int(more.split()[1])
        assert all(x in body for x in out[shown + 1 : at])  # the excerpt is the diff's own lines
    # The codegen: no TIR-to-C++ diff, but the source's size and how to see it (terminal mode writes
    # no working file, and the run keeps the text in its pack: no file is named).
    at = next(i for i, ln in enumerate(out) if "codegen_device  CODEGEN" in ln)
    (cg,) = [x for x in m["records"] if x["status"] == "codegen"]
    src = rec_text(tmp_path / "tmp" / "lower_trace_dir" / "gemm" / ".run_records" / m["run_id"], cg)
    what = out[at + 1]
    assert what.startswith(f"    device source: {len(src.splitlines())} lines, ") and what.endswith("of C++")
    see = out[at + 2]
    assert see.startswith("    see it: tltrace show ")
    shown = run_cli(*shlex.split(see.split(": ", 1)[1])[1:])
    assert shown.exit_code == 0 and src.splitlines()[-2] in shown.stdout
    assert not any(x.startswith(("    +#include", "    -# from tvm")) for x in out)  # no TIR vs C++ diff
    # -v: every diff whole, every pass a line
    r = run_cli("run", "-v", script)
    assert r.exit_code == 0, r.stderr
    full = r.stdout.splitlines()
    assert not any(ln.startswith("    \u2026 ") for ln in full) and len(full) > len(out)
    m = newest_manifest(tmp_path / "tmp" / "lower_trace_dir" / "gemm")
    assert sum(ln.startswith("[gemm") and "done:" not in ln for ln in full) == len(m["records"])
