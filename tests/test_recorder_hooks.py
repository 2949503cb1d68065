"""The recorder hooks that change the compile (session/recorder.py): pass configs, the module handed
back, a feature's own seam tool; and a hook no recorder overrides is never called."""

from __future__ import annotations

import runpy
from collections.abc import Iterator
from typing import Any

import pytest

from tltrace.config import Settings
from tltrace.session import recorder as rc

CONFIG = "tl.disable_warp_specialized"  # a bool pass config TileLang registers; nothing on CPU reads it


@pytest.fixture
def registry() -> Iterator[None]:
    """Only this test's recorders and tools are registered; both registries are put back afterwards."""
    saved, saved_tools = dict(rc._factories), dict(rc._tools)
    rc._factories.clear()
    rc._tools.clear()
    try:
        yield
    finally:
        rc._factories.clear()
        rc._factories.update(saved)
        rc._tools.clear()
        rc._tools.update(saved_tools)


class Configs(rc.Recorder):
    name = "configs"

    def __init__(self, configs: dict[str, Any] | None, fail: bool = False) -> None:
        self.configs, self.fail = configs, fail
        self.asked: list[str] = []

    def pass_configs(self, where: str) -> dict[str, Any] | None:
        self.asked.append(where)
        if self.fail:
            raise RuntimeError("no configs")
        return self.configs


class HandBack(rc.Recorder):
    name = "handback"

    def __init__(self, module: Any, fail: bool = False) -> None:
        self.module, self.fail = module, fail

    def handback(self, event: rc.PassEvent, back: rc.Handback) -> Any:
        if self.fail:
            raise RuntimeError("cannot hand back")
        return (self.module, back.out)


def _back() -> rc.Handback:
    call = rc.CodegenCall("target.build.x", None, None, None, "src", "src", None)
    return rc.Handback(call, "device", True, "built", "built", lambda: None, lambda message: None)


def test_pass_configs_merge_in_order_and_a_failing_recorder_is_stopped(registry: None) -> None:
    rc.register("a", lambda s: Configs({"x": 1, "y": 1}))
    rc.register("b", lambda s: Configs({"y": 2}))
    rc.register("c", lambda s: Configs(None, fail=True))
    said: list[str] = []
    rs = rc.Recorders(Settings(), said.append)
    assert rs.pass_configs("pipeline") == {"x": 1, "y": 2}  # a later recorder's value wins
    assert [r.name for r in rs.active] == ["configs", "configs"]  # the failing one stopped
    assert len(said) == 1 and "no configs" in said[0]


def test_handback_chains_and_a_failing_recorder_leaves_the_module(registry: None) -> None:
    rc.register("a", lambda s: HandBack("first"))
    rc.register("b", lambda s: HandBack(None, fail=True))
    rc.register("c", lambda s: HandBack("second"))
    said: list[str] = []
    rs = rc.Recorders(Settings(), said.append)
    out = rs.handback(rc.PassEvent(None, "codegen_device", "codegen", codegen=True, role="device"), _back())
    assert out == ("second", ("first", "built"))  # each got the module as the one before left it
    assert len(said) == 1 and "cannot hand back" in said[0]


def test_a_hook_no_recorder_overrides_is_never_called(registry: None) -> None:
    """The default recorders, features off: no pass configs asked, nothing handed back (no cost)."""
    from tltrace.tracing.recorders import register_defaults

    register_defaults()
    rs = rc.Recorders(Settings(script_name="t"), lambda m: None)
    assert rs.active  # the always-on recorders (repro, source maps, call sites, facts, ...)
    assert rs.hooked("pass_configs") == [] and rs.hooked("handback") == []
    on = rc.Recorders(Settings(script_name="t", remarks=(), line_directives=True), lambda m: None)
    assert [type(r).__name__ for r in on.hooked("pass_configs")] == ["RemarksRecorder"]
    assert [type(r).__name__ for r in on.hooked("handback")] == ["LineDirectivesRecorder"]


def test_a_features_seam_tool_is_installed_and_removed_with_tracing(registry: None, tmp_path) -> None:
    """register_tool: the controller installs the tool beside the tracing tool, and removes it with it
    (read back from TileLang's own compile session)."""
    from tilelang.instrumentation import PassInstrumentationTool
    from tilelang.instrumentation.session import compile_pass_instrumentation

    from tltrace.session import controller

    class Mine(PassInstrumentationTool):
        pass

    rc.register_tool("tltrace-test-tool", lambda settings: Mine)
    rc.register_tool("tltrace-test-off", lambda settings: None)  # off for these settings: not installed
    controller.set_up_tilelang()
    controller.install(Settings(trace_dir=tmp_path, script_name="t", quiet=True), lambda e: None)
    try:
        with compile_pass_instrumentation(reuse_existing=False) as session:
            assert session.find_tool(Mine) is not None
            assert len(session.tools) == 2  # the tracing tool and this one
    finally:
        controller.uninstall()
    with compile_pass_instrumentation(reuse_existing=False) as session:
        assert session.find_tool(Mine) is None


def test_a_recorders_pass_configs_are_in_force_in_the_pipeline_and_codegen(registry: None, tmp_path) -> None:
    """Read from TVM's PassContext while the compile's passes and its codegen run."""
    import tilelang
    from tvm.ir.transform import PassContext

    from tests._kernels import KERNELS
    from tltrace.session import controller

    seen: dict[str, set[Any]] = {"pipeline": set(), "codegen": set()}

    class Reading(Configs):
        def pass_started(self, event: rc.PassEvent, before: Any) -> None:
            if event.phase and event.phase.startswith("pipeline"):
                seen["pipeline"].add(PassContext.current().config.get(CONFIG))

        def codegen(self, event: rc.PassEvent, call: rc.CodegenCall) -> Any:
            seen["codegen"].add(PassContext.current().config.get(CONFIG))

    made: list[Reading] = []
    rc.register("reading", lambda s: made.append(Reading({CONFIG: True})) or made[-1])
    script = tmp_path / "kernels.py"
    script.write_text(KERNELS)
    ns = runpy.run_path(str(script))  # T.prim_func reads its source from a file
    controller.set_up_tilelang()
    controller.install(Settings(trace_dir=tmp_path, script_name="t", quiet=True, sync=True), lambda e: None)
    try:
        ns["build"](128)
    finally:
        controller.uninstall()
    assert made and made[0].asked == ["pipeline", "codegen"]  # asked once per compile
    assert seen["pipeline"] == {True} and seen["codegen"] == {True}
    assert not tilelang.transform.PassContext.current().config.get(CONFIG)  # only inside the compile
