"""Every command tltrace prints or copies works as printed: from another directory, and after
a run with `--trace-dir` (#32 item 5)."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from tltrace.config import trace_dir_args

from ._cli import cli_proc
from ._records import copy_tree, recorded_runs


def _report_meta(report: Path) -> dict:
    from tltrace.render.pages import chunk_values, report_head

    data = report.read_bytes()
    start = len(report_head())
    metas = []  # the page keeps the last one (a compile's header grows as it runs)
    for chunk in chunk_values(data[start:]):
        if chunk is not None and chunk.get("t") == "meta":
            metas.append(chunk)
    assert metas, f"no meta chunk in {report}"
    return metas[-1]


def _rebuilt_repro(recorded: Path, tmp_path: Path, run_cli) -> tuple[list[str], Path]:
    (tmp_path / "somewhere").mkdir()
    trace = copy_tree(recorded, tmp_path / "somewhere" / "traces")
    run = recorded_runs(trace, "elementwise_add")[-1]
    r = run_cli("show", "--trace-dir", trace, run, "--html")
    assert r.exit_code == 0, r.stderr
    return shlex.split(_report_meta(run / "report.html")["repro"]), run


def test_the_reports_repro_command_names_the_trace_dir(recorded, tmp_path, run_cli, monkeypatch):
    words, run = _rebuilt_repro(recorded, tmp_path, run_cli)
    assert words[:2] == ["tltrace", "repro"] and words[-1] == "--pass"
    at = words.index("--trace-dir")
    assert Path(words[at + 1]).is_absolute() and Path(words[at + 1]) == run.parent.parent.parent
    # The same words name the compile for `show` from another directory (what repro resolves).
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = run_cli("show", *words[2:-1], "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["run_id"] == run.name


@pytest.mark.compile
def test_the_copied_repro_command_runs_from_another_directory(examples_dir, tmp_path, run_cli):
    """A traced run with --trace-dir (as `%%tltrace --trace-dir traces` makes one): the report's
    command, pasted in another directory, reproduces the pass."""
    r = run_cli("run", "-q", "--mode", "html", "--trace-dir", "traces", examples_dir / "elementwise_add.py")
    assert r.exit_code == 0, r.stderr
    run = recorded_runs(tmp_path / "traces", "elementwise_add")[-1]
    words = shlex.split(_report_meta(run / "report.html")["repro"])
    manifest = json.loads((run / "manifest.json").read_text())
    index = next(r["index"] for r in manifest["records"] if r["status"] == "changed" and r["depth"] == 0)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    p = cli_proc(*words[1:], index, "-o", elsewhere / "r", cwd=elsewhere, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "reproduced" in p.stdout + p.stderr


def test_trace_dir_args(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TL_LOWER_TRACE_DIR", raising=False)
    assert trace_dir_args("tmp/lower_trace_dir") == []
    assert trace_dir_args(tmp_path / "tmp" / "lower_trace_dir") == []
    assert trace_dir_args("traces") == ["--trace-dir", "traces"]
    assert trace_dir_args("tmp/lower_trace_dir", absolute=True) == [
        "--trace-dir",
        str(tmp_path / "tmp" / "lower_trace_dir"),
    ]
    monkeypatch.setenv("TL_LOWER_TRACE_DIR", "traces")
    assert trace_dir_args("traces") == []  # the default of this environment
    assert trace_dir_args("tmp/lower_trace_dir") == ["--trace-dir", "tmp/lower_trace_dir"]


def test_hints_in_errors_carry_the_trace_dir(recorded, tmp_path, run_cli):
    trace = copy_tree(recorded, tmp_path / "traces")
    r = run_cli("show", "--trace-dir", trace, "two_kernels", "-1", "--pass", "1")
    assert r.exit_code == 2
    r = run_cli("show", "--trace-dir", trace, "two_kernels", "-1")
    hint = r.stdout.split("open one: ", 1)[1].split(" SIGNATURE")[0]
    assert shlex.split(hint)[2:4] == ["--trace-dir", str(trace)]
    r = run_cli(*shlex.split(hint)[1:], "--kernel", "vadd", "--json")
    assert r.exit_code == 0, r.stderr


def test_a_command_word_with_any_control_character_is_one_line_and_pastes_back():
    """Each word holding a control character, DEL, a C1 control or U+2028/9 is quoted `$'...'`:
    the command is one line of printable text, and bash (the oracle) reads every word back."""
    import shutil

    from tltrace.proc.shell import command

    if shutil.which("bash") is None:
        pytest.skip("no bash")
    hard = [chr(c) for c in (*range(1, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)]
    words = [f"k{ch}'\\ x" for ch in hard] + ["my dir", "plain", "it's"]
    line = command(*words)
    assert line.isprintable() and "\u2028" not in line
    got = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + line], capture_output=True, check=True, env={"LC_ALL": "C.UTF-8"}
    ).stdout
    assert got.decode("utf-8").split("\0")[:-1] == words
    assert command("a b", "c") == "'a b' c"  # plain words quoted as before
