"""docs/architecture.md against the code: every module named and existing; the manifest schema complete and true."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from tltrace.config import new_invocation_id
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
        head = re.match(r"(top level|`(\w+)/`):", bullet)
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
            jsonschema.validate(r.to_stored(), record_schema)
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
