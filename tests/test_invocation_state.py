"""One Invocation owns the state of one invocation: enable() again inside a span goes on with it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tltrace
from tltrace.config import Settings
from tltrace.session.events import InvocationFinished, Notice
from tltrace.tracing import invocation as inv_mod

from ._records import EXAMPLES

CPU = {"target": "c", "execution_backend": "cython"}


@pytest.fixture(autouse=True)
def _always_disable():
    yield
    tltrace.disable()


def test_enable_again_inside_a_span_keeps_the_compiled_edit_applied(tmp_path: Path, capsys) -> None:
    import tilelang

    sys.path.insert(0, str(EXAMPLES))
    try:
        from elementwise_add import make_add
    finally:
        sys.path.remove(str(EXAMPLES))
    td = tmp_path / "traces"
    tltrace.enable(mode="both", trace_dir=td)
    tilelang.compile(make_add(256, 128), **CPU)
    tltrace.disable()
    [wf] = td.glob("*/codegen_device.cpp")
    wf.write_text("// my edit\n" + wf.read_text())
    capsys.readouterr()

    tltrace.enable(mode="both", trace_dir=td)
    tilelang.compile(make_add(256, 128), **CPU)
    tltrace.enable(mode="both", trace_dir=td)  # docs/api.md: the same invocation goes on
    tltrace.disable()
    out = capsys.readouterr().out
    assert "PATCHED" in out, out
    assert "NOT-APPLIED" not in out, out
    # The edit is reported when it really was not compiled: a span that compiles nothing.
    tltrace.enable(mode="both", trace_dir=td)
    tltrace.disable()
    assert "NOT-APPLIED" in capsys.readouterr().out


def test_the_lifecycle_open_rebind_finish(tmp_path: Path) -> None:
    events: list = []
    s = Settings(mode="terminal", trace_dir=tmp_path, script_name="s", keep=0)
    inv = inv_mod.Invocation(s, events.append).open()
    assert inv_mod.find(s.invocation) is inv and s.invocation in inv_mod.open_ids()
    assert inv_mod.ledger_of(s) is inv.ledger
    ledger = inv.ledger
    s2 = Settings(mode="both", trace_dir=tmp_path, script_name="s", keep=0, invocation=s.invocation)
    inv.rebind(s2, events.append)
    assert inv_mod.ledger_of(s2) is ledger  # keyed by the invocation id, not by a Settings object
    with pytest.raises(ValueError):
        inv.rebind(Settings(mode="both", trace_dir=tmp_path, script_name="s"), events.append)
    inv.finish()
    inv.finish()  # once
    assert [type(e) for e in events] == [InvocationFinished]
    assert inv_mod.find(s.invocation) is None and s.invocation not in inv_mod.open_ids()
    assert inv_mod.ledger_of(s) is None


def test_cache_hits_belong_to_their_invocation(tmp_path: Path) -> None:
    """The names of cache hits live on the invocation: a new invocation starts with none."""
    a = inv_mod.Invocation(
        Settings(mode="terminal", trace_dir=tmp_path, script_name="s", use_cache=True), print
    )
    a.cached.add("k")
    b = inv_mod.Invocation(
        Settings(mode="terminal", trace_dir=tmp_path, script_name="s", use_cache=True), print
    )
    assert b.cached == set()
    events: list = []
    c = inv_mod.Invocation(Settings(mode="terminal", trace_dir=tmp_path, script_name="s"), events.append)
    assert c.check_cache() == 0 and not any(isinstance(e, Notice) for e in events)
