"""`tltrace run --sanitize` and `show --sanitizer` on compute-sanitizer's reports recorded on an H100
(tests/data/sanitizer/README.md): the errors parsed from the XML and from the text, grouped, and named at
the Python line, checked against the script itself (the store found with `ast`) and the recorded .cu;
damaged reports said in one line; the command line the sanitized child gets."""

from __future__ import annotations

import ast
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from tltrace.cli.sanitizer import line_of, say_outcome
from tltrace.errors import EXIT_RECORDS
from tltrace.format.layout import SANITIZER, SANITIZER_XML
from tltrace.runtime import outer, sanitize
from tltrace.runtime.sanitizer_parse import parse_bytes, span

from ._cli import one_line_error
from ._records import pack_texts, run_dirs
from ._schema import check

DATA = Path(__file__).resolve().parent / "data" / "sanitizer"
SCRIPT = DATA / "oob.py"


def report(name: str) -> bytes:
    return gzip.decompress((DATA / f"{name}.gz").read_bytes())


def store_line(script: Path) -> int:
    """The oracle: the line of the script whose statement stores into B (`B[...] = ...`), found by ast."""
    tree = ast.parse(script.read_text())
    hits = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Subscript) and getattr(t.value, "id", None) == "B" for t in n.targets)
    ]
    assert len(hits) == 1, hits
    return hits[0]


def cuda_store(run_dir: Path, line: int) -> str:
    """Line `line` of the run's recorded device source, read from its pack by the documented layout."""
    m = json.loads((run_dir / "manifest.json").read_text())
    dev = [r for r in m["records"] if r.get("status") == "codegen" and r.get("role") == "device"][-1]
    return pack_texts(run_dir)[dev["after_hash"]].split("\n")[line - 1]


def text_threads(text: str) -> tuple[int, list[int]]:
    """From compute-sanitizer's text, by its own words: the invalid writes and their threadIdx.x."""
    xs = [int(x) for x in re.findall(r"Invalid __global__ write.*\n.*\n=+\s+by thread \((\d+),0,0\)", text)]
    return len(xs), xs


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A copy of the recorded traced run (its script dir), compute-sanitizer's XML saved where run would."""
    dest = tmp_path / "oob_trace"
    shutil.copytree(DATA / "oob_trace", dest)
    return dest / "oob"


def finish(script_dir: Path, data: bytes, before: set[Path] | None = None) -> sanitize.Outcome:
    save = script_dir / ".sanitizer.xml.1"
    save.write_bytes(data)
    return sanitize.finish("memcheck", save, script_dir, outer.found(script_dir, before or set(), 1))


def test_the_xml_and_the_text_give_the_same_groups_as_compute_sanitizers_own_words() -> None:
    text = report("oob_memcheck.txt").decode()
    n, xs = text_threads(text)
    for name in ("oob_memcheck.xml", "oob_memcheck.txt", "oob_memcheck_nobt.txt"):
        rep = parse_bytes(report(name))
        assert rep.problem is None, (name, rep.problem)
        memory = [g for g in rep.groups() if g.first.space]
        assert len(memory) == 1, name
        g = memory[0]
        assert (g.count, g.first.func, g.first.pc, g.first.line) == (n, "main_kernel", 0xF0, 19), name
        assert span(g.threads) == f"({min(xs)}..{max(xs)},0,0)" and span(g.blocks) == "(7,0,0)", name
        assert g.what() == "invalid __global__ writes of 4 bytes"
    print(f"{n} invalid writes, threads {min(xs)}..{max(xs)}: one group in the XML and both texts")


def test_the_error_is_named_at_the_scripts_store_and_kept(trace: Path, run_cli) -> None:
    out = finish(trace, report("oob_memcheck.xml"))
    run = run_dirs(trace)[-1]
    line = store_line(SCRIPT)
    [mem] = [n for n in out.named if n.group.first.space]
    assert mem.python is not None and mem.python["line"] == line, (mem.python, line)
    assert Path(mem.python["file"]).name == SCRIPT.name
    assert re.match(r"\s*B\[.*\]\s*=", cuda_store(run, mem.group.first.line or 0))  # the .cu line stores to B
    assert mem.cuda == cuda_store(run, 19)
    said = line_of(mem.to_json("memcheck"))
    assert said == (
        f"memcheck: 24 invalid __global__ writes of 4 bytes in main_kernel at oob.py:{line} "
        "`B[bx * 128 + i] = ...`, threads (104..127,0,0) block (7,0,0)"
    )
    kept = json.loads((run / SANITIZER).read_text())
    assert (run / SANITIZER_XML).is_file() and kept["report"] == SANITIZER_XML
    res = run_cli("show", trace, "-1", "--sanitizer")
    assert res.exit_code == 0, res.output
    assert said in res.stdout.splitlines()
    assert "cudaDeviceSynchronize (at oob.py:24)" in res.stdout  # an API error at its launch's line
    res = run_cli("show", trace, "-1", "--sanitizer", "--json")
    data = check(json.loads(res.stdout), "sanitizer")  # docs/show.schema.json
    assert data["sanitized"] and data["tool"] == "memcheck"
    assert [e["python"]["line"] for e in data["errors"] if e["python"]] == [line]
    print(said)


def test_a_run_not_sanitized_says_so(trace: Path, run_cli) -> None:
    res = run_cli("show", trace, "-1", "--sanitizer")
    assert res.exit_code == 0 and "was not run under 'tltrace run --sanitize'" in res.stdout
    res = run_cli("show", trace, "-1", "--sanitizer", "--json")
    assert check(json.loads(res.stdout), "sanitizer")["sanitized"] is False


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda d: d[: len(d) // 2], "cut short or damaged at line"),
        (lambda d: b"\x00\xffgarbage" * 50, "neither compute-sanitizer's XML nor its text"),
        (lambda d: d[:200], "cut short or damaged"),
        (lambda d: b"", "the report is empty"),
        (
            lambda d: (
                b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><r>&e;</r>'
            ),
            "declares a DTD",
        ),
    ],
)
def test_a_damaged_report_is_one_line(trace: Path, damage, words: str, capsys) -> None:
    out = finish(trace, damage(report("oob_memcheck.xml")))
    assert out.report.problem is not None and words in out.report.problem
    say_outcome(out)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "passwd" not in err
    assert err.splitlines()[0] == f"memcheck: {out.report.problem}"
    kept = json.loads((run_dirs(trace)[-1] / SANITIZER).read_text())
    assert kept["problem"] == out.report.problem  # the records say the report was damaged


def test_half_a_report_keeps_the_errors_before_the_cut(trace: Path) -> None:
    data = report("oob_memcheck.xml")
    out = finish(trace, data[: len(data) // 2])
    n = len(out.report.records)
    assert 0 < n < data.count(b"<record>")
    assert f"the {n} records before it kept" in (out.report.problem or "")
    assert out.named[0].python is not None and out.named[0].python["line"] == store_line(SCRIPT)


def test_damaged_records_are_one_line_exit_3(trace: Path, run_cli) -> None:
    finish(trace, report("oob_memcheck.xml"))
    (run_dirs(trace)[-1] / SANITIZER).write_text('{"schema": 1, "tool": "memcheck", "errors": 3}')
    one_line_error(run_cli("show", trace, "-1", "--sanitizer"), EXIT_RECORDS, SANITIZER)


def test_an_invocation_that_was_there_before_is_not_named(trace: Path) -> None:
    out = finish(trace, report("oob_memcheck.xml"), outer.run_dirs(trace))
    assert out.invocation is None and not out.kept and out.xml == trace / SANITIZER_XML
    assert all(n.python is None for n in out.named) and not list(trace.glob(".sanitizer*"))
    say_outcome(out)


def test_the_errors_go_to_the_invocation_the_child_traced_not_a_strays(trace: Path) -> None:
    """The runs of the sanitized child are found as `run --ncu`'s are (runtime/outer.py): those new
    since the start, of the invocation most of them belong to; a run of another invocation is left alone."""
    [run] = run_dirs(trace)
    inv = json.loads((run / "manifest.json").read_text())["invocation"]
    stray = shutil.copytree(run, run.with_name(run.name + "_stray"))
    m = json.loads((stray / "manifest.json").read_text())
    (stray / "manifest.json").write_text(json.dumps(m | {"invocation": inv + "_other"}))
    shutil.copytree(run, run.with_name(run.name + "_second"))  # a second compile of the child's invocation
    out = finish(trace, report("oob_memcheck.xml"))
    assert out.invocation == inv and stray / SANITIZER not in out.kept and not (stray / SANITIZER).exists()
    assert out.kept and all(p.parent != stray for p in out.kept)
    assert (
        run.with_name(run.name + "_second") / SANITIZER_XML
    ).is_file()  # the newest compile: the XML's home


def test_a_pc_the_sass_map_puts_elsewhere_is_said() -> None:
    e = {"tool": "memcheck", "count": 2, "what": "invalid __shared__ reads of 8 bytes", "kernel": "k_kernel"}
    e |= {"python": None, "cuda_line": 7, "pc": "0x40", "threads": "(0..1,0,0)", "blocks": "(0,0,0)"}
    e |= {"n_blocks": 1, "sass": {"line": 9, "agrees": False}, "note": "2 compiles define k_kernel"}
    assert line_of(e) == (
        "memcheck: 2 invalid __shared__ reads of 8 bytes in k_kernel at kernel.cu:7, threads (0..1,0,0) "
        "block (0,0,0); the SASS map puts pc 0x40 at kernel.cu:9, compute-sanitizer at kernel.cu:7 "
        "(2 compiles define k_kernel)"
    )
    assert "\x1b" not in line_of(e | {"kernel": "k\x1b[2J"})  # control characters shown, not sent


def test_the_child_command_line_drops_only_tltraces_sanitize() -> None:
    import typer

    from tltrace.cli.app import app
    from tltrace.cli.shared import without_option

    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    cases = {
        ("--sanitize", "--quiet", "s.py", "--sanitize"): ["--quiet", "s.py"],  # right after SCRIPT: tltrace's
        ("--sanitize", "s.py", "a", "--sanitize"): [
            "s.py",
            "a",
            "--sanitize",
        ],  # after an argument: the script's
        ("--sanitize=racecheck", "--trace-dir", "--sanitize", "s.py"): ["--trace-dir", "--sanitize", "s.py"],
        ("s.py", "--sanitize=initcheck", "--sass", "x", "--sanitize"): ["s.py", "--sass", "x", "--sanitize"],
        ("-m", "pkg.mod", "--sanitize", "--", "--sanitize"): ["-m", "pkg.mod", "--", "--sanitize"],
    }
    for args, want in cases.items():
        assert without_option(run, list(args), "--sanitize") == want, args
    cmd = sanitize.command("cs", "racecheck", Path("f.xml"), ["run", "s.py"])
    assert cmd[:6] == ["cs", "--tool", "racecheck", "--xml", "--save", "f.xml"] and cmd[-2:] == [
        "run",
        "s.py",
    ]
    assert sanitize.environment({})[sanitize.NO_CACHING] == "1"
    assert sanitize.environment({sanitize.NO_CACHING: "0"})[sanitize.NO_CACHING] == "0"  # the user's stays


def test_without_compute_sanitizer_the_script_runs_and_one_line_says_so(
    tmp_path: Path, run_cli, monkeypatch
) -> None:
    monkeypatch.setattr(sanitize, "find", lambda: None)
    script = tmp_path / "plain.py"
    script.write_text("print('the script ran')\n")
    res = run_cli("run", "--sanitize", "--trace-dir", tmp_path / "td", script)
    assert res.exit_code == 0 and "the script ran" in res.stdout
    said = [ln for ln in res.stderr.splitlines() if "compute-sanitizer" in ln]
    assert said == [
        "tltrace: --sanitize: compute-sanitizer not found (PATH, beside nvcc, /usr/local/cuda/bin); "
        "the script runs without it"
    ]
    one_line_error(run_cli("run", "--sanitize=leakcheck", script), 2, "leakcheck", "memcheck")


def test_a_fault_reading_the_report_keeps_the_exit_status(tmp_path: Path, monkeypatch) -> None:
    def broken(*_a, **_k):
        raise RuntimeError("a bug of tltrace's")

    monkeypatch.setattr(sanitize, "finish", broken)
    exe = shutil.which("false")
    assert exe is not None
    out = sanitize.run(
        exe, "memcheck", ["--version"], tmp_path / "script"
    )  # `false` exits 1, whatever it is given
    assert (
        out.code == 1
        and out.report.problem == "its report could not be read (RuntimeError: a bug of tltrace's)"
    )
