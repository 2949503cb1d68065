"""Remarks (`tltrace run --remarks`): each top-level pass's stderr on its record, the terminal unchanged.

The end-to-end tests run real CPU compiles with TileLang's vectorize planner on, once plainly
(the planner turned on by the script's own pass config) and once under `tltrace run
--remarks=vectorize` (turned on by tltrace): the planner's text is recorded on the passes that
printed it and nowhere else, and stderr is byte for byte the plain run's. The recorder's fd
capture is also driven directly (a FAILED pass keeps its remark; threads are serialised).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests._kernels import ADD, elementwise
from tests._schema import check
from tltrace.config import REMARK_PLANNERS, parse_remarks
from tltrace.errors import UsageError
from tltrace.facts.collect import remark_facts
from tltrace.history.loading import load_manifest
from tltrace.remarks.recorder import RemarksRecorder, kinds_of
from tltrace.session.recorder import PassEvent

from ._cli import cli_env, cli_proc

KERNEL = (
    "\nimport os\n"
    + ADD
    + """

configs = {"tl.enable_vectorize_planner_verbose": True} if os.environ.get("PLANNER_BY_SCRIPT") else {}
tilelang.compile(make_add(256), target="c", execution_backend="cython", pass_configs=configs)
print("compiled")
"""
)


def _env(**extra: str) -> dict[str, str]:
    return cli_env(clean=True, **extra)


def _manifests(trace: Path) -> list[dict]:
    """Each run's manifest as a reader has it (the facts a quiet capture left out derived: history/derived.py)."""
    return [
        json.loads(load_manifest(p.parent, derive=True).dumps())
        for p in sorted(trace.glob("*/.run_records/run_*/manifest.json"))
    ]


@pytest.fixture(scope="module")
def planner_runs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("remarks")
    script = d / "vec.py"
    script.write_text(KERNEL)
    plain = subprocess.run(
        [sys.executable, str(script)],
        cwd=d,
        env=_env(PLANNER_BY_SCRIPT="1"),
        capture_output=True,
        timeout=300,
    )
    traced = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "T", "--remarks=vectorize", "vec.py"],
        cwd=d,
        env=_env(),
        capture_output=True,
        timeout=300,
    )
    untraced_remarks = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "U", "vec.py"],
        cwd=d,
        env=_env(),
        capture_output=True,
        timeout=300,
    )
    return {"dir": d, "plain": plain, "traced": traced, "off": untraced_remarks}


def test_the_planners_text_is_on_the_passes_that_printed_it(planner_runs: dict) -> None:
    plain, traced = planner_runs["plain"], planner_runs["traced"]
    assert plain.returncode == 0 and traced.returncode == 0, traced.stderr.decode()[-2000:]
    assert b"VectorizePlanner" in plain.stderr
    # The terminal's stderr is the plain run's, byte for byte (tltrace adds nothing there under -q).
    assert traced.stderr == plain.stderr
    (m,) = _manifests(planner_runs["dir"] / "T")
    rem = m["remarks"]
    assert rem["planners"] == ["vectorize"] and rem["serialised"] is True
    assert rem["passes"], "no pass kept a remark"
    # Every byte the compile wrote to stderr is on exactly one pass, in order.
    assert "".join(p["text"] for p in rem["passes"]).encode() == plain.stderr
    by_index = {r["index"]: r for r in m["records"]}
    for p in rem["passes"]:
        rec = by_index[p["index"]]
        assert rec["name"] == p["name"] and rec["depth"] == 0  # a top-level pass of this compile
        assert "vectorize_plan" in p["kinds"]
        assert p["lines"] == len(p["text"].splitlines())
    # ... and on no other pass: each planner block is on the pass that ran when it was printed,
    # which is one of the passes that plan loops (read from the manifest, never a fixed list).
    assert len({p["index"] for p in rem["passes"]}) == len(rem["passes"])
    assert m["facts"]["values"]["remarks"] == plain.stderr.decode().count("\n")
    assert m["facts"]["values"]["ws_skipped"] is None


def test_show_remarks_reads_them_back(planner_runs: dict) -> None:
    d = planner_runs["dir"]
    (m,) = _manifests(d / "T")
    first = m["remarks"]["passes"][0]
    out = subprocess.run(
        [sys.executable, "-m", "tltrace", "show", "--trace-dir", "T", "vec.py", "-1", "--pass", first["name"]]
        + ["--remarks", "--json"],
        cwd=d,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    data = check(json.loads(out.stdout), "pass")  # docs/show.schema.json
    assert data["record"]["index"] == first["index"] and data["remarks"]["text"] == first["text"]
    every = cli_proc(
        "show", "--trace-dir", "T", "vec.py", "-1", "--remarks", "--json", cwd=d, env=_env(), timeout=120
    )
    assert check(json.loads(every.stdout), "remarks")["remarks"] == m["remarks"]
    text = cli_proc("show", "--trace-dir", "T", "vec.py", "-1", "--remarks", cwd=d, env=_env(), timeout=120)
    assert text.returncode == 0, text.stderr
    assert f"#{first['index']} {first['name']}" in text.stdout and "VectorizePlanner" in text.stdout


def test_without_remarks_nothing_is_captured(planner_runs: dict) -> None:
    off = planner_runs["off"]
    assert off.returncode == 0 and off.stderr == b""
    (m,) = _manifests(planner_runs["dir"] / "U")
    assert m["remarks"] is None and m["facts"]["values"]["remarks"] is None
    res = cli_proc(
        "show",
        "--trace-dir",
        "U",
        "vec.py",
        "-1",
        "--remarks",
        cwd=planner_runs["dir"],
        env=_env(),
        timeout=120,
    )
    assert res.returncode == 2 and "not run with --remarks" in res.stderr and "Traceback" not in res.stderr


# -- the recorder's capture, driven directly (real fd 2, no TileLang) -------------------------------
def _event(index: int, name: str = "tl.SomePass") -> PassEvent:
    return PassEvent(index, name, "pipeline_c", 0, None)


def test_a_failed_pass_keeps_its_remark_and_the_terminal_gets_it(capfd) -> None:
    r = RemarksRecorder(())
    r.pass_started(_event(3), None)  # type: ignore[arg-type]
    os.write(2, b"AutoWarpSpecialization skipped: no TMA copies in pipeline loop\n")
    os.write(2, b"layout inference falling back to the strict level\n")
    r.pass_failed(_event(3), None)  # type: ignore[arg-type]
    os.write(2, b"after the pass\n")
    r.finish()
    (p,) = r.value()["passes"]
    assert p["index"] == 3 and p["name"] == "SomePass" and p["kinds"] == ["layout_fallback", "ws_skipped"]
    assert p["text"] == (
        "AutoWarpSpecialization skipped: no TMA copies in pipeline loop\n"
        "layout inference falling back to the strict level\n"
    )
    err = capfd.readouterr().err
    assert err == p["text"] + "after the pass\n"  # the terminal: the same text, in order
    facts = remark_facts(r.value())
    assert facts == {"remarks": 2, "ws_skipped": "no TMA copies in pipeline loop", "layout_fallbacks": 1}


def test_threads_are_serialised_so_each_pass_gets_its_own_text(capfd) -> None:
    a, b = RemarksRecorder(()), RemarksRecorder(())
    a_in = threading.Event()

    def first() -> None:
        a.pass_started(_event(0, "A"), None)  # type: ignore[arg-type]
        a_in.set()
        os.write(2, b"A1\n")
        time.sleep(0.2)  # the other thread wants fd 2 now: it waits for this pass to end
        os.write(2, b"A2\n")
        a.pass_finished(_event(0, "A"))

    def second() -> None:
        a_in.wait()
        b.pass_started(_event(0, "B"), None)  # type: ignore[arg-type]
        os.write(2, b"B1\n")
        b.pass_finished(_event(0, "B"))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [p["text"] for p in a.value()["passes"]] == ["A1\nA2\n"]
    assert [p["text"] for p in b.value()["passes"]] == ["B1\n"]
    assert capfd.readouterr().err == "A1\nA2\nB1\n"


def test_nested_and_silent_passes_leave_no_remark(capfd) -> None:
    r = RemarksRecorder(())
    r.pass_started(_event(0), None)  # type: ignore[arg-type]
    r.pass_started(PassEvent(1, "inner", "p", 1, 0), None)  # type: ignore[arg-type]
    os.write(2, b"x\n")
    r.pass_finished(PassEvent(1, "inner", "p", 1, 0))
    r.pass_finished(_event(0))
    r.pass_started(_event(2), None)  # type: ignore[arg-type]
    r.pass_finished(_event(2))
    assert [(p["index"], p["text"]) for p in r.value()["passes"]] == [(0, "x\n")]  # the top-level pass's
    assert capfd.readouterr().err == "x\n"


def test_the_remarks_grammar_and_kinds() -> None:
    assert parse_remarks(None) is None and parse_remarks("") == ()
    assert parse_remarks("vectorize, reducer,vectorize") == ("vectorize", "reducer")
    assert parse_remarks("all") == tuple(REMARK_PLANNERS)
    with pytest.raises(UsageError, match="not a planner"):
        parse_remarks("vectorise")
    kinds = kinds_of("[WS] skipped: no TMA\nLayout inference falling back to strict\nfalling back to x\nhi\n")
    assert kinds == {
        "ws_skipped": ["[WS] skipped: no TMA"],
        "layout_fallback": ["Layout inference falling back to strict"],
        "fallback": ["falling back to x"],
    }


def test_a_bad_planner_name_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = cli_proc("run", "--remarks=vectorise", "nothing.py", cwd=tmp_path, env=_env(), timeout=120)
    assert res.returncode == 2 and "not a planner" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.browser
def test_the_report_shows_remark_badges_and_the_text_under_the_diff(planner_runs: dict, open_page) -> None:
    from tests.conftest import wait_js

    d = planner_runs["dir"]
    res = cli_proc("show", "--trace-dir", "T", "vec.py", "-1", "--html", cwd=d, env=_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    (m,) = _manifests(d / "T")
    passes = m["remarks"]["passes"]
    (report,) = (d / "T").glob("*/.run_records/run_*/report.html")
    page = open_page(report)
    badged = page.evaluate(
        "() => [...document.querySelectorAll('li.tl-pass')].filter(li => li.querySelector('.tl-remark-badge'))"
        ".map(li => Number(li.getAttribute('data-index')))"
    )
    assert badged == [p["index"] for p in passes]  # the passes that printed, and no other
    page.click(f"li.tl-pass[data-index='{passes[-1]['index']}']")
    wait_js(page, "document.querySelector('.tl-remarks pre')")
    assert page.evaluate("() => document.querySelector('.tl-remarks pre').textContent") == passes[-1]["text"]
    silent = next(r["index"] for r in m["records"] if r["index"] not in {p["index"] for p in passes})
    page.click(f"li.tl-pass[data-index='{silent}']")
    wait_js(page, "!document.querySelector('.tl-remarks')")
    assert page.evaluate("() => document.querySelector('.tl-callsite').textContent").startswith(
        "called from vec.py:"
    )


def test_a_child_process_gets_the_parents_remarks(tmp_path: Path) -> None:
    from tltrace.config import build_settings
    from tltrace.tracing.children import settings_from_json, settings_json

    for value, want in (("vectorize,reducer", ("vectorize", "reducer")), ("", ()), (None, None)):
        s = build_settings(mode="terminal", trace_dir=tmp_path, script_name="x", remarks=value)
        if value is None:
            assert s.remarks is None  # TLTRACE_REMARKS unset (the fixture's environment)
        got, _ = settings_from_json(settings_json(s, os.getpid()))
        assert got.remarks == want


def test_a_pass_never_waits_forever_for_another_threads(capfd, monkeypatch) -> None:
    from tltrace.remarks import recorder as remarks

    monkeypatch.setattr(remarks, "WAIT_S", 0.2)
    a, b = RemarksRecorder(()), RemarksRecorder(())
    a.pass_started(_event(0, "A"), None)  # type: ignore[arg-type]  # held by this thread
    done = threading.Event()

    def other() -> None:
        b.pass_started(_event(5, "B"), None)  # type: ignore[arg-type]  # waits 0.2 s, then runs uncaptured
        os.write(2, b"B\n")
        b.pass_finished(_event(5, "B"))
        done.set()

    t = threading.Thread(target=other)
    t.start()
    assert done.wait(30)
    a.pass_finished(_event(0, "A"))
    t.join()
    assert b.value()["uncaptured"] == [5] and b.value()["passes"] == []
    assert [p["text"] for p in a.value()["passes"]] == ["B\n"]  # it wrote while A held fd 2
    assert capfd.readouterr().err == "B\n"


WS_SKIP = (
    """
import tilelang
import tilelang.language as T
from tvm.target import Target
"""
    + elementwise(dtype="float16", block=128)
    + """

target = Target({"kind": "cuda", "arch": "sm_90a"})  # lowered on the CPU: no GPU needed
config = {"tl.enable_auto_warp_specialization": "role_based"}
with target, tilelang.transform.PassContext(opt_level=3, config=config):
    tilelang.lower(make_add(1024), target=target)
"""
)


def test_a_warp_specialization_skip_is_named_and_a_fact(tmp_path: Path) -> None:
    (tmp_path / "ws.py").write_text(WS_SKIP)
    res = cli_proc(
        "run", "-q", "--trace-dir", "T", "--remarks", "ws.py", cwd=tmp_path, env=_env(), timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    (m,) = _manifests(tmp_path / "T")
    ws = [p for p in m["remarks"]["passes"] if "ws_skipped" in p["kinds"]]
    assert ws, m["remarks"]
    assert ws[0]["text"] in res.stderr  # the terminal still got it
    reason = ws[0]["text"].split("skipped:", 1)[1].strip()
    assert m["facts"]["values"]["ws_skipped"] == reason
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "check",
            "--trace-dir",
            "T",
            "ws.py",
            "--expect",
            "ws_skipped == none",
        ],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 1 and reason in check.stdout + check.stderr
