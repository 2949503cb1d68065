"""TileLang's next seam: tool discovery through the `tilelang.instrumentation_tools` entry point.

PyPI's tilelang-devkit 0.2.0 registers its tracer under that entry-point group, so a
TileLang release after 0.1.15 probably discovers tools that way; 0.1.14 and 0.1.15 do
not. No such TileLang exists to install, so this test stands a small stand-in package
named `tilelang` in front of the real one, in a child process only: it runs the installed
TileLang's own `__init__`, then calls every tool of the group, as a discovering TileLang
would, and records what registered.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tltrace
from tltrace.config import build_settings
from tltrace.tracing import children

# The stand-in: the installed TileLang's own __init__, run as this package's, then the
# discovery a newer TileLang would add; its submodules are the installed ones.
INIT = textwrap.dedent(
    """
    import importlib.metadata, json, os
    _real = os.environ["REAL_TILELANG"]
    __path__.append(_real)
    with open(os.path.join(_real, "__init__.py")) as _f:
        exec(compile(_f.read(), os.path.join(_real, "__init__.py"), "exec"))
    from tilelang.instrumentation import register_pass_instrumentation_tool as _register
    import tilelang.instrumentation as _ti
    registered = []

    def _recording(name, factory, _inner=_register):
        registered.append(name)
        return _inner(name, factory)

    _ti.register_pass_instrumentation_tool = _recording
    for ep in importlib.metadata.entry_points(group="tilelang.instrumentation_tools"):
        ep.load()()
    print("REGISTERED " + json.dumps(registered))
    """
)


def _stand_in(tmp_path: Path) -> Path:
    pkg = tmp_path / "newer" / "tilelang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(INIT)
    return pkg.parent


def _child_env(tmp_path: Path, root_pid: int) -> dict[str, str]:
    settings = build_settings(mode="terminal", script_name="job", trace_dir=tmp_path / "traces")
    env = {k: v for k, v in os.environ.items() if k != children.ENV}
    src = str(Path(tltrace.__file__).resolve().parent.parent)
    # No start-up hook on the path: only the discovery can start tracing here.
    env["PYTHONPATH"] = os.pathsep.join([str(_stand_in(tmp_path)), src])
    env[children.ENV] = children.settings_json(settings, root_pid)
    spec = importlib.util.find_spec("tilelang")
    assert spec is not None and spec.submodule_search_locations
    env["REAL_TILELANG"] = list(spec.submodule_search_locations)[0]
    return env


def _registered(env: dict[str, str], code: str = "import tilelang") -> list[str]:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("REGISTERED "))
    return json.loads(line.split(" ", 1)[1])


def test_tltrace_is_registered_as_a_tilelang_instrumentation_tool():
    eps = importlib.metadata.entry_points(group="tilelang.instrumentation_tools")
    assert [(e.name, e.value) for e in eps if e.name == "tltrace"] == [
        ("tltrace", "tltrace.tracing.child:discovered")
    ]


def test_a_discovering_tilelang_starts_tracing_in_a_traced_jobs_child(tmp_path):
    assert _registered(_child_env(tmp_path, root_pid=os.getpid())) == ["tltrace"]


def test_discovery_does_nothing_outside_a_traced_job(tmp_path):
    env = _child_env(tmp_path, root_pid=os.getpid())
    del env[children.ENV]
    assert _registered(env) == []


def test_discovery_leaves_the_traced_process_itself_to_its_own_set_up(tmp_path):
    """`tltrace run` sets TLTRACE_CHILD in its own environment too (for its children)."""
    own = textwrap.dedent(
        f"""
        import json, os
        d = json.loads(os.environ["{children.ENV}"])
        d["root"]["pid"] = os.getpid()
        os.environ["{children.ENV}"] = json.dumps(d)
        import tilelang
        """
    )
    assert _registered(_child_env(tmp_path, root_pid=os.getpid()), own) == []


def test_the_codegen_events_role_is_used_when_present():
    from types import SimpleNamespace

    from tltrace.session.codegen import DEVICE, HOST, classify_role

    assert classify_role(SimpleNamespace(role="device", name="target.build.tilelang_c_host")) == DEVICE
    assert classify_role(SimpleNamespace(role="HOST", name="target.build.tilelang_cuda")) == HOST
