"""Every knob is a Settings field, set the same way from `enable()`, from `tltrace run` and from
its environment variable, which tltrace/config.py alone reads (KNOBS).

The oracles: `dataclasses.fields(Settings)` and `inspect.signature` (what the code declares), the
Settings that `tltrace.enabled()` and `tltrace run` really build, and the source of every module.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import tltrace
from tltrace import config
from tltrace.api import trace as api_trace
from tltrace.config import KNOBS, Settings, build_settings
from tltrace.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent / "tltrace"
pytest_plugins = ["pytester"]

# Settings fields no caller sets: each entry point derives them.
DERIVED = {
    "script_name": "the script's name (the script run, sys.argv[0] under enable())",
    "script_key": "who the script is (format/scripts.py), derived with the name",
    "command": "the command line traced",
    "invocation": "made per invocation",
}
# enable()'s keywords that are not a Settings field.
NOT_FIELDS = {"children": "whether child processes join the invocation (tracing/children.Propagation)"}

# One value per field, none of them its default: what enable() and `tltrace run` are given.
VALUES: dict[str, Any] = {
    "mode": "both",
    "context": 5,
    "keep": 7,
    "only": "Simplify",
    "skip": "Lower",
    "kernels": "^gemm",
    "quiet": True,
    "all_passes": True,
    "verbose": True,
    "ignore_whitespace": True,
    "use_cache": True,
    "sync": True,
    "exact": True,
    "check_texts": True,
    "wait": True,
    "ptxas": True,
    "line_directives": True,
    "ptx": True,
    "sass": True,
    "remarks": "vectorize,smem",
    "source_map": False,
    "queue": 64,
    "workers": 2,
    "exit_wait": 1.5,
    "explain_timeout": 7.0,
    "launches": True,
    "launch_limit": 9,
    "save_inputs": 3,
    "save_inputs_max": 4096,
}

# How `tltrace run` spells each field it has a flag for; the others are set by their variable only.
FLAGS: dict[str, list[str]] = {
    "mode": ["--mode", "both"],
    "context": ["--context", "5"],
    "keep": ["--keep", "7"],
    "only": ["--only", "Simplify"],
    "skip": ["--skip", "Lower"],
    "kernels": ["--kernels", "^gemm"],
    "quiet": ["--quiet"],
    "all_passes": ["--all-passes"],
    "verbose": ["--verbose"],
    "ignore_whitespace": ["--ignore-whitespace"],
    "use_cache": ["--use-cache"],
    "sync": ["--sync"],
    "exact": ["--exact"],
    "check_texts": ["--check-texts"],
    "ptxas": ["--ptxas"],
    "line_directives": ["--line-directives"],
    "ptx": ["--ptx"],
    "sass": ["--sass"],
    "remarks": ["--remarks=vectorize,smem"],
    "launches": ["--launches"],
    "launch_limit": ["--launch-limit", "9"],
    "save_inputs": ["--save-inputs=3"],
}
NO_FLAG = {  # set from the CLI by their variable (docs/usage.md), from enable() by keyword
    "wait": "TLTRACE_WAIT",
    "source_map": "TLTRACE_SOURCE_MAP",
    "queue": "TLTRACE_QUEUE",
    "workers": "TLTRACE_WORKERS",
    "exit_wait": "TLTRACE_EXIT_WAIT",
    "explain_timeout": "TLTRACE_EXPLAIN_TIMEOUT",
    "save_inputs_max": "TLTRACE_SAVE_INPUTS_MAX",
}
TEXT = {
    "queue": "64",
    "workers": "2",
    "exit_wait": "1.5",
    "explain_timeout": "7",
    "launch_limit": "9",
    "save_inputs": "3",
    "save_inputs_max": "4096",
    "kernels": "^gemm",
    "remarks": "vectorize,smem",
}


def _fields() -> set[str]:
    return {f.name for f in dataclasses.fields(Settings)}


def _knobs() -> set[str]:
    return _fields() - set(DERIVED) - {"trace_dir", "codegen_output"}


def _plain(value: Any) -> Any:
    return (value.pattern, value.flags) if isinstance(value, re.Pattern) else value


def _expected(name: str) -> Any:
    if name in ("only", "skip", "kernels"):  # any case, as --pass and the report match names
        return (VALUES[name], re.compile(VALUES[name], re.IGNORECASE).flags)
    return ("vectorize", "smem") if name == "remarks" else VALUES[name]


def _for_test(settings: Settings) -> dict[str, Any]:
    return {name: _plain(getattr(settings, name)) for name in VALUES}


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for knob in KNOBS:
        monkeypatch.delenv(knob.env, raising=False)
    monkeypatch.delenv("TL_LOWER_TRACE", raising=False)


def test_every_field_is_an_enable_keyword_and_every_keyword_a_field() -> None:
    params = inspect.signature(api_trace.enable).parameters
    assert _fields() - set(DERIVED) == set(params) - set(NOT_FIELDS)
    assert set(VALUES) == _knobs()  # a new field needs a value here, and a way in below
    doc = api_trace.enable.__doc__ or ""
    assert all(re.search(rf"\b{name}\b", doc) for name in params), "enable()'s docstring names each keyword"


def test_every_field_is_a_run_flag_or_a_variable_and_run_s_flags_are_the_table_s(run_cli) -> None:
    assert set(FLAGS) | set(NO_FLAG) == _knobs() and not set(FLAGS) & set(NO_FLAG)
    assert {k.field: k.env for k in KNOBS if k.field in NO_FLAG} == NO_FLAG
    from tltrace.cli.app import run_cmd

    run_params = set(inspect.signature(run_cmd).parameters)
    assert run_params & _knobs() == set(FLAGS)  # a flag added to run is listed here


def test_the_cli_sets_every_field_it_has_a_flag_for(run_cli, monkeypatch, tmp_path) -> None:
    _clean_env(monkeypatch)
    import tltrace.runner

    seen: list[Settings] = []
    monkeypatch.setattr(
        tltrace.runner, "run_target", lambda target, settings, *a, **k: seen.append(settings) or 0
    )
    (tmp_path / "job.py").write_text("pass\n")
    words = [w for name in FLAGS for w in FLAGS[name]]
    command = "run"
    r = run_cli(command, *words, "--trace-dir", tmp_path / "t", "job.py")
    assert r.exit_code == 0, r.output
    (s,) = seen
    got = _for_test(s)
    assert {n: got[n] for n in FLAGS} == {n: _expected(n) for n in FLAGS}
    assert s.trace_dir == tmp_path / "t"


def test_each_variable_sets_its_field_and_a_flag_or_keyword_wins(monkeypatch, tmp_path) -> None:
    _clean_env(monkeypatch)
    on = {k.field: TEXT.get(k.field, "1" if VALUES[k.field] is True else "0") for k in KNOBS}
    for knob in KNOBS:
        monkeypatch.setenv(knob.env, on[knob.field])
    s = build_settings(mode="terminal", trace_dir=tmp_path, script_name="x")
    assert {k.field: _plain(getattr(s, k.field)) for k in KNOBS} == {
        k.field: _expected(k.field) for k in KNOBS
    }
    given = build_settings(
        mode="terminal",
        trace_dir=tmp_path,
        script_name="x",
        sync=False,
        queue=32,
        source_map=True,
        remarks=False,
    )
    assert (given.sync, given.queue, given.source_map, given.remarks) == (False, 32, True, None)
    for knob in KNOBS:  # empty is unset: the default
        monkeypatch.setenv(knob.env, " ")
    default = Settings()
    s = build_settings(mode="terminal", trace_dir=tmp_path, script_name="x")
    assert all(getattr(s, k.field) == getattr(default, k.field) for k in KNOBS)


BAD = {
    "TLTRACE_SYNC": ("maybe", "is not on or off"),
    "TLTRACE_SOURCE_MAP": ("2", "is not on or off"),
    "TLTRACE_QUEUE": ("8", "must be 16 or more"),
    "TLTRACE_WORKERS": ("many", "is not a whole number (1 or more)"),
    "TLTRACE_EXIT_WAIT": ("soon", "is not a number of seconds"),
    "TLTRACE_KERNELS": ("gemm(", "is not a valid regular expression"),
    "TLTRACE_REMARKS": ("loud", "is not a planner"),
}


@pytest.mark.parametrize("var", sorted(BAD))
def test_a_bad_variable_is_one_line_naming_it_exit_2(var, monkeypatch, run_cli, tmp_path) -> None:
    _clean_env(monkeypatch)
    text, words = BAD[var]
    monkeypatch.setenv(var, text)
    with pytest.raises(UsageError, match=re.escape(var)) as info:
        build_settings(mode="terminal", trace_dir=tmp_path, script_name="x")
    assert words in str(info.value) and "\n" not in str(info.value)
    (tmp_path / "job.py").write_text("pass\n")
    command = "run"
    r = run_cli(command, "job.py")
    assert r.exit_code == 2
    assert r.stderr.startswith("tltrace: error: ") and var in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_a_bad_variable_under_the_pytest_plugin_is_one_usage_error(pytester, monkeypatch) -> None:
    """Said once, before any test (not as an error in every test's set-up), and nothing imported."""
    monkeypatch.setenv("TLTRACE_QUEUE", "8")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    res = pytester.runpytest_subprocess("-p", "no:tltrace", "-p", "tltrace.pytest_plugin", "--tltrace")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    err = res.stderr.str()
    assert "tltrace: TLTRACE_QUEUE must be 16 or more, not 8" in err, err


@pytest.mark.parametrize(
    "kwargs",
    [
        {"queue": 8},
        {"workers": 0},
        {"exit_wait": -1},
        {"exit_wait": "1"},
        {"exit_wait": float("inf")},
        {"remarks": "loud"},
        {"sync": "no"},
    ],
)
def test_a_bad_keyword_is_a_usage_error(kwargs, tmp_path) -> None:
    with pytest.raises(UsageError, match=next(iter(kwargs))):
        build_settings(mode="terminal", trace_dir=tmp_path, script_name="x", **kwargs)


def test_a_child_traces_with_every_field_of_its_parent(tmp_path) -> None:
    from tltrace.tracing import children

    s = build_settings(trace_dir=tmp_path, script_name="job", codegen_output=tmp_path / "cg.cpp", **VALUES)
    back, _root = children.settings_from_json(children.settings_json(s, 1))
    differ = {f: (_plain(getattr(s, f)), _plain(getattr(back, f))) for f in _fields()}
    differ = {f: pair for f, pair in differ.items() if pair[0] != pair[1]}
    assert differ == {"keep": (7, 0)}  # the parent prunes, once


def test_enable_sets_every_field(tmp_path, monkeypatch) -> None:
    """The real enable(), every keyword at once; tltrace.enabled() is what later compiles trace with."""
    pytest.importorskip("tilelang")
    _clean_env(monkeypatch)
    kwargs = {k: v for k, v in VALUES.items() if k != "mode"}
    try:
        tltrace.enable(VALUES["mode"], tmp_path / "t", tmp_path / "cg.cpp", **kwargs)
        s = tltrace.enabled()
        assert s is not None
        assert _for_test(s) == {n: _expected(n) for n in VALUES}
        assert (s.trace_dir, s.codegen_output) == (tmp_path / "t", tmp_path / "cg.cpp")
    finally:
        tltrace.disable()


# -- nothing outside config.py reads a TLTRACE_* variable ---------------------------------------------
# (module, variable): the variables read elsewhere, each a message between tltrace's own processes or
# a tool the user calls by name, never a setting.
ALLOWED: dict[tuple[str, str], str] = {
    ("tltrace.tracing.child", "TLTRACE_CHILD"): "a traced job's child reads its parent's Settings (JSON)",
    ("tltrace.tracing.children", "*"): "Propagation: each variable it sets, saved and put back as it was",
    (
        "tltrace.tracing._boot.sitecustomize",
        "TLTRACE_CHILD",
    ): "a child's start-up hook: is this a traced job's child",
    ("tltrace.tracing.recorders", "TLTRACE_BISECT"): "a `tltrace bisect` step: the plan its parent hands it",
    ("tltrace.bisect.skipping", "TLTRACE_BISECT"): "a `tltrace bisect` step: the plan its parent hands it",
    (
        "tltrace.tracing.watchdog",
        "TLTRACE_WATCHDOG_STACKS",
    ): "run --timeout: the supervised child learns from its parent that it is one (run --ncu asks too)",
    (
        "tltrace.runtime.outer",
        "TLTRACE_UNDER",
    ): "run --ncu: the inner run learns from its parent that it runs under the tool (then taken out)",
    (
        "tltrace.bisect.miscompile",
        "TLTRACE_MISCOMPILE",
    ): "read only by miscompile_from_env(), which a script calls",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _constants(trees: dict[str, ast.Module]) -> dict[str, dict[str, str]]:
    """Return {module: {name: variable}} for module-level names bound to a TLTRACE_* name, imports followed."""
    out: dict[str, dict[str, str]] = {m: {} for m in trees}
    changed = True
    while changed:
        changed = False
        for mod, tree in trees.items():
            known = out[mod]
            for node in tree.body:
                pairs: list[tuple[str, str | None]] = []
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                ):
                    v = node.value
                    if isinstance(v, ast.Constant) and isinstance(v.value, str) and _is_var(v.value):
                        pairs.append((node.targets[0].id, v.value))
                    elif isinstance(v, ast.Name) and v.id in known:
                        pairs.append((node.targets[0].id, known[v.id]))
                elif isinstance(node, ast.ImportFrom):
                    src = _imported(mod, node)
                    for alias in node.names:
                        pairs.append((alias.asname or alias.name, out.get(src, {}).get(alias.name)))
                for name, var in pairs:
                    if var is not None and known.get(name) != var:
                        known[name] = var
                        changed = True
    return out


_PACKAGES: set[str] = set()


def _imported(mod: str, node: ast.ImportFrom) -> str:
    """Return the module a `from X import ...` in `mod` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    parts = mod.split(".") if mod in _PACKAGES else mod.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _is_var(text: str) -> bool:
    return re.fullmatch(r"TLTRACE_[A-Z0-9_]+", text) is not None


def _environ(node: ast.AST) -> bool:
    """os.environ, or a name `environ`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ"
    return isinstance(node, ast.Name) and node.id == "environ"


def env_reads(source: str, consts: dict[str, str]) -> set[str]:
    """Return the TLTRACE_* variables a module reads from the environment ('*': os.environ read by a
    key it computes). A read is a get, getenv, subscript or `in` whose key is a TLTRACE_* name (a
    string, or a module constant holding one), whatever the mapping, or any key of os.environ."""

    def key(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value if _is_var(node.value) else None
        if isinstance(node, ast.Name) and node.id in consts:
            return consts[node.id]
        return "*"

    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        mapping: ast.AST | None = None
        k: str | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("get", "getenv"):
                mapping, k = node.func.value, key(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            mapping, k = node.value, key(node.slice)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
        ):
            mapping, k = node.comparators[0], key(node.left)
        if k is None or mapping is None:
            continue
        if k != "*" or _environ(mapping) or (isinstance(node, ast.Call) and node.func.attr == "getenv"):  # type: ignore[union-attr]
            found.add(k)
    return found


def _all_reads() -> dict[tuple[str, str], None]:
    trees: dict[str, ast.Module] = {}
    sources: dict[str, str] = {}
    for path in sorted(ROOT.rglob("*.py")):
        mod = _module_name(path)
        if path.name == "__init__.py":
            _PACKAGES.add(mod)
        sources[mod] = path.read_text()
        trees[mod] = ast.parse(sources[mod])
    consts = _constants(trees)
    return {(mod, var): None for mod in sources for var in env_reads(sources[mod], consts[mod])}


def test_the_reader_finds_env_reads() -> None:
    src = (
        "import os\nENV = 'TLTRACE_X'\n"
        "a = os.environ.get('TLTRACE_Q', '')\nb = os.environ[ENV]\nc = os.getenv('TLTRACE_Z')\n"
        "def f(name, environ=None):\n    env = os.environ\n    return env.get(name) or ('TLTRACE_W' in os.environ)\n"
        "os.environ['TLTRACE_SET'] = '1'\nmsg = 'TLTRACE_M=0 turns it off'\nos.environ.get('HOME')\n"
    )
    assert env_reads(src, {"ENV": "TLTRACE_X"}) == {"TLTRACE_Q", "TLTRACE_X", "TLTRACE_Z", "TLTRACE_W"}
    assert env_reads("import os\ndef f(name):\n    return os.environ.get(name)\n", {}) == {"*"}
    local = "def f(env):\n    env.pop('TLTRACE_X', None)\n    env['TLTRACE_X'] = '1'\n    return env[0]\n"
    assert env_reads(local, {}) == set()  # a child's environment written, a mapping read by other keys


def test_no_module_outside_config_reads_a_tltrace_variable() -> None:
    reads = _all_reads()
    outside = sorted(r for r in reads if r[0] != "tltrace.config" and r not in ALLOWED)
    assert not outside, (
        "TLTRACE_* variables read outside tltrace/config.py (make each a Settings field in KNOBS, "
        f"or list it in ALLOWED with its reason): {outside}"
    )
    gone = sorted(set(ALLOWED) - set(reads))
    assert not gone, f"no longer read; remove from ALLOWED: {gone}"


def test_every_knob_variable_is_documented() -> None:
    docs = (ROOT.parent / "docs" / "usage.md").read_text() + (ROOT.parent / "docs" / "api.md").read_text()
    missing = [k.env for k in KNOBS if k.env not in docs]
    assert not missing, missing
    assert config.KNOBS == KNOBS


def test_build_settings_takes_each_knob_by_its_field_and_no_other_name(tmp_path) -> None:
    """The knobs reach build_settings by KNOBS' field names; a misspelt one is a TypeError, as a
    keyword Python does not know is (not a knob silently left at its variable's value)."""
    s = build_settings(mode="terminal", trace_dir=tmp_path, script_name="x", **{k.field: None for k in KNOBS})
    default = build_settings(mode="terminal", trace_dir=tmp_path, script_name="x")
    assert dataclasses.replace(s, invocation=default.invocation) == default
    with pytest.raises(TypeError, match="'sinc'"):
        build_settings(mode="terminal", trace_dir=tmp_path, script_name="x", sinc=True)


@pytest.mark.parametrize("var", sorted(config.RETIRED_KNOBS))
def test_a_retired_variable_is_one_info_line_and_ignored(var, monkeypatch, run_cli, tmp_path) -> None:
    """TLTRACE_DEFER (deferral, removed in issue 51): set, `tltrace run` says once that it is
    ignored and runs on, exit 0; no Settings field or enable() keyword takes it any more."""
    _clean_env(monkeypatch)
    monkeypatch.setenv(var, "2")
    field = var.removeprefix("TLTRACE_").lower()
    assert field not in {f.name for f in dataclasses.fields(Settings)}
    assert field not in inspect.signature(api_trace.enable).parameters
    assert var not in {k.env for k in KNOBS}
    (tmp_path / "job.py").write_text("print('ran')\n")
    r = run_cli("run", "--trace-dir", tmp_path / "t", "job.py")
    assert r.exit_code == 0, r.output
    said = [line for line in (r.stdout + r.stderr).splitlines() if var in line]
    assert len(said) == 1 and "gone and ignored" in said[0], said
    assert "ran" in r.stdout
    assert (tmp_path / "t").is_dir()  # the invocation was recorded as usual


def test_the_retired_variables_are_documented() -> None:
    usage = (ROOT.parent / "docs" / "usage.md").read_text()
    assert all(f"`{var}` is gone" in usage for var in config.RETIRED_KNOBS)
