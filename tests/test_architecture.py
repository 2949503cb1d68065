"""docs/architecture.md against the code: every module named and existing; the manifest schema complete and true."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jsonschema
import pytest

from tltrace.config import new_invocation_id
from tltrace.format import layout
from tltrace.format.ids import new_run_id
from tltrace.format.records import SCHEMA_VERSION, PassRecord, RunManifest

REPO = Path(__file__).resolve().parent.parent
DOC = (REPO / "docs" / "architecture.md").read_text()
SCHEMA = json.loads((REPO / "docs" / "manifest.schema.json").read_text())
PKG = REPO / "tltrace"


def _bullets() -> dict[str, list[str]]:
    """Return package -> the module names its bullet in 'Every module, by package' lists."""
    section = DOC.split("Every module, by package", 1)[1].split("## Data flow", 1)[0]
    out: dict[str, list[str]] = {}
    for bullet in re.split(r"\n- ", section)[1:]:
        head = re.match(r"(top level[^:]*|`([\w/]+)/`):", bullet)
        assert head, bullet[:40]
        pkg = head.group(2) or ""
        out[pkg] = [n for n in re.findall(r"`(\w+)`", bullet) if n != pkg]
    return out


def test_every_module_is_named_and_every_named_module_exists() -> None:
    named = _bullets()
    for pkg, names in named.items():
        for name in names:
            base = PKG / pkg / name
            assert (
                base.with_suffix(".py").is_file() or (base / "__init__.py").is_file() or name == "__init__"
            ), f"docs/architecture.md names {pkg}/{name}, which does not exist"
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        pkg = rel.parent.as_posix() if rel.parent != Path(".") else ""
        if path.stem == "__init__" and pkg:
            continue
        assert path.stem in named.get(pkg, []) or (path.stem == "__init__" and not pkg), (
            f"tltrace/{rel} is not named in docs/architecture.md ('Every module, by package')"
        )


# The names of docs/architecture.md's "On disk" that format/layout.py spells (the short pieces
# EXT, DEFAULT_STEM, WORKING_MAP_SUFFIX and the prefixes are words other code uses too).
SPELLED_ONCE = (
    "RUN_RECORDS", "OBJECTS", "PACK", "LIVE", "MANIFEST", "RECORDS_LOG", "SOURCEMAP_LOG", "INFLIGHT", "FATAL",
    "REPORT", "SCRIPTS_REGISTRY", "KERNEL_REGISTRY", "SANITIZER", "SANITIZER_XML",
)  # fmt: skip


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """Return the string constants of a module that are not docstrings."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_every_name_on_disk_is_spelled_once_in_format_layout() -> None:
    """ "Every name above is spelled once, in format/layout.py": no other module writes one as a string."""
    names = {getattr(layout, k): k for k in SPELLED_ONCE}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel == "format/layout.py":
            continue
        for node in _strings(ast.parse(path.read_text())):
            for name, const in names.items():
                assert node.value != name and not node.value.startswith(name + "/"), (
                    f"tltrace/{rel}:{node.lineno} spells {name!r}: use format/layout.{const}"
                )


def _layer_block() -> list[set[str]]:
    """Return the package order of the 'Packages' block, one set of dotted names a line, top first."""
    block = DOC.split("## Packages", 1)[1].split("```", 2)[1]
    out = []
    for line in block.splitlines()[1:]:
        if not line or line[0] == " ":
            continue  # a description's continuation
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        out.append(
            {
                "tltrace." + n.strip().removesuffix("/").removesuffix(".py").replace("/", ".")
                for n in names.split(",")
            }
        )
    return out


def test_the_package_order_is_the_layer_test_s() -> None:
    """The 'Packages' block lists tests/test_layers.py's layers, in its order (every layer but the top)."""
    from tests.test_layers import LAYERS

    assert _layer_block() == [set(layer) for layer in LAYERS[1:]]


# CONTRIBUTING.md, "Who prints": the modules that may print or write to sys.stdout/sys.stderr.
PRINTS = ("cli/", "render/", "pytest_plugin.py", "api/ipython.py", "api/trace.py", "fs/output_path.py",
          "tracing/child.py", "tracing/_boot/", "rerun/_standalone.py", "rerun/replay_child.py")  # fmt: skip


def _prints(tree: ast.AST) -> list[int]:
    """Return the lines of `print(...)` and `sys.stdout/stderr[.buffer].write(...)` calls."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "print":
            out.append(node.lineno)
        elif isinstance(f, ast.Attribute) and f.attr == "write" and isinstance(f.value, ast.Attribute):
            inner = f.value.value if f.value.attr == "buffer" else f.value
            if isinstance(inner, ast.Attribute) and inner.attr in ("stdout", "stderr"):
                out.append(node.lineno)
    return out


def test_only_the_modules_contributing_names_print() -> None:
    contributing = (REPO / "CONTRIBUTING.md").read_text()
    named = [m for m in PRINTS if m not in ("cli/", "render/", "pytest_plugin.py")]
    assert [m for m in named if f"`{m}`" not in contributing] == []  # the doc names each
    assert _prints(
        ast.parse("import sys\nprint(1)\nsys.stderr.write('x')\nsys.stdout.buffer.write(b'')")
    ) == [2, 3, 4]
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(PRINTS):
            continue
        lines = _prints(ast.parse(path.read_text()))
        assert not lines, (
            f"tltrace/{rel} prints (lines {lines}): only CONTRIBUTING.md's 'Who prints' modules do"
        )


ROOT_MAX = 8  # issue 50: about eight modules at the root; a new one goes into the package of its job


def test_the_root_stays_small() -> None:
    root = sorted(p.name for p in PKG.glob("*.py"))
    assert len(root) <= ROOT_MAX, f"{len(root)} modules at tltrace/'s root (at most {ROOT_MAX}): {root}"


def _manifest() -> RunManifest:
    recs = [
        PassRecord(0, "tl.Simplify", "pipeline_c", status="changed", before_hash="a" * 20, after_hash="b" * 20),
        PassRecord(1, "tl.NoOp", "pipeline_c", before_hash="b" * 20, after_hash="b" * 20),
        PassRecord(2, "tl.Broken", "pipeline_c", status="failed", before_hash="b" * 20, error="ValueError: x"),
        PassRecord(
            3, "codegen_device", "codegen", status="codegen", before_hash="b" * 20, after_hash="c" * 20,
            after_file="codegen/03_codegen_device_after.cpp", role="device", ffi="target.build.c",
            reconcile="PATCHED", working_file="/w/codegen_device.cpp", start_s=0.5, depth=1, parent=2,
        ),
    ]  # fmt: skip
    return RunManifest(
        run_id=new_run_id(),
        script="s",
        kernel="add",
        command=["python", "s.py"],
        started=1.0,
        finished=2.0,
        status="complete",
        invocation=new_invocation_id(),
        signature="add 256 f32 #abc",
        launch={"grid": [2]},
        writer={"pid": 1, "start": "1", "host": "h"},
        thread="MainThread",
        thread_id=1,
        records=tuple(recs),
    )


def test_the_schema_names_every_field() -> None:
    props = set(SCHEMA["properties"])
    assert set(RunManifest.__dataclass_fields__) <= props
    assert set(PassRecord.__dataclass_fields__) <= set(SCHEMA["$defs"]["record"]["properties"])
    assert SCHEMA_VERSION in SCHEMA["properties"]["schema_version"]["enum"]


@pytest.mark.parametrize("form", ["on disk (dumps)", "full (to_json)", "records.jsonl lines"])
def test_manifests_validate(form: str) -> None:
    m = _manifest()
    validator = jsonschema.Draft202012Validator(SCHEMA)
    if form == "records.jsonl lines":
        record_schema = {**SCHEMA["$defs"]["record"], "$defs": SCHEMA["$defs"]}
        for r in m.records:
            jsonschema.validate(json.loads(r.full_json()), record_schema)  # what the store logs
            jsonschema.validate(r.to_stored(), record_schema)  # what it logged before (still read)
        return
    data = json.loads(m.dumps()) if form.startswith("on disk") else m.to_json()
    validator.validate(data)
    assert RunManifest.from_json(data).records[3].working_file == "/w/codegen_device.cpp"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**data, "status": "bogus"})  # the schema can fail


def _hook_table() -> list[str]:
    """Return the hook names of the Recorders section's table, in order."""
    section = DOC.split("## Recorders", 1)[1].split("\n## ", 1)[0]
    table = section.split("| hook | thread | when | given |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `(\w+)\(", table, re.M)


def test_the_hook_table_is_the_recorder_interface() -> None:
    """Every method of session/recorder.Recorder is a row of the table, and every row is a method."""
    from tltrace.session.recorder import Recorder

    methods = {
        name for name, value in vars(Recorder).items() if not name.startswith("_") and callable(value)
    } - {"warn"}  # an attribute the guard sets (the warning notice), not a hook
    rows = _hook_table()
    assert len(rows) == len(set(rows)), rows
    assert set(rows) == methods, (
        f"not in the table: {sorted(methods - set(rows))}; not a hook: {sorted(set(rows) - methods)}"
    )
    assert {"pass_configs", "handback", "refine", "stopped"} <= set(rows)  # the table is really read
