"""docs/show.schema.json for the tests: validate a `show --json` output as one of its shapes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "docs" / "show.schema.json").read_text())
MANIFEST_SCHEMA = json.loads((REPO / "docs" / "manifest.schema.json").read_text())
SHAPES = [ref["$ref"].rsplit("/", 1)[1] for ref in SCHEMA["oneOf"]]
_REGISTRY = Registry().with_resource(MANIFEST_SCHEMA["$id"], Resource.from_contents(MANIFEST_SCHEMA))


def _strict(node: Any) -> Any:
    """The schema with every object it describes closed: a key it does not describe fails."""
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if "properties" in node:
            out["unevaluatedProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def validator(shape: str | None = None, strict: bool = True) -> jsonschema.Draft202012Validator:
    """The schema (strict: closed, see _strict), or one of its shapes alone."""
    schema = _strict(SCHEMA) if strict else copy.deepcopy(SCHEMA)
    if shape is not None:
        assert shape in SHAPES, shape
        schema["oneOf"] = [{"$ref": f"#/$defs/{shape}"}]
    return jsonschema.Draft202012Validator(schema, registry=_REGISTRY)


def check(data: Any, shape: str) -> Any:
    """Validate `data` as the schema's `shape`, which must be the one shape it matches; return it."""
    validator(shape).validate(data)
    validator(strict=False).validate(data)  # oneOf: no other shape matches it too
    return data
