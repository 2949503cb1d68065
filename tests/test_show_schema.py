"""docs/show.schema.json against `show --json`: every form, run on the recorded traces, validates.

Read-side only (the quick loop): nothing compiles. The forms are run on a copy of the
recorded traces, with one run made damaged and one given a source map, so every shape
and its null cases are met. Each output must match its own shape (and only that one:
the schema's oneOf) and every key in it must be described there. The compile rows of
the listing and of the invocation index carry every field of the summary model.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tltrace.history import runs
from tltrace.history.summary import CompileSummary

from ._records import copy_tree, read_manifest, run_dirs
from ._schema import MANIFEST_SCHEMA, SCHEMA, check, validator


@pytest.fixture(scope="module")
def corpus(recorded: Path, tmp_path_factory) -> Path:
    """A copy of the recorded traces: gemm's run given a source map, a damaged run added."""
    dest = copy_tree(recorded, tmp_path_factory.mktemp("schema") / "traces")
    _write_source_map(run_dirs(dest / "gemm")[-1])
    damaged = run_dirs(dest / "elementwise_add")[0]
    text = (damaged / "manifest.json").read_text()
    (damaged / "manifest.json").write_text(text[: len(text) // 2])  # truncated: a damaged run
    return dest


def _write_source_map(run_dir: Path) -> None:
    """Give a recorded run a sourcemap.jsonl (docs/sourcemap.md's log): every line of each text mapped."""
    manifest = read_manifest(run_dir)
    kernel = "/k/gemm.py"
    out = [{"t": "src", "path": kernel, "text": "".join(f"line {i}\n" for i in range(1, 41))}]
    made: set[str] = set()

    def lmap(rel: str | None, digest: str | None) -> str | None:
        if not rel or not digest or not (run_dir / rel).is_file():
            return None
        if digest not in made:
            made.add(digest)
            lines = (run_dir / rel).read_text().split("\n")
            locs = [[0, (len(digest) + i) % 40 + 1] if t.strip() else None for i, t in enumerate(lines)]
            out.append({"t": "map", "h": digest, "files": [kernel], "lines": locs, "inferred": [0]})
        return digest

    for r in manifest["records"]:
        before = lmap(r.get("before_file"), r.get("before_hash"))
        after = lmap(r.get("after_file"), r.get("after_hash"))
        out.append({"t": "rec", "index": r["index"], "before": before, "after": after})
    (run_dir / "sourcemap.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))


@pytest.fixture
def show(run_cli, corpus: Path):
    def invoke(*args: str) -> Any:
        res = run_cli("show", "--trace-dir", str(corpus), *args)
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    return invoke


def _records(corpus: Path, script: str) -> list[dict]:
    return read_manifest(run_dirs(corpus / script)[-1])["records"]


def test_the_listing(show, corpus: Path) -> None:
    data = check(show("--json"), "listing")
    rows = data["runs"]
    assert {r["script"] for r in rows} == {p.name for p in corpus.iterdir() if p.is_dir()}
    damaged = [r for r in rows if r["status"] == "damaged"]
    assert len(damaged) == 1 and damaged[0]["passes"] is None and "truncated" in damaged[0]["problem"]
    failed = next(r for r in rows if r["script"] == "fails")
    assert failed["status"] == "error" and failed["error"] and failed["failed_at"]
    assert check(show("--format", "json"), "listing") == data
    one = check(show("two_kernels", "--kernel", "vmul", "--json"), "listing")
    assert [r["kernel"] for r in one["runs"]] == ["vmul", "vmul"]
    assert [i["position"] for i in one["invocations"]] == [-2, -1]


def test_one_invocation(show) -> None:
    data = check(show("two_kernels", "-1", "--json"), "one_invocation")
    compiles = data["invocation"]["compiles"]
    assert len(compiles) == 2 and all(c["size"] > 0 for c in compiles)


@pytest.mark.parametrize("script", ["gemm", "fails"])
def test_one_compile(show, corpus: Path, script: str) -> None:
    data = check(show(script, "-1", "--json"), "run")
    assert data["records"] == _records(corpus, script)
    # The manifest schema is open (additionalProperties), so strictness is checked here.
    assert set(data) <= set(MANIFEST_SCHEMA["properties"]) | set(SCHEMA["$defs"]["run"]["properties"])
    direct = check(show(str(run_dirs(corpus / script)[-1]), "--json"), "run")
    assert direct == data


def test_one_pass(show, corpus: Path) -> None:
    recs = _records(corpus, "gemm")
    changed = next(r for r in recs if r["status"] == "changed")
    data = check(show("gemm", "--pass", str(changed["index"]), "--json"), "pass")
    assert data["diff"] and data["rows"] and "before" not in data
    names = [r["name"] for r in recs]
    twice = next(n for n in names if names.count(n) > 1)
    data = check(show("gemm", "--pass", twice, "--json"), "pass")
    assert len(data["others"]) == names.count(twice) - 1
    failed = next(r for r in _records(corpus, "fails") if r["status"] == "failed")
    data = check(show("fails", "--pass", str(failed["index"]), "--json"), "pass")
    assert data["rows"] is None and data["before"] and data["record"]["error"]


def test_count(show, corpus: Path) -> None:
    recs = _records(corpus, "gemm")
    known = check(show("gemm", "-1", "--count", "T.sync_threads", "--json"), "count")
    assert known["pattern"]["known"] == "T.sync_threads" and None not in known["pattern"]["regex"].values()
    regex = check(show("gemm", "-1", "--count", r"T\.\w+\(", "--json"), "count")
    assert regex["matched"] and regex["pattern"]["known"] is None
    assert [r["index"] for r in regex["passes"]] == [r["index"] for r in recs]
    assert regex["changes"] == [r for r in regex["passes"] if r["changed"]]


def test_html(show) -> None:
    one = check(show("gemm", "-1", "--html", "--json"), "html")
    index = check(show("two_kernels", "-1", "--html", "--json"), "html")
    assert "run_id" in one and "run_id" not in index
    assert Path(one["report"]).is_file() and Path(index["report"]).is_file()


def test_profile(show) -> None:
    one = check(show("gemm", "-1", "--profile", "--top", "3", "--json"), "profile")
    two = check(show("two_kernels", "-1", "--profile", "--json"), "profile")
    assert len(one["rows"]) == 3 and "spread_s" not in one["rows"][0]
    assert two["compiles"] == 2 and "spread_s" in two["rows"][0]


def test_source_map(show, corpus: Path) -> None:
    data = check(show("gemm", "-1", "--source-map", "--json"), "source_map")
    assert data["codegen"]["device"] and data["source"]["file"] == "/k/gemm.py"
    assert any(p.get("lost") for p in data["passes"])
    changed = next(r for r in _records(corpus, "gemm") if r["status"] == "changed")
    data = check(
        show("gemm", "-1", "--pass", str(changed["index"]), "--source-map", "--json"), "source_map_pass"
    )
    assert data["side"] == "after" and data["lines"][0]["src"]["inferred"] is True


def test_the_schema_can_fail(show) -> None:
    data = show("gemm", "--json")
    data["runs"][0]["status"] = "bogus"
    with pytest.raises(jsonschema.ValidationError):
        validator("listing").validate(data)
    data = show("gemm", "--json")
    data["runs"][0]["unknown"] = 1  # strict: every key must be described
    with pytest.raises(jsonschema.ValidationError):
        validator("listing").validate(data)
    validator(strict=False).validate(data)  # the published schema lets a reader meet new keys


def _summary_keys() -> set[str]:
    keys = set(CompileSummary.of(None, "run_x").to_json())
    assert keys == {f.name for f in fields(CompileSummary)} - {"position"} | {"label"}
    return keys


def test_listing_and_index_rows_carry_every_summary_field(show, corpus: Path, tmp_path: Path) -> None:
    """A field added to the summary model reaches `show --json`, the index and the schema."""
    from tltrace.history.report_reads import index_report
    from tltrace.render.index import index_rows, write_index

    keys = _summary_keys()
    listing = show("--json")
    rows = listing["runs"] + [c for inv in listing["invocations"] for c in inv["compiles"]]
    assert rows and all(keys <= set(r) for r in rows)
    for sd in (corpus / "elementwise_add", corpus / "two_kernels"):
        for i, inv in enumerate(runs.invocations(sd)):
            out = write_index(index_report(sd, [r.path for r in inv.runs]), tmp_path / f"{sd.name}{i}.html")
            index = index_rows(out)
            assert len(index) == len(inv.runs) and all(keys <= set(r) for r in index)
    assert any(r["status"] == "damaged" for r in rows)
    described = SCHEMA["$defs"]["compile"]["properties"]
    assert keys <= set(described) and set(SCHEMA["$defs"]["compile"]["required"]) == set(rows[0]) - {
        "position"
    }
