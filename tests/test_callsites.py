"""The call site of every compile (the manifest's `stack`) and compiles grouped by it (the stack trie).

A script whose helper compiles two kernels from two call sites is traced for real (CPU); `show
--json` has a stack per compile and `show` and the index group them under the right lines. The
trie (history/callsites.py) and its browser twin (render/assets/callsites.js) agree on the same
stacks; a compile in a worker thread says so, and names its submitter when it can be known.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests._kernels import ADD
from tests._node import run_node
from tltrace.callsites.stack import WORKER, call_site
from tltrace.history import callsites

from ._cli import cli_proc

SCRIPT = (
    ADD
    + """

def helper(n):
    return tilelang.compile(make_add(n), target="c", execution_backend="cython")  # line 16


def layer_a():
    return helper(128)  # line 20


def layer_b():
    return helper(256)  # line 24


def main():
    layer_a()  # line 28
    layer_b()  # line 29


main()  # line 32
"""
)


def _tltrace(d: Path, *args: str) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=d, timeout=300)


@pytest.fixture(scope="module")
def two_sites(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("callsites")
    (d / "model.py").write_text(SCRIPT)
    res = _tltrace(d, "run", "-q", "--mode", "html", "--trace-dir", "T", "model.py")
    assert res.returncode == 0, res.stderr[-2000:]
    return d


def test_show_json_has_a_stack_per_compile(two_sites: Path) -> None:
    res = _tltrace(two_sites, "show", "--trace-dir", "T", "model.py", "-1", "--json")
    assert res.returncode == 0, res.stderr
    compiles = json.loads(res.stdout)["invocation"]["compiles"]
    assert len(compiles) == 2
    script = str(two_sites / "model.py")
    got = sorted(
        [(f["file"], f["line"], f["func"]) for f in c["stack"]] for c in compiles
    )  # outermost first: <module> -> main -> layer -> helper, nothing of tltrace or TileLang
    assert got == [
        [(script, 32, "<module>"), (script, 28, "main"), (script, 20, "layer_a"), (script, 16, "helper")],
        [(script, 32, "<module>"), (script, 29, "main"), (script, 24, "layer_b"), (script, 16, "helper")],
    ]
    one = _tltrace(
        two_sites, "show", "--trace-dir", "T", "model.py", "-1", compiles[0]["signature"], "--json"
    )
    assert json.loads(one.stdout)["stack"] == compiles[0]["stack"]  # the manifest's, as show gives it


def test_show_groups_the_compiles_under_their_call_sites(two_sites: Path) -> None:
    res = _tltrace(two_sites, "show", "--trace-dir", "T", "model.py", "-1")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    shared = next(i for i, ln in enumerate(lines) if ln.strip() == "model.py:32 <module>")
    a = next(
        i for i, ln in enumerate(lines) if "model.py:28 main › model.py:20 layer_a › model.py:16 helper" in ln
    )
    b = next(
        i for i, ln in enumerate(lines) if "model.py:29 main › model.py:24 layer_b › model.py:16 helper" in ln
    )
    assert shared < a < b
    assert "add 128" in lines[a + 1] and "add 256" in lines[b + 1]  # each compile under its own line
    one = _tltrace(two_sites, "show", "--trace-dir", "T", "model.py", "-1", "add 128")
    assert "called from model.py:28 main › model.py:20 layer_a › model.py:16 helper" in one.stdout


def test_the_index_rows_carry_the_stack_and_group_the_same_way(two_sites: Path, tmp_path: Path) -> None:
    from tltrace.render.index import index_rows

    rows = index_rows(two_sites / "T" / "model" / "report.html")
    assert len(rows) == 2 and all(r["stack"] for r in rows)
    stacks = [r["stack"] for r in rows]
    py = [(d, callsites.Node.label(n), n.items) for d, n in callsites.walk(callsites.build(stacks))]
    js = run_node(
        "const C=require(require('path').join(process.argv[1],'callsites.js'));"
        "const s=JSON.parse(require('fs').readFileSync(process.argv[2]));"
        "console.log(JSON.stringify(C.walk(C.build(s)).map(d=>[d[0],C.nodeLabel(d[1]),d[1].items])))",
        stacks,
        tmp_path,
    )
    assert [list(x) for x in py] == js
    assert [x[1] for x in py] == [
        "model.py:32 <module>",
        "model.py:28 main › model.py:20 layer_a › model.py:16 helper",
        "model.py:29 main › model.py:24 layer_b › model.py:16 helper",
    ]


def test_the_trie_folds_and_keeps_compiles_without_a_stack() -> None:
    f = [
        {"file": "/x/m.py", "line": n, "func": fn} for n, fn in ((1, "<module>"), (5, "build"), (9, "helper"))
    ]
    stacks = [f, f[:2] + [{"file": "/x/m.py", "line": 11, "func": "helper"}], None, "junk"]
    root = callsites.build(stacks)
    assert root.items == [2, 3]  # no stack (or a malformed one): at the root, listed first
    assert [(d, n.label(), n.items) for d, n in callsites.walk(root)] == [
        (0, "m.py:1 <module> › m.py:5 build", []),
        (1, "m.py:9 helper", [0]),
        (1, "m.py:11 helper", [1]),
    ]
    assert callsites.sites(stacks) == 2 and callsites.call_site(f) == "m.py:9 helper"
    assert callsites.label((WORKER, 0, "pool_0")) == "(worker thread) pool_0"


def test_a_worker_thread_says_so_and_names_an_autotuner_submitter() -> None:
    got: list = []
    t = threading.Thread(target=lambda: got.append(call_site()), name="pool_0")
    t.start()
    t.join()
    (stack,) = got
    assert stack[0] == {"file": WORKER, "line": 0, "func": "pool_0"}
    assert stack[-1]["func"] == "<lambda>" and stack[-1]["file"] == __file__

    # A thread standing in TileLang's autotuner (its frames' file is under tilelang/autotuner/)
    # while a pool thread compiles: the compile's stack starts with that thread's user frames.
    ns: dict = {}
    code = "def run(ev, done):\n    ev.set()\n    done.wait(30)\n"
    exec(compile(code, os.path.join(os.sep, "x", "tilelang", "autotuner", "tuner.py"), "exec"), ns)
    ev, done = threading.Event(), threading.Event()

    def submitter() -> None:  # the user's call that started the autotuner
        ns["run"](ev, done)

    s = threading.Thread(target=submitter)
    s.start()
    ev.wait(30)
    t = threading.Thread(target=lambda: got.append(call_site()), name="pool_1")
    t.start()
    t.join()
    done.set()
    s.join()
    stack = got[-1]
    hop = stack.index({"file": WORKER, "line": 0, "func": "pool_1"})
    assert hop > 0 and stack[hop - 1]["func"] == "submitter"


@pytest.mark.browser
def test_the_index_groups_by_call_site_and_a_header_links_into_the_source(two_sites: Path, open_page) -> None:
    index = two_sites / "T" / "model" / "report.html"
    page = open_page(index)
    rows = page.evaluate(
        "() => [...document.querySelectorAll('#ix-body tr')].map(tr => tr.classList.contains('ix-site') ? "
        "'site ' + tr.textContent : 'run ' + tr.querySelector('td.sig').textContent)"
    )
    assert rows[0] == "site model.py:32 <module>"
    assert rows[1] == "site model.py:28 main › model.py:20 layer_a › model.py:16 helper"
    assert rows[2].startswith("run add 128")
    assert rows[3] == "site model.py:29 main › model.py:24 layer_b › model.py:16 helper"
    assert rows[4].startswith("run add 256")
    page.click("#ix-head th[data-key='passes']")  # sorted by a column: plain rows
    assert page.evaluate("() => document.querySelectorAll('#ix-body tr.ix-site').length") == 0
    (report,) = [
        m.parent / "report.html"
        for m in (two_sites / "T").glob("*/.run_records/run_*/manifest.json")
        if json.loads(m.read_text())["signature"].startswith("add 128")
    ]
    rep = open_page(report)
    assert (
        rep.evaluate("() => document.querySelector('.tl-callsite').textContent")
        == "called from model.py:16 helper"
    )
    if rep.query_selector(".tl-callsite a"):  # the Source pane holds model.py: the link opens it there
        rep.click(".tl-callsite a")
        assert rep.evaluate("() => !document.getElementById('tl-source').hidden")
